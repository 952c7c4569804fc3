/// [MS-TDS] 2.2.5.4 Data type definitions: the one-byte type of a TYPE_INFO.
///
/// Names follow the spec with the `TYPE` suffix removed and lower camel case:
/// `INT1TYPE` -> ``int1``, `INTNTYPE` -> ``intN``, `NVARCHARTYPE` -> ``nvarchar``.
/// Any byte can be represented (unknown bytes come from hostile input); ``isKnown`` tells
/// whether [MS-TDS] defines it. ``name`` is the spec name without `TYPE` ("INTN", "NVARCHAR").
public struct TDSDataType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The type for byte `rawValue` (any byte: see ``isKnown``).
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    // MARK: 2.2.5.4.1 Fixed-length data types (no length in TYPE_INFO or value)
    /// NULLTYPE (0x1F): a NULL with no data.
    @inlinable public static var null: TDSDataType { TDSDataType(0x1F) }
    /// INT1TYPE (0x30): tinyint, 1 byte unsigned.
    @inlinable public static var int1: TDSDataType { TDSDataType(0x30) }
    /// BITTYPE (0x32): bit, 1 byte.
    @inlinable public static var bit: TDSDataType { TDSDataType(0x32) }
    /// INT2TYPE (0x34): smallint, 2 bytes.
    @inlinable public static var int2: TDSDataType { TDSDataType(0x34) }
    /// INT4TYPE (0x38): int, 4 bytes.
    @inlinable public static var int4: TDSDataType { TDSDataType(0x38) }
    /// DATETIM4TYPE (0x3A): smalldatetime, 4 bytes.
    @inlinable public static var datetim4: TDSDataType { TDSDataType(0x3A) }
    /// FLT4TYPE (0x3B): real, 4 bytes.
    @inlinable public static var flt4: TDSDataType { TDSDataType(0x3B) }
    /// MONEYTYPE (0x3C): money, 8 bytes.
    @inlinable public static var money: TDSDataType { TDSDataType(0x3C) }
    /// DATETIMETYPE (0x3D): datetime, 8 bytes.
    @inlinable public static var datetime: TDSDataType { TDSDataType(0x3D) }
    /// FLT8TYPE (0x3E): float, 8 bytes.
    @inlinable public static var flt8: TDSDataType { TDSDataType(0x3E) }
    /// MONEY4TYPE (0x7A): smallmoney, 4 bytes.
    @inlinable public static var money4: TDSDataType { TDSDataType(0x7A) }
    /// INT8TYPE (0x7F): bigint, 8 bytes.
    @inlinable public static var int8: TDSDataType { TDSDataType(0x7F) }

    // MARK: 2.2.5.4.2 Variable-length data types
    /// GUIDTYPE (0x24): uniqueidentifier (BYTELEN, 16).
    @inlinable public static var guid: TDSDataType { TDSDataType(0x24) }
    /// INTNTYPE (0x26): nullable integer (BYTELEN 1, 2, 4 or 8).
    @inlinable public static var intN: TDSDataType { TDSDataType(0x26) }
    /// DECIMALTYPE (0x37): legacy decimal (BYTELEN, precision, scale).
    @inlinable public static var decimal: TDSDataType { TDSDataType(0x37) }
    /// NUMERICTYPE (0x3F): legacy numeric (BYTELEN, precision, scale).
    @inlinable public static var numeric: TDSDataType { TDSDataType(0x3F) }
    /// BITNTYPE (0x68): nullable bit (BYTELEN 1).
    @inlinable public static var bitN: TDSDataType { TDSDataType(0x68) }
    /// DECIMALNTYPE (0x6A): decimal (BYTELEN, precision, scale).
    @inlinable public static var decimalN: TDSDataType { TDSDataType(0x6A) }
    /// NUMERICNTYPE (0x6C): numeric (BYTELEN, precision, scale).
    @inlinable public static var numericN: TDSDataType { TDSDataType(0x6C) }
    /// FLTNTYPE (0x6D): nullable real/float (BYTELEN 4 or 8).
    @inlinable public static var fltN: TDSDataType { TDSDataType(0x6D) }
    /// MONEYNTYPE (0x6E): nullable smallmoney/money (BYTELEN 4 or 8).
    @inlinable public static var moneyN: TDSDataType { TDSDataType(0x6E) }
    /// DATETIMNTYPE (0x6F): nullable smalldatetime/datetime (BYTELEN 4 or 8).
    @inlinable public static var datetimN: TDSDataType { TDSDataType(0x6F) }
    /// DATENTYPE (0x28): date, TDS 7.3+ (no length in TYPE_INFO; value 0 or 3 bytes).
    @inlinable public static var dateN: TDSDataType { TDSDataType(0x28) }
    /// TIMENTYPE (0x29): time(scale), TDS 7.3+.
    @inlinable public static var timeN: TDSDataType { TDSDataType(0x29) }
    /// DATETIME2NTYPE (0x2A): datetime2(scale), TDS 7.3+.
    @inlinable public static var datetime2N: TDSDataType { TDSDataType(0x2A) }
    /// DATETIMEOFFSETNTYPE (0x2B): datetimeoffset(scale), TDS 7.3+.
    @inlinable public static var datetimeOffsetN: TDSDataType { TDSDataType(0x2B) }
    /// CHARTYPE (0x2F): legacy char (BYTELEN).
    @inlinable public static var char: TDSDataType { TDSDataType(0x2F) }
    /// VARCHARTYPE (0x27): legacy varchar (BYTELEN).
    @inlinable public static var varchar: TDSDataType { TDSDataType(0x27) }
    /// BINARYTYPE (0x2D): legacy binary (BYTELEN).
    @inlinable public static var binary: TDSDataType { TDSDataType(0x2D) }
    /// VARBINARYTYPE (0x25): legacy varbinary (BYTELEN).
    @inlinable public static var varbinary: TDSDataType { TDSDataType(0x25) }
    /// BIGVARBINARYTYPE (0xA5): varbinary(n) / varbinary(max) (USHORTLEN; 0xFFFF = PLP).
    @inlinable public static var bigVarBinary: TDSDataType { TDSDataType(0xA5) }
    /// BIGVARCHARTYPE (0xA7): varchar(n) / varchar(max) (USHORTLEN + collation; 0xFFFF = PLP).
    @inlinable public static var bigVarChar: TDSDataType { TDSDataType(0xA7) }
    /// BIGBINARYTYPE (0xAD): binary(n), also timestamp/rowversion (USHORTLEN).
    @inlinable public static var bigBinary: TDSDataType { TDSDataType(0xAD) }
    /// BIGCHARTYPE (0xAF): char(n) (USHORTLEN + collation).
    @inlinable public static var bigChar: TDSDataType { TDSDataType(0xAF) }
    /// NVARCHARTYPE (0xE7): nvarchar(n) / nvarchar(max) (USHORTLEN + collation; 0xFFFF = PLP).
    @inlinable public static var nvarchar: TDSDataType { TDSDataType(0xE7) }
    /// NCHARTYPE (0xEF): nchar(n) (USHORTLEN + collation).
    @inlinable public static var nchar: TDSDataType { TDSDataType(0xEF) }
    /// XMLTYPE (0xF1): xml, TDS 7.2+ (schema info; values are PLP).
    @inlinable public static var xml: TDSDataType { TDSDataType(0xF1) }
    /// UDTTYPE (0xF0): CLR user-defined type, TDS 7.2+ (values are PLP).
    @inlinable public static var udt: TDSDataType { TDSDataType(0xF0) }
    /// TEXTTYPE (0x23): text (LONGLEN + collation).
    @inlinable public static var text: TDSDataType { TDSDataType(0x23) }
    /// IMAGETYPE (0x22): image (LONGLEN).
    @inlinable public static var image: TDSDataType { TDSDataType(0x22) }
    /// NTEXTTYPE (0x63): ntext (LONGLEN + collation).
    @inlinable public static var ntext: TDSDataType { TDSDataType(0x63) }
    /// SSVARIANTTYPE (0x62): sql_variant (LONGLEN).
    @inlinable public static var ssVariant: TDSDataType { TDSDataType(0x62) }
    /// JSONTYPE (0xF4): json, SQL Server 2025 (JSONSUPPORT feature; TYPE_INFO is the type byte
    /// alone; values are PLP holding UTF-8 text).
    @inlinable public static var json: TDSDataType { TDSDataType(0xF4) }
    /// VECTORTYPE (0xF5): vector(n), SQL Server 2025 (VECTORSUPPORT feature; USHORTLEN maximum
    /// length and an element type byte; values USHORTLEN, an 8-byte header then the elements).
    @inlinable public static var vector: TDSDataType { TDSDataType(0xF5) }

    /// Every type byte [MS-TDS] 2.2.5.4 defines, and SQL Server 2025's json and vector.
    public static let allKnown: [TDSDataType] = [
        .null, .int1, .bit, .int2, .int4, .datetim4, .flt4, .money, .datetime, .flt8, .money4, .int8,
        .guid, .intN, .decimal, .numeric, .bitN, .decimalN, .numericN, .fltN, .moneyN, .datetimN,
        .dateN, .timeN, .datetime2N, .datetimeOffsetN, .char, .varchar, .binary, .varbinary,
        .bigVarBinary, .bigVarChar, .bigBinary, .bigChar, .nvarchar, .nchar, .xml, .udt,
        .text, .image, .ntext, .ssVariant, .json, .vector,
    ]

    /// The [MS-TDS] name without the `TYPE` suffix ("INTN", "NVARCHAR"), or "0xNN" if unknown.
    public var name: String {
        switch self {
        case .null: return "NULL"
        case .int1: return "INT1"
        case .bit: return "BIT"
        case .int2: return "INT2"
        case .int4: return "INT4"
        case .datetim4: return "DATETIM4"
        case .flt4: return "FLT4"
        case .money: return "MONEY"
        case .datetime: return "DATETIME"
        case .flt8: return "FLT8"
        case .money4: return "MONEY4"
        case .int8: return "INT8"
        case .guid: return "GUID"
        case .intN: return "INTN"
        case .decimal: return "DECIMAL"
        case .numeric: return "NUMERIC"
        case .bitN: return "BITN"
        case .decimalN: return "DECIMALN"
        case .numericN: return "NUMERICN"
        case .fltN: return "FLTN"
        case .moneyN: return "MONEYN"
        case .datetimN: return "DATETIMN"
        case .dateN: return "DATEN"
        case .timeN: return "TIMEN"
        case .datetime2N: return "DATETIME2N"
        case .datetimeOffsetN: return "DATETIMEOFFSETN"
        case .char: return "CHAR"
        case .varchar: return "VARCHAR"
        case .binary: return "BINARY"
        case .varbinary: return "VARBINARY"
        case .bigVarBinary: return "BIGVARBINARY"
        case .bigVarChar: return "BIGVARCHAR"
        case .bigBinary: return "BIGBINARY"
        case .bigChar: return "BIGCHAR"
        case .nvarchar: return "NVARCHAR"
        case .nchar: return "NCHAR"
        case .xml: return "XML"
        case .udt: return "UDT"
        case .text: return "TEXT"
        case .image: return "IMAGE"
        case .ntext: return "NTEXT"
        case .ssVariant: return "SSVARIANT"
        case .json: return "JSON"
        case .vector: return "VECTOR"
        default:
            let hex = String(rawValue, radix: 16, uppercase: true)
            return "0x" + (hex.count < 2 ? "0" + hex : hex)
        }
    }

    public var description: String { name }

    /// Whether [MS-TDS] 2.2.5.4 defines this byte.
    public var isKnown: Bool { !name.hasPrefix("0x") }

    /// How the length of a value of this type is written ([MS-TDS] 2.2.5.4).
    public enum LengthKind: Sendable, Hashable {
        /// FIXEDLENTYPE: no length; `size` bytes.
        case fixed(size: Int)
        /// BYTELEN_TYPE: one length byte.
        case byteLength
        /// USHORTLEN_TYPE: two length bytes (0xFFFF max length marks PLP).
        case ushortLength
        /// LONGLEN_TYPE: four length bytes (text, ntext, image, sql_variant).
        case longLength
        /// Always PLP (xml, UDT).
        case plp
    }

    /// The length class of this type, or nil if the byte is unknown.
    public var lengthKind: LengthKind? {
        switch self {
        case .null: return .fixed(size: 0)
        case .int1, .bit: return .fixed(size: 1)
        case .int2: return .fixed(size: 2)
        case .int4, .datetim4, .flt4, .money4: return .fixed(size: 4)
        case .money, .datetime, .flt8, .int8: return .fixed(size: 8)
        case .guid, .intN, .decimal, .numeric, .bitN, .decimalN, .numericN, .fltN, .moneyN, .datetimN, .dateN, .timeN, .datetime2N, .datetimeOffsetN,
             .char, .varchar, .binary, .varbinary:
            return .byteLength
        case .bigVarBinary, .bigVarChar, .bigBinary, .bigChar, .nvarchar, .nchar, .vector: return .ushortLength
        case .text, .image, .ntext, .ssVariant: return .longLength
        case .udt, .xml, .json: return .plp
        default: return nil
        }
    }

    /// Whether TYPE_INFO of this type carries a 5-byte collation (char/varchar/nchar/nvarchar/text/ntext,
    /// TDS 7.1 and later).
    public var hasCollation: Bool {
        switch self {
        case .bigVarChar, .bigChar, .nvarchar, .nchar, .text, .ntext: return true
        default: return false
        }
    }
}
