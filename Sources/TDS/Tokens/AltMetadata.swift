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
        var progress = AltMetadataProgress(incremental: false)
        guard let token = try progress.advance(&reader, version: version) else {
            throw (progress.truncation ?? reader.truncated(1)).inToken("ALTMETADATA")
        }
        return token
    }
}

/// An ALTMETADATA being decoded as its bytes arrive: Count, Id and ByCols, each ColNum, then
/// each column's Op and Operand and the rest of it (see ``ColumnProgress``), each kept once
/// read, so a token that spans many packets is decoded once, in linear time.
struct AltMetadataProgress: Sendable {
    private enum Stage: Sendable { case head, byColumns, columnHead, column }
    private var stage = Stage.head
    private var count = 0
    private var id: UInt16 = 0
    private var byLeft = 0
    private var byColumns: [UInt16] = []
    private var columns: [AltMetadata.Column] = []
    private var op: UInt8 = 0
    private var operand: UInt16 = 0
    private var column: ColumnProgress
    private let incremental: Bool
    /// Where the last attempt ran out of bytes.
    private(set) var truncation: TDSDecodingError?

    /// `incremental`: more bytes may come (see ``TypeInfoNames``).
    init(incremental: Bool) {
        self.incremental = incremental
        self.column = ColumnProgress(incremental: incremental)
    }

    /// Reads what `reader` holds; the token once complete, nil when more bytes are needed
    /// (`reader` is left after the last unit read).
    mutating func advance(_ reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> AltMetadata? {
        while true {
            let start = reader.offset
            do throws(TDSDecodingError) {
                switch stage {
                case .head:
                    let n = Int(try reader.readUInt16LE())
                    let i = try reader.readUInt16LE()
                    byLeft = Int(try reader.readUInt8())
                    count = n
                    id = i
                    stage = .byColumns
                case .byColumns:
                    if byLeft == 0 {
                        columns.reserveCapacity(min(count, reader.remaining / 10))
                        stage = .columnHead
                        continue
                    }
                    byColumns.append(try reader.readUInt16LE())
                    byLeft -= 1
                case .columnHead:
                    guard columns.count < count else { return AltMetadata(id: id, byColumns: byColumns, columns: columns) }
                    let o = try reader.readUInt8()
                    operand = try reader.readUInt16LE()
                    op = o
                    stage = .column
                case .column:
                    guard let metadata = try column.advance(&reader, version: version, columnEncryption: false) else {
                        truncation = column.truncation
                        return nil
                    }
                    columns.append(AltMetadata.Column(op: op, operand: operand, metadata: metadata))
                    column = ColumnProgress(incremental: incremental)
                    stage = .columnHead
                }
            } catch {
                guard error.code == .truncated else { throw error.inToken("ALTMETADATA") }
                reader.offset = start
                truncation = error
                return nil
            }
        }
    }
}
