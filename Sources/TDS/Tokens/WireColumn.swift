/// One column of the row path: the fields of its ``TypeInfo`` that decoding a value reads
/// ([MS-TDS] 2.2.5.4 TYPE_INFO without the xml schema and UDT names: type, length, precision,
/// scale, collation, PLP flag), and how the row scan checks its value and finds its end (see
/// ``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``), precomputed once per
/// COLMETADATA. Every reader of row values (the run scan, ``WireRowProgress``, ``WireRowBlock``,
/// the full decoder ``decodeValue(from:)``) works from it.
///
/// It holds no reference-counted storage: reading it per value costs no retain or release. The
/// collation is kept packed in one word (``collationBits``): an optional `Collation` of five fields
/// and a tag was reassembled byte by byte on the stack for every call.
@usableFromInline
struct WireColumn: Sendable {
    @usableFromInline
    enum Kind: UInt8, Sendable {
        /// A fixed-size value that cannot be invalid (integers, floats, money, bit): `size` bytes.
        case fixed
        /// A 1-byte length then the data; the length must be 0 (NULL) or in `allowed`, and at
        /// most the declared length (when one is declared); the data cannot be invalid.
        case byteLength
        /// On the wire a 2-byte length (0xFFFF = NULL) then UTF-16LE text, which must be valid
        /// (nchar, nvarchar). Kept in the block as UTF-8, transcoded by the scan: a 2-byte
        /// little-endian header, 0xFFFF for NULL, else bit 15 set when every byte is ASCII and
        /// bits 0-14 the UTF-8 byte count, then the bytes. A value of n UTF-16 units takes n to
        /// 3n UTF-8 bytes (an nvarchar(4000) at most 12,000 bytes). A value of more than
        /// ``TokenStreamDecoder/wireTextLimit`` bytes (SQL Server sends none) is read by the row's
        /// scan state (``WireRowProgress``) and kept in the long form: the header's count 0x7FFF
        /// (``CharacterCodec/utf16LongForm``), then a 4-byte count and the bytes.
        case utf16
        /// A 2-byte length (0xFFFF = NULL) then bytes that cannot be invalid (binary, code page 1252 text).
        case ushortBytes
        /// Anything else (dates, times, decimals, datetime): the common case checked by the scan
        /// straight from the bytes (``WireColumn/checkedSize(at:available:)``) and read without
        /// checks (``WireRowBlock/decodeScanned(_:at:)``), the rest by the full decoder.
        case decode
        /// vector (USHORTLEN, 0xFFFF for NULL): checked by the scan with the codec's one check
        /// (``SQLVector/check(at:count:available:declaredLength:declaredElement:)``), read without
        /// checks (``SQLVector/scannedValue(at:count:)``); what the check refuses is the full
        /// decoder's error.
        case vector
        /// A large value, assembled by the scan (``WireRowProgress``): on the wire a PLP value
        /// ([MS-TDS] 2.2.5.2.3: varchar(max), nvarchar(max), varbinary(max), xml, UDT, json) or a
        /// text/ntext/image value (TextPtr, Timestamp, LONG length, data). In the block: a 4-byte
        /// little-endian byte count (``WireColumn/largeNull`` for NULL: PLP_NULL, a TextPtr length
        /// of 0), a byte of ``LargeForm`` (how the bytes are kept), then the bytes, contiguous; a
        /// binary value of 64 KiB or more is kept apart (``LargeForm/separate``: the count field is
        /// its index in ``WireRowBlock/separate``).
        case large
        /// Not kept as wire bytes (a type [MS-TDS] does not define: its decoder refuses it).
        case unsupported
    }

