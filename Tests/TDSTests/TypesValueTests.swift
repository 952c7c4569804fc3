import Foundation
import XCTest
@testable import TDS

final class TypesValueTests: XCTestCase {
    typealias S = TypesTestSupport

    func text(_ info: TypeInfo, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        try S.decode(info, bytes, file: file, line: line).canonicalText
    }

    // MARK: Integers, bit, floats

    func testIntegersEdgesAndNull() throws {
        XCTAssertEqual(try S.decode(.int, [4, 0xFF, 0xFF, 0xFF, 0x7F]), .int(Int32.max))
        XCTAssertEqual(try S.decode(.int, [4, 0x00, 0x00, 0x00, 0x80]), .int(Int32.min))
        XCTAssertEqual(try S.decode(.int, [4, 0, 0, 0, 0]), .int(0))
        XCTAssertEqual(try S.decode(.int, [0]), .null)
        XCTAssertEqual(try S.decode(.int, [0]).canonicalText, nil)
        XCTAssertEqual(try text(.bigint, [8, 0, 0, 0, 0, 0, 0, 0, 0x80]), "-9223372036854775808")
        XCTAssertEqual(try text(.bigint, [8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]), "9223372036854775807")
        XCTAssertEqual(try text(.smallint, [2, 0x00, 0x80]), "-32768")
        XCTAssertEqual(try text(.tinyint, [1, 0xFF]), "255")
        XCTAssertEqual(try text(TypeInfo(type: .int4, length: 4), [0x2A, 0, 0, 0]), "42")
        XCTAssertEqual(try text(TypeInfo(type: .int1, length: 1), [0]), "0")
        XCTAssertEqual(try text(TypeInfo(type: .int2, length: 2), [0xFF, 0xFF]), "-1")
        XCTAssertEqual(try text(TypeInfo(type: .int8, length: 8), [1, 0, 0, 0, 0, 0, 0, 0]), "1")
        // INTN value whose length disagrees: 3 bytes.
        XCTAssertEqual(S.decodeError(.int, [3, 1, 2, 3])?.code, .invalidLength)
        XCTAssertEqual(S.decodeError(.int, [3, 1, 2, 3])?.context, "INTN")
    }

    func testBitAndFloats() throws {
        XCTAssertEqual(try text(.bit, [1, 1]), "1")
        XCTAssertEqual(try text(.bit, [1, 0]), "0")
        XCTAssertEqual(try S.decode(.bit, [0]), .null)
        XCTAssertEqual(try text(TypeInfo(type: .bit, length: 1), [2]), "1")
        var w = ByteWriter()
        w.writeUInt8(8); w.writeFloat64LE(1e16)
        XCTAssertEqual(try text(.float, w.bytes), "1e+16")
        w = ByteWriter(); w.writeUInt8(8); w.writeFloat64LE(1.5)
        XCTAssertEqual(try text(.float, w.bytes), "1.5")
        w = ByteWriter(); w.writeUInt8(8); w.writeFloat64LE(0)
        XCTAssertEqual(try text(.float, w.bytes), "0.0")
        w = ByteWriter(); w.writeUInt8(4); w.writeFloat32LE(0.1)
        XCTAssertEqual(try text(.real, w.bytes), "0.1")
        w = ByteWriter(); w.writeUInt8(8); w.writeFloat64LE(-Double.greatestFiniteMagnitude)
        XCTAssertEqual(try text(.float, w.bytes), "-1.7976931348623157e+308")
    }

    // MARK: decimal / money

    func testDecimalLimits() throws {
        let p38s0 = TypeInfo.decimal(precision: 38, scale: 0)
        let max = SQLDecimal.maxMagnitude
        var bytes: [UInt8] = [17, 1]
        for i in 0 ..< 16 { bytes.append(UInt8(truncatingIfNeeded: max >> (8 * i))) }
        XCTAssertEqual(try text(p38s0, bytes), "99999999999999999999999999999999999999")
        bytes[1] = 0
        XCTAssertEqual(try text(p38s0, bytes), "-99999999999999999999999999999999999999")
        XCTAssertEqual(try S.decode(p38s0, bytes).decimalValue, Decimal(string: "-99999999999999999999999999999999999999"))
        let p38s38 = TypeInfo.numeric(precision: 38, scale: 38)
        bytes[1] = 1
        let v = try S.decode(p38s38, bytes)
        XCTAssertEqual(v.canonicalText, "0.99999999999999999999999999999999999999")
        XCTAssertEqual(v.decimalValue, Decimal(string: "0.99999999999999999999999999999999999999"))
        // decimal(38,38) smallest positive.
        var one: [UInt8] = [17, 1, 1] + [UInt8](repeating: 0, count: 15)
        XCTAssertEqual(try text(p38s38, one), "0.00000000000000000000000000000000000001")
        one[1] = 0
        XCTAssertEqual(try text(p38s38, one), "-0.00000000000000000000000000000000000001")
        // zero, scale 2; negative zero prints as 0.
        XCTAssertEqual(try text(.decimal(precision: 5, scale: 2), [5, 1, 0, 0, 0, 0]), "0.00")
        XCTAssertEqual(try text(.decimal(precision: 5, scale: 2), [5, 0, 0, 0, 0, 0]), "0.00")
        XCTAssertEqual(try text(.decimal(precision: 5, scale: 2), [5, 0, 0x39, 0x30, 0, 0]), "-123.45")
        XCTAssertEqual(try S.decode(.decimal(precision: 5, scale: 2), [5, 0, 0x39, 0x30, 0, 0]).decimalValue,
                       Decimal(string: "-123.45"))
        XCTAssertEqual(try S.decode(.decimal(precision: 5, scale: 2), [0]), .null)
        // 10^38 does not fit precision 38.
        var over: [UInt8] = [17, 1]
        let tenTo38 = max + 1
        for i in 0 ..< 16 { over.append(UInt8(truncatingIfNeeded: tenTo38 >> (8 * i))) }
        XCTAssertEqual(S.decodeError(p38s0, over)?.code, .invalidValue)
        // 100000 in decimal(5,0): more digits than the precision; read as Microsoft's ODBC driver
        // reads it, the value sent, with the precision widened to its 6 digits.
        XCTAssertEqual(try S.decode(.decimal(precision: 5, scale: 0), [5, 1, 0xA0, 0x86, 0x01, 0x00]),
                       .decimal(SQLDecimal(precision: 6, scale: 0, magnitude: 100_000)))
        // Length disagreeing with precision: 17 bytes for precision 5 (in a column; sql_variant allows it).
        XCTAssertEqual(S.decodeError(.decimal(precision: 5, scale: 0), [17, 1] + [UInt8](repeating: 0, count: 16))?.code,
                       .invalidLength)
        // A sign byte alone: zero (the driver reads it so).
        XCTAssertEqual(try text(.decimal(precision: 5, scale: 0), [1, 1]), "0")
        XCTAssertEqual(S.decodeError(.decimal(precision: 5, scale: 0), [5, 2, 0, 0, 0, 0])?.code, .invalidValue)
    }

