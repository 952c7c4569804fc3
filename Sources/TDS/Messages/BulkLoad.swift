/// One column of a bulk load ([MS-TDS] 2.2.6.1 BulkLoadBCP): its name, the TYPE_INFO its values
/// travel as in the BULKLOAD message's COLMETADATA, and its flags.
///
/// ``init(tableColumn:includeIdentity:)`` applies 2.2.6.1's rules to a column of the table's own
/// COLMETADATA (from `SELECT TOP 0 * FROM table`): xml and json travel as nvarchar(max), a CLR UDT as
/// varbinary, legacy DECIMAL/NUMERIC as DECIMALN/NUMERICN, legacy CHAR/VARCHAR/BINARY/VARBINARY
/// as their BIG forms, fixed-length types as their nullable (N) forms so that NULL can be sent;
/// timestamp/rowversion and computed columns are not sent (nil), nor identity columns unless asked.
public struct BulkLoadColumn: Hashable, Sendable {
    /// The column name (bracket-quoted in INSERT BULK).
    public var name: String
    /// The TYPE_INFO written in COLMETADATA and used to encode each value.
    public var typeInfo: TypeInfo
    /// COLMETADATA Flags (fNullable, usUpdateable…).
    public var flags: ColumnFlags
    /// UserType written in COLMETADATA (0 for base types).
    public var userType: UInt32
    /// For a column encrypted with Always Encrypted, on a connection that negotiated column
    /// encryption: the CryptoMetaData written after its TYPE_INFO (``typeInfo`` is then the
    /// ciphertext's varbinary), with fEncrypted in ``flags`` ([MS-TDS] 2.2.7.4). Its ordinal
    /// indexes the encoder's ``BulkLoadEncoder/cekTable``.
    public var cryptoMetadata: CryptoMetadata? {
        didSet {
            if cryptoMetadata == nil { flags.remove(.encrypted) } else { flags.insert(.encrypted) }
        }
    }

    public init(name: String, type: TypeInfo, nullable: Bool = true, userType: UInt32 = 0) {
        self.name = name
        self.typeInfo = BulkLoadColumn.wireType(for: type)
        var flags: ColumnFlags = [.updateable]
        if nullable { flags.insert(.nullable) }
        self.flags = flags
        self.userType = userType
    }

    /// UserType of timestamp/rowversion columns ([MS-TDS] 2.2.7.4: UserType 0x50 with BIGBINARY(8)).
    public static let timestampUserType: UInt32 = 0x50

    /// The bulk-load column for a column of the destination table's COLMETADATA, or nil when the
    /// column is not sent: timestamp/rowversion, computed columns, and identity columns unless
    /// `includeIdentity` (the server then generates their values).
    public init?(tableColumn c: ColumnMetadata, includeIdentity: Bool = false) {
        if c.userType == BulkLoadColumn.timestampUserType, c.typeInfo.type == .bigBinary { return nil }
        if c.flags.contains(.computed) { return nil }
        if c.flags.contains(.identity), !includeIdentity { return nil }
        self.init(name: c.name, type: c.typeInfo, nullable: c.flags.contains(.nullable))
    }