    @usableFromInline let kind: Kind
    /// The TDS data type byte.
    @usableFromInline let type: TDSDataType
    /// The codec that reads the values (``TDSDataType/codec``'s family): a row block's reads
    /// switch on it.
    @usableFromInline let family: TypeFamily
    /// `.fixed`: the size.
    @usableFromInline let size: Int
    /// `.byteLength`: bit n set when a length of n bytes is accepted (n ≤ 63).
    let allowed: UInt64
    /// `.byteLength`: the declared length (0 = none declared).
    let declared: Int
    /// `.decode`: which check ``checkedSize(at:available:)`` makes (see ``Check``).
    let check: Check
    /// `.decode`: the data length (after the length byte) a value must have (date and time
    /// types), or the longest a decimal magnitude and its sign may take; 0 for datetime types.
    let dataLength: Int
    /// `.decode`: the time's byte count (time, datetime2, datetimeoffset).
    let timeLength: Int
    /// `.decode`: the first number of ticks that is not a time of day (86,400 × 10^scale).
    let ticksLimit: UInt64
    /// `.decode`: the first decimal magnitude beyond the precision (10^precision).
    let magnitudeLimit: UInt128
    /// The TYPE_INFO's precision and scale (decimal, numeric, time, datetime2, datetimeoffset).
    let precision: UInt8, scale: UInt8
    /// The TYPE_INFO's declared length (0: none).
    let length: Int
    /// A PLP column (varchar(max), nvarchar(max), varbinary(max), xml, UDT, json).
    let isPLP: Bool
    /// The collation: LCID (bits 0-31), flags (32-39), version (40-47), sort id (48-55), bit 63
    /// set when there is one (0: none).
    private let collationBits: UInt64

    /// The column's collation ([MS-TDS] 2.2.5.1.2), nil for types without one.
    var collation: Collation? {
        @inline(__always) get {
            guard collationBits != 0 else { return nil }
            var c = Collation(lcid: 0)
            c.lcid = UInt32(truncatingIfNeeded: collationBits)
            c.flags = Collation.Flags(rawValue: UInt8(truncatingIfNeeded: collationBits >> 32))
            c.version = UInt8(truncatingIfNeeded: collationBits >> 40)
            c.sortID = UInt8(truncatingIfNeeded: collationBits >> 48)
            return c
        }
    }

    /// The type as SQL Server declares it (for error messages), as ``TypeInfo/sqlTypeName``.
    var sqlTypeName: String {
        TypeInfo(type: type, length: length, precision: precision, scale: scale, collation: collation, isPLP: isPLP).sqlTypeName
    }

    /// The value check of a `.decode` column, precomputed from its TYPE_INFO (see
    /// ``checkedSize(at:available:)``).
    enum Check: UInt8, Sendable {
        /// A BYTELEN type whose values are never the common case (a scale over 7, a precision
        /// over 38): NULL is accepted, any other value left to the full decoder.
        case none
        case decimal, date, time, datetime2, datetimeOffset
        /// DATETIME (FIXEDLEN 8), DATETIM4 (FIXEDLEN 4), DATETIMN (BYTELEN 4 or 8).
        case datetime, smallDateTime, datetimeN
        /// sql_variant (LONGLEN, 0 for NULL): NULL and a base type whose data cannot be invalid
        /// accepted by the scan (``SQLVariantCodec/checkedSize(at:available:)``), any other value
        /// checked by ``SQLVariantCodec/read(from:)`` (the full decoder); read by it.
        case variant
        /// CHAR, VARCHAR (BYTELEN) and BIGCHAR, BIGVARCHAR (USHORTLEN, 0xFFFF for NULL) in a code
        /// page other than 1252: NULL and all-ASCII text accepted by the scan
        /// (``CharacterCodec/checkedCodePageSize(at:available:prefix:declared:)``), any other value
        /// checked by the full decoder; read with the column's collation.
        case codePageByteLength, codePageUShortLength
    }

    /// The byte count of a `.large` NULL.
    static let largeNull = UInt32.max
    /// A `.large` value's header: its byte count (4 bytes) and its ``LargeForm`` (1).
    static let largeHeaderSize = 5

    /// How a `.large` value's bytes are kept.
    enum LargeForm: UInt8 {
        /// As on the wire, chunks concatenated (binary, UDT, json's UTF-8, code page text).
        case raw = 0
        /// UTF-16LE text (nvarchar(max), ntext, xml) transcoded to UTF-8 by the scan.
        case utf8 = 1
        /// Likewise, every byte ASCII.
        case utf8ASCII = 2
        /// A binary value (varbinary(max), image, UDT) of at least 64 KiB kept apart: the 4-byte
        /// field is its index in the block's ``WireRowBlock/separate`` values (its bytes are the
        /// array the scan assembled, moved in, and the ``SQLValue`` read shares it: no copy).
        case separate = 3
    }

    /// A column's scan rule, as its family's codec gives it (``ColumnCodec/scanRule(_:)``).
    struct Rule {
        var kind: Kind
        /// `.fixed`: the size.
        var size = 0
        /// `.byteLength`: the lengths accepted (see ``WireColumn/allowed``).
        var allowed: UInt64 = 0
        /// The declared length checked (0: none).
        var declared = 0
        /// `.decode`: the check and its limits (see ``WireColumn/Check``).
        var check = Check.none
        var dataLength = 0, timeLength = 0
        var ticksLimit: UInt64 = 0
        var magnitudeLimit: UInt128 = 0
    }

