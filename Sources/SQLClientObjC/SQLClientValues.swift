import Foundation
import SQLClient

// Values: SQLValue → Foundation objects for results, Foundation objects → SQLParameter for
// execute(_:parameters:completion:). Every conversion goes through the core's own codecs
// (SQLValue's accessors, SQLDate/SQLDateTime2 date conversions); nothing is re-decoded here.

extension SQLClient {
    /// A result's tables: one per result set (a statement without one adds none), rows as
    /// dictionaries keyed as `SQLColumns/dictionaryKeys` (the column name; `column<n>` for an
    /// unnamed column, `<name>_<k>` for a repeated one, so no value is lost).
    static func tables(of result: SQLResult, tdsVersion: TDSVersion) -> [[[String: Any]]] {
        result.resultSets.map { set in
            let keys = set.columns.dictionaryKeys
            let columns = set.columns.columns
            return set.rows.map { row in
                var dictionary: [String: Any] = Dictionary(minimumCapacity: keys.count)
                for (i, value) in row.enumerated() where i < keys.count {
                    dictionary[keys[i]] = foundationValue(value, column: columns[i], tdsVersion: tdsVersion)
                }
                return dictionary
            }
        }
    }

    /// A value as the Objective-C SQLClient's table maps it, without its losses:
    ///
    /// | SQL Server type | value |
    /// |---|---|
    /// | NULL | `NSNull` |
    /// | bit | `NSNumber` (a BOOL) |
    /// | tinyint, smallint, int, bigint | `NSNumber` (its integer type) |
    /// | real, float | `NSNumber` (float, double) |
    /// | decimal, numeric | `NSDecimalNumber`, exact (38 digits) |
    /// | money, smallmoney | `NSDecimalNumber`, exact to 4 decimal places (the old library lost two) |
    /// | date, datetime, smalldatetime, datetime2 | `NSDate`, the wall-clock time read as UTC (as the old library did) |
    /// | datetimeoffset | `NSDate`, exact |
    /// | time | `NSDate` on 1900-01-01 UTC (as the old library did) |
    /// | char, varchar, text, nchar, nvarchar, ntext, xml | `NSString`, whole (" " stays " ") |
    /// | binary, varbinary, image, timestamp, CLR UDTs | `NSData` |
    /// | uniqueidentifier | `NSUUID` |
    /// | sql_variant | the value of its base type, as above |
    /// | json (SQL Server 2025) | `NSString` |
    /// | vector (SQL Server 2025) | `NSArray` of `NSNumber` (float) |
    public static func foundationValue(_ value: SQLValue) -> Any {
        switch value {
        case .null: return NSNull()
        case .bit(let b): return NSNumber(value: b)
        case .tinyint(let v): return NSNumber(value: v)
        case .smallint(let v): return NSNumber(value: v)
        case .int(let v): return NSNumber(value: v)
        case .bigint(let v): return NSNumber(value: v)
        case .real(let v): return NSNumber(value: v)
        case .float(let v): return NSNumber(value: v)
        case .decimal, .money, .smallMoney:
            return value.decimalValue.map { NSDecimalNumber(decimal: $0) } ?? NSDecimalNumber.notANumber
        case .date, .datetime2, .datetime, .smallDateTime, .datetimeOffset:
            return (value.dateValue(in: utc) ?? Date(timeIntervalSince1970: 0)) as NSDate
        case .time(let t):
            return Date(timeInterval: t.timeInterval, since: referenceDay1900) as NSDate
        case .string(let s), .xml(let s): return s as NSString
        case .binary(let b), .udt(let b): return Data(b) as NSData
        case .uniqueIdentifier(let u): return u as NSUUID
        case .variant(let v): return foundationValue(v.value)
        case .json(let s): return s as NSString
        case .vector(let v): return v.map { NSNumber(value: $0) } as NSArray
        }
    }

    /// ``foundationValue(_:)``, and below TDS 7.3 also the date and time types a newer server
    /// sends as nvarchar text to an older client ([MS-TDS] 2.2.5.4.2 has them from 7.3 only):
    /// a non-max nvarchar of the length SQL Server gives them (date 10, time(n) 8 or 9+n,
    /// datetime2(n) 19 or 20+n, datetimeoffset(n) 26 or 27+n characters) holding exactly their
    /// text becomes an `NSDate`, so dates are dates at every TDS version.
    static func foundationValue(_ value: SQLValue, column: SQLColumn, tdsVersion: TDSVersion) -> Any {
        if !tdsVersion.hasDateTimeTypes, case .string(let text) = value,
           column.typeInfo.type == .nvarchar, !column.typeInfo.isPLP,
           let date = downlevelDate(text, characters: column.typeInfo.length / 2) {
            return date as NSDate
        }
        return foundationValue(value)
    }

    private static let utc = TimeZone(secondsFromGMT: 0) ?? .current
    /// 1900-01-01 00:00:00 UTC, the day the old library put `time` values on.
    private static let referenceDay1900 = Date(timeIntervalSince1970: -2_208_988_800)