    func testDecimalFromFoundationAndText() throws {
        let d = try XCTUnwrap(SQLDecimal(Decimal(string: "-12.340")!, precision: 10, scale: 3))
        XCTAssertEqual(d.canonicalText, "-12.340")
        XCTAssertEqual(d.precision, 10)
        XCTAssertNil(SQLDecimal(Decimal(string: "1.2345")!, scale: 2))   // would lose digits
        XCTAssertEqual(SQLDecimal("0012.50")?.canonicalText, "12.50")
        XCTAssertEqual(SQLDecimal("0012.50")?.precision, 4)
        XCTAssertNil(SQLDecimal("1.2.3"))
        XCTAssertNil(SQLDecimal(String(repeating: "9", count: 39)))
    }

    func testMoneyByteOrderAndLimits() throws {
        // 1.0000 = 10,000 units: high 4 bytes (0) first, then low 4 bytes.
        XCTAssertEqual(try text(.money, [8, 0, 0, 0, 0, 0x10, 0x27, 0, 0]), "1.0000")
        // 2^32 units = 429496.7296: high = 1, low = 0.
        XCTAssertEqual(try text(.money, [8, 1, 0, 0, 0, 0, 0, 0, 0]), "429496.7296")
        XCTAssertEqual(try text(TypeInfo(type: .money, length: 8), [0, 0, 0, 0x80, 0, 0, 0, 0]), "-922337203685477.5808")
        XCTAssertEqual(try text(TypeInfo(type: .money, length: 8), [0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF]),
                       "922337203685477.5807")
        XCTAssertEqual(try text(.smallMoney, [4, 0, 0, 0, 0x80]), "-214748.3648")
        XCTAssertEqual(try text(TypeInfo(type: .money4, length: 4), [0xFF, 0xFF, 0xFF, 0x7F]), "214748.3647")
        XCTAssertEqual(try text(.smallMoney, [4, 0xFF, 0xFF, 0xFF, 0xFF]), "-0.0001")
        XCTAssertEqual(try text(.money, [8, 0, 0, 0, 0, 0, 0, 0, 0]), "0.0000")
        XCTAssertEqual(try S.decode(.money, [0]), .null)
        XCTAssertEqual(SQLMoney.min.decimalValue, Decimal(string: "-922337203685477.5808"))
        XCTAssertEqual(SQLMoney(units: 12_345).decimalValue, Decimal(string: "1.2345"))
        XCTAssertEqual(S.decodeError(.money, [5, 0, 0, 0, 0, 0])?.code, .invalidLength)
    }

    // MARK: date and time

    func testDateLimits() throws {
        XCTAssertEqual(try text(.date, [3, 0, 0, 0]), "0001-01-01")
        let max = Civil.maxDay
        XCTAssertEqual(try text(.date, [3, UInt8(max & 0xFF), UInt8(max >> 8 & 0xFF), UInt8(max >> 16)]), "9999-12-31")
        let over = max + 1
        let e = S.decodeError(.date, [3, UInt8(over & 0xFF), UInt8(over >> 8 & 0xFF), UInt8(over >> 16)], baseOffset: 10)
        XCTAssertEqual(e?.code, .invalidValue)
        XCTAssertEqual(e?.offset, 11)
        XCTAssertEqual(e?.context, "DATEN")
        XCTAssertEqual(try S.decode(.date, [0]), .null)
        XCTAssertEqual(S.decodeError(.date, [4, 0, 0, 0, 0])?.code, .invalidLength)
        // 2000-02-29 (leap), 1900-03-01 (1900 is not leap).
        let d = try XCTUnwrap(SQLDate(year: 2000, month: 2, day: 29))
        XCTAssertEqual(d.canonicalText, "2000-02-29")
        XCTAssertNil(SQLDate(year: 1900, month: 2, day: 29))
        XCTAssertNil(SQLDate(year: 10000, month: 1, day: 1))
        XCTAssertEqual(SQLDate(year: 1, month: 1, day: 1)?.days, 0)
        XCTAssertEqual(SQLDate(year: 1900, month: 1, day: 1)?.days, Int32(Civil.daysFrom0001To1900))
        XCTAssertEqual(SQLDate(year: 1970, month: 1, day: 1)?.days, Int32(Civil.daysFrom0001To1970))
        // Every day round-trips through the civil conversion (sampled).
        for days in stride(from: 0, through: Civil.maxDay, by: 997) {
            let (y, m, dd) = Civil.date(days: days)
            XCTAssertEqual(Civil.days(year: y, month: m, day: dd), days)
        }
    }

    func testTimeScales() throws {
        // scale 0: 3 bytes; 86399 = 23:59:59.
        XCTAssertEqual(try text(.time(scale: 0), [3, 0x7F, 0x51, 0x01]), "23:59:59")
        XCTAssertEqual(try text(.time(scale: 0), [3, 0, 0, 0]), "00:00:00")
        // scale 7: 5 bytes; 863,999,999,999 = 23:59:59.9999999.
        let maxTicks: UInt64 = 863_999_999_999
        var b: [UInt8] = [5]
        for i in 0 ..< 5 { b.append(UInt8(truncatingIfNeeded: maxTicks >> (8 * UInt64(i)))) }
        XCTAssertEqual(try text(.time(scale: 7), b), "23:59:59.9999999")
        XCTAssertEqual(try text(.time(scale: 7), [5, 1, 0, 0, 0, 0]), "00:00:00.0000001")
        XCTAssertEqual(try text(.time(scale: 3), [4, 0xE7, 0x03, 0, 0]), "00:00:00.999")
        // 24:00:00 is out of range.
        var c: [UInt8] = [5]
        for i in 0 ..< 5 { c.append(UInt8(truncatingIfNeeded: (maxTicks + 1) >> (8 * UInt64(i)))) }
        XCTAssertEqual(S.decodeError(.time(scale: 7), c)?.code, .invalidValue)
        // Length must match the scale.
        XCTAssertEqual(S.decodeError(.time(scale: 7), [3, 0, 0, 0])?.code, .invalidLength)
        XCTAssertEqual(try S.decode(.time(scale: 7), [0]), .null)
        XCTAssertEqual(SQLTime(ticks: 5, scale: 1).hundredNanoseconds, 5_000_000)
    }

    func testDateTime2() throws {
        // datetime2(0) = time (3 bytes) then date (3 bytes).
        XCTAssertEqual(try text(.datetime2(scale: 0), [6, 0, 0, 0, 0, 0, 0]), "0001-01-01 00:00:00")
        let v = SQLDateTime2(date: .max, time: SQLTime(ticks: 863_999_999_999, scale: 7))
        let bytes = try S.encode(.datetime2(scale: 7), .datetime2(v))
        XCTAssertEqual(bytes.count, 9)
        XCTAssertEqual(try text(.datetime2(scale: 7), bytes), "9999-12-31 23:59:59.9999999")
        XCTAssertEqual(v.date(in: TimeZone(secondsFromGMT: 0)!).timeIntervalSince1970, 253_402_300_800 - 0.0000001, accuracy: 0.001)
    }