    /// The column of `info`: its scan rule is its family's codec's (``ColumnCodec/scanRule(_:)``,
    /// which reads the TYPE_INFO fields of a column without one yet); a PLP column is `.large`, a
    /// type [MS-TDS] does not define `.unsupported`.
    init(_ info: TypeInfo) {
        let codec = info.type.codec
        self.init(info, codec: codec, rule: Rule(kind: codec == nil ? .unsupported : .large, declared: info.length))
        if let codec, !info.isPLP { self = WireColumn(info, codec: codec, rule: codec.scanRule(self)) }
    }

    /// The column of `info` for the full decoder alone (``decodeValue(from:)``,
    /// ``decodeData(from:count:inVariant:)``, ``decodePLPValue(_:)``): no scan rule (`.unsupported`),
    /// so made per value at the cost of copying the TYPE_INFO's fields (a sql_variant's base type).
    init(decoding info: TypeInfo) {
        self.init(info, codec: nil, rule: Rule(kind: .unsupported))
    }

    private init(_ info: TypeInfo, codec: (any ColumnCodec.Type)?, rule: Rule) {
        self.kind = rule.kind
        self.type = info.type
        self.family = codec?.family ?? .null
        self.size = rule.size
        self.allowed = rule.allowed
        self.declared = rule.declared
        self.check = rule.kind == .decode ? rule.check : .none
        self.dataLength = rule.dataLength
        self.timeLength = rule.timeLength
        self.ticksLimit = rule.ticksLimit
        self.magnitudeLimit = rule.magnitudeLimit
        self.precision = info.precision
        self.scale = info.scale
        self.length = info.length
        self.isPLP = info.isPLP
        guard let c = info.collation else { self.collationBits = 0; return }
        self.collationBits = UInt64(c.lcid) | UInt64(c.flags.rawValue) << 32 | UInt64(c.version) << 40 | UInt64(c.sortID) << 48 | 1 << 63
    }

    /// The row scan's rule for one value of this column at `j` of the `n` bytes at `p` (shared by
    /// the run of whole rows, ``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``, and the
    /// scan state of a row it cannot take whole, ``WireRowProgress``): its byte count (length
    /// prefix included, 0 for NULLTYPE); ``needsBytes`` when it is not all there; ``notScanned``
    /// when the scan does not take it: malformed (a length its type refuses, an odd UTF-16 byte
    /// count), an nchar/nvarchar longer than ``TokenStreamDecoder/wireTextLimit``, a `.decode`
    /// value ``checkedSize(at:available:)`` declines (the caller then checks it with the full
    /// decoder), a `.large` or `.unsupported` one. An nchar/nvarchar value's UTF-16 is not checked
    /// here (its transcoder checks it).
    ///
    /// Static, the column read in place through `c`: a copy of the column per value (it is ten
    /// words) costs the run more than the rule itself.
    @inline(__always)
    static func scannedSize(_ c: UnsafePointer<WireColumn>, _ p: UnsafePointer<UInt8>, at j: Int, end n: Int) -> Int {
        switch c.pointee.kind {
        case .fixed:
            return n - j >= c.pointee.size ? c.pointee.size : WireColumn.needsBytes
        case .byteLength:
            guard j < n else { return WireColumn.needsBytes }
            let len = Int(p[j])
            if len != 0 {
                if c.pointee.allowed != ~0 {
                    guard len < 64, c.pointee.allowed & (1 << UInt64(len)) != 0 else { return WireColumn.notScanned }
                }
                guard c.pointee.declared == 0 || len <= c.pointee.declared else { return WireColumn.notScanned }
            }
            return n - j - 1 >= len ? 1 + len : WireColumn.needsBytes
        case .utf16, .ushortBytes:
            guard n - j >= 2 else { return WireColumn.needsBytes }
            let len = Int(p[j]) | Int(p[j + 1]) << 8
            if len == 0xFFFF { return 2 }
            guard n - j - 2 >= len else { return WireColumn.needsBytes }
            if c.pointee.kind == .utf16 {
                guard len & 1 == 0, len <= TokenStreamDecoder.wireTextLimit else { return WireColumn.notScanned }
            }
            return 2 + len
        case .decode:
            guard j < n else { return WireColumn.needsBytes }
            let size = c.pointee.checkedSize(at: UnsafeRawPointer(p) + j, available: n - j)
            return size > 0 ? size : WireColumn.notScanned
        case .vector:
            return VectorCodec.scannedSize(c, p, at: j, end: n)
        case .large, .unsupported:
            return WireColumn.notScanned
        }
    }