    /// The TYPE_INFO a value of `type` is sent as in a BULKLOAD message ([MS-TDS] 2.2.6.1).
    public static func wireType(for type: TypeInfo) -> TypeInfo {
        var t = type
        switch type.type {
        case .xml:
            return .nvarchar(nil, collation: type.collation ?? .sqlLatin1GeneralCP1CIAS)
        case .json:
            // SQL Server refuses JSONTYPE (0xF4) in BULKLOAD COLMETADATA ("Invalid column type from
            // bcp client"): json travels as nvarchar(max) text, as mssql-rs sends it. A vector goes
            // as itself (VECTORTYPE, as Microsoft.Data.SqlClient sends it).
            return .nvarchar(nil)
        case .udt:
            let size = Int(type.udt?.maxByteSize ?? 0xFFFF)
            return size == 0xFFFF || size == 0 || size > 8000 ? .varbinary(nil) : .varbinary(size)
        case .decimal: t.type = .decimalN
        case .numeric: t.type = .numericN
        case .char: t.type = .bigChar
        case .varchar: t.type = .bigVarChar
        case .binary: t.type = .bigBinary
        case .varbinary: t.type = .bigVarBinary
        case .int1: t = .tinyint
        case .int2: t = .smallint
        case .int4: t = .int
        case .int8: t = .bigint
        case .bit: t = .bit
        case .flt4: t = .real
        case .flt8: t = .float
        case .money: t = .money
        case .money4: t = .smallMoney
        case .datetime: t = .datetime
        case .datetim4: t = .smallDateTime
        default: break
        }
        if t.type.hasCollation, t.collation == nil { t.collation = .sqlLatin1GeneralCP1CIAS }
        return t
    }

    /// The type as declared in the INSERT BULK column list: the wire type's SQL name
    /// ("nvarchar(max)" for xml, "varbinary(max)" for a UDT).
    public var declaration: String { typeInfo.sqlTypeName }
}

/// A value that does not fit its bulk-load column: the 1-based row number, the column and why.
/// Never contains the value itself.
public struct BulkLoadValueError: Error, Hashable, Sendable, CustomStringConvertible {
    /// 1-based number of the row in the load (counting every row given, across batches).
    public var row: Int
    /// 0-based index of the column among the sent columns; nil when the row itself is wrong (its length).
    public var columnIndex: Int?
    public var columnName: String?
    public var detail: String

    public init(row: Int, columnIndex: Int?, columnName: String?, detail: String) {
        self.row = row
        self.columnIndex = columnIndex
        self.columnName = columnName
        self.detail = detail
    }

    public var description: String {
        if let columnName { return "row \(row), column [\(columnName)]: \(detail)" }
        return "row \(row): \(detail)"
    }
}

/// The encoder of one BULKLOAD message ([MS-TDS] 2.2.6.1, packet type 0x07): COLMETADATA, one
/// ROW per row, DONE. Pure: it appends to a ``ByteWriter`` a row at a time, so a caller can cut
/// the bytes into packets as they grow and never hold more than a packet or a row.
///
/// COLMETADATA here is the form bulk clients send: UserType (ULONG from TDS 7.2), Flags,
/// TYPE_INFO, for text/ntext/image a TableName as one US_VARCHAR, ColName. Each value is encoded
/// with ``TypeInfo/encodeValue(_:into:)`` (the RPC parameter encoder) after checks that it fits
/// its column: non-PLP values no longer than the declared length (characters for nchar/nvarchar,
/// bytes otherwise, text in the collation's code page), decimals within precision and scale,
/// integers, money, dates and times within their ranges, NULL only in a nullable column.
public struct BulkLoadEncoder: Sendable {
    public let columns: [BulkLoadColumn]
    public let version: TDSVersion
    /// The destination table's name as written in TableName for text/ntext/image columns.
    public let tableName: String
    /// The CEK table written after Count when the connection negotiated column encryption
    /// (COLUMNENCRYPTION, [MS-TDS] 2.2.6.4): empty when no column is encrypted, as every driver
    /// sends it; nil on other connections (no CekTable at all). Entries are written without
    /// their encrypted key values (EK_INFO Count 0): a bulk load sends ciphertext, never keys.
    public let cekTable: [CEKEntry]?
    /// Rows encoded so far (by ``encodeRow(_:into:)``, each a success).
    public private(set) var rowCount = 0
    /// The number the next row is reported with in errors (1-based; may start after earlier batches).
    public var nextRowNumber: Int

    /// Per column, how ``encodeRow(_:into:)`` may write its common values directly (no
    /// reference-counted storage, so reading one per value is a plain copy).
    private let shortcuts: [BulkValueShortcut]