    func testDateTimeOffsetLocalTextAndRange() throws {
        // UTC 2024-01-01 02:00:00, offset -05:00 -> local 2023-12-31 21:00:00 -05:00 (crosses midnight backwards).
        let utc = SQLDateTime2(date: SQLDate(year: 2024, month: 1, day: 1)!, time: SQLTime(hour: 2, minute: 0, second: 0, scale: 7)!)
        let v = SQLDateTimeOffset(utc: utc, offsetMinutes: -300)
        let bytes = try S.encode(.datetimeOffset(scale: 7), .datetimeOffset(v))
        XCTAssertEqual(bytes.count, 11)
        let back = try S.decode(.datetimeOffset(scale: 7), bytes)
        XCTAssertEqual(back, .datetimeOffset(v))
        XCTAssertEqual(back.canonicalText, "2023-12-31 21:00:00.0000000 -05:00")
        XCTAssertEqual(back.dateValue(), Date(timeIntervalSince1970: 1_704_074_400))
        // The time zone argument is ignored for datetimeoffset: it is exact.
        XCTAssertEqual(back.dateValue(in: TimeZone(secondsFromGMT: 3600)!), Date(timeIntervalSince1970: 1_704_074_400))
        // +14:00 crossing midnight forwards, scale 0.
        let late = SQLDateTimeOffset(utc: SQLDateTime2(date: SQLDate(year: 2023, month: 12, day: 31)!,
                                                       time: SQLTime(hour: 23, minute: 30, second: 0, scale: 0)!), offsetMinutes: 840)
        XCTAssertEqual(late.canonicalText, "2024-01-01 13:30:00 +14:00")
        XCTAssertEqual(try text(.datetimeOffset(scale: 0), try S.encode(.datetimeOffset(scale: 0), .datetimeOffset(late))),
                       "2024-01-01 13:30:00 +14:00")
        // -14:00 from year 1: local time is before 0001-01-01 on display, value is still decoded.
        let early = SQLDateTimeOffset(local: SQLDateTime2(date: SQLDate(year: 2020, month: 3, day: 1)!,
                                                          time: SQLTime(hour: 0, minute: 15, second: 0, scale: 2)!),
                                      offsetMinutes: -90)
        XCTAssertEqual(early.utc.canonicalText, "2020-03-01 01:45:00.00")
        XCTAssertEqual(early.canonicalText, "2020-03-01 00:15:00.00 -01:30")
        // Offset 841 and -841 are invalid.
        var bad = try S.encode(.datetimeOffset(scale: 0), .datetimeOffset(late))
        bad[bad.count - 2] = 0x49; bad[bad.count - 1] = 0x03   // 841
        XCTAssertEqual(S.decodeError(.datetimeOffset(scale: 0), bad)?.code, .invalidValue)
        XCTAssertEqual(S.decodeError(.datetimeOffset(scale: 0), bad, baseOffset: 7)?.offset, 7 + bad.count - 2)
        bad[bad.count - 2] = 0xB7; bad[bad.count - 1] = 0xFC   // -841
        XCTAssertEqual(S.decodeError(.datetimeOffset(scale: 0), bad)?.code, .invalidValue)
        bad[bad.count - 2] = 0xC8; bad[bad.count - 1] = 0xFC   // -824 is fine
        XCTAssertNil(S.decodeError(.datetimeOffset(scale: 0), bad))
    }

    func testDateTimeRoundingAndRange() throws {
        func dt(_ days: Int32, _ ticks: UInt32) throws -> String? {
            var w = ByteWriter()
            w.writeUInt8(8); w.writeInt32LE(days); w.writeUInt32LE(ticks)
            return try text(.datetime, w.bytes)
        }
        XCTAssertEqual(try dt(0, 0), "1900-01-01 00:00:00.000")
        XCTAssertEqual(try dt(0, 1), "1900-01-01 00:00:00.003")
        XCTAssertEqual(try dt(0, 2), "1900-01-01 00:00:00.007")
        XCTAssertEqual(try dt(0, 3), "1900-01-01 00:00:00.010")
        XCTAssertEqual(try dt(0, 299), "1900-01-01 00:00:00.997")
        XCTAssertEqual(try dt(0, 300), "1900-01-01 00:00:01.000")
        XCTAssertEqual(try dt(SQLDateTime.minDays, 0), "1753-01-01 00:00:00.000")
        XCTAssertEqual(try dt(SQLDateTime.maxDays, 25_919_999), "9999-12-31 23:59:59.997")
        XCTAssertEqual(try dt(-1, 0), "1899-12-31 00:00:00.000")
        var w = ByteWriter()
        w.writeUInt8(8); w.writeInt32LE(0); w.writeUInt32LE(25_920_000)
        XCTAssertEqual(S.decodeError(.datetime, w.bytes)?.code, .invalidValue)
        w = ByteWriter(); w.writeUInt8(8); w.writeInt32LE(SQLDateTime.maxDays + 1); w.writeUInt32LE(0)
        XCTAssertEqual(S.decodeError(.datetime, w.bytes)?.code, .invalidValue)
        w = ByteWriter(); w.writeUInt8(8); w.writeInt32LE(SQLDateTime.minDays - 1); w.writeUInt32LE(0)
        XCTAssertEqual(S.decodeError(.datetime, w.bytes)?.code, .invalidValue)
        // Date conversion takes an explicit time zone; UTC by default.
        let v = SQLValue.datetime(SQLDateTime(days: 25_567, ticks: 300))   // 1970-01-01 00:00:01
        XCTAssertEqual(v.dateValue(), Date(timeIntervalSince1970: 1))
        XCTAssertEqual(v.dateValue(in: TimeZone(secondsFromGMT: 3600)!), Date(timeIntervalSince1970: 1 - 3600))
        XCTAssertEqual(SQLDateTime(days: 0, ticks: 1).dateTime2.canonicalText, "1900-01-01 00:00:00.0033333")
    }

    func testSmallDateTime() throws {
        XCTAssertEqual(try text(.smallDateTime, [4, 0, 0, 0, 0]), "1900-01-01 00:00:00")
        XCTAssertEqual(try text(.smallDateTime, [4, 0xFF, 0xFF, 0x9F, 0x05]), "2079-06-06 23:59:00")
        XCTAssertEqual(try text(TypeInfo(type: .datetim4, length: 4), [0x01, 0x00, 0x3D, 0x00]), "1900-01-02 01:01:00")
        XCTAssertEqual(S.decodeError(.smallDateTime, [4, 0, 0, 0xA0, 0x05])?.code, .invalidValue)   // minute 1440
        XCTAssertEqual(try S.decode(.smallDateTime, [0]), .null)
        XCTAssertEqual(SQLSmallDateTime(days: 1, minutes: 0).date(in: TimeZone(secondsFromGMT: -7200)!),
                       Date(timeIntervalSince1970: Double(-25_566 * 86_400 + 7200)))
    }

    // MARK: uniqueidentifier, binary

    func testUniqueIdentifierMixedEndian() throws {
        let wire: [UInt8] = [16, 0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]
        let v = try S.decode(.uniqueIdentifier, wire)
        XCTAssertEqual(v.canonicalText, "00112233-4455-6677-8899-AABBCCDDEEFF")
        XCTAssertEqual(v.uuidValue, UUID(uuidString: "00112233-4455-6677-8899-aabbccddeeff"))
        XCTAssertEqual(try S.encode(.uniqueIdentifier, v), wire)
        XCTAssertEqual(try S.decode(.uniqueIdentifier, [0]), .null)
        XCTAssertEqual(S.decodeError(.uniqueIdentifier, [8, 0, 0, 0, 0, 0, 0, 0, 0])?.code, .invalidLength)
    }