    /// ``scannedSize(_:_:at:end:)``: the value is not all there.
    static let needsBytes = -1
    /// ``scannedSize(_:_:at:end:)``: the scan does not take the value.
    static let notScanned = -2

    /// The byte count (length byte included) of the `.decode` value at `p`, `available` bytes
    /// readable (at least 1), when it is a common case read in place; 0 when it declines it
    /// (incomplete, malformed, a decimal magnitude beyond its precision): the caller then checks
    /// it with ``decodeValue(from:)``.
    ///
    /// Only checks, never builds the value: the row scan checks every value this way, and the
    /// value is built once, when it is read. ``quickValue(at:available:size:)`` is this check and
    /// then the block's own read. Accepts only what the full decoder accepts, with the same size
    /// (WireRowBlockTests checks it on every `.decode` type).
    ///
    /// Never inlined: the scan calls it (inlined into the scan, it made the scan pay one more
    /// uniqueness check a row).
    @inline(never)
    func checkedSize(at p: UnsafeRawPointer, available: Int) -> Int {
        @inline(__always) func u8(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        switch check {
        case .none: return u8(0) == 0 ? 1 : 0   // NULL; any other value by the full decoder
        case .datetime:   // FIXEDLEN: no length byte
            return available >= 8 && DateTimeCodec.isValid(at: p, count: 8) ? 8 : 0
        case .smallDateTime:
            return available >= 4 && DateTimeCodec.isValid(at: p, count: 4) ? 4 : 0
        case .variant: return SQLVariantCodec.checkedSize(at: p, available: available)
        case .codePageByteLength: return CharacterCodec.checkedCodePageSize(at: p, available: available, prefix: 1, declared: declared)
        case .codePageUShortLength: return CharacterCodec.checkedCodePageSize(at: p, available: available, prefix: 2, declared: 0)
        default: break
        }
        let n = Int(u8(0))
        if n == 0 { return 1 }   // NULL
        guard available > n, declared <= 0 || n <= declared else { return 0 }
        switch check {
        case .decimal:
            return DecimalCodec.checkedSize(at: p, count: n, dataLength: dataLength, magnitudeLimit: magnitudeLimit)
        case .datetime2:
            return DateTime73Codec.isDateTime2(at: p + 1, count: n, self) ? 1 + n : 0
        case .date:
            return DateTime73Codec.isDate(at: p + 1, count: n) ? 1 + n : 0
        case .time:
            return DateTime73Codec.isTime(at: p + 1, count: n, self) ? 1 + n : 0
        case .datetimeOffset:
            return DateTime73Codec.isDateTimeOffset(at: p + 1, count: n, self) ? 1 + n : 0
        case .datetimeN:
            return DateTimeCodec.isValid(at: p + 1, count: n) ? 1 + n : 0
        case .none, .datetime, .smallDateTime, .variant, .codePageByteLength, .codePageUShortLength:
            return 0
        }
    }

    /// Whether the value at `offset` (checked when appended) is NULL.
    func isNull(_ bytes: [UInt8], at offset: Int) -> Bool {
        switch kind {
        case .fixed: return size == 0
        case .byteLength: return bytes[offset] == 0
        case .utf16, .ushortBytes: return bytes[offset] == 0xFF && bytes[offset + 1] == 0xFF
        case .large: return bytes[offset ..< offset + 4].allSatisfy { $0 == 0xFF }   // largeNull
        case .vector: return bytes[offset] == 0xFF && bytes[offset + 1] == 0xFF
        case .decode:
            switch check {
            case .variant: return bytes[offset ..< offset + 4].allSatisfy { $0 == 0 }   // LONGLEN 0
            case .codePageUShortLength: return bytes[offset] == 0xFF && bytes[offset + 1] == 0xFF
            default:
                // Every other `.decode` type is BYTELEN except DATETIME and DATETIM4 (fixed, never NULL).
                return type != .datetime && type != .datetim4 && bytes[offset] == 0
            }
        case .unsupported: return false
        }
    }
}
