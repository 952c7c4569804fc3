/// [MS-TDS] 2.2.7.5 DATACLASSIFICATION — sensitivity labels of the result columns (token 0xA3).
///
/// Wire shape after the token byte (no token length): SensitivityLabelCount USHORT + (Name
/// B_VARCHAR, Id B_VARCHAR) each; InformationTypeCount USHORT + (Name B_VARCHAR, Id B_VARCHAR)
/// each; from version 2 a query SensitivityRank LONG; NumResultSetColumns USHORT, then per column
/// NumSensitivityProperties USHORT + (SensitivityLabelIndex USHORT, InformationTypeIndex USHORT,
/// from version 2 SensitivityRank LONG) each. The version is the one acknowledged in
/// FEATUREEXTACK (DATACLASSIFICATION).
public struct DataClassification: Hashable, Sendable {
    /// A sensitivity label or information type: its name and id.
    public struct Label: Hashable, Sendable {
        /// The display name.
        public var name: String
        /// The id.
        public var id: String
        /// A label from its fields.
        public init(name: String, id: String) { self.name = name; self.id = id }
    }
    /// One classification of a column: indexes into the label and information type lists.
    public struct Property: Hashable, Sendable {
        /// Index into `labels`, 0xFFFF for none.
        public var labelIndex: UInt16
        /// Index into `informationTypes`, 0xFFFF for none.
        public var informationTypeIndex: UInt16
        /// Version 2 only: -1 not defined, 0 none, 10 low, 20 medium, 30 high, 40 critical.
        public var rank: Int32?
        /// A property from its fields.
        public init(labelIndex: UInt16, informationTypeIndex: UInt16, rank: Int32? = nil) {
            self.labelIndex = labelIndex; self.informationTypeIndex = informationTypeIndex; self.rank = rank
        }
    }

    /// The sensitivity labels referred to by index.
    public var labels: [Label]
    /// The information types referred to by index.
    public var informationTypes: [Label]
    /// Version 2 only: the query's overall sensitivity rank.
    public var rank: Int32?
    /// Per result column, its sensitivity properties.
    public var columns: [[Property]]

    /// A DATACLASSIFICATION from its fields.
    public init(labels: [Label], informationTypes: [Label], rank: Int32?, columns: [[Property]]) {
        self.labels = labels; self.informationTypes = informationTypes; self.rank = rank; self.columns = columns
    }

    /// Decodes the token after its type byte for classification `version` (1 or 2: rank from 2).
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader, version: UInt8) throws(TDSDecodingError) -> DataClassification {
        do throws(TDSDecodingError) {
            let withRank = version >= 2
            func pairs(_ r: inout ByteReader) throws(TDSDecodingError) -> [Label] {
                let n = Int(try r.readUInt16LE())
                var out: [Label] = []
                out.reserveCapacity(min(n, r.remaining / 2))
                for _ in 0..<n { out.append(Label(name: try r.readBVarChar(), id: try r.readBVarChar())) }
                return out
            }
            let labels = try pairs(&reader)
            let types = try pairs(&reader)
            let rank: Int32? = withRank ? try reader.readInt32LE() : nil
            let ncols = Int(try reader.readUInt16LE())
            var columns: [[Property]] = []
            columns.reserveCapacity(min(ncols, reader.remaining / 2))
            for _ in 0..<ncols {
                let nprops = Int(try reader.readUInt16LE())
                var props: [Property] = []
                props.reserveCapacity(min(nprops, reader.remaining / 4))
                for _ in 0..<nprops {
                    let l = try reader.readUInt16LE()
                    let t = try reader.readUInt16LE()
                    let r: Int32? = withRank ? try reader.readInt32LE() : nil
                    props.append(Property(labelIndex: l, informationTypeIndex: t, rank: r))
                }
                columns.append(props)
            }
            return DataClassification(labels: labels, informationTypes: types, rank: rank, columns: columns)
        } catch { throw error.inToken("DATACLASSIFICATION") }
    }
}
