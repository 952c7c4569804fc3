import Foundation
import SQLClient
import TDS

/// Parsing of `--param`, `--output`, `--inout` and `--default` arguments of `sqlclient --exec`:
/// SQL type names (`int`, `decimal(10,2)`, `nvarchar(max)`, `datetime2(3)`…) and values in their
/// canonical text (SQLValue.canonicalText: `2024-02-29`, `13:14:15.123`, `2024-02-29 13:14:15 +02:00`, `0xDEAD`…).
enum ProcedureArguments {
    struct ParseError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// A SQL Server type name as TYPE_INFO.
    static func typeInfo(_ text: String) throws -> TypeInfo {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        var base = t
        var args: [String] = []
        if let open = t.firstIndex(of: "("), t.hasSuffix(")") {
            base = String(t[..<open]).trimmingCharacters(in: .whitespaces)
            args = t[t.index(after: open) ..< t.index(before: t.endIndex)].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
        func n(_ i: Int, _ range: ClosedRange<Int>) throws -> Int {
            guard i < args.count, let v = Int(args[i]), range.contains(v) else { throw ParseError("bad size in \(text)") }
            return v
        }
        func length(_ max: Int, default d: Int) throws -> Int? {
            if args.isEmpty { return d }
            if args.first == "max" { return nil }
            return try n(0, 1...max)
        }
        switch base {
        case "int": return .int
        case "bigint": return .bigint
        case "smallint": return .smallint
        case "tinyint": return .tinyint
        case "bit": return .bit
        case "float": return .float
        case "real": return .real
        case "money": return .money
        case "smallmoney": return .smallMoney
        case "date": return .date
        case "datetime": return .datetime
        case "smalldatetime": return .smallDateTime
        case "uniqueidentifier": return .uniqueIdentifier
        case "xml": return .xml
        case "json": return .json
        case "vector":   // vector(n) or vector(n, float16)
            let element: SQLVector.ElementType = args.count > 1 && args[1].lowercased() == "float16" ? .float16 : .float32
            guard args.count < 2 || ["float16", "float32"].contains(args[1].lowercased()) else { throw ParseError("bad element type in \(text)") }
            return .vector(dimensions: try n(0, 1...element.maximumDimensions), elementType: element)
        case "decimal", "numeric":
            let p = args.isEmpty ? 18 : try n(0, 1...38)
            let s = args.count < 2 ? 0 : try n(1, 0...p)
            return base == "decimal" ? .decimal(precision: UInt8(p), scale: UInt8(s)) : .numeric(precision: UInt8(p), scale: UInt8(s))
        case "time", "datetime2", "datetimeoffset":
            let s = UInt8(args.isEmpty ? 7 : try n(0, 0...7))
            return base == "time" ? .time(scale: s) : base == "datetime2" ? .datetime2(scale: s) : .datetimeOffset(scale: s)
        case "varchar": return .varchar(try length(8000, default: 8000))
        case "nvarchar": return .nvarchar(try length(4000, default: 4000))
        case "varbinary": return .varbinary(try length(8000, default: 8000))
        case "char": return .char(try length(8000, default: 1) ?? 8000)
        case "nchar": return .nchar(try length(4000, default: 1) ?? 4000)
        case "binary": return .binary(try length(8000, default: 1) ?? 8000)
        default: throw ParseError("unknown type \(text)")
        }
    }

    /// `text` as a value of `info`; `NULL` (any case) is NULL.
    static func value(_ text: String, as info: TypeInfo) throws -> SQLValue {
        if text.uppercased() == "NULL" { return .null }
        func bad() -> ParseError { ParseError("\"\(text)\" is not a valid \(info.sqlTypeName)") }
        let name = info.sqlTypeName
        switch name {
        case "int": guard let v = Int32(text) else { throw bad() }; return .int(v)
        case "bigint": guard let v = Int64(text) else { throw bad() }; return .bigint(v)
        case "smallint": guard let v = Int16(text) else { throw bad() }; return .smallint(v)
        case "tinyint": guard let v = UInt8(text) else { throw bad() }; return .tinyint(v)
        case "bit":
            switch text.lowercased() {
            case "1", "true": return .bit(true)
            case "0", "false": return .bit(false)
            default: throw bad()
            }
        case "float": guard let v = Double(text) else { throw bad() }; return .float(v)
        case "real": guard let v = Float(text) else { throw bad() }; return .real(v)
        case "money", "smallmoney":
            guard let d = SQLDecimal(text), let r = d.rescaled(to: 4),
                  let units = Int64(exactly: r.isNegative ? -Int128(r.magnitude) : Int128(r.magnitude)) else { throw bad() }
            let m = SQLMoney(units: units)
            return name == "money" ? .money(m) : .smallMoney(m)
        case "uniqueidentifier": guard let u = UUID(uuidString: text) else { throw bad() }; return .uniqueIdentifier(u)
        case "date": guard let d = date(text) else { throw bad() }; return .date(d)
        case "datetime", "smalldatetime":
            guard let dt = dateTime2(text, scale: 7) else { throw bad() }
            let date = dt.date(in: TimeZone(secondsFromGMT: 0) ?? .current)
            if name == "datetime" { guard let v = SQLDateTime(date) else { throw bad() }; return .datetime(v) }
            guard let v = SQLSmallDateTime(date) else { throw bad() }
            return .smallDateTime(v)
        default: break
        }
        switch info.type {
        case .decimalN, .numericN:
            guard let d = SQLDecimal(text), let r = d.rescaled(to: info.scale) else { throw bad() }
            return .decimal(SQLDecimal(isNegative: r.isNegative, precision: info.precision, scale: info.scale, magnitude: r.magnitude))
        case .timeN: guard let t = time(text, scale: info.scale) else { throw bad() }; return .time(t)
        case .datetime2N: guard let d = dateTime2(text, scale: info.scale) else { throw bad() }; return .datetime2(d)
        case .datetimeOffsetN:
            // local time then " +hh:mm" / " -hh:mm"
            guard text.count > 7 else { throw bad() }
            let offsetText = String(text.suffix(6))
            let sign = offsetText.hasPrefix("-") ? -1 : 1
            let parts = offsetText.dropFirst().split(separator: ":")
            guard offsetText.first == "+" || offsetText.first == "-", parts.count == 2,
                  let h = Int(parts[0]), let m = Int(parts[1]), (0...14).contains(h), (0...59).contains(m),
                  let local = dateTime2(String(text.dropLast(6)).trimmingCharacters(in: .whitespaces), scale: info.scale) else { throw bad() }
            let minutes = sign * (h * 60 + m)
            guard (-840...840).contains(minutes) else { throw bad() }
            return .datetimeOffset(SQLDateTimeOffset(local: local, offsetMinutes: Int16(minutes)))
        case .bigVarBinary, .bigBinary:
            guard let bytes = hex(text) else { throw bad() }
            return .binary(bytes)
        case .xml: return .xml(text)
        case .json: return .json(text)
        case .vector:
            guard let v = SQLVector(jsonArray: text, elementType: info.vectorElementType ?? .float32) else { throw bad() }
            return .vector(v)
        default: return .string(text)
        }
    }

    static func date(_ text: String) -> SQLDate? {
        let p = text.split(separator: "-").compactMap { Int($0) }
        guard p.count == 3 else { return nil }
        return SQLDate(year: p[0], month: p[1], day: p[2])
    }

    static func time(_ text: String, scale: UInt8) -> SQLTime? {
        let main = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let clock = main.first else { return nil }
        let hms = clock.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3 else { return nil }
        var fraction: UInt64 = 0
        if main.count == 2 {
            let digits = String(main[1].prefix(Int(scale))).padding(toLength: Int(scale), withPad: "0", startingAt: 0)
            guard let f = UInt64(digits.isEmpty ? "0" : digits) else { return nil }
            fraction = f
        }
        return SQLTime(hour: hms[0], minute: hms[1], second: hms[2], fraction: fraction, scale: scale)
    }

    static func dateTime2(_ text: String, scale: UInt8) -> SQLDateTime2? {
        let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard let first = parts.first, let d = date(first) else { return nil }
        let t = parts.count == 2 ? time(parts[1], scale: scale) : SQLTime(ticks: 0, scale: scale)
        return t.map { SQLDateTime2(date: d, time: $0) }
    }

    static func hex(_ text: String) -> [UInt8]? {
        var s = Substring(text)
        if s.hasPrefix("0x") || s.hasPrefix("0X") { s = s.dropFirst(2) }
        guard s.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            guard let b = UInt8(s[i ..< j], radix: 16) else { return nil }
            out.append(b)
            i = j
        }
        return out
    }

