/// [MS-TDS] 2.2.5.5.5 TVP_TYPE_INFO and 2.2.7.24 TVP_ROW: a table-valued RPC parameter (TDS 7.3+).
///
/// Layout: TVPTYPE 0xF3; TVP_TYPENAME (three B_VARCHAR: DbName — must be empty —,
/// OwningSchema, TypeName); TVP_COLMETADATA (Count, 2 bytes LE, or TVP_NULL_TOKEN 0xFFFF; then
/// per column UserType (4), Flags (2), TYPE_INFO, ColName B_VARCHAR — must be empty); optional
/// TVP_ORDER_UNIQUE (0x10) and TVP_COLUMN_ORDERING (0x11) tokens; TVP_END_TOKEN 0x00; rows, each
/// TVP_ROW_TOKEN 0x01 and one value per column (columns with fDefault 0x200 send none; text,
/// ntext and image without TextPtr; PLP in chunks); TVP_END_TOKEN 0x00.
public struct TableValuedParameter: Hashable, Sendable {
    /// TVPTYPE.
    public static let typeByte: UInt8 = 0xF3
    static let nullToken: UInt16 = 0xFFFF
    static let endToken: UInt8 = 0x00
    static let rowToken: UInt8 = 0x01
    static let orderUniqueToken: UInt8 = 0x10
    static let columnOrderingToken: UInt8 = 0x11

    /// One column of TVP_COLMETADATA.
    public struct Column: Hashable, Sendable {
        /// Flags: fNullable 0x01, fCaseSen 0x02, usUpdateable 0x0C, fIdentity 0x10, fComputed 0x20,
        /// fFixedLenCLRType 0x100, fDefault 0x200.
        public struct Flags: OptionSet, Hashable, Sendable {
            public let rawValue: UInt16
            public init(rawValue: UInt16) { self.rawValue = rawValue }
            /// fNullable.
            public static let nullable = Flags(rawValue: 0x0001)
            /// fCaseSen.
            public static let caseSensitive = Flags(rawValue: 0x0002)
            /// fIdentity.
            public static let identity = Flags(rawValue: 0x0010)
            /// fComputed.
            public static let computed = Flags(rawValue: 0x0020)
            /// fFixedLenCLRType.
            public static let fixedLengthCLRType = Flags(rawValue: 0x0100)
            /// The column takes its default: rows carry no value for it.
            public static let defaultValue = Flags(rawValue: 0x0200)
        }
        /// UserType of the column.
        public var userType: UInt32
        /// The column's flags.
        public var flags: Flags
        /// The column's TYPE_INFO.
        public var typeInfo: TypeInfo
        /// Must be empty on the wire ([MS-TDS]); kept as read.
        public var name: String

        /// A TVP column (nullable by default).
        public init(userType: UInt32 = 0, flags: Flags = [.nullable], typeInfo: TypeInfo, name: String = "") {
            self.userType = userType
            self.flags = flags
            self.typeInfo = typeInfo
            self.name = name
        }
    }

    /// One entry of TVP_ORDER_UNIQUE: a 1-based column number and fOrderAsc 0x01 / fOrderDesc
    /// 0x02 / fUnique 0x04.
    public struct OrderUnique: Hashable, Sendable {
        /// The 1-based column number.
        public var column: UInt16
        /// 0x01 ascending, 0x02 descending, 0x04 unique.
        public var flags: UInt8
        /// A TVP_ORDER_UNIQUE entry.
        public init(column: UInt16, flags: UInt8) { self.column = column; self.flags = flags }
    }

    /// The database of the table type (empty: the current one).
    public var databaseName: String
    /// The table type's schema (empty: dbo).
    public var schemaName: String
    /// The table type's name.
    public var typeName: String
    /// The columns; nil for TVP_NULL_TOKEN (no metadata: a NULL/default table).
    public var columns: [Column]?
    /// TVP_ORDER_UNIQUE, when sent.
    public var orderUnique: [OrderUnique]?
    /// TVP_COLUMN_ORDERING: 1-based column numbers.
    public var columnOrdering: [UInt16]?
    /// One value per column without fDefault, in column order.
    public var rows: [[SQLValue]]

    /// A table-valued parameter of `typeName` with its columns (nil: TVP_NULL_TOKEN metadata) and rows.
    public init(databaseName: String = "", schemaName: String, typeName: String, columns: [Column]?,
                orderUnique: [OrderUnique]? = nil, columnOrdering: [UInt16]? = nil, rows: [[SQLValue]] = []) {
        self.databaseName = databaseName
        self.schemaName = schemaName
        self.typeName = typeName
        self.columns = columns
        self.orderUnique = orderUnique
        self.columnOrdering = columnOrdering
        self.rows = rows
    }

    /// Columns whose values rows carry (those without fDefault).
    var sentColumns: [Column] { (columns ?? []).filter { !$0.flags.contains(.defaultValue) } }

