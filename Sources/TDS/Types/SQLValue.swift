import Foundation

/// A decoded column, parameter or return value, lossless.
///
/// The case follows the SQL Server type: `.string` for char/varchar/text/nchar/nvarchar/ntext,
/// `.binary` for binary/varbinary/image/timestamp, `.udt` for raw CLR UDT bytes, `.variant` for
/// sql_variant (its base type and value). ``canonicalText`` is the text listed in the README's
/// type mapping table (column "canonical text"); nil for NULL.
public enum SQLValue: Hashable, Sendable, CustomStringConvertible {
    /// NULL, of any type. Canonical text: none (nil).
    case null
    /// bit ([MS-TDS] 2.2.5.4.1 BITTYPE/BITNTYPE). Text `1` or `0`.
    case bit(Bool)
    /// tinyint, 0…255 (INT1TYPE). Text in decimal.
    case tinyint(UInt8)
    /// smallint (INT2TYPE). Text in decimal.
    case smallint(Int16)
    /// int (INT4TYPE). Text in decimal.
    case int(Int32)
    /// bigint (INT8TYPE). Text in decimal.
    case bigint(Int64)
    /// real, 4-byte IEEE 754 (FLT4TYPE). Text: Swift's shortest round-trip `description`.
    case real(Float)
    /// float, 8-byte IEEE 754 (FLT8TYPE). Text: Swift's shortest round-trip `description` (`1.5`, `1e+16`).
    case float(Double)
    /// decimal/numeric(p,s), exact to 38 digits (2.2.5.5.1.6). Text with exactly `s` digits after the point.
    case decimal(SQLDecimal)
    /// money, exact in units of 1/10000 (2.2.5.5.1.4). Text with 4 digits after the point.
    case money(SQLMoney)
    /// smallmoney, exact in units of 1/10000. Text with 4 digits after the point.
    case smallMoney(SQLMoney)
    /// date, days since 0001-01-01 (2.2.5.5.1.8). Text `YYYY-MM-DD`.
    case date(SQLDate)
    /// time(n), 100 ns ticks since midnight and the scale. Text `hh:mm:ss[.f…]` with `n` fraction digits.
    case time(SQLTime)
    /// datetime2(n), no time zone. Text `YYYY-MM-DD hh:mm:ss[.f…]` with `n` fraction digits.
    case datetime2(SQLDateTime2)
    /// datetimeoffset(n): UTC instant and offset. Text: the local time (UTC plus the offset) then ` +hh:mm`/` -hh:mm`.
    case datetimeOffset(SQLDateTimeOffset)
    /// datetime, days since 1900-01-01 and 1/300 s ticks (2.2.5.5.1.8). Text `YYYY-MM-DD hh:mm:ss.fff`
    /// rounded as SQL Server displays it (.000, .003, .007).
    case datetime(SQLDateTime)
    /// smalldatetime, days since 1900-01-01 and minutes. Text `YYYY-MM-DD hh:mm:00`.
    case smallDateTime(SQLSmallDateTime)
    /// uniqueidentifier (GUIDTYPE), bytes in SQL Server's mixed-endian order decoded. Text uppercase `8-4-4-4-12`.
    case uniqueIdentifier(UUID)
    /// char, varchar, text, nchar, nvarchar, ntext (and `max`), decoded with the column's
    /// collation code page (or UTF-8/UTF-16). Text: the string itself.
    case string(String)
    /// xml (2.2.5.5.3). Text: the document.
    case xml(String)
    /// binary, varbinary, image, timestamp/rowversion. Text `0x` + uppercase hex.
    case binary([UInt8])
    /// sql_variant: its base type and value (2.2.5.5.4). Text: the base value's text.
    indirect case variant(SQLVariant)
    /// A CLR user-defined type's bytes, uninterpreted (geography, hierarchyid…). Text `0x` + uppercase hex.
    case udt([UInt8])
    /// json, SQL Server 2025 (JSONTYPE 0xF4: PLP UTF-8 text). Text: the document.
    case json(String)
    /// vector(n), SQL Server 2025 (VECTORTYPE 0xF5): float32 or float16 elements. Text: a JSON
    /// array of the elements (``SQLVector/jsonText``, `[1.0,-2.5]`).
    case vector(SQLVector)