    public init(columns: [BulkLoadColumn], version: TDSVersion, tableName: String = "", firstRowNumber: Int = 1,
                cekTable: [CEKEntry]? = nil) {
        self.columns = columns
        self.version = version
        self.tableName = tableName
        self.cekTable = cekTable
        self.nextRowNumber = firstRowNumber
        self.shortcuts = columns.map(BulkValueShortcut.init(column:))
    }

    /// Writes the COLMETADATA token (0x81): Count, the CekTable when ``cekTable`` is set, then per
    /// column UserType, Flags, TYPE_INFO, the TableName of text/ntext/image, the CryptoMetaData
    /// of an encrypted column (only with a CekTable) and ColName.
    public func encodeMetadata(into w: inout ByteWriter) {
        w.writeUInt8(TokenType.colMetadata.rawValue)
        w.writeUInt16LE(UInt16(truncatingIfNeeded: columns.count))
        if let cekTable {
            w.writeUInt16LE(UInt16(truncatingIfNeeded: cekTable.count))
            for e in cekTable {
                w.writeUInt32LE(e.databaseID); w.writeUInt32LE(e.cekID)
                w.writeUInt32LE(e.cekVersion); w.writeUInt64LE(e.cekMetadataVersion)
                w.writeUInt8(0)   // no EncryptionKeyValue: the server has the keys
            }
        }
        for c in columns {
            if version.hasLongRowCounts { w.writeUInt32LE(c.userType) } else { w.writeUInt16LE(UInt16(truncatingIfNeeded: c.userType)) }
            var flags = c.flags
            if cekTable == nil || c.cryptoMetadata == nil { flags.remove(.encrypted) }
            w.writeUInt16LE(flags.rawValue)
            c.typeInfo.encode(into: &w, version: version)
            if c.typeInfo.type.isLegacyLOB { w.writeUSVarChar(tableName) }
            if cekTable != nil, let crypto = c.cryptoMetadata { crypto.encode(into: &w, version: version) }
            w.writeBVarChar(c.name)
        }
    }

    /// Checks `values` against the columns and appends one ROW token (0xD1). On error nothing is
    /// appended and the row is not counted.
    ///
    /// - Throws: ``BulkLoadValueError`` naming the row and column: wrong number of values, NULL in
    ///   a NOT NULL column, a value of the wrong kind, too long, out of range, beyond the precision
    ///   or scale, or not representable in the column's code page.
    public mutating func encodeRow(_ values: [SQLValue], into w: inout ByteWriter) throws(BulkLoadValueError) {
        let row = nextRowNumber
        nextRowNumber += 1
        guard values.count == columns.count else {
            throw BulkLoadValueError(row: row, columnIndex: nil, columnName: nil,
                                     detail: "\(values.count) value(s) for \(columns.count) column(s)")
        }
        let start = w.count
        w.writeUInt8(TokenType.row.rawValue)
        for i in 0 ..< columns.count {
            if shortcuts[i].write(values[i], into: &w) { continue }
            do {
                try BulkLoadEncoder.encode(values[i], column: columns[i], into: &w)
            } catch {
                w.bytes.removeLast(w.count - start)
                throw BulkLoadValueError(row: row, columnIndex: i, columnName: columns[i].name, detail: error.detail)
            }
        }
        rowCount += 1
    }

    /// Writes the DONE token that ends the message (status DONE_FINAL, count 0, as [MS-TDS] 4.12).
    public func encodeDone(into w: inout ByteWriter) {
        Done(status: []).encode(into: &w, version: version)
    }