    /// Decodes TVP_TYPE_INFO and the rows, starting at the 0xF3 byte.
    ///
    /// - Throws: `.truncated` if the input ends early; `.unknownToken` for a token other than
    ///   the optional metadata tokens, TVP_ROW_TOKEN or TVP_END_TOKEN; TYPE_INFO/value errors.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> TableValuedParameter {
        try TDSDecodingError.inContext("TVP_TYPE_INFO") { () throws(TDSDecodingError) in
            let at = reader.offset
            guard try reader.readUInt8() == typeByte else {
                throw reader.error(.unknownType, at: at, "TVP_TYPE_INFO must start with 0xF3")
            }
            let db = try reader.readBVarChar()
            let schema = try reader.readBVarChar()
            let name = try reader.readBVarChar()
            var tvp = TableValuedParameter(databaseName: db, schemaName: schema, typeName: name, columns: nil)
            let count = try reader.readUInt16LE()
            if count != nullToken {
                var columns: [Column] = []
                for _ in 0..<Int(count) {
                    let userType = try reader.readUInt32LE()
                    let flags = Column.Flags(rawValue: try reader.readUInt16LE())
                    let info = try TypeInfo.decode(from: &reader, version: version)
                    columns.append(Column(userType: userType, flags: flags, typeInfo: info, name: try reader.readBVarChar()))
                }
                tvp.columns = columns
            }
            // Optional metadata tokens, then TVP_END_TOKEN.
            metadata: while true {
                let tokenAt = reader.offset
                switch try reader.readUInt8() {
                case endToken: break metadata
                case orderUniqueToken:
                    let n = Int(try reader.readUInt16LE())
                    var list: [OrderUnique] = []
                    for _ in 0..<n { list.append(OrderUnique(column: try reader.readUInt16LE(), flags: try reader.readUInt8())) }
                    tvp.orderUnique = list
                case columnOrderingToken:
                    let n = Int(try reader.readUInt16LE())
                    var list: [UInt16] = []
                    for _ in 0..<n { list.append(try reader.readUInt16LE()) }
                    tvp.columnOrdering = list
                case let t:
                    throw reader.error(.unknownToken, at: tokenAt, "TVP metadata token 0x\(String(t, radix: 16))")
                }
            }
            let sent = tvp.sentColumns
            rows: while true {
                let tokenAt = reader.offset
                switch try reader.readUInt8() {
                case endToken: break rows
                case rowToken:
                    var row: [SQLValue] = []
                    row.reserveCapacity(sent.count)
                    for c in sent { row.append(try RPCParameter.decodeValue(c.typeInfo, from: &reader)) }
                    tvp.rows.append(row)
                case let t:
                    throw reader.error(.unknownToken, at: tokenAt, "TVP row token 0x\(String(t, radix: 16))")
                }
            }
            return tvp
        }
    }

    /// Encodes TVP_TYPE_INFO and the rows.
    ///
    /// - Throws: `.invalidValue` when a row has the wrong number of values or a value does not
    ///   fit its column.
    public func encode(into w: inout ByteWriter, version: TDSVersion) throws(TDSDecodingError) {
        w.writeUInt8(TableValuedParameter.typeByte)
        w.writeBVarChar(databaseName)
        w.writeBVarChar(schemaName)
        w.writeBVarChar(typeName)
        if let columns {
            w.writeUInt16LE(UInt16(truncatingIfNeeded: min(columns.count, 0xFFFE)))
            for c in columns.prefix(0xFFFE) {
                w.writeUInt32LE(c.userType)
                w.writeUInt16LE(c.flags.rawValue)
                c.typeInfo.encode(into: &w, version: version)
                w.writeBVarChar(c.name)
            }
        } else {
            w.writeUInt16LE(TableValuedParameter.nullToken)
        }
        if let orderUnique {
            w.writeUInt8(TableValuedParameter.orderUniqueToken)
            w.writeUInt16LE(UInt16(truncatingIfNeeded: orderUnique.count))
            for o in orderUnique { w.writeUInt16LE(o.column); w.writeUInt8(o.flags) }
        }
        if let columnOrdering {
            w.writeUInt8(TableValuedParameter.columnOrderingToken)
            w.writeUInt16LE(UInt16(truncatingIfNeeded: columnOrdering.count))
            for c in columnOrdering { w.writeUInt16LE(c) }
        }
        w.writeUInt8(TableValuedParameter.endToken)
        let sent = sentColumns
        for (i, row) in rows.enumerated() {
            guard row.count == sent.count else {
                throw TDSDecodingError(.invalidValue, offset: w.count, context: "TVP_ROW",
                                       "row \(i) has \(row.count) values for \(sent.count) columns")
            }
            w.writeUInt8(TableValuedParameter.rowToken)
            for (value, column) in zip(row, sent) {
                try RPCParameter.encodeValue(value, column.typeInfo, into: &w)
            }
        }
        w.writeUInt8(TableValuedParameter.endToken)
    }
}
