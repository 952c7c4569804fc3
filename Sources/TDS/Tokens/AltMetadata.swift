/// [MS-TDS] 2.2.7.1 ALTMETADATA — the columns of a COMPUTE result (token 0x88; deprecated in
/// TDS 7.4).
///
/// Wire shape after the token byte (no token length): Count USHORT, Id USHORT, ByCols UCHAR,
/// ColNum USHORT × ByCols, then ComputeData × Count: Op BYTE, Operand USHORT, UserType, Flags
/// USHORT, TYPE_INFO, [TableName for text/ntext/image], ColName B_VARCHAR.
public struct AltMetadata: Hashable, Sendable {
    /// One aggregate column of a COMPUTE clause.
    public struct Column: Hashable, Sendable {
        /// The aggregate operator (e.g. 0x4D SUM, 0x09 COUNT, 0x4F AVG, 0x51 MIN, 0x52 MAX).
        public var op: UInt8
        /// The 1-based column of the main result the operator applies to.
        public var operand: UInt16
        /// The column's metadata.
        public var metadata: ColumnMetadata
        /// An aggregate column from its fields.
        public init(op: UInt8, operand: UInt16, metadata: ColumnMetadata) { self.op = op; self.operand = operand; self.metadata = metadata }
    }

    /// The COMPUTE clause id that ALTROW tokens refer to.
    public var id: UInt16
    /// The BY columns (1-based column numbers).
    public var byColumns: [UInt16]
    /// The aggregate columns.
    public var columns: [Column]

    /// An ALTMETADATA from its fields.
    public init(id: UInt16, byColumns: [UInt16], columns: [Column]) { self.id = id; self.byColumns = byColumns; self.columns = columns }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> AltMetadata {
        do throws(TDSDecodingError) {
            let count = Int(try reader.readUInt16LE())
            let id = try reader.readUInt16LE()
            let byCount = Int(try reader.readUInt8())
            var by: [UInt16] = []
            for _ in 0..<byCount { by.append(try reader.readUInt16LE()) }
            var cols: [Column] = []
            cols.reserveCapacity(min(count, reader.remaining / 10))
            for _ in 0..<count {
                let op = try reader.readUInt8()
                let operand = try reader.readUInt16LE()
                let (userType, flags, info, table) = try ColumnMetadata.decodeCommon(from: &reader, version: version)
                let name = try reader.readBVarChar()
                cols.append(Column(op: op, operand: operand,
                                   metadata: ColumnMetadata(userType: userType, flags: flags, typeInfo: info, tableName: table, name: name)))
            }
            return AltMetadata(id: id, byColumns: by, columns: cols)
        } catch { throw error.inToken("ALTMETADATA") }
    }
}
