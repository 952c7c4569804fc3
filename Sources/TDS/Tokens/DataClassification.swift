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
        var progress = DataClassificationProgress(tokenStart: reader.absoluteOffset &- 1, version: version)
        guard let token = try progress.advance(&reader) else {
            throw (progress.truncation ?? reader.truncated(1)).inToken("DATACLASSIFICATION")
        }
        return token
    }
}

/// A DATACLASSIFICATION being decoded as its bytes arrive: one count, string or property at a
/// time, each kept once read, so a token that spans many packets is decoded once, in linear time
/// (a retry re-reads at most one B_VARCHAR's length byte or one property's 8 bytes).
struct DataClassificationProgress: Sendable {
    private enum Stage: Sendable { case labelCount, labels, typeCount, types, rank, columnCount, propertyCount, properties }

    /// Absolute offset of the token byte.
    let tokenStart: Int
    /// Version 2 and later: ranks.
    let withRank: Bool
    private var stage = Stage.labelCount
    private var labels: [DataClassification.Label] = []
    private var types: [DataClassification.Label] = []
    /// The Name of the label or information type whose Id comes next.
    private var name: String?
    private var rank: Int32?
    private var columns: [[DataClassification.Property]] = []
    private var properties: [DataClassification.Property] = []
    /// Items still to read in the current list (labels, information types, columns or properties).
    private var left = 0
    /// Columns still to read once the current one's properties are read.
    private var columnsLeft = 0
    /// Where the last attempt ran out of bytes.
    private(set) var truncation: TDSDecodingError?

    init(tokenStart: Int, version: UInt8) {
        self.tokenStart = tokenStart
        self.withRank = version >= 2
    }

    /// Reads what `reader` holds; the token once complete, nil when more bytes are needed
    /// (`reader` is left after the last unit read).
    mutating func advance(_ reader: inout ByteReader) throws(TDSDecodingError) -> DataClassification? {
        while true {
            let start = reader.offset
            do throws(TDSDecodingError) {
                switch stage {
                case .labelCount, .typeCount:
                    left = Int(try reader.readUInt16LE())
                    if stage == .labelCount {
                        labels.reserveCapacity(min(left, reader.remaining / 2))
                        stage = .labels
                    } else {
                        types.reserveCapacity(min(left, reader.remaining / 2))
                        stage = .types
                    }
                case .labels, .types:
                    if left == 0 {
                        stage = stage == .labels ? .typeCount : withRank ? .rank : .columnCount
                        continue
                    }
                    let text = try reader.readBVarChar()
                    guard let n = name else { name = text; continue }
                    if stage == .labels { labels.append(.init(name: n, id: text)) } else { types.append(.init(name: n, id: text)) }
                    name = nil
                    left -= 1
                case .rank:
                    rank = try reader.readInt32LE()
                    stage = .columnCount
                case .columnCount:
                    columnsLeft = Int(try reader.readUInt16LE())
                    columns.reserveCapacity(min(columnsLeft, reader.remaining / 2))
                    stage = .propertyCount
                case .propertyCount:
                    if columnsLeft == 0 {
                        return DataClassification(labels: labels, informationTypes: types, rank: rank, columns: columns)
                    }
                    left = Int(try reader.readUInt16LE())
                    properties = []
                    properties.reserveCapacity(min(left, reader.remaining / 4))
                    stage = .properties
                case .properties:
                    if left == 0 {
                        columns.append(properties)
                        columnsLeft -= 1
                        stage = .propertyCount
                        continue
                    }
                    let l = try reader.readUInt16LE()
                    let t = try reader.readUInt16LE()
                    let r: Int32? = withRank ? try reader.readInt32LE() : nil
                    properties.append(.init(labelIndex: l, informationTypeIndex: t, rank: r))
                    left -= 1
                }
            } catch {
                guard error.code == .truncated else { throw error.inToken("DATACLASSIFICATION") }
                reader.offset = start
                truncation = error
                return nil
            }
        }
    }
}
