/// sql_variant ([MS-TDS] 2.2.5.4.3 SSVARIANTTYPE, LONGLEN 0 for NULL; [MS-TDS] 2.2.5.5.4 the value:
/// its base type byte, the count of property bytes, the base type's properties (precision and
/// scale, scale, maximum length, collation), then the data, which the base type's codec decodes).
///
/// Kept in row blocks as its wire bytes (``WireColumn/Check/variant``): the row scan accepts in
/// place a NULL and a value whose data cannot be invalid (``checkedSize(at:available:)``) and
/// checks any other value with ``read(from:)``, the token decoder's read (so a hostile value gives
/// the same error, at the same offset, from the token decoder: the scan stops before its row); the
/// block reads every value with ``read(from:)``, in place.
enum SQLVariantCodec {
    /// Whether the sql_variant at `p` (4 bytes readable) is NULL (a LONGLEN of 0).
    @inline(__always)
    static func isNull(at p: UnsafeRawPointer) -> Bool {
        p.loadUnaligned(as: UInt32.self) == 0
    }

    /// The row scan's check of the sql_variant at `p`, `available` bytes readable: its byte count
    /// (the 4-byte length included) for NULL, or for a base type whose data cannot be invalid
    /// (tinyint, smallint, int, bigint, bit, real, float, money, smallmoney, uniqueidentifier: no
    /// property bytes, exactly the type's size of data), which ``read(from:)`` accepts; 0 for any
    /// other value or one not all there (the scan then checks it with ``read(from:)``).
    static func checkedSize(at p: UnsafeRawPointer, available: Int) -> Int {
        guard available >= 4 else { return 0 }
        let total = Int(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
        if total == 0 { return 4 }
        guard total <= available - 4, total >= 2, p.load(fromByteOffset: 5, as: UInt8.self) == 0 else { return 0 }
        let base = TDSDataType(p.load(fromByteOffset: 4, as: UInt8.self))
        let size: Int
        switch base {
        case .int1, .bit, .int2, .int4, .int8, .flt4, .flt8, .money, .money4:
            guard case .fixed(let n)? = base.lengthKind else { return 0 }
            size = n
        case .guid: size = 16
        default: return 0
        }
        return total == 2 + size ? 4 + total : 0
    }

    /// The value of the LONGLEN sql_variant at `reader`'s position: `.null` for a length of 0,
    /// else `.variant`.
    /// - Throws: `.truncated` when the value's bytes are not all there, `.invalidLength` for a
    ///   length beyond `Int32.max` or a body that ends inside its base type, properties or data;
    ///   ``readBody(from:)``'s errors.
    static func read(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLValue {
        let at = reader.offset
        let total = try reader.readUInt32LE()
        if total == 0 { return .null }
        guard total <= UInt32(Int32.max) else { throw reader.error(.invalidLength, at: at, "sql_variant length \(total)") }
        var sub = try reader.subReader(Int(total))
        do {
            return try readBody(from: &sub)
        } catch where error.code == .truncated {
            // All `total` bytes are here: a body that ends early is malformed, not incomplete.
            throw reader.error(.invalidLength, at: at, "sql_variant of \(total) byte(s) ends inside its base type, properties or value")
        }
    }

    /// The body of a sql_variant (after its 4-byte length, all of it in `reader`): BaseType,
    /// PropBytes, the properties, then the data, decoded by the base type's codec.
    /// - Throws: `.invalidLength` for properties that do not fit the base type, `.invalidValue`
    ///   for a base type sql_variant cannot hold or a precision or scale out of range; the base
    ///   type's errors.
    static func readBody(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLValue {
        let start = reader.offset
        let base = TDSDataType(try reader.readUInt8())
        let propCount = Int(try reader.readUInt8())
        var props = try reader.subReader(propCount)
        var info = TypeInfo(type: base)
        func badProps() -> TDSDecodingError {
            reader.error(.invalidLength, at: start + 1, "\(propCount) property byte(s) for sql_variant base type \(base.name)")
        }
        switch base {
        case .int1, .bit, .int2, .int4, .int8, .flt4, .flt8, .money, .money4, .datetime, .datetim4, .guid, .dateN:
            guard propCount == 0 else { throw badProps() }
            // A FIXEDLEN type's own size; uniqueidentifier 16 bytes, date 3.
            if case .fixed(let size)? = base.lengthKind { info.length = size } else { info.length = base == .guid ? 16 : 3 }
        case .decimalN, .numericN:
            guard propCount == 2 else { throw badProps() }
            info.precision = try props.readUInt8()
            info.scale = try props.readUInt8()
            guard (1...38).contains(info.precision), info.scale <= info.precision else {
                throw reader.error(.invalidValue, at: start + 2, "precision \(info.precision), scale \(info.scale)")
            }
            info.length = SQLDecimal.wireLength(precision: info.precision)
        case .timeN, .datetime2N, .datetimeOffsetN:
            guard propCount == 1 else { throw badProps() }
            info.scale = try props.readUInt8()
            guard info.scale <= 7 else { throw reader.error(.invalidValue, at: start + 2, "scale \(info.scale)") }
            info.length = SQLTime.wireLength(scale: info.scale) + (base == .timeN ? 0 : base == .datetime2N ? 3 : 5)
        case .bigVarBinary, .bigBinary:
            guard propCount == 2 else { throw badProps() }
            info.length = Int(try props.readUInt16LE())
        case .bigVarChar, .bigChar, .nvarchar, .nchar:
            guard propCount == 7 else { throw badProps() }
            info.collation = try Collation.decode(from: &props)
            info.length = Int(try props.readUInt16LE())
        default:
            throw reader.error(.invalidValue, at: start, "\(base.name) is not a sql_variant base type")
        }
        let value = try WireColumn(decoding: info).decodeData(from: &reader, count: reader.remaining, inVariant: true)
        return .variant(SQLVariant(baseType: info, value: value))
    }
}

extension SQLVariantCodec: ColumnCodec {
    static var family: TypeFamily { .variant }

    static func sqlTypeName(_ t: TypeInfo) -> String { "sql_variant" }
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule { WireColumn.Rule(kind: .decode, declared: l.length, check: .variant) }

    /// The body of a sql_variant of `n` bytes (its LONGLEN already read; ``read(from:)`` reads both).
    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        guard !inVariant else { return nil }
        if n == 0 { return .null }
        var sub = try reader.subReader(n)
        return try readBody(from: &sub)
    }

    static func encode(_ value: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        let variant: SQLVariant
        if case .variant(let v) = value { variant = v } else if let v = SQLVariant(value: value) { variant = v } else {
            throw mismatch(value, t, writer)
        }
        try variant.encodeBody(into: &writer)
    }
}
