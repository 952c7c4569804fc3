import Foundation
import XCTest
@testable import TDS

/// RPC parameters of every type, NULL of every type and edge values, encoded and decoded back
/// with our own decoder ([MS-TDS] 2.2.6.6 ParameterData, 2.2.5.6 TYPE_INFO, 2.2.5.5 values).
final class RPCEncodingTests: XCTestCase {
    private static func day(_ y: Int, _ m: Int, _ d: Int) -> SQLDate { SQLDate(year: y, month: m, day: d)! }

    /// (TYPE_INFO, values) for every parameter type; every list gets NULL appended by the test.
    static func cases() throws -> [(TypeInfo, [SQLValue])] {
        let uuid = try XCTUnwrap(UUID(uuidString: "01234567-89AB-CDEF-0011-223344556677"))
        let maxDec = SQLDecimal(precision: 38, scale: 0, magnitude: SQLDecimal.maxMagnitude)
        let tinyDec = SQLDecimal(precision: 38, scale: 38, magnitude: 1)
        let t7 = SQLTime(ticks: 863_999_999_999, scale: 7)      // 23:59:59.9999999
        let t0 = SQLTime(ticks: 86_399, scale: 0)               // 23:59:59
        let big1252 = String(repeating: "é€a", count: 40_000)   // 120,000 bytes in code page 1252: 15 PLP chunks
        let bigUTF16 = String(repeating: "ab😀", count: 20_000) // 160,000 bytes of UTF-16
        let bytes8000 = (0..<8000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let bytesBig = (0..<100_001).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        return [
            (.bit, [.bit(true), .bit(false)]),
            (.tinyint, [.tinyint(0), .tinyint(255)]),
            (.smallint, [.smallint(.min), .smallint(.max), .smallint(0)]),
            (.int, [.int(.min), .int(.max), .int(-1)]),
            (.bigint, [.bigint(.min), .bigint(.max)]),
            (.real, [.real(0), .real(-1.5), .real(.greatestFiniteMagnitude), .real(.leastNonzeroMagnitude)]),
            (.float, [.float(0), .float(-2.5e-300), .float(.greatestFiniteMagnitude), .float(.leastNonzeroMagnitude)]),
            (.decimal(precision: 38, scale: 0), [.decimal(maxDec), .decimal(SQLDecimal(isNegative: true, precision: 38, scale: 0, magnitude: SQLDecimal.maxMagnitude))]),
            (.decimal(precision: 38, scale: 38), [.decimal(tinyDec)]),
            (.decimal(precision: 5, scale: 2), [.decimal(SQLDecimal("-123.45")!), .decimal(SQLDecimal("0.00", precision: 5)!)]),
            (.numeric(precision: 1, scale: 0), [.decimal(SQLDecimal("9")!)]),
            (.numeric(precision: 19, scale: 4), [.decimal(SQLDecimal("123456789012345.6789")!)]),
            (.money, [.money(.min), .money(.max), .money(SQLMoney(units: 12_345))]),
            (.smallMoney, [.smallMoney(.smallMin), .smallMoney(.smallMax)]),
            (.date, [.date(.min), .date(.max), .date(Self.day(2024, 2, 29))]),
            (.time(scale: 7), [.time(t7), .time(SQLTime(ticks: 0, scale: 7))]),
            (.time(scale: 0), [.time(t0)]),
            (.time(scale: 3), [.time(SQLTime(hour: 12, minute: 34, second: 56, fraction: 789, scale: 3)!)]),
            (.datetime2(scale: 7), [.datetime2(SQLDateTime2(date: .min, time: SQLTime(ticks: 0, scale: 7))),
                                    .datetime2(SQLDateTime2(date: .max, time: t7))]),
            (.datetime2(scale: 0), [.datetime2(SQLDateTime2(date: Self.day(2000, 1, 1), time: t0))]),
            (.datetime2(scale: 4), [.datetime2(SQLDateTime2(date: Self.day(1999, 12, 31), time: SQLTime(ticks: 1, scale: 4)))]),
            (.datetimeOffset(scale: 7), [
                .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: Self.day(2020, 6, 1), time: t7), offsetMinutes: 840)),
                .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: Self.day(2020, 6, 1), time: SQLTime(ticks: 0, scale: 7)), offsetMinutes: -840)),
                .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .max, time: t7), offsetMinutes: 0)),
            ]),
            (.datetimeOffset(scale: 2), [.datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .min, time: SQLTime(ticks: 5, scale: 2)), offsetMinutes: 330))]),
            (.datetime, [.datetime(SQLDateTime(days: SQLDateTime.minDays, ticks: 0)),
                         .datetime(SQLDateTime(days: SQLDateTime.maxDays, ticks: SQLDateTime.ticksPerDay - 1))]),
            (.smallDateTime, [.smallDateTime(SQLSmallDateTime(days: 0, minutes: 0)), .smallDateTime(SQLSmallDateTime(days: 65535, minutes: 1439))]),
            (.uniqueIdentifier, [.uniqueIdentifier(uuid)]),
            (.varchar(8000), [.string(""), .string(String(repeating: "x", count: 8000)), .string("é€ 'quoted' ; --")]),
            (.varchar(nil), [.string(""), .string(big1252)]),
            (.char(10), [.string("abc       ")]),
            (.nvarchar(4000), [.string(""), .string(String(repeating: "ж", count: 4000)), .string("O'Brien'; DROP TABLE x; --")]),
            (.nvarchar(nil), [.string(""), .string(bigUTF16)]),
            (.nchar(3), [.string("日本語")]),
            (.varbinary(8000), [.binary([]), .binary(bytes8000)]),
            (.varbinary(nil), [.binary([]), .binary(bytesBig)]),
            (.binary(4), [.binary([0xDE, 0xAD, 0xBE, 0xEF])]),
            (.xml, [.xml("<a b=\"1\">ü</a>")]),
            (.text(), [.string("legacy text")]),
            (.ntext(), [.string("legacy ntext ü")]),
            (.image, [.binary([0, 1, 2, 255])]),
            (.sqlVariant, [.variant(try XCTUnwrap(SQLVariant(value: .int(7)))), .variant(try XCTUnwrap(SQLVariant(value: .string("v"))))]),
        ]
    }

    /// Every value (and NULL) of every type, as a named input and as an OUTPUT parameter, round-trips.
    func testEveryTypeEncodesAndDecodesBack() throws {
        var checked = 0
        for (info, values) in try Self.cases() {
            for (i, value) in (values + [.null]).enumerated() {
                for status: RPCParameter.Status in [[], [.byRefValue]] {
                    let p = RPCParameter(name: "@p\(i)", status: status, typeInfo: info, value: value)
                    let request = RPCRequest(RPCCall(procedure: .name("dbo.proc"), parameters: [p]))
                    let bytes = try request.encode(version: .v7_4)
                    let decoded = try RPCRequest.decode(from: bytes, version: .v7_4)
                    let q = try XCTUnwrap(decoded.calls.first?.parameters.first)
                    XCTAssertEqual(q.name, "@p\(i)")
                    XCTAssertEqual(q.status, status)
                    XCTAssertEqual(q.typeInfo.sqlTypeName, info.sqlTypeName, "\(info)")
                    XCTAssertEqual(q.typeInfo.type, info.type)
                    XCTAssertEqual(q.value.canonicalText, value.canonicalText, "\(info.sqlTypeName) \(value)")
                    if case .decimal = value {} else { XCTAssertEqual(q.value, value, "\(info.sqlTypeName)") }
                    XCTAssertEqual(try decoded.encode(version: .v7_4), bytes, "\(info.sqlTypeName) re-encodes differently")
                    checked += 1
                }
            }
        }
        XCTAssertGreaterThan(checked, 150)
    }

    /// The decoder reports "need more data" (`.truncated`) for every cut inside a parameter,
    /// never a crash or a wrong value.
    func testEveryPrefixOfAParameterIsTruncated() throws {
        for (info, values) in try Self.cases() {
            let value = values.min { ($0.canonicalText?.count ?? 0) < ($1.canonicalText?.count ?? 0) } ?? .null
            let call = RPCCall(procedure: .name("p"), parameters: [RPCParameter(name: "@v", typeInfo: info, value: value)])
            let bytes = try RPCRequest(call, allHeaders: nil).encode(version: .v7_1_1)
            // The bare call without the parameter (7 bytes: name length, "p", options) decodes alone.
            for cut in 8 ..< bytes.count {
                XCTAssertThrowsError(try RPCRequest.decode(from: Array(bytes.prefix(cut)), version: .v7_4, allHeaders: false),
                                     "\(info.sqlTypeName) cut at \(cut)") { error in
                    XCTAssertEqual((error as? TDSDecodingError)?.code, .truncated, "\(info.sqlTypeName) cut at \(cut): \(error)")
                }
            }
        }
    }

    /// Wire details the server relies on: uniqueidentifier's mixed-endian order, PLP chunks,
    /// datetime2/time scale in TYPE_INFO, decimal precision/scale, NULL forms per type class.
    func testWireFormOfSelectedTypes() throws {
        func valueBytes(_ info: TypeInfo, _ value: SQLValue) throws -> [UInt8] {
            var w = ByteWriter()
            try RPCParameter(name: "", typeInfo: info, value: value).encode(into: &w, version: .v7_4)
            return Array(w.bytes.dropFirst(2))   // B_VARCHAR "" and StatusFlags
        }
        let uuid = try XCTUnwrap(UUID(uuidString: "01234567-89AB-CDEF-0011-223344556677"))
        XCTAssertEqual(try valueBytes(.uniqueIdentifier, .uniqueIdentifier(uuid)),
                       [0x24, 16, 16, 0x67, 0x45, 0x23, 0x01, 0xAB, 0x89, 0xEF, 0xCD, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77])
        // datetime2(3): TYPE_INFO 0x2A scale 3, then length 7 (4 bytes of time, 3 of date).
        let dt = SQLDateTime2(date: SQLDate(days: 1), time: SQLTime(ticks: 1, scale: 3))
        XCTAssertEqual(try valueBytes(.datetime2(scale: 3), .datetime2(dt)), [0x2A, 3, 7, 1, 0, 0, 0, 1, 0, 0])
        // decimal(10,3) -1.5: 0x6A, length 9, precision 10, scale 3; value length 9, sign 0, magnitude 1500.
        XCTAssertEqual(try valueBytes(.decimal(precision: 10, scale: 3), .decimal(SQLDecimal("-1.5")!)),
                       [0x6A, 9, 10, 3, 9, 0, 0xDC, 0x05, 0, 0, 0, 0, 0, 0])
        // NULL forms: BYTELEN 0, USHORTLEN 0xFFFF, PLP all ones, text 4-byte 0xFFFFFFFF.
        XCTAssertEqual(try valueBytes(.int, .null), [0x26, 4, 0])
        XCTAssertEqual(Array(try valueBytes(.nvarchar(10), .null).suffix(2)), [0xFF, 0xFF])
        XCTAssertEqual(Array(try valueBytes(.nvarchar(nil), .null).suffix(8)), [UInt8](repeating: 0xFF, count: 8))
        XCTAssertEqual(Array(try valueBytes(.ntext(), .null).suffix(4)), [0xFF, 0xFF, 0xFF, 0xFF])
        // varbinary(max) of 20,000 bytes: total length, chunks of at most 8,000, terminator.
        let data = [UInt8](repeating: 0xAB, count: 20_000)
        let plp = try valueBytes(.varbinary(nil), .binary(data))
        var r = ByteReader(Array(plp.dropFirst(3)))   // 0xA5 and max length 0xFFFF
        XCTAssertEqual(try r.readUInt64LE(), 20_000)
        var chunks: [Int] = []
        while true {
            let n = Int(try r.readUInt32LE())
            if n == 0 { break }
            chunks.append(n)
            _ = try r.readBytes(n)
        }
        XCTAssertEqual(chunks, [8000, 8000, 4000])
        XCTAssertTrue(r.isAtEnd)
    }

    /// Values that do not fit their declared type fail to encode with `.invalidValue`, never trap.
    func testValuesThatDoNotFitAreTypedErrors() throws {
        let bad: [(TypeInfo, SQLValue)] = [
            (.decimal(precision: 3, scale: 0), .decimal(SQLDecimal("1234")!)),
            (.decimal(precision: 5, scale: 1), .decimal(SQLDecimal("1.25")!)),   // would lose a digit
            (.tinyint, .int(256)),
            (.smallMoney, .money(.max)),
            (.time(scale: 7), .time(SQLTime(ticks: 864_000_000_000, scale: 7))),   // 24:00:00
            (.datetimeOffset(scale: 7), .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .min, time: SQLTime(ticks: 0, scale: 7)), offsetMinutes: 841))),
            (.int, .string("1")),
            (.varchar(10, collation: .sqlLatin1GeneralCP1CIAS), .string("日本")),   // not in code page 1252
            (.uniqueIdentifier, .binary([1, 2])),
        ]
        for (info, value) in bad {
            let call = RPCCall(procedure: .name("p"), parameters: [RPCParameter(name: "@x", typeInfo: info, value: value)])
            XCTAssertThrowsError(try RPCRequest(call).encode(version: .v7_4), "\(info.sqlTypeName) \(value)") { error in
                XCTAssertEqual((error as? TDSDecodingError)?.code, .invalidValue, "\(error)")
            }
        }
    }

    /// The inferred TYPE_INFO for each kind of value, per TDS version, and the value that travels.
    func testInferredParameterTypesPerVersion() throws {
        let dt2 = SQLValue.datetime2(SQLDateTime2(date: SQLDate(year: 2024, month: 5, day: 6)!, time: SQLTime(hour: 7, minute: 8, second: 9, fraction: 12, scale: 2)!))
        let expectations: [(SQLValue, TDSVersion, String, String?)] = [
            (.int(1), .v7_4, "int", "1"),
            (.bigint(1), .v7_4, "bigint", "1"),
            (.string("x"), .v7_4, "nvarchar(4000)", "x"),
            (.string(String(repeating: "y", count: 4001)), .v7_4, "nvarchar(max)", nil),
            (.string(String(repeating: "y", count: 4001)), .v7_1_1, "ntext", nil),
            (.binary([1]), .v7_4, "varbinary(8000)", "0x01"),
            (.binary([UInt8](repeating: 1, count: 8001)), .v7_4, "varbinary(max)", nil),
            (.binary([UInt8](repeating: 1, count: 8001)), .v7_1_1, "image", nil),
            (.decimal(SQLDecimal("-12.345")!), .v7_4, "decimal(5,3)", "-12.345"),
            (dt2, .v7_4, "datetime2(2)", "2024-05-06 07:08:09.12"),
            (dt2, .v7_2, "nvarchar(4000)", "2024-05-06 07:08:09.12"),
            (.time(SQLTime(ticks: 5, scale: 1)), .v7_4, "time(1)", "00:00:00.5"),
            (.null, .v7_4, "nvarchar(4000)", nil),
            (.xml("<a/>"), .v7_4, "xml", "<a/>"),
            (.xml("<a/>"), .v7_1_1, "nvarchar(4000)", "<a/>"),
        ]
        for (value, version, typeName, text) in expectations {
            let (info, sent) = TypeInfo.parameter(for: value, version: version)
            XCTAssertEqual(info.sqlTypeName, typeName, "\(value) in \(version)")
            if let text { XCTAssertEqual(sent.canonicalText, text) }
            // And it travels and comes back in that version.
            let call = RPCCall(procedure: .id(.spExecuteSQL), parameters: [RPCParameter(name: "@P1", typeInfo: info, value: sent)])
            let request = RPCRequest(call, allHeaders: AllHeaders.isPresent(in: version) ? .transaction() : nil)
            let back = try RPCRequest.decode(from: try request.encode(version: version), version: version)
            XCTAssertEqual(back.calls[0].parameters[0].value.canonicalText, sent.canonicalText, "\(typeName) in \(version)")
        }
    }

    /// sp_executesql's declaration string names each parameter's type, precision, scale, max and output.
    func testExecuteSQLDeclaration() throws {
        let call = RPCCall.executeSQL("SELECT @P1, @P2, @P3, @P4, @P5, @out", parameters: [
            RPCParameter(typeInfo: .varchar(10), value: .string("a")),
            RPCParameter(typeInfo: .decimal(precision: 12, scale: 4), value: .null),
            RPCParameter(typeInfo: .datetime2(scale: 3), value: .null),
            RPCParameter(typeInfo: .nvarchar(nil), value: .string("b")),
            RPCParameter(typeInfo: .datetimeOffset(scale: 0), value: .null),
            RPCParameter(name: "@out", status: .byRefValue, typeInfo: .int, value: .null),
        ])
        XCTAssertEqual(call.procedure, .id(.spExecuteSQL))
        XCTAssertEqual(call.parameters[1].value.stringValue,
                       "@P1 varchar(10), @P2 decimal(12,4), @P3 datetime2(3), @P4 nvarchar(max), @P5 datetimeoffset(0), @out int output")
        XCTAssertEqual(call.parameters.dropFirst(2).map(\.name), ["@P1", "@P2", "@P3", "@P4", "@P5", "@out"])
        let bytes = try RPCRequest(call).encode(version: .v7_4)
        XCTAssertEqual(try RPCRequest.decode(from: bytes, version: .v7_4).calls[0], call)
    }
}
