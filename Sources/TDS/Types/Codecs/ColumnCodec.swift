/// The one interface of a type family's codec ([MS-TDS] 2.2.5.4 data type definitions, 2.2.5.5
/// data type dependent data streams): every family (integers, floats, decimals, text, vector, …)
/// answers the same questions, and ``TDSDataType/codec`` — the one switch from a TYPE_INFO's type
/// byte to its codec — is how every path finds the answers:
///
/// - the **size rule** of the row scan (``scanRule(_:)``: fixed size, the BYTELEN lengths it
///   accepts, a check, or a large value assembled from chunks);
/// - the **check** and the **value** (``read(_:from:count:inVariant:)``: the data bytes after their
///   length prefix, checked, as an ``SQLValue``; ``plpValue(_:_:)`` an assembled PLP value; the
///   common case in place is the row block's read, ``WireColumn/quickValue(at:available:size:)``);
/// - the **typed read** (each family's `WireRowBlock` extension in its own file, such as
///   ``WireRowBlock/integer(row:column:)``);
/// - the **encoding** (``encode(_:as:into:)``: the data bytes of a value, no length prefix).
///
/// The length prefixes themselves are [MS-TDS] 2.2.5.2's rules of the type byte
/// (``TDSDataType/lengthKind``), read once by ``WireColumn/decodeValue(from:)`` and written
/// once by ``TypeInfo/encodeValue(_:into:)``.
///
/// Static only: a codec is a namespace, never an instance. The row block's hot loops do not go
/// through this protocol: they run the rule ``scanRule(_:)`` gave (``WireColumn``) and call the
/// family's codec directly, by ``WireColumn/family``; the protocol serves the per-column and per-value
/// slow paths (the full decoder, PLP values, parameters, sql_variant), where one witness call is
/// nothing beside the work.
///
/// Always Encrypted sits in front of this dispatch: the cipher text is decrypted, then the plain
/// text is decoded by the base type's codec as any other value (``TypeInfo/decodeValue(data:)``);
/// no codec learns about encryption.
protocol ColumnCodec {
    /// The family, which the row block's reads switch on (``WireColumn/family``).
    static var family: TypeFamily { get }

    /// The row scan's rule for a column of layout `l` (not PLP: a PLP column is always
    /// ``WireColumn/Kind/large``).
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule

    /// The value of the next `n` data bytes of `reader` (the length prefix already read), checked;
    /// nil, nothing consumed, when `n` is not a length the type can have (the caller reports it).
    /// `inVariant`: the base value of a sql_variant.
    /// - Throws: the family's ``TDSDecodingError`` (`.truncated` when the bytes are not all there,
    ///   `.invalidValue`, `.invalidLength`, `.invalidEncoding`).
    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue?

    /// The value whose PLP chunks, assembled, are `bytes` (error offsets from the start of
    /// `bytes`). Default: ``read(_:from:count:inVariant:)`` of the bytes.
    static func plpValue(_ l: WireColumn, _ bytes: [UInt8]) throws(TDSDecodingError) -> SQLValue

    /// The type of `t` as SQL Server declares it (``TypeInfo/sqlTypeName``).
    static func sqlTypeName(_ t: TypeInfo) -> String

    /// Writes the data bytes of `value` as a value of `t` (no length prefix).
    /// - Throws: `.invalidValue` (offset = the writer's count) for a value of another kind or out of the type's range.
    static func encode(_ value: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError)
}

extension ColumnCodec {
    static func plpValue(_ l: WireColumn, _ bytes: [UInt8]) throws(TDSDecodingError) -> SQLValue {
        var reader = ByteReader(bytes)
        return try TDSDecodingError.inContext(l.type.name) { () throws(TDSDecodingError) in
            guard let v = try read(l, from: &reader, count: bytes.count, inVariant: false) else {
                throw reader.error(.invalidLength, at: 0, "\(bytes.count) data byte(s) for \(l.type.name)")
            }
            return v
        }
    }

    /// `name(count)`, or `name(max)` for a PLP type (``TypeInfo/sqlTypeName``).
    static func sizedName(_ t: TypeInfo, _ name: String, _ count: Int) -> String {
        t.isPLP ? "\(name)(max)" : "\(name)(\(count))"
    }

    /// The error of a value that `t` cannot hold (another kind of value).
    static func mismatch(_ value: SQLValue, _ t: TypeInfo, _ writer: ByteWriter) -> TDSDecodingError {
        TDSDecodingError(.invalidValue, offset: writer.count, "cannot encode \(value.kindName) as \(t.sqlTypeName)")
    }

