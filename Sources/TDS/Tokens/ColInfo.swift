/// [MS-TDS] 2.2.7.3 COLINFO — browse-mode column information (token 0xA5).
///
/// Wire shape after the token byte: Length USHORT, then ColProperty to the end of the token:
/// ColNum BYTE, TableNum BYTE, Status BYTE, and ColName B_VARCHAR only when Status has
/// DIFFERENT_NAME (0x20).
public struct ColInfo: Hashable, Sendable {
    /// COLINFO Status bits.
    public struct Status: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// EXPRESSION (0x04): the column is an expression.
        public static let expression = Status(rawValue: 0x04)
        /// KEY (0x08): the column is part of a key for the table.
        public static let key = Status(rawValue: 0x08)
        /// HIDDEN (0x10): the column was not requested but added for browse mode.
        public static let hidden = Status(rawValue: 0x10)
        /// DIFFERENT_NAME (0x20): the column name differs from the base column name.
        public static let differentName = Status(rawValue: 0x20)
    }

    /// One column's browse-mode information.
    public struct Column: Hashable, Sendable {
        /// 1-based column number in the result set.
        public var columnNumber: UInt8
        /// 1-based index into the preceding TABNAME; 0 for an expression.
        public var tableNumber: UInt8
        /// Status bits (expression, key, hidden, different name).
        public var status: Status
        /// The base column name when `status` has `.differentName`.
        public var baseName: String?
        /// A COLINFO entry from its fields.
        public init(columnNumber: UInt8, tableNumber: UInt8, status: Status, baseName: String? = nil) {
            self.columnNumber = columnNumber; self.tableNumber = tableNumber; self.status = status; self.baseName = baseName
        }
    }

    /// One entry per result column.
    public var columns: [Column]
    /// A COLINFO of `columns`.
    public init(columns: [Column]) { self.columns = columns }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> ColInfo {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody16()
            return try decodeBounded("COLINFO") { () throws(TDSDecodingError) -> ColInfo in
                var cols: [Column] = []
                while !body.isAtEnd {
                    let col = try body.readUInt8()
                    let table = try body.readUInt8()
                    let status = Status(rawValue: try body.readUInt8())
                    let name: String? = status.contains(.differentName) ? try body.readBVarChar() : nil
                    cols.append(Column(columnNumber: col, tableNumber: table, status: status, baseName: name))
                }
                return ColInfo(columns: cols)
            }
        } catch { throw error.inToken("COLINFO") }
    }
}
