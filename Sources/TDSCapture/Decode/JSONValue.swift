import TDS

/// How numbers are written in `sqlclient`'s JSON (`--format json|jsonl` and `decode --format json`
/// share it): by default every number is exact for any JSON reader, including one that reads
/// numbers as IEEE doubles (JavaScript, jq 1.6): integers between -(2^53 - 1) and 2^53 - 1 are
/// numbers, larger ones strings of their digits; decimal, numeric, money and smallmoney values are
/// strings of their exact digits. With `--json-numbers` (``numbers``) they are all JSON numbers, for
/// readers that keep a number's text (Python's `json` with `parse_float=Decimal`, jq 1.7, Jackson
/// with BigDecimal). Floats (real, float) are numbers either way: their shortest text that reads back
/// as the same binary value.
public enum JSONNumberRule: Sendable, Hashable {
    /// Integers beyond ±(2^53 - 1) and exact decimals as strings (the default).
    case exactForAnyReader
    /// Every integer and exact decimal as a JSON number (`--json-numbers`).
    case numbers

    /// The largest integer every JSON reader holds exactly: 2^53 - 1.
    public static let maximumSafeInteger: Int64 = 9_007_199_254_740_991
}

/// A JSON value whose objects keep their key order, for stable `--format json` output.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])
    /// A floating-point number's JSON text, written as is (a double is what it is).
    case number(String)
    /// The exact digits of a decimal, numeric or money value: a string, or a JSON number under
    /// ``JSONNumberRule/numbers``.
    case decimal(String)

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.serialized() == b.serialized() }
    public func hash(into hasher: inout Hasher) { hasher.combine(serialized()) }

    /// The member named `key` of an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first { $0.0 == key }?.1 }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .uint(let u): return u <= UInt64(Int64.max) ? Int64(u) : nil
        default: return nil
        }
    }

    /// Compact JSON text (RFC 8259), keys in insertion order, strings escaped, numbers by `rule`.
    public func serialized(_ rule: JSONNumberRule = .exactForAnyReader) -> String {
        var out = ""
        write(into: &out, rule)
        return out
    }

    func write(into out: inout String, _ rule: JSONNumberRule) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i):
            let safe = rule == .numbers || (i >= -JSONNumberRule.maximumSafeInteger && i <= JSONNumberRule.maximumSafeInteger)
            out += safe ? String(i) : "\"\(i)\""
        case .uint(let u):
            let safe = rule == .numbers || u <= UInt64(JSONNumberRule.maximumSafeInteger)
            out += safe ? String(u) : "\"\(u)\""
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .number(let text): out += text
        case .decimal(let text):
            if rule == .numbers { out += text } else { JSONValue.writeString(text, into: &out) }
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(into: &out, rule)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(key, into: &out)
                out += ":"
                value.write(into: &out, rule)
            }
            out += "}"
        }
    }

    /// A SQL value by the one JSON rule of `sqlclient` (``JSONNumberRule``): NULL is null; bit,
    /// tinyint, smallint, int and bigint are integers (bit 0 or 1); real and float are numbers
    /// (non-finite ones, which SQL Server never sends, strings); decimal, numeric, money and
    /// smallmoney are ``decimal(_:)``; a sql_variant is its base value; a vector (SQL Server
    /// 2025) is an array of its elements as numbers; everything else is its canonical text in a
    /// string (dates, times, GUIDs, binary as `0x…`, json as its text).
    public static func sqlValue(_ value: SQLValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .bit(let b): return .int(b ? 1 : 0)
        case .tinyint(let v): return .int(Int64(v))
        case .smallint(let v): return .int(Int64(v))
        case .int(let v): return .int(Int64(v))
        case .bigint(let v): return .int(v)
        case .real(let v) where v.isFinite: return floatText(value.canonicalText)
        case .float(let v) where v.isFinite: return floatText(value.canonicalText)
        case .decimal, .money, .smallMoney: return value.canonicalText.map(JSONValue.decimal) ?? .null
        case .variant(let v): return sqlValue(v.value)
        case .vector(let v):   // a JSON array of numbers (elements are finite: the codec refuses others)
            return .array(v.map { floatText($0.description) })
        default: return value.canonicalText.map(JSONValue.string) ?? .null
        }
    }

    /// `text` as a JSON number when it is one (Swift's shortest text of a finite float always
    /// is: `1.5`, `-0.0`, `1e+16`), else as a string.
    static func floatText(_ text: String?) -> JSONValue {
        guard let text else { return .null }
        let ok = text.first != "." && text.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || "-+.e".unicodeScalars.contains($0) }
        return ok ? .number(text) : .string(text)
    }

    static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

extension JSONValue {
    /// `0x` and uppercase hex, as the canonical text of binary values.
    static func hex(_ bytes: [UInt8]) -> JSONValue {
        .string(hexText(bytes))
    }

    static func hexText(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF")
        var s = "0x"
        s.reserveCapacity(2 + bytes.count * 2)
        for b in bytes { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 0x0F)]) }
        return s
    }
}