    /// The text SQL Server sends for date (`YYYY-MM-DD`), time (`hh:mm:ss[.f…]`), datetime2
    /// (`YYYY-MM-DD hh:mm:ss[.f…]`) and datetimeoffset (`… +hh:mm`) to a client below TDS 7.3,
    /// read when `characters` is the length it declares for that text; nil otherwise.
    static func downlevelDate(_ text: String, characters: Int) -> Date? {
        let u = Array(text.utf8)
        guard u.count == characters else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= u.count, !range.isEmpty else { return nil }
            var n = 0
            for i in range {
                guard u[i] >= 0x30, u[i] <= 0x39 else { return nil }
                n = n * 10 + Int(u[i] - 0x30)
            }
            return n
        }
        func char(_ i: Int, _ c: Character) -> Bool { i < u.count && u[i] == c.asciiValue }
        func date(at i: Int) -> SQLDate? {
            guard char(i + 4, "-"), char(i + 7, "-"), let y = number(i ..< i + 4), let m = number(i + 5 ..< i + 7),
                  let d = number(i + 8 ..< i + 10) else { return nil }
            return SQLDate(year: y, month: m, day: d)
        }
        /// A time at `i` and where it ends; fraction digits give the scale.
        func time(at i: Int) -> (SQLTime, Int)? {
            guard char(i + 2, ":"), char(i + 5, ":"), let h = number(i ..< i + 2), let m = number(i + 3 ..< i + 5),
                  let s = number(i + 6 ..< i + 8) else { return nil }
            var end = i + 8
            var fraction: UInt64 = 0, scale: UInt8 = 0
            if char(end, ".") {
                end += 1
                while end < u.count, u[end] >= 0x30, u[end] <= 0x39, scale < 7 {
                    fraction = fraction * 10 + UInt64(u[end] - 0x30)
                    scale += 1
                    end += 1
                }
                guard scale > 0 else { return nil }
            }
            guard let t = SQLTime(hour: h, minute: m, second: s, fraction: fraction, scale: scale) else { return nil }
            return (t, end)
        }
        func fractionLength(_ t: SQLTime) -> Int { t.scale == 0 ? 0 : Int(t.scale) + 1 }
        switch characters {
        case 10 where char(4, "-"):
            return date(at: 0)?.date(in: utc)
        case 8, 10 ... 16:
            guard let (t, end) = time(at: 0), end == u.count, characters == 8 + fractionLength(t) else { return nil }
            return Date(timeInterval: t.timeInterval, since: referenceDay1900)
        default:
            guard let d = date(at: 0), char(10, " "), let (t, end) = time(at: 11) else { return nil }
            if end == u.count, characters == 19 + fractionLength(t) {
                return SQLDateTime2(date: d, time: t).date(in: utc)
            }
            guard characters == 26 + fractionLength(t), char(end, " "), char(end + 4, ":"),
                  char(end + 1, "+") || char(end + 1, "-"), end + 7 == u.count,
                  let oh = number(end + 2 ..< end + 4), let om = number(end + 5 ..< end + 7), oh <= 14, om <= 59
            else { return nil }
            let offset = Int16((oh * 60 + om) * (char(end + 1, "-") ? -1 : 1))
            return SQLDateTimeOffset(local: SQLDateTime2(date: d, time: t), offsetMinutes: offset).date
        }
    }

    /// An app's parameter value as an `SQLParameter`; nil when it has no SQL Server type.
    static func parameter(_ value: Any) -> SQLParameter? {
        switch value {
        case let p as SQLParameter: return p
        case let v as SQLValue: return v.sqlParameter
        case is NSNull: return SQLParameter.null(.nvarchar(4000))
        case let d as NSDecimalNumber: return (d as Decimal).sqlParameter
        case let d as Decimal: return d.sqlParameter
        case let n as NSNumber: return numberParameter(n)
        case let s as String: return s.sqlParameter
        case let d as Date: return d.sqlParameter
        case let u as UUID: return u.sqlParameter
        case let d as Data: return d.sqlParameter
        case let b as [UInt8]: return b.sqlParameter
        default:
            // nil inside [Any] arrives as an Optional holding nothing.
            if case Optional<Any>.none = value { return SQLParameter.null(.nvarchar(4000)) }
            return nil
        }
    }

    /// An `NSNumber` by the C type it holds: a BOOL (or char) as bit, floating point as float,
    /// an integer as bigint (an unsigned one above Int64.max as decimal).
    private static func numberParameter(_ n: NSNumber) -> SQLParameter {
        switch String(cString: n.objCType) {
        case "c", "B": return n.boolValue.sqlParameter
        case "f", "d": return n.doubleValue.sqlParameter
        case "Q", "L":
            let u = n.uint64Value
            return u <= UInt64(Int64.max) ? Int64(u).sqlParameter : Decimal(string: n.stringValue).sqlParameter
        default: return n.int64Value.sqlParameter
        }
    }
}