    func testBinaryTypes() throws {
        let v = try S.decode(.varbinary(10), [3, 0, 0x00, 0xFF, 0x1A])
        XCTAssertEqual(v, .binary([0x00, 0xFF, 0x1A]))
        XCTAssertEqual(v.canonicalText, "0x00FF1A")
        XCTAssertEqual(v.dataValue, Data([0x00, 0xFF, 0x1A]))
        XCTAssertEqual(try S.decode(.varbinary(10), [0, 0]).canonicalText, "0x")
        XCTAssertEqual(try S.decode(.varbinary(10), [0xFF, 0xFF]), .null)
        // timestamp is BIGBINARY(8).
        XCTAssertEqual(try S.decode(.binary(8), [8, 0, 0, 0, 0, 0, 0, 0, 0x07, 0xD1]).canonicalText, "0x00000000000007D1")
        XCTAssertEqual(try S.decode(TypeInfo(type: .varbinary, length: 10), [2, 0xAB, 0xCD]).canonicalText, "0xABCD")
        XCTAssertEqual(try S.decode(TypeInfo(type: .varbinary, length: 10), [0]), .null)
        // image: TextPtr (16) + timestamp (8) + length + data.
        let image = try S.encode(.image, .binary([1, 2, 3]))
        XCTAssertEqual(image.count, 1 + 16 + 8 + 4 + 3)
        XCTAssertEqual(try S.decode(.image, image), .binary([1, 2, 3]))
        XCTAssertEqual(try S.decode(.image, [0]), .null)
    }

    // MARK: Text

    func testUnicodeStringsEmptySpaceNullAndSurrogates() throws {
        let t = TypeInfo.nvarchar(20)
        let empty = try S.decode(t, [0, 0])
        let space = try S.decode(t, [2, 0, 0x20, 0])
        let null = try S.decode(t, [0xFF, 0xFF])
        XCTAssertEqual(empty, .string(""))
        XCTAssertEqual(space, .string(" "))
        XCTAssertEqual(null, .null)
        XCTAssertNotEqual(empty, space)
        XCTAssertEqual(empty.canonicalText, "")
        XCTAssertNil(null.canonicalText)
        // U+1F600 as a surrogate pair.
        let face = try S.decode(t, [4, 0, 0x3D, 0xD8, 0x00, 0xDE])
        XCTAssertEqual(face.stringValue, "\u{1F600}")
        XCTAssertEqual(try S.encode(t, .string("a\u{1F600}")), [6, 0, 0x61, 0, 0x3D, 0xD8, 0x00, 0xDE])
        // Unpaired high surrogate at character 1 -> offset of that character.
        let e = S.decodeError(t, [4, 0, 0x61, 0, 0x3D, 0xD8], baseOffset: 50)
        XCTAssertEqual(e?.code, .invalidEncoding)
        XCTAssertEqual(e?.offset, 54)
        XCTAssertEqual(e?.context, "NVARCHAR")
        // Lone low surrogate, and a high surrogate followed by a non-surrogate.
        XCTAssertEqual(S.decodeError(t, [4, 0, 0x00, 0xDC, 0x61, 0])?.offset, 2)
        XCTAssertEqual(S.decodeError(t, [6, 0, 0x61, 0, 0x3D, 0xD8, 0x61, 0])?.code, .invalidEncoding)
        XCTAssertEqual(S.decodeError(t, [6, 0, 0x61, 0, 0x3D, 0xD8, 0x61, 0])?.offset, 4)
        // 1-, 2- and 3-byte UTF-8 scalars and a pair, against Swift's own transcoding.
        let mixed = "aé€\u{FFFD}\u{10FFFF}z"
        let mixedBytes = try S.encode(t, .string(mixed))
        XCTAssertEqual(try S.decode(t, mixedBytes), .string(mixed))
        XCTAssertEqual(try S.decode(.nchar(20), mixedBytes), .string(mixed))
        // Odd byte count.
        XCTAssertEqual(S.decodeError(t, [3, 0, 0x61, 0, 0x62])?.code, .invalidLength)
        // ntext with TextPtr.
        let nt = try S.encode(.ntext(), .string("hé"))
        XCTAssertEqual(try S.decode(.ntext(), nt), .string("hé"))
    }

