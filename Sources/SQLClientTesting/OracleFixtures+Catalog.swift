import Foundation
import TDS

// The catalog of type cases the oracle fixtures are built from (see ``OracleFixtures``).
extension OracleFixtures {

    /// Every type case, as declared at TDS 7.4.
    public static func typeCases() -> [TypeCase] {
        var cases: [TypeCase] = []
        cases.append(TypeCase("bigint", .bigint, [
            .init("NULL", .null), .init("min", .bigint(.min)), .init("max", .bigint(.max)), .init("zero", .bigint(0)),
            .init("-1", .bigint(-1)), .init("2^32", .bigint(4_294_967_296)),
        ]))
        cases.append(TypeCase("int", .int, [
            .init("NULL", .null), .init("min", .int(.min)), .init("max", .int(.max)), .init("zero", .int(0)), .init("-1", .int(-1)),
        ]))
        cases.append(TypeCase("smallint", .smallint, [
            .init("NULL", .null), .init("min", .smallint(.min)), .init("max", .smallint(.max)), .init("zero", .smallint(0)),
        ]))
        cases.append(TypeCase("tinyint", .tinyint, [
            .init("NULL", .null), .init("min", .tinyint(0)), .init("max", .tinyint(255)), .init("1", .tinyint(1)),
        ]))
        cases.append(TypeCase("bit", .bit, [.init("NULL", .null), .init("zero", .bit(false)), .init("one", .bit(true))]))
        cases.append(TypeCase("real", .real, [
            .init("NULL", .null), .init("zero", .real(0)), .init("max", .real(.greatestFiniteMagnitude)),
            .init("min", .real(-.greatestFiniteMagnitude)), .init("least normal", .real(.leastNormalMagnitude)),
            .init("0.1", .real(0.1)), .init("1.5", .real(1.5)), .init("-3.14159", .real(-3.14159)), .init("1e10", .real(1e10)),
        ]))
        cases.append(TypeCase("float", .float, [
            .init("NULL", .null), .init("zero", .float(0)), .init("negative zero", .float(-0.0)),
            .init("max", .float(.greatestFiniteMagnitude)), .init("min", .float(-.greatestFiniteMagnitude)),
            .init("least normal", .float(.leastNormalMagnitude)), .init("0.1", .float(0.1)), .init("1e16", .float(1e16)),
            .init("pi", .float(.pi)), .init("123456789.123", .float(123_456_789.123)),
        ]))
        cases.append(decimalCase("decimal", 38, 0, [
            ("max", "99999999999999999999999999999999999999"), ("min", "-99999999999999999999999999999999999999"),
            ("zero", "0"), ("one", "1"), ("2^64", "18446744073709551616"),
        ]))
        cases.append(decimalCase("decimal", 38, 38, [
            ("max", "0.99999999999999999999999999999999999999"), ("min", "-0.99999999999999999999999999999999999999"),
            ("zero", "0.00000000000000000000000000000000000000"), ("smallest", "0.00000000000000000000000000000000000001"),
        ]))
        cases.append(decimalCase("decimal", 5, 2, [("max", "999.99"), ("min", "-999.99"), ("zero", "0.00"), ("-0.01", "-0.01")]))
        cases.append(decimalCase("decimal", 10, 3, [("max", "9999999.999"), ("min", "-9999999.999"), ("zero", "0.000"), ("mid", "1234567.891")]))
        cases.append(decimalCase("decimal", 19, 4, [("max", "999999999999999.9999"), ("min", "-999999999999999.9999"), ("zero", "0.0000"), ("mid", "123456789012345.6789")]))
        cases.append(decimalCase("decimal", 28, 10, [("max", "999999999999999999.9999999999"), ("zero", "0.0000000000"), ("mid", "-12345678.0000000001")]))
        cases.append(decimalCase("numeric", 18, 6, [("max", "999999999999.999999"), ("min", "-999999999999.999999"), ("zero", "0.000000"), ("tiny", "-0.000001")]))
        cases.append(decimalCase("numeric", 1, 0, [("max", "9"), ("min", "-9"), ("zero", "0")]))
        cases.append(TypeCase("money", .money, [
            .init("NULL", .null), .init("min", .money(.min)), .init("max", .money(.max)), .init("zero", .money(SQLMoney(units: 0))),
            .init("0.0001", .money(SQLMoney(units: 1))), .init("-0.0001", .money(SQLMoney(units: -1))),
            .init("1.2345 (4th decimal)", .money(SQLMoney(units: 12345))), .init("0.9999", .money(SQLMoney(units: 9999))),
            .init("-12.3456", .money(SQLMoney(units: -123_456))), .init("2^32 units", .money(SQLMoney(units: 4_294_967_296))),
        ]))
        cases.append(TypeCase("smallmoney", .smallMoney, [
            .init("NULL", .null), .init("min", .smallMoney(.smallMin)), .init("max", .smallMoney(.smallMax)),
            .init("zero", .smallMoney(SQLMoney(units: 0))), .init("1.2345 (4th decimal)", .smallMoney(SQLMoney(units: 12345))),
            .init("-0.0001", .smallMoney(SQLMoney(units: -1))),
        ]))
        cases.append(TypeCase("datetime", .datetime, [
            .init("NULL", .null), .init("min", dt(1753, 1, 1, ticks: 0)), .init("max", dt(9999, 12, 31, ticks: ticks(23, 59, 59, 299))),
            .init("zero (1900-01-01)", .datetime(SQLDateTime(days: 0, ticks: 0))),
            .init("tick .003", dt(2000, 1, 1, ticks: 1)), .init("tick .007", dt(2000, 1, 1, ticks: 2)),
            .init("tick .010", dt(2000, 1, 1, ticks: 3)), .init("tick .997", dt(2000, 1, 1, ticks: 299)),
            .init("last tick of a day", dt(1999, 12, 31, ticks: ticks(23, 59, 59, 299))),
            .init("before 1900", dt(1899, 12, 31, ticks: ticks(12, 0, 0))),
            .init("leap day", dt(2000, 2, 29, ticks: ticks(13, 14, 15, 150))),
        ]))
        cases.append(TypeCase("smalldatetime", .smallDateTime, [
            .init("NULL", .null), .init("min", .smallDateTime(SQLSmallDateTime(days: 0, minutes: 0))),
            .init("max", .smallDateTime(SQLSmallDateTime(days: 65535, minutes: 1439))),
            .init("leap day", .smallDateTime(SQLSmallDateTime(days: UInt16(date(2000, 2, 29).days - day1900), minutes: 12 * 60 + 34))),
        ]))
        cases.append(TypeCase("date", .date, [
            .init("NULL", .null), .init("min (year 1)", .date(.min)), .init("max (year 9999)", .date(.max)),
            .init("before 1753", .date(date(1752, 9, 13))), .init("before 1900", .date(date(1899, 12, 31))),
            .init("1900-01-01", .date(date(1900, 1, 1))), .init("leap day", .date(date(2000, 2, 29))),
        ]))
        for scale in UInt8(0)...7 {
            let maxTime = SQLTime(ticks: 86_400 * pow10(Int(scale)) - 1, scale: scale)
            cases.append(TypeCase("time(\(scale))", .time(scale: scale), [
                .init("NULL", .null), .init("min", .time(SQLTime(ticks: 0, scale: scale))), .init("max", .time(maxTime)),
                .init("12:34:56.1234567", .time(time(12, 34, 56, fraction7: 1_234_567, scale: scale))),
                .init("00:00:00.0000001", .time(time(0, 0, 0, fraction7: 1, scale: scale))),
            ]))
        }
        for scale in UInt8(0)...7 {
            let maxTime = SQLTime(ticks: 86_400 * pow10(Int(scale)) - 1, scale: scale)
            cases.append(TypeCase("datetime2(\(scale))", .datetime2(scale: scale), [
                .init("NULL", .null), .init("min", .datetime2(dt2(.min, SQLTime(ticks: 0, scale: scale)))),
                .init("max", .datetime2(dt2(.max, maxTime))),
                .init("before 1753", .datetime2(dt2(date(1752, 9, 13), time(13, 14, 15, fraction7: 9_876_543, scale: scale)))),
                .init("before 1900", .datetime2(dt2(date(1899, 12, 31), time(23, 59, 59, fraction7: 5_000_000, scale: scale)))),
            ]))
        }
        for scale in UInt8(0)...7 {
            let maxTime = SQLTime(ticks: 86_400 * pow10(Int(scale)) - 1, scale: scale)
            func dto(_ d: SQLDate, _ t: SQLTime, _ offset: Int16) -> SQLValue {
                .datetimeOffset(SQLDateTimeOffset(utc: dt2(d, t), offsetMinutes: offset))
            }
            cases.append(TypeCase("datetimeoffset(\(scale))", .datetimeOffset(scale: scale), [
                .init("NULL", .null),
                .init("min", dto(.min, SQLTime(ticks: 0, scale: scale), 0)),
                .init("max", dto(.max, maxTime, 0)),
                .init("+14:00 crossing midnight", dto(date(2020, 12, 31), time(20, 0, 0, fraction7: 1_234_567, scale: scale), 840)),
                .init("-14:00 crossing midnight", dto(date(2021, 1, 1), time(5, 30, 0, fraction7: 7_654_321, scale: scale), -840)),
                .init("+05:45", dto(date(2000, 2, 29), time(18, 15, 0, fraction7: 0, scale: scale), 345)),
                .init("-00:30 year 1", dto(date(1, 1, 1), time(0, 30, 0, fraction7: 0, scale: scale), -30)),
            ]))
        }
        cases.append(TypeCase("uniqueidentifier", .uniqueIdentifier, [
            .init("NULL", .null), .init("zero", uuid("00000000-0000-0000-0000-000000000000")),
            .init("max", uuid("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")),
            .init("byte order", uuid("01234567-89AB-CDEF-0123-456789ABCDEF")),
            .init("mixed", uuid("6F9619FF-8B86-D011-B42D-00C04FC964FF")),
        ]))
        // Character types, 1252 unless said otherwise.
        cases.append(TypeCase("char(10)", .char(10), [
            .init("NULL", .null), .init("padded", .string("abc       ")), .init("all spaces", .string("          ")),
            .init("full", .string("0123456789")), .init("cp1252", .string("café €    ")),
        ]))
        cases.append(TypeCase("char(1)", .char(1), [.init("NULL", .null), .init("one space", .string(" ")), .init("x", .string("x"))]))
        cases.append(TypeCase("varchar(50)", .varchar(50), [
            .init("NULL", .null), .init("empty", .string("")), .init("one space", .string(" ")),
            .init("trailing spaces", .string("trailing   ")), .init("leading spaces", .string("  leading")),
            .init("cp1252", .string("café € ÿ Œ ‰")), .init("max length", .string(String(repeating: "z", count: 50))),
        ]))
        cases.append(TypeCase("varchar(40) Cyrillic_General_CI_AS", .varchar(40, collation: cyrillic), [
            .init("NULL", .null), .init("cp1251", .string("Привет, мир! Ёё")), .init("empty", .string("")),
        ]))
        cases.append(TypeCase("varchar(40) Latin1_General_CI_AS", .varchar(40, collation: latin1), [
            .init("NULL", .null), .init("cp1252", .string("Ça coûte 5 € — ß")), .init("one space", .string(" ")),
        ]))
        cases.append(TypeCase("varchar(40) Japanese_CI_AS", .varchar(40, collation: japanese), [
            .init("NULL", .null), .init("cp932", .string("日本語ﾃｷｽﾄ テスト")), .init("ascii", .string("abc")),
        ]))
        cases.append(TypeCase("varchar(40) Chinese_PRC_CI_AS", .varchar(40, collation: chinese), [
            .init("NULL", .null), .init("cp936", .string("中文测试，简体")), .init("trailing space", .string("中 ")),
        ]))
        cases.append(TypeCase("varchar(60) Latin1_General_100_CI_AS_SC_UTF8", .varchar(60, collation: utf8), [
            .init("NULL", .null), .init("utf8", .string("😀 ünïcödé € 日本")), .init("empty", .string("")),
        ]))
        cases.append(TypeCase("nchar(5)", .nchar(5), [
            .init("NULL", .null), .init("padded", .string("ab   ")), .init("surrogate pair", .string("😀abc")),
        ]))
        cases.append(TypeCase("nvarchar(50)", .nvarchar(50), [
            .init("NULL", .null), .init("empty", .string("")), .init("one space", .string(" ")),
            .init("trailing spaces", .string("trailing   ")), .init("surrogate pairs", .string("😀𝄞 pairs")),
            .init("U+FEFF", .string("\u{FEFF}bom")), .init("scripts", .string("Grüße Жж 日本語 עברית")),
        ]))
        cases.append(TypeCase("nvarchar(max)", .nvarchar(nil), [
            .init("NULL", .null), .init("empty (zero-length PLP)", .string("")),
            .init("one space", .string(" ")),
            .init("5000 chars in 8000-byte chunks", .string(longText(5000, unicode: true))),
            .init("3000 chars in 7-byte chunks", .string(longText(3000, unicode: true)), chunking: .init(sizes: [7])),
            .init("unknown length", .string("PLP_UNKNOWN_LEN"), chunking: .init(sizes: [4], unknownLength: true)),
            .init("surrogates split across chunks", .string("😀😀😀😀"), chunking: .init(sizes: [1, 3, 2])),
        ]))
        cases.append(TypeCase("varchar(max)", .varchar(nil), [
            .init("NULL", .null), .init("empty (zero-length PLP)", .string("")),
            .init("9000 chars", .string(longText(9000, unicode: false))),
            .init("2000 chars in 1-byte chunks", .string(longText(2000, unicode: false)), chunking: .init(sizes: [1])),
            .init("cp1252 in uneven chunks", .string("café € ÿ"), chunking: .init(sizes: [2, 5, 1], unknownLength: true)),
        ]))
        cases.append(TypeCase("varbinary(max)", .varbinary(nil), [
            .init("NULL", .null), .init("empty (zero-length PLP)", .binary([])),
            .init("20000 bytes", .binary(bytes(20000))),
            .init("1000 bytes in 3-byte chunks", .binary(bytes(1000)), chunking: .init(sizes: [3])),
            .init("unknown length", .binary([0xDE, 0xAD, 0xBE, 0xEF]), chunking: .init(sizes: [1], unknownLength: true)),
        ]))
        cases.append(TypeCase("text", .text(), [
            .init("NULL", .null), .init("empty", .string("")), .init("one space", .string(" ")),
            .init("cp1252", .string("café € text")), .init("3000 chars", .string(longText(3000, unicode: false))),
        ]))
        cases.append(TypeCase("ntext", .ntext(), [
            .init("NULL", .null), .init("empty", .string("")), .init("surrogates", .string("😀 ntext 日本")),
            .init("2000 chars", .string(longText(2000, unicode: true))),
        ]))
        cases.append(TypeCase("image", .image, [
            .init("NULL", .null), .init("empty", .binary([])), .init("bytes", .binary([0, 1, 2, 0xFE, 0xFF])),
            .init("5000 bytes", .binary(bytes(5000))),
        ]))
        cases.append(TypeCase("xml", .xml, [
            .init("NULL", .null), .init("empty", .xml("")), .init("element", .xml("<a b=\"1\">text &amp; more</a>")),
            .init("unicode", .xml("<r>😀 Жж</r>")),
            .init("chunked", .xml("<long>" + longText(500, unicode: true) + "</long>"), chunking: .init(sizes: [5])),
        ]))
        cases.append(TypeCase("timestamp", .binary(8), userType: 80, [
            .init("NULL", .null), .init("one", .binary([0, 0, 0, 0, 0, 0, 0, 1])),
            .init("max", .binary([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])),
            .init("zero", .binary([0, 0, 0, 0, 0, 0, 0, 0])),
        ]))
        cases.append(TypeCase("binary(4)", .binary(4), [
            .init("NULL", .null), .init("zero", .binary([0, 0, 0, 0])), .init("max", .binary([0xFF, 0xFF, 0xFF, 0xFF])),
            .init("deadbeef", .binary([0xDE, 0xAD, 0xBE, 0xEF])),
        ]))
        cases.append(TypeCase("varbinary(16)", .varbinary(16), [
            .init("NULL", .null), .init("empty", .binary([])), .init("one zero byte", .binary([0])),
            .init("max length", .binary(Array(repeating: 0xAB, count: 16))),
        ]))
        func variant(_ v: SQLValue) -> SQLValue {
            guard let x = SQLVariant(value: v) else { return .null }
            return .variant(x)
        }
        cases.append(TypeCase("sql_variant", .sqlVariant, [
            .init("NULL", .null), .init("int", variant(.int(-42))), .init("bigint", variant(.bigint(.min))),
            .init("tinyint", variant(.tinyint(255))), .init("bit", variant(.bit(true))),
            .init("float", variant(.float(0.1))), .init("real", variant(.real(1.5))),
            .init("decimal(10,3)", variant(dec("-1234.567", 10))),
            .init("money", variant(.money(SQLMoney(units: 12345)))),
            .init("nvarchar", variant(.string("Grüße 😀"))),
            .init("varchar", .variant(SQLVariant(baseType: .varchar(20), value: .string("café ")))),
            .init("datetime", variant(dt(2000, 1, 1, ticks: 2))),
            .init("smalldatetime", variant(.smallDateTime(SQLSmallDateTime(days: 1, minutes: 61)))),
            .init("uniqueidentifier", variant(uuid("01234567-89AB-CDEF-0123-456789ABCDEF"))),
            .init("varbinary", variant(.binary([1, 2, 3]))),
            .init("date", variant(.date(date(1752, 9, 13)))),
            .init("time(3)", variant(.time(time(1, 2, 3, fraction7: 4_560_000, scale: 3)))),
            .init("datetime2(7)", variant(.datetime2(dt2(date(9999, 12, 31), time(23, 59, 59, fraction7: 9_999_999, scale: 7))))),
            .init("datetimeoffset(2)", variant(.datetimeOffset(SQLDateTimeOffset(utc: dt2(date(2020, 12, 31), time(20, 0, 0, fraction7: 1_200_000, scale: 2)), offsetMinutes: 840)))),
        ]))
        return cases
    }
}