    /// True for ``null`` (a variant is never NULL itself: its base value may be).
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// The canonical text of the value, as each case's documentation gives it (the `sqlclient`
    /// command prints it; the conformance tests compare it with other clients); nil for NULL.
    public var canonicalText: String? {
        switch self {
        case .null: return nil
        case .bit(let b): return b ? "1" : "0"
        case .tinyint(let v): return String(v)
        case .smallint(let v): return String(v)
        case .int(let v): return String(v)
        case .bigint(let v): return String(v)
        case .real(let v): return v.description
        case .float(let v): return v.description
        case .decimal(let v): return v.canonicalText
        case .money(let v), .smallMoney(let v): return v.canonicalText
        case .date(let v): return v.canonicalText
        case .time(let v): return v.canonicalText
        case .datetime2(let v): return v.canonicalText
        case .datetimeOffset(let v): return v.canonicalText
        case .datetime(let v): return v.canonicalText
        case .smallDateTime(let v): return v.canonicalText
        case .uniqueIdentifier(let u): return u.uuidString.uppercased()
        case .string(let s), .xml(let s), .json(let s): return s
        case .binary(let b), .udt(let b): return SQLValue.hexText(b)
        case .variant(let v): return v.value.canonicalText
        case .vector(let v): return v.jsonText
        }
    }

    public var description: String { canonicalText ?? "NULL" }

