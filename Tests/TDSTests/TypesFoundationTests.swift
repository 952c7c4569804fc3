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