    /// `@name[:type]=value` (`--param`), `@name:type` (`--output`), `@name[:type]=value` (`--inout`).
    /// Without a type the value is an int (bigint when larger) if it is an integer, else nvarchar.
    static func parameter(_ spec: String, direction: SQLParameter.Direction) throws -> SQLParameter {
        var head = spec
        var valueText: String?
        if direction != .output {
            guard let eq = spec.firstIndex(of: "=") else { throw ParseError("\(spec): expected @name=value") }
            head = String(spec[..<eq])
            valueText = String(spec[spec.index(after: eq)...])
        }
        let name: String
        var type: TypeInfo?
        if let colon = head.firstIndex(of: ":") {
            name = String(head[..<colon])
            type = try typeInfo(String(head[head.index(after: colon)...]))
        } else {
            name = head
        }
        guard !name.isEmpty else { throw ParseError("\(spec): the parameter needs a name") }
        if direction == .output {
            guard let type else { throw ParseError("\(spec): an output parameter needs a type (@name:type)") }
            if var typed = sessionCollated("NULL", as: type) {
                typed.direction = .output
                return typed.named(name)
            }
            return .output(name, type: type)
        }
        let text = valueText ?? ""
        let info: TypeInfo
        if let type {
            info = type
        } else if Int32(text) != nil {
            info = .int
        } else if Int64(text) != nil {
            info = .bigint
        } else {
            info = .nvarchar(text.utf16.count <= 4000 ? 4000 : nil)
        }
        if let typed = sessionCollated(text, as: info) {
            var p = typed.named(name)
            p.direction = direction
            return p
        }
        return SQLParameter(try value(text, as: info), type: info, name: name, direction: direction)
    }

    /// A character parameter (`varchar`, `char`, `nvarchar`, `nchar`) built as the library documents
    /// it: with ``SQLParameter/varchar(_:length:collation:)`` and its siblings, so that without a
    /// collation it is declared with the session's and encoded in that collation's code page (on a
    /// Cyrillic_General_CI_AS session `@s:varchar=Привет` goes as cp1251 bytes). Nil for other types.
    static func sessionCollated(_ text: String, as info: TypeInfo) -> SQLParameter? {
        let value: String? = text.uppercased() == "NULL" ? nil : text
        let length: Int? = info.isPLP ? nil : info.length
        switch info.type {
        case .bigVarChar, .varchar: return .varchar(value, length: length)
        case .bigChar, .char: return .char(value, length: info.length)
        case .nvarchar: return .nvarchar(value, length: length.map { $0 / 2 })
        case .nchar: return .nchar(value, length: info.length / 2)
        default: return nil
        }
    }
}