    /// The integer of an integer or bit `value` within `range` (the integer families' and the
    /// others' widening from integers).
    static func integer(_ value: SQLValue, _ range: ClosedRange<Int64>, _ t: TypeInfo, _ writer: ByteWriter) throws(TDSDecodingError) -> Int64 {
        let i: Int64
        switch value {
        case .tinyint(let x): i = Int64(x)
        case .smallint(let x): i = Int64(x)
        case .int(let x): i = Int64(x)
        case .bigint(let x): i = x
        case .bit(let b): i = b ? 1 : 0
        default: throw mismatch(value, t, writer)
        }
        guard range.contains(i) else {
            throw TDSDecodingError(.invalidValue, offset: writer.count, "\(i) out of range for \(t.sqlTypeName)")
        }
        return i
    }
}

/// A family of FIXEDLEN types and one BYTELEN type (integers, floats, money, bit; uniqueidentifier
/// is BYTELEN alone): its scan rule is a FIXEDLEN type's size, or the BYTELEN lengths in
/// ``byteLengths`` (bit n: n data bytes) within the declared length; a FIXEDLEN type's value has
/// that type's own size.
protocol FixedOrByteLengthCodec: ColumnCodec {
    /// The BYTELEN lengths the row scan accepts: bit n set for n data bytes (bit 0: NULL).
    static var byteLengths: UInt64 { get }
    /// The value of the next `n` data bytes, or nil when `n` is not one of the family's lengths.
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue?
}

extension FixedOrByteLengthCodec {
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        if case .fixed(let n)? = l.type.lengthKind { return WireColumn.Rule(kind: .fixed, size: n) }
        return WireColumn.Rule(kind: .byteLength, allowed: byteLengths, declared: l.length)
    }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        if case .fixed(let size)? = l.type.lengthKind, size != n { return nil }   // a FIXEDLEN type's own size
        return try read(from: &reader, count: n)
    }
}

/// A type family: which codec reads a column's values. A row block's reads switch on it (an enum
/// of the codecs, so the call is static); every other path asks ``TDSDataType/codec``.
@usableFromInline
enum TypeFamily: UInt8, Sendable {
    case null, integer, bit, float, money, dateTime, decimal, guid, dateTime73
    /// char, varchar, text: code page text.
    case character
    /// nchar, nvarchar, ntext: UTF-16LE text.
    case nationalCharacter
    case binary, xml, udt, json, vector, variant
}

extension TDSDataType {
    /// The codec of this type's values: **the one switch from a TYPE_INFO to its codec**; nil for
    /// a type byte [MS-TDS] does not define.
    var codec: (any ColumnCodec.Type)? {
        switch self {
        case .null: NullCodec.self
        case .int1, .int2, .int4, .int8, .intN: IntegerCodec.self
        case .bit, .bitN: BitCodec.self
        case .flt4, .flt8, .fltN: FloatCodec.self
        case .money, .money4, .moneyN: MoneyCodec.self
        case .datetime, .datetim4, .datetimN: DateTimeCodec.self
        case .decimal, .numeric, .decimalN, .numericN: DecimalCodec.self
        case .guid: GUIDCodec.self
        case .dateN, .timeN, .datetime2N, .datetimeOffsetN: DateTime73Codec.self
        case .char, .varchar, .bigChar, .bigVarChar, .text: CharacterCodec.self
        case .nchar, .nvarchar, .ntext: NationalCharacterCodec.self
        case .binary, .varbinary, .bigBinary, .bigVarBinary, .image: BinaryCodec.self
        case .xml: XMLCodec.self
        case .udt: UDTCodec.self
        case .json: JSONCodec.self
        case .vector: VectorCodec.self
        case .ssVariant: SQLVariantCodec.self
        default: nil
        }
    }
}

/// NULLTYPE ([MS-TDS] 2.2.5.4.1, FIXEDLEN 0): no bytes, always NULL.
enum NullCodec: ColumnCodec {
    static var family: TypeFamily { .null }
    static func sqlTypeName(_ t: TypeInfo) -> String { "null" }
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule { WireColumn.Rule(kind: .fixed, size: 0) }
    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        n == 0 ? .null : nil
    }
    static func encode(_ value: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        guard value.isNull else { throw mismatch(value, t, writer) }
    }
}