    func testCodePageTextDecoding() throws {
        func roundTrip(_ s: String, lcid: UInt32, sortID: UInt8 = 0, flags: Collation.Flags = [.ignoreCase],
                       expectBytes: [UInt8]? = nil) throws {
            let c = Collation(lcid: lcid, flags: flags, sortID: sortID)
            let info = TypeInfo.varchar(100, collation: c)
            let bytes = try S.encode(info, .string(s))
            if let expectBytes { XCTAssertEqual(Array(bytes.dropFirst(2)), expectBytes, "cp \(c.codePage)") }
            XCTAssertEqual(try S.decode(info, bytes), .string(s), "cp \(c.codePage)")
        }
        try roundTrip("Привет", lcid: 0x0419, expectBytes: [0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2])   // 1251
        try roundTrip("日本語", lcid: 0x0411, expectBytes: [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA])     // 932
        try roundTrip("你好", lcid: 0x0804, expectBytes: [0xC4, 0xE3, 0xBA, 0xC3])                   // 936
        try roundTrip("한국어", lcid: 0x0412)                                                         // 949
        try roundTrip("中文", lcid: 0x0404, expectBytes: [0xA4, 0xA4, 0xA4, 0xE5])                   // 950
        try roundTrip("ภาษาไทย", lcid: 0x041E)                                                      // 874
        try roundTrip("Žluťoučký kůň", lcid: 0x0405)                                               // 1250
        try roundTrip("Ελληνικά", lcid: 0x0408)                                                    // 1253
        try roundTrip("Türkçe ğış", lcid: 0x041F)                                                  // 1254
        try roundTrip("שלום", lcid: 0x040D)                                                        // 1255
        try roundTrip("مرحبا", lcid: 0x0401)                                                       // 1256
        try roundTrip("Ąžuolas", lcid: 0x0427)                                                     // 1257
        try roundTrip("Đà Nẵng".prefix(2) + "", lcid: 0x042A, expectBytes: [0xD0, 0xE0])                                                       // 1258
        try roundTrip("café €", lcid: 0x0409, sortID: 52, expectBytes: [0x63, 0x61, 0x66, 0xE9, 0x20, 0x80])
        // All 256 bytes of 1252 decode (C1 controls for the 5 undefined ones) and encode back.
        let all = [UInt8](0 ... 255)
        let allText = try XCTUnwrap(try S.decode(.varchar(300), [0, 1] + all).stringValue)
        XCTAssertEqual(allText.unicodeScalars.count, 256)
        XCTAssertEqual(allText.unicodeScalars.map(\.value)[0x80], 0x20AC)
        XCTAssertEqual(allText.unicodeScalars.map(\.value)[0xFF], 0xFF)
        XCTAssertEqual(Array(try S.encode(.varchar(300), .string(allText)).dropFirst(2)), all)
        try roundTrip("日本 \u{1F600}", lcid: 0x0409, flags: [.ignoreCase, .utf8])                 // UTF-8
        // 1252's undefined bytes decode to C1 controls, as Windows does.
        XCTAssertEqual(try S.decode(.varchar(10), [2, 0, 0x81, 0x9D]).stringValue, "\u{81}\u{9D}")
        // Invalid UTF-8 / invalid Shift-JIS -> invalidEncoding at the data offset.
        let utf8 = TypeInfo.varchar(10, collation: Collation(lcid: 0x0409, flags: [.utf8]))
        XCTAssertEqual(S.decodeError(utf8, [2, 0, 0xC3, 0x28], baseOffset: 3)?.code, .invalidEncoding)
        XCTAssertEqual(S.decodeError(utf8, [2, 0, 0xC3, 0x28], baseOffset: 3)?.offset, 5)
        let sjis = TypeInfo.varchar(10, collation: Collation(lcid: 0x0411))
        XCTAssertEqual(S.decodeError(sjis, [2, 0, 0x81, 0x20])?.code, .invalidEncoding)
        // Not representable: Cyrillic in a 1252 column.
        XCTAssertThrowsError(try S.encode(.varchar(10), .string("Ж"))) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .invalidValue)
        }
        // char/text/legacy varchar too.
        XCTAssertEqual(try S.decode(.char(3), [3, 0, 0x61, 0x20, 0x20]), .string("a  "))
        let text = try S.encode(.text(), .string("abc"))
        XCTAssertEqual(try S.decode(.text(), text), .string("abc"))
        XCTAssertEqual(try S.decode(TypeInfo(type: .varchar, length: 10), [2, 0x68, 0x69]), .string("hi"))
        XCTAssertEqual(try S.decode(TypeInfo(type: .varchar, length: 10), [0]), .null)
    }

    // MARK: PLP, xml, UDT

    func testPLPEncodeAndDecode() throws {
        let info = TypeInfo.nvarchar(nil)
        XCTAssertEqual(try info.decodePLPValue(nil), .null)
        XCTAssertEqual(try S.encode(info, .null), [UInt8](repeating: 0xFF, count: 8))
        let empty = try S.encode(info, .string(""))
        XCTAssertEqual(empty, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try info.decodePLPValue(try S.reassemblePLP(empty)), .string(""))
        let long = String(repeating: "xyz\u{1F600}", count: 3000)   // 30,000 bytes: several chunks
        let enc = try S.encode(info, .string(long))
        let data = try XCTUnwrap(try S.reassemblePLP(enc))
        XCTAssertEqual(data.count, 30_000)
        XCTAssertEqual(try info.decodePLPValue(data), .string(long))
        // decodeValue refuses PLP columns with a typed error.
        XCTAssertEqual(S.decodeError(info, enc)?.code, .unsupported)
        XCTAssertThrowsError(try TypeInfo.int.decodePLPValue([1])) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .unsupported)
        }
        // varchar(max) with a code page, varbinary(max), xml, UDT.
        let vm = TypeInfo.varchar(nil, collation: Collation(lcid: 0x0419))
        XCTAssertEqual(try vm.decodePLPValue(try S.reassemblePLP(try S.encode(vm, .string("Ёж")))), .string("Ёж"))
        let vb = TypeInfo.varbinary(nil)
        XCTAssertEqual(try vb.decodePLPValue(try S.reassemblePLP(try S.encode(vb, .binary([9, 8])))), .binary([9, 8]))
        let x = try TypeInfo.xml.decodePLPValue(Array("<a/>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
        XCTAssertEqual(x, .xml("<a/>"))
        XCTAssertEqual(x.canonicalText, "<a/>")
        let udt = TypeInfo(type: .udt, length: 20, isPLP: true)
        let u = try udt.decodePLPValue([0xDE, 0xAD])
        XCTAssertEqual(u, .udt([0xDE, 0xAD]))
        XCTAssertEqual(u.canonicalText, "0xDEAD")
        XCTAssertEqual(S.decodeError(TypeInfo.xml, [0]), S.decodeError(TypeInfo.xml, [0]))
    }

    // MARK: sql_variant

    /// A sql_variant decimal's magnitude length comes from the value (0-16 bytes), whatever its
    /// precision, as Microsoft's ODBC driver reads it (ConformanceTests compares with the driver).
    func testSQLVariantDecimalMagnitudeLengthComesFromTheValue() throws {
        for n in 0...17 {
            let mag: [UInt8] = (0..<n).map { $0 == 0 ? 0x39 : $0 == 1 ? 0x30 : 0 }   // 12345
            let body: [UInt8] = [0x6A, 2, 10, 2, 0] + mag
            let cell = [UInt8(body.count), 0, 0, 0] + body
            if n == 17 {
                XCTAssertEqual(S.decodeError(.sqlVariant, cell)?.code, .invalidLength)
            } else {
                XCTAssertEqual(try S.decode(.sqlVariant, cell).canonicalText, n == 0 ? "0.00" : n == 1 ? "-0.57" : "-123.45", "\(n) bytes")
            }
        }
    }

    func testSQLVariant() throws {
        // int 42: length 6, base INT4, 0 props, 4 data bytes.
        let intVariant: [UInt8] = [6, 0, 0, 0, 0x38, 0, 0x2A, 0, 0, 0]
        let v = try S.decode(.sqlVariant, intVariant)
        guard case .variant(let sv) = v else { return XCTFail("not a variant: \(v)") }
        XCTAssertEqual(sv.baseType.type, .int4)
        XCTAssertEqual(sv.value, .int(42))
        XCTAssertEqual(v.canonicalText, "42")
        XCTAssertEqual(v.intValue, 42)
        XCTAssertEqual(try S.encode(.sqlVariant, v), intVariant)
        XCTAssertEqual(try S.decode(.sqlVariant, [0, 0, 0, 0]), .null)
        // nvarchar base with collation and max length props.
        let s = try S.encode(.sqlVariant, .string("hi"))
        XCTAssertEqual(s.count, 4 + 2 + 7 + 4)
        let sv2 = try S.decode(.sqlVariant, s)
        XCTAssertEqual(sv2.canonicalText, "hi")
        XCTAssertEqual(sv2.stringValue, "hi")
        // Other bases round-trip.
        let bases: [SQLValue] = [
            .bit(true), .tinyint(7), .smallint(-2), .bigint(1 << 40), .real(1.5), .float(-2.25),
            .decimal(SQLDecimal("-1.50")!), .money(SQLMoney(units: 1)), .smallMoney(SQLMoney(units: -1)),
            .date(SQLDate(days: 5)), .time(SQLTime(ticks: 12, scale: 1)),
            .datetime2(SQLDateTime2(date: .max, time: SQLTime(ticks: 0, scale: 3))),
            .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .min, time: SQLTime(ticks: 0, scale: 0)), offsetMinutes: 60)),
            .datetime(SQLDateTime(days: 1, ticks: 2)), .smallDateTime(SQLSmallDateTime(days: 3, minutes: 4)),
            .uniqueIdentifier(UUID()), .binary([1, 2, 3]),
        ]
        for base in bases {
            let enc = try S.encode(.sqlVariant, base)
            let dec = try S.decode(.sqlVariant, enc)
            XCTAssertEqual(dec.baseValue, base)
            XCTAssertEqual(dec.canonicalText, base.canonicalText)
            for cut in 0 ..< enc.count {
                XCTAssertEqual(S.decodeError(.sqlVariant, Array(enc[..<cut]))?.code, .truncated, "\(base) cut \(cut)")
            }
        }
        // Varchar base in a Cyrillic collation.
        let cyr = SQLVariant(baseType: .varchar(10, collation: Collation(lcid: 0x0419)), value: .string("Да"))
        XCTAssertEqual(try S.decode(.sqlVariant, try S.encode(.sqlVariant, .variant(cyr))), .variant(cyr))
        // Hostile: bad base type, wrong prop count, NULL/xml can't be variants.
        XCTAssertEqual(S.decodeError(.sqlVariant, [3, 0, 0, 0, 0xF1, 0, 0])?.code, .invalidValue)
        XCTAssertEqual(S.decodeError(.sqlVariant, [3, 0, 0, 0, 0x38, 1, 0])?.code, .invalidLength)
        XCTAssertEqual(S.decodeError(.sqlVariant, [5, 0, 0, 0, 0x38, 0, 1, 2, 3])?.code, .invalidLength)
        // Property bytes beyond the variant's own length: malformed, not incomplete.
        XCTAssertEqual(S.decodeError(.sqlVariant, [2, 0, 0, 0, 0x38, 9])?.code, .invalidLength)
        XCTAssertNil(SQLVariant(value: .xml("<a/>")))
        XCTAssertThrowsError(try S.encode(.sqlVariant, .xml("<a/>")))
    }

    // MARK: Conversions

    func testConversions() throws {
        XCTAssertEqual(SQLValue.tinyint(5).intValue, 5)
        XCTAssertEqual(SQLValue.decimal(SQLDecimal("12.00")!).intValue, 12)
        XCTAssertNil(SQLValue.decimal(SQLDecimal("12.50")!).intValue)
        XCTAssertEqual(SQLValue.money(SQLMoney(units: 30_000)).intValue, 3)
        XCTAssertEqual(SQLValue.real(0.5).doubleValue, 0.5)
        XCTAssertEqual(SQLValue.decimal(SQLDecimal("0.1")!).decimalValue, Decimal(string: "0.1"))
        XCTAssertEqual(SQLValue.bit(true).boolValue, true)
        XCTAssertEqual(SQLValue.int(0).boolValue, false)
        XCTAssertNil(SQLValue.null.intValue)
        XCTAssertNil(SQLValue.string("5").intValue)
        XCTAssertEqual(SQLValue.date(SQLDate(days: Int32(Civil.daysFrom0001To1970) + 1)).dateValue(),
                       Date(timeIntervalSince1970: 86_400))
    }

    // MARK: Round trips and truncation

    static var roundTripCases: [(TypeInfo, SQLValue)] {
        let cyr = Collation(lcid: 0x0419)
        return [
            (.int, .int(.min)), (.int, .int(.max)), (.int, .null), (.bigint, .bigint(.min)), (.smallint, .smallint(.max)),
            (.tinyint, .tinyint(0)), (.bit, .bit(false)), (.bit, .null), (.real, .real(-.infinity)), (.float, .float(1e-300)),
            (TypeInfo(type: .int4, length: 4), .int(-7)), (TypeInfo(type: .int8, length: 8), .bigint(.max)),
            (TypeInfo(type: .int2, length: 2), .smallint(.min)), (TypeInfo(type: .int1, length: 1), .tinyint(255)),
            (TypeInfo(type: .bit, length: 1), .bit(true)), (TypeInfo(type: .flt4, length: 4), .real(3.25)),
            (TypeInfo(type: .flt8, length: 8), .float(.pi)), (TypeInfo(type: .money, length: 8), .money(.min)),
            (TypeInfo(type: .money4, length: 4), .smallMoney(.smallMax)), (.money, .money(.max)), (.smallMoney, .smallMoney(.smallMin)),
            (TypeInfo(type: .datetime, length: 8), .datetime(SQLDateTime(days: SQLDateTime.maxDays, ticks: 25_919_999))),
            (TypeInfo(type: .datetim4, length: 4), .smallDateTime(SQLSmallDateTime(days: 65535, minutes: 1439))),
            (.datetime, .datetime(SQLDateTime(days: SQLDateTime.minDays, ticks: 0))), (.smallDateTime, .null),
            (.uniqueIdentifier, .uniqueIdentifier(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!)),
            (.decimal(precision: 38, scale: 0), .decimal(SQLDecimal(isNegative: true, precision: 38, scale: 0, magnitude: SQLDecimal.maxMagnitude))),
            (.numeric(precision: 38, scale: 38), .decimal(SQLDecimal(precision: 38, scale: 38, magnitude: SQLDecimal.maxMagnitude))),
            (.decimal(precision: 9, scale: 2), .decimal(SQLDecimal(precision: 9, scale: 2, magnitude: 999_999_999))),
            (.decimal(precision: 19, scale: 4), .decimal(SQLDecimal(isNegative: true, precision: 19, scale: 4, magnitude: 1))),
            (.decimal(precision: 28, scale: 10), .decimal(SQLDecimal(precision: 28, scale: 10, magnitude: 12_345))),
            (TypeInfo(type: .decimal, length: 5, precision: 5, scale: 1), .decimal(SQLDecimal(precision: 5, scale: 1, magnitude: 99_999))),
            (.date, .date(.min)), (.date, .date(.max)), (.date, .null),
            (.time(scale: 0), .time(SQLTime(ticks: 86_399, scale: 0))), (.time(scale: 7), .time(SQLTime(ticks: 863_999_999_999, scale: 7))),
            (.time(scale: 4), .time(SQLTime(ticks: 0, scale: 4))),
            (.datetime2(scale: 0), .datetime2(SQLDateTime2(date: .min, time: SQLTime(ticks: 0, scale: 0)))),
            (.datetime2(scale: 7), .datetime2(SQLDateTime2(date: .max, time: SQLTime(ticks: 863_999_999_999, scale: 7)))),
            (.datetimeOffset(scale: 7), .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .max, time: SQLTime(ticks: 1, scale: 7)), offsetMinutes: -840))),
            (.datetimeOffset(scale: 0), .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .min, time: SQLTime(ticks: 0, scale: 0)), offsetMinutes: 840))),
            (.nvarchar(10), .string("")), (.nvarchar(10), .string(" ")), (.nvarchar(10), .null), (.nchar(2), .string("\u{1F600}")),
            (.varchar(10), .string("abc")), (.varchar(10, collation: cyr), .string("Ёж")), (.char(2), .string("  ")),
            (.varbinary(4), .binary([])), (.binary(2), .binary([0, 1])), (.varbinary(4), .null),
            (.text(), .string("t")), (.text(), .null), (.ntext(), .string("€")), (.image, .binary([0xFF])),
            (TypeInfo(type: .varchar, length: 10), .string("x")), (TypeInfo(type: .char, length: 1), .string("y")),
            (TypeInfo(type: .binary, length: 1), .binary([7])), (TypeInfo(type: .varbinary, length: 3), .binary([1, 2, 3])),
            (.sqlVariant, .variant(SQLVariant(value: .int(1))!)), (.sqlVariant, .null),
            (TypeInfo(type: .null), .null),
        ]
    }

    func testEncodeDecodeRoundTripsAndTruncation() throws {
        for (info, value) in Self.roundTripCases {
            let bytes = try S.encode(info, value)
            let back = try S.decode(info, bytes)
            XCTAssertEqual(back, value, "\(info.sqlTypeName) \(value)")
            XCTAssertEqual(back.canonicalText, value.canonicalText)
            // Decoding from a reader in the middle of a stream consumes exactly the value.
            var r = ByteReader([0xAA] + bytes + [0xBB], start: 1)
            XCTAssertEqual(try info.decodeValue(from: &r), value)
            XCTAssertEqual(r.remaining, 1)
            for cut in 0 ..< bytes.count {
                let e = S.decodeError(info, Array(bytes[..<cut]), baseOffset: 1000)
                XCTAssertEqual(e?.code, .truncated, "\(info.sqlTypeName) \(value) cut at \(cut)")
                XCTAssertGreaterThanOrEqual(e?.offset ?? 0, 1000)
                // The reader is left at the value's start, so the value can be retried with more bytes.
                var partial = ByteReader(Array(bytes[..<cut]))
                XCTAssertThrowsError(try info.decodeValue(from: &partial))
                XCTAssertEqual(partial.offset, 0)
            }
        }
        // PLP round trips.
        let plp: [(TypeInfo, SQLValue)] = [
            (.nvarchar(nil), .string("max \u{1F600}")), (.varchar(nil), .string("")), (.varbinary(nil), .binary([0, 0])),
            (.xml, .xml("<r a=\"1\"/>")), (TypeInfo(type: .udt, length: 0xFFFF, isPLP: true), .udt([1])), (.nvarchar(nil), .null),
        ]
        for (info, value) in plp {
            XCTAssertEqual(try info.decodePLPValue(try S.reassemblePLP(try S.encode(info, value))), value)
        }
    }

    func testEncodeRejectsMismatchesAndOutOfRange() {
        func code(_ info: TypeInfo, _ v: SQLValue) -> TDSDecodingError.Code? {
            do { _ = try S.encode(info, v); return nil } catch { return (error as? TDSDecodingError)?.code }
        }
        XCTAssertEqual(code(.tinyint, .int(256)), .invalidValue)
        XCTAssertEqual(code(.int, .string("1")), .invalidValue)
        XCTAssertEqual(code(TypeInfo(type: .int4, length: 4), .null), .invalidValue)
        XCTAssertEqual(code(.decimal(precision: 3, scale: 0), .decimal(SQLDecimal("1000")!)), .invalidValue)
        XCTAssertEqual(code(.decimal(precision: 5, scale: 1), .decimal(SQLDecimal("1.25")!)), .invalidValue)
        XCTAssertNil(code(.decimal(precision: 5, scale: 2), .decimal(SQLDecimal("1.2")!)))   // rescaled exactly
        XCTAssertEqual(code(.smallMoney, .money(.max)), .invalidValue)
        XCTAssertEqual(code(.time(scale: 0), .time(SQLTime(ticks: 1, scale: 7))), .invalidValue)
        XCTAssertEqual(code(.date, .date(SQLDate(days: -1))), .invalidValue)
        XCTAssertEqual(code(.uniqueIdentifier, .binary([1])), .invalidValue)
        XCTAssertEqual(code(TypeInfo(type: .varchar, length: 10), .string("")), .invalidValue)  // legacy: empty == NULL
        XCTAssertEqual(code(TypeInfo(type: TDSDataType(0x99)), .int(1)), .unknownType)
        XCTAssertEqual(try? S.encode(.int, .tinyint(3)), [4, 3, 0, 0, 0])   // widening is allowed
    }

    // MARK: The row paths' direct reads

    /// The full decoder for one value without ``WireColumn/quickValue(at:available:size:)``: the
    /// length rules, then ``WireColumn/decodeData(from:count:inVariant:)``.
    static func reference(_ l: WireColumn, _ bytes: [UInt8]) -> (value: SQLValue, size: Int)? {
        var r = ByteReader(bytes)
        do {
            switch l.type.rawValue {
            case 0x3D: return (try l.decodeData(from: &r, count: 8), r.offset)
            case 0x3A: return (try l.decodeData(from: &r, count: 4), r.offset)
            default:
                let n = Int(try r.readUInt8())
                if n == 0 { return (.null, 1) }
                if n > l.length, l.length > 0 { return nil }
                return (try l.decodeData(from: &r, count: n), r.offset)
            }
        } catch {
            return nil
        }
    }

    /// Every value the direct read accepts, the full decoder accepts with the same value and
    /// size (random and edge bytes for every type it reads, declared lengths, precisions and
    /// scales around the edges); what it declines is rare among valid values.
    func testQuickValueAgreesWithTheFullDecoder() {
        var types: [TypeInfo] = [.money, .smallMoney, TypeInfo(type: .moneyN, length: 0), .datetime, .smallDateTime,
                                 TypeInfo(type: .datetime, length: 8), TypeInfo(type: .datetim4, length: 4),
                                 TypeInfo(type: .datetimN, length: 4), .uniqueIdentifier, TypeInfo(type: .guid, length: 0), .date]
        for (p, s) in [(0, 0), (1, 0), (9, 2), (10, 0), (18, 4), (19, 19), (20, 5), (28, 10), (29, 0), (38, 12), (38, 38), (39, 0)]
            as [(UInt8, UInt8)] {
            types.append(.decimal(precision: p, scale: s))
            types.append(.numeric(precision: p, scale: s))
            types.append(TypeInfo(type: .decimal, length: SQLDecimal.wireLength(precision: p), precision: p, scale: s))
        }
        for s in 0 ... 8 as ClosedRange<UInt8> {
            types += [.time(scale: s), .datetime2(scale: s), .datetimeOffset(scale: s)]
        }
        var rng = SystemRandomNumberGenerator()
        var quick = 0, declinedValid = 0
        for info in types {
            let l = WireColumn(info)
            let fixed = info.type.rawValue == 0x3D || info.type.rawValue == 0x3A
            for k in 0 ..< 2000 {
                var bytes: [UInt8]
                if fixed {
                    bytes = (0 ..< (info.type.rawValue == 0x3D ? 8 : 4)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                    if k % 2 == 0 { bytes[bytes.count - 1] = 0; bytes[bytes.count == 8 ? 3 : 1] = 0 }   // often in range
                } else {
                    let n = k % 5 == 0 ? Int.random(in: 0 ... 18, using: &rng) : (info.length > 0 ? info.length : [4, 8, 16].randomElement(using: &rng)!)
                    bytes = [UInt8(n)] + (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                    if n > 0, k % 3 != 0 {
                        switch info.type {
                        case .decimalN, .numericN, .decimal, .numeric:
                            bytes[1] = UInt8(k % 2)
                            // Magnitudes of every size up to the precision's, and the extremes.
                            let digits = Int(info.precision == 0 ? 1 : min(info.precision, 38))
                            let mag: UInt128 = k % 7 == 0 ? Civil.pow10(digits) - 1 : k % 11 == 0 ? Civil.pow10(digits) : k % 13 == 0 ? 0
                                : UInt128.random(in: 0 ..< Civil.pow10(Int.random(in: 0 ... digits, using: &rng)), using: &rng)
                            for i in 0 ..< n - 1 { bytes[2 + i] = UInt8(truncatingIfNeeded: mag >> (8 * i)) }
                        case .dateN, .datetime2N, .datetimeOffsetN: bytes[n] = 0; if info.type == .datetimeOffsetN, n >= 3 { bytes[n - 1] = 0 }
                        case .timeN: bytes[n] &= 0x0F
                        case .datetimN: bytes[n] = 0; if n == 8 { bytes[4] = 0 } else { bytes[n - 1] = 0 }
                        default: break
                        }
                    }
                }
                bytes += [0xFD, 0xFD]
                let full = Self.reference(l, bytes)
                let fast = bytes.withUnsafeBytes { l.quickValue(at: $0.baseAddress!, available: $0.count) }
                if let fast {
                    quick += 1
                    XCTAssertEqual(full?.value, fast.value, "\(info) \(bytes)")
                    XCTAssertEqual(full?.size, fast.size, "\(info) \(bytes)")
                    // The same value cut short is declined (the full decoder waits or refuses).
                    let cut = bytes.withUnsafeBytes { l.quickValue(at: $0.baseAddress!, available: fast.size - 1) }
                    XCTAssertNil(cut, "\(info) \(bytes)")
                } else if full != nil {
                    declinedValid += 1
                }
                // The reader-level decoder (which takes the direct read first) gives the full decoder's answer.
                var r = ByteReader(bytes)
                let viaReader = try? info.decodeValue(from: &r)
                XCTAssertEqual(viaReader, full?.value, "\(info) \(bytes)")
                if let full { XCTAssertEqual(r.offset, full.size, "\(info) \(bytes)") } else { XCTAssertEqual(r.offset, 0) }
            }
        }
        XCTAssertGreaterThan(quick, 20_000)
        XCTAssertLessThan(declinedValid, quick / 4)
    }

    /// The direct read at the edges: decimal(38,s) at ±(10^38 - 1), scale 0 and 38, negative zero,
    /// a magnitude beyond the precision (declined: the full decoder widens it), money and
    /// smallmoney min/max, datetime2 and time at 23:59:59.9999999, dates at both ends.
    func testQuickValueEdges() throws {
        func quick(_ info: TypeInfo, _ bytes: [UInt8]) -> SQLValue? {
            bytes.withUnsafeBytes { WireColumn(info).quickValue(at: $0.baseAddress!, available: $0.count)?.value }
        }
        func le(_ v: UInt128, _ n: Int) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let max = SQLDecimal.maxMagnitude
        for s in [0, 12, 38] as [UInt8] {
            let t = TypeInfo.decimal(precision: 38, scale: s)
            XCTAssertEqual(quick(t, [17, 1] + le(max, 16)), .decimal(SQLDecimal(isNegative: false, precision: 38, scale: s, magnitude: max)))
            XCTAssertEqual(quick(t, [17, 0] + le(max, 16)), .decimal(SQLDecimal(isNegative: true, precision: 38, scale: s, magnitude: max)))
            XCTAssertEqual(quick(t, [17, 0] + le(0, 16)), .decimal(SQLDecimal(isNegative: true, precision: 38, scale: s, magnitude: 0)))
            XCTAssertNil(quick(t, [17, 1] + le(max + 1, 16)))            // 10^38: refused by the full decoder
            XCTAssertNil(quick(t, [17, 2] + le(1, 16)))                  // sign byte 2
        }
        XCTAssertEqual(try S.decode(.decimal(precision: 38, scale: 38), [17, 0] + le(max, 16)).canonicalText,
                       "-0.99999999999999999999999999999999999999")
        // decimal(18,4): 8 magnitude bytes, shorter ones read as sent; 10^18 is widened by the full decoder only.
        let d18 = TypeInfo.decimal(precision: 18, scale: 4)
        XCTAssertEqual(quick(d18, [9, 0] + le(999_999_999_999_999_999, 8))?.canonicalText, "-99999999999999.9999")
        XCTAssertEqual(quick(d18, [5, 1] + le(12_345, 4))?.canonicalText, "1.2345")
        XCTAssertEqual(quick(d18, [1, 1]), .decimal(SQLDecimal(precision: 18, scale: 4, magnitude: 0)))
        XCTAssertNil(quick(d18, [9, 1] + le(1_000_000_000_000_000_000, 8)))
        XCTAssertEqual(try S.decode(d18, [9, 1] + le(1_000_000_000_000_000_000, 8)),
                       .decimal(SQLDecimal(precision: 19, scale: 4, magnitude: 1_000_000_000_000_000_000)))
        XCTAssertNil(quick(d18, [17, 1] + le(1, 16)))                   // longer than the precision's 9 bytes
        // money / smallmoney (MONEYN) min and max, high half first.
        XCTAssertEqual(quick(.money, [8, 0, 0, 0, 0x80, 0, 0, 0, 0]), .money(.min))
        XCTAssertEqual(quick(.money, [8, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF]), .money(.max))
        XCTAssertEqual(quick(.smallMoney, [4, 0, 0, 0, 0x80]), .smallMoney(.smallMin))
        XCTAssertEqual(quick(.smallMoney, [4, 0xFF, 0xFF, 0xFF, 0x7F]), .smallMoney(.smallMax))
        XCTAssertNil(quick(.money, [5, 0, 0, 0, 0, 0]))
        // datetime2(7) at the last tick of 9999-12-31; one tick more is refused.
        let lastTick = UInt128(864_000_000_000 - 1)
        let lastDay = UInt128(Civil.maxDay)
        XCTAssertEqual(quick(.datetime2(scale: 7), [8] + le(lastTick, 5) + le(lastDay, 3))?.canonicalText, "9999-12-31 23:59:59.9999999")
        XCTAssertNil(quick(.datetime2(scale: 7), [8] + le(lastTick + 1, 5) + le(lastDay, 3)))
        XCTAssertNil(quick(.datetime2(scale: 7), [8] + le(lastTick, 5) + le(lastDay + 1, 3)))
        XCTAssertEqual(quick(.datetime2(scale: 0), [6] + le(86_399, 3) + le(0, 3))?.canonicalText, "0001-01-01 23:59:59")
        XCTAssertEqual(quick(.time(scale: 3), [4] + le(86_399_999, 4))?.canonicalText, "23:59:59.999")
        XCTAssertEqual(quick(.date, [3] + le(lastDay, 3))?.canonicalText, "9999-12-31")
        XCTAssertEqual(quick(.datetimeOffset(scale: 7), [10] + le(0, 5) + le(lastDay, 3) + [0xB8, 0xFC])?.canonicalText,
                       "9999-12-30 10:00:00.0000000 -14:00")
        XCTAssertNil(quick(.datetimeOffset(scale: 7), [10] + le(0, 5) + le(lastDay, 3) + [0x49, 0x03]))   // +841 minutes
        XCTAssertNil(quick(.datetime2(scale: 8), [8] + le(0, 8)))
        // datetime: 1753-01-01 and 9999-12-31 23:59:59.997; smalldatetime minutes 1440 refused.
        XCTAssertEqual(quick(TypeInfo(type: .datetime, length: 8), le(UInt128(UInt32(bitPattern: -53_690)), 4) + le(0, 4))?.canonicalText,
                       "1753-01-01 00:00:00.000")
        XCTAssertEqual(quick(.datetime, [8] + le(2_958_463, 4) + le(25_919_999, 4))?.canonicalText, "9999-12-31 23:59:59.997")
        XCTAssertNil(quick(.datetime, [8] + le(2_958_464, 4) + le(0, 4)))
        XCTAssertNil(quick(.smallDateTime, [4] + le(0, 2) + le(1440, 2)))
        // A value longer than its TYPE_INFO declares is left to the full decoder (which refuses it).
        XCTAssertNil(quick(TypeInfo(type: .datetimN, length: 4), [8] + le(0, 8)))
        // NULL.
        XCTAssertEqual(quick(.decimal(precision: 18, scale: 4), [0]), .null)
        XCTAssertEqual(quick(.datetime2(scale: 7), [0]), .null)
        XCTAssertEqual(quick(.uniqueIdentifier, [0]), .null)
    }

    func testUnknownTypeValueIsTypedError() {
        XCTAssertEqual(S.decodeError(TypeInfo(type: TDSDataType(0x99)), [1, 2])?.code, .unknownType)
    }
}
