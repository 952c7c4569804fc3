import Foundation
import XCTest
@testable import TDS

/// Always Encrypted normalization (NormVersion 1): the bytes encrypted for each type, and the
/// checks on decrypted bytes (wrong width, out of range: typed errors, never a wrong value).
final class TypeInfoNormalizationTests: XCTestCase {
    func testNormalizedWidths() throws {
        // Integers and bit: 8-byte little-endian, sign-extended (tinyint zero-extended).
        XCTAssertEqual(try TypeInfo.int.normalized(.int(-2)), [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(try TypeInfo.smallint.normalized(.smallint(0x0102)), [2, 1, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try TypeInfo.tinyint.normalized(.tinyint(200)), [200, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try TypeInfo.bigint.normalized(.bigint(-1)), [UInt8](repeating: 0xFF, count: 8))
        XCTAssertEqual(try TypeInfo.bit.normalized(.bit(true)), [1, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try TypeInfo.bit.normalized(.bit(false)), [0, 0, 0, 0, 0, 0, 0, 0])
        // decimal: sign byte and a 16-byte magnitude whatever the precision.
        let d = try TypeInfo.decimal(precision: 5, scale: 2).normalized(.decimal(SQLDecimal(precision: 5, scale: 2, magnitude: 12_345)))
        XCTAssertEqual(d, [1, 0x39, 0x30] + [UInt8](repeating: 0, count: 14))
        // As on the wire: money 8, smallmoney 4, float 8, real 4, date 3, time by scale, uuid 16.
        XCTAssertEqual(try TypeInfo.money.normalized(.money(SQLMoney(units: 1))).count, 8)
        XCTAssertEqual(try TypeInfo.smallMoney.normalized(.smallMoney(SQLMoney(units: 1))).count, 4)
        XCTAssertEqual(try TypeInfo.float.normalized(.float(1)).count, 8)
        XCTAssertEqual(try TypeInfo.real.normalized(.real(1)).count, 4)
        XCTAssertEqual(try TypeInfo.date.normalized(.date(SQLDate(days: 1))), [1, 0, 0])
        for (scale, width) in [(0, 3), (2, 3), (3, 4), (4, 4), (5, 5), (7, 5)] as [(UInt8, Int)] {
            let t = SQLTime(ticks: 1, scale: scale)
            XCTAssertEqual(try TypeInfo.time(scale: scale).normalized(.time(t)).count, width, "time(\(scale))")
            let dt = SQLDateTime2(date: SQLDate(days: 2), time: t)
            XCTAssertEqual(try TypeInfo.datetime2(scale: scale).normalized(.datetime2(dt)).count, width + 3)
            XCTAssertEqual(try TypeInfo.datetimeOffset(scale: scale).normalized(.datetimeOffset(SQLDateTimeOffset(utc: dt, offsetMinutes: 60))).count,
                           width + 5)
        }
        XCTAssertEqual(try TypeInfo.uniqueIdentifier.normalized(.uniqueIdentifier(UUID())).count, 16)
        // Strings and binary: their bytes.
        XCTAssertEqual(try TypeInfo.nvarchar(10).normalized(.string("ab")), [0x61, 0, 0x62, 0])
        XCTAssertEqual(try TypeInfo.varchar(10).normalized(.string("ab")), [0x61, 0x62])
        XCTAssertEqual(try TypeInfo.varbinary(nil).normalized(.binary([9, 8])), [9, 8])
    }

    func testRoundTripThroughTheCodec() throws {
        let cases: [(TypeInfo, SQLValue)] = [
            (.tinyint, .tinyint(255)), (.smallint, .smallint(-32_768)), (.int, .int(Int32.min)), (.bigint, .bigint(Int64.max)),
            (.bit, .bit(true)), (.decimal(precision: 38, scale: 0), .decimal(SQLDecimal(isNegative: true, precision: 38, scale: 0, magnitude: UInt128.max >> 2))),
            (.decimal(precision: 9, scale: 9), .decimal(SQLDecimal(precision: 9, scale: 9, magnitude: 999_999_999))),
            (.money, .money(SQLMoney(units: Int64.min))), (.smallMoney, .smallMoney(SQLMoney(units: -5))),
            (.float, .float(.pi)), (.real, .real(-0.5)), (.datetime, .datetime(SQLDateTime(days: -53_690, ticks: 0))),
            (.smallDateTime, .smallDateTime(SQLSmallDateTime(days: 65_535, minutes: 1439))),
            (.nchar(3), .string("äöü")), (.char(2), .string("hi")), (.binary(3), .binary([1, 2, 3])),
        ]
        for (type, value) in cases {
            XCTAssertEqual(try type.decodeNormalized(try type.normalized(value)), value, "\(type)")
        }
    }

    func testDecryptedBytesAreChecked() {
        func code(_ type: TypeInfo, _ bytes: [UInt8]) -> TDSDecodingError.Code? {
            do { _ = try type.decodeNormalized(bytes); return nil } catch { return error.code }
        }
        XCTAssertEqual(code(.int, [0, 0, 0, 0, 1, 0, 0, 0]), .invalidValue)   // 2^32 in an int
        XCTAssertEqual(code(.tinyint, [0xFF] + [UInt8](repeating: 0xFF, count: 7)), .invalidValue)   // -1 in a tinyint
        XCTAssertEqual(code(.int, [1, 0, 0, 0]), .invalidLength)   // not normalized to 8 bytes
        XCTAssertEqual(code(.bit, [2, 0, 0, 0, 0, 0, 0, 0]), .invalidValue)
        XCTAssertEqual(code(.decimal(precision: 5, scale: 0), [1, 1, 2, 3, 4, 5] + [UInt8](repeating: 0, count: 11)), .invalidValue)
        XCTAssertEqual(code(.decimal(precision: 5, scale: 0), [1, 1]), .invalidLength)
        XCTAssertEqual(code(.time(scale: 7), [1, 2, 3]), .invalidLength)
        XCTAssertEqual(code(.uniqueIdentifier, [UInt8](repeating: 0, count: 15)), .invalidLength)
        XCTAssertEqual(code(.xml, [0x3C, 0]), .unsupported)
        XCTAssertEqual(code(.sqlVariant, [1]), .unsupported)
        XCTAssertFalse(TypeInfo.text().isEncryptable)
        XCTAssertTrue(TypeInfo.nvarchar(nil).isEncryptable)
        XCTAssertThrowsError(try TypeInfo.int.normalized(.null))
        XCTAssertThrowsError(try TypeInfo.int.normalized(.bigint(1 << 40)))
        XCTAssertThrowsError(try TypeInfo.xml.normalized(.xml("<a/>")))
    }
}