    /// "0x" + uppercase hex.
    public static func hexText(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(2 + bytes.count * 2)
        out.append(UInt8(ascii: "0")); out.append(UInt8(ascii: "x"))
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The value unwrapped from a sql_variant (self otherwise).
    public var baseValue: SQLValue {
        if case .variant(let v) = self { return v.value.baseValue }
        return self
    }

    // MARK: Conversions to Swift/Foundation types (nil when NULL or not representable)

    /// Integers, bit, and decimals/money with no fractional part that fit in Int.
    public var intValue: Int? {
        switch baseValue {
        case .bit(let b): return b ? 1 : 0
        case .tinyint(let v): return Int(v)
        case .smallint(let v): return Int(v)
        case .int(let v): return Int(v)
        case .bigint(let v): return Int(exactly: v)
        case .decimal(let d):
            let p = UInt128(Civil.pow10(Int(d.scale)))
            guard p != 0, d.magnitude % p == 0, let m = Int(exactly: d.magnitude / p) else { return nil }
            return d.isNegative ? -m : m
        case .money(let m), .smallMoney(let m):
            guard m.units % 10_000 == 0 else { return nil }
            return Int(m.units / 10_000)
        default: return nil
        }
    }

    /// Numbers as Double (decimal and money may round).
    public var doubleValue: Double? {
        switch baseValue {
        case .bit(let b): return b ? 1 : 0
        case .tinyint(let v): return Double(v)
        case .smallint(let v): return Double(v)
        case .int(let v): return Double(v)
        case .bigint(let v): return Double(v)
        case .real(let v): return Double(v)
        case .float(let v): return v
        case .decimal(let d): return d.doubleValue
        case .money(let m), .smallMoney(let m): return m.doubleValue
        default: return nil
        }
    }

    /// Exact for integers, decimal and money.
    public var decimalValue: Decimal? {
        switch baseValue {
        case .decimal(let d): return d.decimalValue
        case .money(let m), .smallMoney(let m): return m.decimalValue
        case .tinyint(let v): return Decimal(Int(v))
        case .smallint(let v): return Decimal(Int(v))
        case .int(let v): return Decimal(Int(v))
        case .bigint(let v): return Decimal(v)
        case .bit(let b): return b ? 1 : 0
        case .real(let v): return Decimal(Double(v))
        case .float(let v): return Decimal(v)
        default: return nil
        }
    }

    /// bit as is; an integer as `!= 0`; nil for other types.
    public var boolValue: Bool? {
        switch baseValue {
        case .bit(let b): return b
        case .tinyint, .smallint, .int, .bigint: return intValue.map { $0 != 0 }
        default: return nil
        }
    }

    /// Character, xml and json text, and a vector's JSON array text; nil for other types (use
    /// ``canonicalText`` for display).
    public var stringValue: String? {
        switch baseValue {
        case .string(let s), .xml(let s), .json(let s): return s
        case .vector(let v): return v.jsonText
        default: return nil
        }
    }

    /// A vector's elements; or the elements of a JSON array of numbers held as text (json,
    /// varchar/nvarchar: what a server that did not acknowledge VECTORSUPPORT sends for a vector
    /// column, `[1.0000000e+000,2.0000000e+000]`); nil for anything else.
    public var floatsValue: [Float]? { vectorValue?.values }

    /// A vector; or one read from a JSON array of numbers held as text (see ``floatsValue``);
    /// nil for anything else.
    public var vectorValue: SQLVector? {
        switch baseValue {
        case .vector(let v): return v
        case .string(let s), .json(let s): return SQLVector(jsonArray: s)
        default: return nil
        }
    }

    /// A uniqueidentifier's UUID; nil for other types.
    public var uuidValue: UUID? {
        if case .uniqueIdentifier(let u) = baseValue { return u }
        return nil
    }

    /// Binary, image, timestamp and UDT bytes; json as its UTF-8; a vector's wire bytes
    /// (its 8-byte header and elements, as `CAST(v AS varbinary(8000))` gives them).
    public var bytesValue: [UInt8]? {
        switch baseValue {
        case .binary(let b), .udt(let b): return b
        case .json(let s): return Array(s.utf8)
        case .vector(let v): return try? v.wireBytes()
        default: return nil
        }
    }

    /// ``bytesValue`` as `Data`.
    public var dataValue: Data? { bytesValue.map { Data($0) } }

    /// date, datetime, smalldatetime and datetime2 read as wall-clock time in `timeZone`
    /// (UTC by default); datetimeoffset converts exactly and ignores `timeZone`.
    public func dateValue(in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> Date? {
        switch baseValue {
        case .date(let d): return d.date(in: timeZone)
        case .datetime2(let d): return d.date(in: timeZone)
        case .datetime(let d): return d.date(in: timeZone)
        case .smallDateTime(let d): return d.date(in: timeZone)
        case .datetimeOffset(let d): return d.date
        default: return nil
        }
    }
}

/// [MS-TDS] 2.2.5.5.4 sql_variant: the base type (a TYPE_INFO built from the variant's base type
/// byte and properties) and the value.
public struct SQLVariant: Hashable, Sendable {
    /// The base type (for example `int`, `nvarchar(30)` with its collation, `decimal(10,2)`).
    public var baseType: TypeInfo
    /// The value, decoded as a value of ``baseType``.
    public var value: SQLValue
    /// A variant of `baseType` holding `value`.
    public init(baseType: TypeInfo, value: SQLValue) {
        self.baseType = baseType
        self.value = value
    }
}

extension Civil {
    /// 10^0 ... 10^38 (a literal table: read without a lazy-initialization check).
    static let powersOf10Wide: [UInt128] = [
        1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000, 10000000000, 100000000000,
        1000000000000, 10000000000000, 100000000000000, 1000000000000000, 10000000000000000, 100000000000000000,
        1000000000000000000, 10000000000000000000, 100000000000000000000, 1000000000000000000000,
        10000000000000000000000, 100000000000000000000000, 1000000000000000000000000, 10000000000000000000000000,
        100000000000000000000000000, 1000000000000000000000000000, 10000000000000000000000000000,
        100000000000000000000000000000, 1000000000000000000000000000000, 10000000000000000000000000000000,
        100000000000000000000000000000000, 1000000000000000000000000000000000, 10000000000000000000000000000000000,
        100000000000000000000000000000000000, 1000000000000000000000000000000000000,
        10000000000000000000000000000000000000, 100000000000000000000000000000000000000
    ]

    /// 10^n, n clamped to 0...38.
    static func pow10(_ n: Int) -> UInt128 {
        powersOf10Wide[min(max(n, 0), 38)]
    }
}
