import Foundation
import XCTest
@testable import TDS

final class TypesFoundationTests: XCTestCase {
    let utc = TimeZone(secondsFromGMT: 0)!

    func testDatesFromFoundation() throws {
        let d = Date(timeIntervalSince1970: 1_704_074_400.1234567)   // 2024-01-01 02:00:00.1234567 UTC
        XCTAssertEqual(SQLDate(d)?.canonicalText, "2024-01-01")
        XCTAssertEqual(SQLDate(d, in: TimeZone(secondsFromGMT: -5 * 3600)!)?.canonicalText, "2023-12-31")
        XCTAssertEqual(SQLDateTime2(d, scale: 3)?.canonicalText, "2024-01-01 02:00:00.123")
        XCTAssertEqual(SQLDateTime2(d, scale: 0)?.canonicalText, "2024-01-01 02:00:00")
        XCTAssertEqual(SQLDateTime2(d, in: TimeZone(secondsFromGMT: 3600)!, scale: 1)?.canonicalText, "2024-01-01 03:00:00.1")
        let dto = try XCTUnwrap(SQLDateTimeOffset(d, offsetMinutes: -300, scale: 0))
        XCTAssertEqual(dto.canonicalText, "2023-12-31 21:00:00 -05:00")
        XCTAssertEqual(dto.date, Date(timeIntervalSince1970: 1_704_074_400))
        XCTAssertNil(SQLDateTimeOffset(d, offsetMinutes: 900))
        XCTAssertEqual(SQLDateTime(d)?.canonicalText, "2024-01-01 02:00:00.123")
        XCTAssertEqual(SQLSmallDateTime(Date(timeIntervalSince1970: 89.9))?.canonicalText, "1970-01-01 00:01:00")
        // Rounding up into the next day.
        let lastTick = Date(timeIntervalSince1970: 86_399.9999999)
        XCTAssertEqual(SQLDateTime2(lastTick, scale: 2)?.canonicalText, "1970-01-02 00:00:00.00")
        XCTAssertEqual(SQLDateTime(lastTick)?.canonicalText, "1970-01-02 00:00:00.000")
        // Ranges.
        XCTAssertNil(SQLDateTime(Date(timeIntervalSince1970: -7_000_000_000)))      // 1748
        XCTAssertNotNil(SQLDateTime2(Date(timeIntervalSince1970: -7_000_000_000)))
        XCTAssertNil(SQLSmallDateTime(Date(timeIntervalSince1970: 4_000_000_000)))   // 2096
        XCTAssertNil(SQLDate(Date.distantFuture.addingTimeInterval(1e12)))
        // Round trips through Date.
        let v = try XCTUnwrap(SQLDateTime2(d, in: utc, scale: 7))
        XCTAssertEqual(v.date(in: utc).timeIntervalSince1970, d.timeIntervalSince1970, accuracy: 1e-6)
        let berlin = try XCTUnwrap(TimeZone(identifier: "Europe/Berlin"))
        let summer = Date(timeIntervalSince1970: 1_720_000_000)
        XCTAssertEqual(try XCTUnwrap(SQLDateTime2(summer, in: berlin)).date(in: berlin).timeIntervalSince1970,
                       summer.timeIntervalSince1970, accuracy: 1e-6)
    }

    func testMoneyAndValuesFromFoundation() throws {
        XCTAssertEqual(SQLMoney(Decimal(string: "-12.3456")!)?.units, -123_456)
        XCTAssertNil(SQLMoney(Decimal(string: "1.23456")!))
        XCTAssertEqual(SQLMoney(Decimal(string: "922337203685477.5807")!), .max)
        XCTAssertNil(SQLMoney(Decimal(string: "922337203685477.5808")!))
        XCTAssertEqual(SQLMoney(Decimal(string: "-922337203685477.5808")!), .min)
        XCTAssertEqual(SQLValue(Data([1, 2])), .binary([1, 2]))
        XCTAssertEqual(SQLValue("x"), .string("x"))
        XCTAssertEqual(SQLValue(5), .bigint(5))
        XCTAssertEqual(SQLValue(true), .bit(true))
    }
}

final class TypesParameterTests: XCTestCase {
    func testParameterTypesAndDeclarations() throws {
        let cases: [(SQLValue, String)] = [
            (.int(1), "int"), (.bigint(1), "bigint"), (.bit(true), "bit"), (.float(1), "float"), (.real(1), "real"),
            (.decimal(SQLDecimal("-12.345")!), "decimal(5,3)"), (.money(.max), "money"), (.smallMoney(.smallMin), "smallmoney"),
            (.string("hi"), "nvarchar(4000)"), (.string(String(repeating: "x", count: 4001)), "nvarchar(max)"),
            (.binary([1]), "varbinary(8000)"), (.binary([UInt8](repeating: 0, count: 8001)), "varbinary(max)"),
            (.date(.min), "date"), (.time(SQLTime(ticks: 0, scale: 3)), "time(3)"),
            (.datetime2(SQLDateTime2(date: .max, time: SQLTime(ticks: 0, scale: 0))), "datetime2(0)"),
            (.datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .max, time: SQLTime(ticks: 0, scale: 5)), offsetMinutes: 0)),
             "datetimeoffset(5)"),
            (.uniqueIdentifier(UUID()), "uniqueidentifier"), (.null, "nvarchar(4000)"), (.xml("<a/>"), "xml"),
            (.datetime(SQLDateTime(days: 0, ticks: 0)), "datetime"), (.variant(SQLVariant(value: .int(1))!), "sql_variant"),
        ]
        for (value, name) in cases {
            let (info, sent) = TypeInfo.parameter(for: value)
            XCTAssertEqual(info.sqlTypeName, name)
            // The chosen TYPE_INFO encodes and decodes the value back.
            var w = ByteWriter()
            try info.encodeValue(sent, into: &w)
            var r = ByteReader(w.bytes)
            if info.isPLP {
                XCTAssertEqual(try info.decodePLPValue(try TypesTestSupport.reassemblePLP(w.bytes)), sent)
            } else {
                XCTAssertEqual(try info.decodeValue(from: &r), sent)
            }
        }
        // Before 7.3, time types go as text; before 7.2 long strings go as ntext.
        let (i1, v1) = TypeInfo.parameter(for: .date(SQLDate(year: 2020, month: 5, day: 17)!), version: .v7_2)
        XCTAssertEqual(i1.sqlTypeName, "nvarchar(4000)")
        XCTAssertEqual(v1, .string("2020-05-17"))
        XCTAssertEqual(TypeInfo.parameter(for: .string(String(repeating: "y", count: 5000)), version: .v7_1_1).0.sqlTypeName, "ntext")
    }
}