    /// One value, checked against its column, then encoded by the shared TYPE_INFO value encoder.
    static func encode(_ value: SQLValue, column: BulkLoadColumn, into w: inout ByteWriter) throws(TDSDecodingError) {
        let t = column.typeInfo
        if value.isNull {
            guard column.flags.contains(.nullable) else {
                throw TDSDecodingError(.invalidValue, offset: w.count, "NULL in a NOT NULL column")
            }
            try t.encodeValue(.null, into: &w)
            return
        }
        let at = w.count
        try t.encodeValue(value, into: &w)
        guard !t.isPLP else { return }
        let prefix: Int
        switch t.type.lengthKind {
        case .byteLength?: prefix = 1
        case .ushortLength?: prefix = 2
        default: return
        }
        let n = w.count - at - prefix
        guard t.length > 0, n > t.length else { return }
        w.bytes.removeLast(w.count - at)
        let unit = t.type == .nvarchar || t.type == .nchar ? "UTF-16 code units" : "bytes"
        let size = unit == "bytes" ? n : n / 2
        let limit = unit == "bytes" ? t.length : t.length / 2
        throw TDSDecodingError(.invalidValue, offset: at, "\(size) \(unit) exceed \(t.sqlTypeName) (at most \(limit))")
    }
}

/// The direct write of a bulk-load value for the fixed-width nullable types INTN, BITN and FLTN
/// ([MS-TDS] 2.2.5.4.1: a 1-byte length, then the value little-endian; length 0 for NULL), for
/// the value cases that need no check: an integer of the column's own width, a bit, a float or
/// real of the column's width, NULL in a nullable column. The bytes are those the general encoder
/// (``TypeInfo/encodeValue(_:into:)`` after ``BulkLoadEncoder``'s checks) writes for them; every
/// other value (a narrower integer, NULL in a NOT NULL column, a mismatch) goes that way, so the
/// errors stay its own. It spares a narrow row the general encoder's dispatch and its copy of the
/// column's ``TypeInfo``.
struct BulkValueShortcut: Sendable {
    enum Kind: Sendable { case none, int1, int2, int4, int8, bit, real, float }
    var kind: Kind
    var nullable: Bool

    init(column c: BulkLoadColumn) {
        nullable = c.flags.contains(.nullable)
        let t = c.typeInfo
        switch (t.type, t.length) {
        case (.intN, 1): kind = .int1
        case (.intN, 2): kind = .int2
        case (.intN, 4): kind = .int4
        case (.intN, 8): kind = .int8
        case (.bitN, 1): kind = .bit
        case (.fltN, 4): kind = .real
        case (.fltN, 8): kind = .float
        default: kind = .none
        }
        if t.isPLP { kind = .none }
    }

    /// Writes `v` and answers true, or writes nothing and answers false (the general path's turn).
    @inline(__always)
    func write(_ v: SQLValue, into w: inout ByteWriter) -> Bool {
        switch (kind, v) {
        case (.none, _): return false
        case (_, .null):
            guard nullable else { return false }
            w.writeUInt8(0)
        case (.int4, .int(let x)): w.writeLengthPrefixed(UInt32(bitPattern: x))
        case (.int8, .bigint(let x)): w.writeLengthPrefixed(UInt64(bitPattern: x))
        case (.int2, .smallint(let x)): w.writeLengthPrefixed(UInt16(bitPattern: x))
        case (.int1, .tinyint(let x)): w.writeLengthPrefixed(x)
        case (.bit, .bit(let b)): w.writeLengthPrefixed(UInt8(b ? 1 : 0))
        case (.float, .float(let d)): w.writeLengthPrefixed(d.bitPattern)
        case (.real, .real(let f)): w.writeLengthPrefixed(f.bitPattern)
        default: return false
        }
        return true
    }
}

extension ByteWriter {
    /// A 1-byte length (the width of `v`), then `v` little-endian: a BYTELEN value of a
    /// fixed-width nullable type ([MS-TDS] 2.2.5.4.1), in one append.
    @inline(__always)
    mutating func writeLengthPrefixed<T: FixedWidthInteger & UnsignedInteger>(_ v: T) {
        let size = MemoryLayout<T>.size
        if size < 8 {
            // Length byte and value in one 64-bit word, its first 1 + size bytes appended.
            let word = UInt64(size) | UInt64(truncatingIfNeeded: v) << 8
            withUnsafeBytes(of: word.littleEndian) { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0 ..< 1 + size])) }
        } else {
            bytes.append(UInt8(size))
            withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
        }
    }
}
