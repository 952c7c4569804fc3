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
        // float, real, date: as on the wire.
        XCTAssertEqual(try TypeInfo.float.normalized(.float(1)).count, 8)
        XCTAssertEqual(try TypeInfo.real.normalized(.real(1)).count, 4)
        XCTAssertEqual(try TypeInfo.date.normalized(.date(SQLDate(days: 1))), [1, 0, 0])
        // time, datetime2, datetimeoffset: the time at scale 7 in 5 bytes whatever the scale
        // (SqlClient's SerializeTime), then the date, then the offset.
        for scale in 0 ... 7 as ClosedRange<UInt8> {
            let t = SQLTime(ticks: 1, scale: scale)
            let t7 = [UInt8](withUnsafeBytes(of: (UInt64(1) * [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000][7 - Int(scale)]).littleEndian) { Array($0.prefix(5)) })
            XCTAssertEqual(try TypeInfo.time(scale: scale).normalized(.time(t)), t7, "time(\(scale))")
            let dt = SQLDateTime2(date: SQLDate(days: 2), time: t)
            XCTAssertEqual(try TypeInfo.datetime2(scale: scale).normalized(.datetime2(dt)), t7 + [2, 0, 0], "datetime2(\(scale))")
            XCTAssertEqual(try TypeInfo.datetimeOffset(scale: scale).normalized(.datetimeOffset(SQLDateTimeOffset(utc: dt, offsetMinutes: -60))),
                           t7 + [2, 0, 0, 0xC4, 0xFF], "datetimeoffset(\(scale))")
        }
        // time(0) 23:59:59 = 86,399 s = 863,990,000,000 ticks at scale 7 = 0xC9_29D1_2980.
        XCTAssertEqual(try TypeInfo.time(scale: 0).normalized(.time(SQLTime(ticks: 86_399, scale: 0))), [0x80, 0x29, 0xD1, 0x29, 0xC9])
        // money: 8 bytes, high half first; smallmoney widened to money (SqlClient's SerializeCurrency).
        XCTAssertEqual(try TypeInfo.money.normalized(.money(SQLMoney(units: 0x1_0000_0002))), [1, 0, 0, 0, 2, 0, 0, 0])
        XCTAssertEqual(try TypeInfo.smallMoney.normalized(.smallMoney(SQLMoney(units: -5))), [0xFF, 0xFF, 0xFF, 0xFF, 0xFB, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(try TypeInfo.smallMoney.normalized(.smallMoney(SQLMoney(units: 7))), [0, 0, 0, 0, 7, 0, 0, 0])
        XCTAssertEqual(try TypeInfo(type: .money4, length: 4).normalized(.smallMoney(SQLMoney(units: 7))), [0, 0, 0, 0, 7, 0, 0, 0])
        XCTAssertEqual(try TypeInfo.uniqueIdentifier.normalized(.uniqueIdentifier(UUID())).count, 16)
        // Strings and binary: their bytes, fixed-length ones not padded (SqlClient sends the value's own length).
        XCTAssertEqual(try TypeInfo.nchar(4).normalized(.string("ab")), [0x61, 0, 0x62, 0])
        XCTAssertEqual(try TypeInfo.char(4).normalized(.string("ab")), [0x61, 0x62])
        XCTAssertEqual(try TypeInfo.binary(4).normalized(.binary([9])), [9])
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
            (.smallMoney, .smallMoney(SQLMoney(units: Int64(Int32.min)))), (.smallMoney, .smallMoney(SQLMoney(units: Int64(Int32.max)))),
            (.time(scale: 0), .time(SQLTime(ticks: 86_399, scale: 0))), (.time(scale: 3), .time(SQLTime(ticks: 86_399_999, scale: 3))),
            (.time(scale: 7), .time(SQLTime(ticks: 863_999_999_999, scale: 7))),
            (.datetime2(scale: 2), .datetime2(SQLDateTime2(date: SQLDate(days: 3_652_058), time: SQLTime(ticks: 8_639_999, scale: 2)))),
            (.datetimeOffset(scale: 4), .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: SQLDate(days: 1), time: SQLTime(ticks: 5, scale: 4)),
                                                                          offsetMinutes: 840))),
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
        XCTAssertEqual(code(.money, [1, 2, 3, 4]), .invalidLength)   // money is 8 bytes
        XCTAssertEqual(code(.smallMoney, [1, 2, 3, 4]), .invalidLength)   // smallmoney too, as money
        XCTAssertEqual(code(.smallMoney, [1, 0, 0, 0, 0, 0, 0, 0]), .invalidValue)   // 2^32 units: beyond smallmoney
        XCTAssertEqual(code(.time(scale: 2), [1, 2, 3]), .invalidLength)   // time(2)'s wire width, not scale 7's 5 bytes
        XCTAssertEqual(code(.datetime2(scale: 7), [UInt8](repeating: 0, count: 7)), .invalidLength)
        XCTAssertEqual(code(.datetimeOffset(scale: 0), [UInt8](repeating: 0, count: 8)), .invalidLength)
        XCTAssertEqual(code(.binary(2), [1, 2, 3]), .invalidLength)   // longer than binary(2)
        XCTAssertEqual(code(.nchar(1), [0x61, 0, 0x62, 0]), .invalidLength)
        XCTAssertEqual(code(.decimal(precision: 5, scale: 0), [1, 1, 2, 3, 4, 5] + [UInt8](repeating: 0, count: 11)), .invalidValue)
        XCTAssertEqual(code(.decimal(precision: 5, scale: 0), [1, 1]), .invalidLength)
        XCTAssertEqual(code(.decimal(precision: 5, scale: 0), [1, 1, 2, 3, 4, 5, 6]), .invalidLength)
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

    /// What SqlClient's DeserializeUnencryptedValue accepts after decrypting, beyond its own writes.
    func testDecryptedValuesAsSqlClientReadsThem() throws {
        // bit: any non-zero integer is 1.
        XCTAssertEqual(try TypeInfo.bit.decodeNormalized([2, 0, 0, 0, 0, 0, 0, 0x80]), .bit(true))
        XCTAssertEqual(try TypeInfo.bit.decodeNormalized([UInt8](repeating: 0, count: 8)), .bit(false))
        // decimal: a 4-, 8- or 12-byte magnitude after the sign byte too.
        XCTAssertEqual(try TypeInfo.decimal(precision: 5, scale: 2).decodeNormalized([0, 0x39, 0x30, 0, 0]),
                       .decimal(SQLDecimal(isNegative: true, precision: 5, scale: 2, magnitude: 12_345)))
        XCTAssertEqual(try TypeInfo.decimal(precision: 20, scale: 0).decodeNormalized([1, 7, 0, 0, 0, 0, 0, 0, 0]),
                       .decimal(SQLDecimal(precision: 20, scale: 0, magnitude: 7)))
        // smallmoney from 8 bytes, high half first.
        XCTAssertEqual(try TypeInfo.smallMoney.decodeNormalized([0xFF, 0xFF, 0xFF, 0xFF, 0xFB, 0xFF, 0xFF, 0xFF]), .smallMoney(SQLMoney(units: -5)))
        XCTAssertEqual(try TypeInfo.money.decodeNormalized([1, 0, 0, 0, 2, 0, 0, 0]), .money(SQLMoney(units: 0x1_0000_0002)))
        // time at scale 7 read into the column's scale: 1 ms (10,000 ticks) is time(3) tick 1.
        XCTAssertEqual(try TypeInfo.time(scale: 3).decodeNormalized([0x10, 0x27, 0, 0, 0]), .time(SQLTime(ticks: 1, scale: 3)))
        XCTAssertEqual(try TypeInfo.datetimeOffset(scale: 1).decodeNormalized([0x40, 0x42, 0x0F, 0, 0, 9, 0, 0, 0x3C, 0]),
                       .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: SQLDate(days: 9), time: SQLTime(ticks: 1, scale: 1)),
                                                         offsetMinutes: 60)))
        // char, nchar, binary: padded to the declared length (spaces, zeros); varying types not.
        XCTAssertEqual(try TypeInfo.char(4).decodeNormalized([0x68, 0x69]), .string("hi  "))
        XCTAssertEqual(try TypeInfo.nchar(3).decodeNormalized([0x61, 0]), .string("a  "))
        XCTAssertEqual(try TypeInfo.binary(3).decodeNormalized([1]), .binary([1, 0, 0]))
        XCTAssertEqual(try TypeInfo.varchar(4).decodeNormalized([0x68, 0x69]), .string("hi"))
        XCTAssertEqual(try TypeInfo.varbinary(3).decodeNormalized([1]), .binary([1]))
    }

    /// The plaintext TYPE_INFO of a ParamCipherInfo in SqlClient's shapes (TdsParser.WriteSmiTypeInfo).
    func testParamCipherTypeInfo() {
        func bytes(_ t: TypeInfo) -> [UInt8] {
            var w = ByteWriter()
            t.encode(into: &w, version: .v7_4)
            return w.bytes
        }
        XCTAssertEqual(bytes(TypeInfo.decimal(precision: 5, scale: 2).paramCipherTypeInfo), [0x6C, 17, 5, 2])
        XCTAssertEqual(bytes(TypeInfo.numeric(precision: 38, scale: 0).paramCipherTypeInfo), [0x6C, 17, 38, 0])
        XCTAssertEqual(bytes(TypeInfo(type: .int4, length: 4).paramCipherTypeInfo), [0x26, 4])
        XCTAssertEqual(bytes(TypeInfo(type: .int1, length: 1).paramCipherTypeInfo), [0x26, 1])
        XCTAssertEqual(bytes(TypeInfo(type: .bit, length: 1).paramCipherTypeInfo), [0x68, 1])
        XCTAssertEqual(bytes(TypeInfo(type: .money4, length: 4).paramCipherTypeInfo), [0x6E, 4])
        XCTAssertEqual(bytes(TypeInfo(type: .flt8, length: 8).paramCipherTypeInfo), [0x6D, 8])
        XCTAssertEqual(bytes(TypeInfo(type: .datetim4, length: 4).paramCipherTypeInfo), [0x6F, 4])
        // Already nullable or BIG: as they are.
        XCTAssertEqual(TypeInfo.int.paramCipherTypeInfo, .int)
        XCTAssertEqual(TypeInfo.nvarchar(50).paramCipherTypeInfo, .nvarchar(50))
        XCTAssertEqual(TypeInfo.time(scale: 3).paramCipherTypeInfo, .time(scale: 3))
    }
}
