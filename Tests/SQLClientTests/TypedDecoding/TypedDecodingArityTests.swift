import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// The fixed-arity `decode` overloads (2 to 20 values on ``SQLRow``, 1 to 20 on
/// ``SQLRowSequence``) and the parameter-pack form past them (21): each width's values, and the
/// error fields (column name and index, SQL type, Swift type) of a NULL for a non-optional type
/// and of a value that does not convert in its last column, from rows of decoded values and of
/// wire bytes, and streamed from a replay server. (Generated: one case per width.)
final class TypedDecodingArityTests: XCTestCase {
    static let width = 21
    /// `c0` … `c20`: even columns int, odd columns nvarchar(20), all nullable.
    static let columns = SQLColumns((0 ..< width).map {
        SQLColumn(name: "c\($0)", typeInfo: $0 % 2 == 0 ? .int : .nvarchar(20), isNullable: true)
    })

    /// Row `r`'s value of column `j`; NULL at column `null`.
    static func value(_ r: Int, _ j: Int, null: Int? = nil) -> SQLValue {
        if j == null { return .null }
        return j % 2 == 0 ? .int(Int32(r * 100 + j)) : .string("r\(r)c\(j)")
    }
    static func values(_ r: Int, null: Int? = nil) -> [SQLValue] { (0 ..< width).map { value(r, $0, null: null) } }

    static func shown<T>(_ v: T) -> String { String(describing: v) }

    /// What decoding row `r`'s first `n` values as the test's types shows (even columns `Int32`,
    /// odd ones `String?`, the last non-optional unless `lastOptional`).
    static func expected(_ r: Int, _ n: Int, lastOptional: Bool = false) -> [String] {
        (0 ..< n).map { j in
            if j % 2 == 0 { return "\(r * 100 + j)" }
            return j == n - 1 && !lastOptional ? "r\(r)c\(j)" : shown(Optional("r\(r)c\(j)"))
        }
    }

    /// The failure of `decode`, checked to be `.decodingFailed` (also used by ``DecodableGenericFieldTests``).
    static func failure<R>(_ what: String, _ decode: () throws -> R) -> SQLDecodingFailure? {
        do {
            let got = try decode()
            XCTFail("\(what): no error, decoded \(got)")
        } catch let e as SQLClientError {
            XCTAssertEqual(e.code, .decodingFailed, what)
            return e.decodingFailure
        } catch {
            XCTFail("\(what): \(error)")
        }
        return nil
    }

    /// The NULL and not-convertible failures expected of the last of `n` columns.
    static func nullFailure(_ n: Int) -> SQLDecodingFailure {
        let j = n - 1
        return SQLDecodingFailure(columnName: "c\(j)", columnIndex: j, sqlType: j % 2 == 0 ? "int" : "nvarchar(20)",
                                  swiftType: j % 2 == 0 ? "Int32" : "String", reason: .null)
    }
    static func uuidFailure(_ n: Int) -> SQLDecodingFailure {
        let j = n - 1
        return SQLDecodingFailure(columnName: "c\(j)", columnIndex: j, sqlType: j % 2 == 0 ? "int" : "nvarchar(20)",
                                  swiftType: "UUID", reason: .notConvertible)
    }

    /// Rows 0 and 1 as decoded values and as wire bytes, then row 2 with column `null` NULL.
    func shapes(null: Int) throws -> [(String, [SQLRow])] {
        let rows = [Self.values(0), Self.values(1), Self.values(2, null: null)]
        let values = rows.map { SQLRow(columns: Self.columns, values: $0) }
        let wire = try SQLRowDecoderTests.wireBlocks(Self.columns, rows, split: .whole).flatMap { Array($0) }
        XCTAssertEqual(wire.count, rows.count)
        return [("values", values), ("wire", wire)]
    }

    /// Width `n` on ``SQLRow``: `decode` (the width's types), `decodeOptionalLast` (the last
    /// optional), `decodeUUIDLast` (the last as `UUID`).
    func checkRow(_ n: Int, _ decode: (SQLRow) throws -> [String], _ decodeOptionalLast: (SQLRow) throws -> [String],
                  _ decodeUUIDLast: (SQLRow) throws -> [String]) throws {
        for (shape, rows) in try shapes(null: n - 1) {
            for r in 0 ..< 2 {
                XCTAssertEqual(try decode(rows[r]), Self.expected(r, n), "width \(n) \(shape) row \(r)")
            }
            XCTAssertEqual(Self.failure("width \(n) \(shape) NULL") { try decode(rows[2]) }, Self.nullFailure(n), "width \(n) \(shape)")
            let withNil = try decodeOptionalLast(rows[2])
            XCTAssertEqual(withNil.count, n)
            XCTAssertEqual(withNil.last, (n - 1) % 2 == 0 ? Self.shown(Int32?.none) : Self.shown(String?.none), "width \(n) \(shape)")
            XCTAssertEqual(Array(withNil.dropLast()), Array(Self.expected(2, n, lastOptional: true).dropLast()), "width \(n) \(shape)")
            XCTAssertEqual(Self.failure("width \(n) \(shape) UUID") { try decodeUUIDLast(rows[0]) }, Self.uuidFailure(n), "width \(n) \(shape)")
        }
    }

    func testRowWidth2() throws {
        try checkRow(2, { let t = try $0.decode((Int32, String).self); return [Self.shown(t.0), Self.shown(t.1)] },
                     { let t = try $0.decode((Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1)] },
                     { let t = try $0.decode((Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1)] })
    }

    func testRowWidth3() throws {
        try checkRow(3, { let t = try $0.decode((Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2)] },
                     { let t = try $0.decode((Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2)] },
                     { let t = try $0.decode((Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2)] })
    }

    func testRowWidth4() throws {
        try checkRow(4, { let t = try $0.decode((Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3)] },
                     { let t = try $0.decode((Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3)] })
    }

    func testRowWidth5() throws {
        try checkRow(5, { let t = try $0.decode((Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4)] })
    }

    func testRowWidth6() throws {
        try checkRow(6, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5)] })
    }

    func testRowWidth7() throws {
        try checkRow(7, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6)] })
    }

    func testRowWidth8() throws {
        try checkRow(8, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7)] })
    }

    func testRowWidth9() throws {
        try checkRow(9, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8)] })
    }

    func testRowWidth10() throws {
        try checkRow(10, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9)] })
    }

    func testRowWidth11() throws {
        try checkRow(11, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10)] })
    }

    func testRowWidth12() throws {
        try checkRow(12, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11)] })
    }

    func testRowWidth13() throws {
        try checkRow(13, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12)] })
    }

    func testRowWidth14() throws {
        try checkRow(14, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13)] })
    }

    func testRowWidth15() throws {
        try checkRow(15, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14)] })
    }

    func testRowWidth16() throws {
        try checkRow(16, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15)] })
    }

    func testRowWidth17() throws {
        try checkRow(17, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16)] })
    }

    func testRowWidth18() throws {
        try checkRow(18, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17)] })
    }

    func testRowWidth19() throws {
        try checkRow(19, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18)] })
    }

    func testRowWidth20() throws {
        try checkRow(20, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19)] })
    }

    func testRowWidth21() throws {
        try checkRow(21, { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19), Self.shown(t.20)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32?).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19), Self.shown(t.20)] },
                     { let t = try $0.decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, UUID).self); return [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19), Self.shown(t.20)] })
    }

    /// A replay server answering `SELECT w<n>` with rows 0 and 1, then row 2 with column n-1 NULL.
    static func server(widths: ClosedRange<Int>) throws -> ReplayServer {
        let metadata = columns.map { ColumnMetadata(flags: [.nullable], typeInfo: $0.typeInfo, name: $0.name) }
        var exchanges: [ReplaySession.Exchange] = []
        for n in widths {
            var parts: [[UInt8]] = [ServerTokens.colMetadata(metadata, version: .v7_4)]
            for r in 0 ..< 3 { parts.append(try ServerTokens.nbcRow(values(r, null: r == 2 ? n - 1 : nil), columns: metadata)) }
            parts.append(ServerTokens.done(status: .count, rowCount: 3, version: .v7_4))
            exchanges.append(ReplayConnectionTests.exchange("SELECT w\(n)", parts))
        }
        let server = ReplayServer(session: ReplaySession(name: "arity", exchanges: exchanges))
        _ = try server.start()
        return server
    }

    /// Width `n` on ``SQLRowSequence``: rows 0 and 1 decoded, row 2 thrown with its column.
    func checkSequence<S: AsyncSequence>(_ n: Int, _ rows: S, _ show: (S.Element) -> [String]) async throws {
        var r = 0
        do {
            for try await row in rows {
                XCTAssertEqual(show(row), Self.expected(r, n), "width \(n) row \(r)")
                r += 1
            }
            XCTFail("width \(n): row 2's NULL decoded")
        } catch let e as SQLClientError {
            XCTAssertEqual(e.decodingFailure, Self.nullFailure(n), "width \(n)")
        }
        XCTAssertEqual(r, 2, "width \(n)")
    }

    func testSequenceWidths() async throws {
        let server = try Self.server(widths: 1 ... Self.width)
        defer { server.stop() }
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)),
                                                       user: "u", password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
        let connection = try await SQLConnection.connect(configuration)

        try await checkSequence(1, connection.query("SELECT w1").decode(Int32.self)) { t in [Self.shown(t)] }
        try await checkSequence(2, connection.query("SELECT w2").decode((Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1)] }
        try await checkSequence(3, connection.query("SELECT w3").decode((Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2)] }
        try await checkSequence(4, connection.query("SELECT w4").decode((Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3)] }
        try await checkSequence(5, connection.query("SELECT w5").decode((Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4)] }
        try await checkSequence(6, connection.query("SELECT w6").decode((Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5)] }
        try await checkSequence(7, connection.query("SELECT w7").decode((Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6)] }
        try await checkSequence(8, connection.query("SELECT w8").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7)] }
        try await checkSequence(9, connection.query("SELECT w9").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8)] }
        try await checkSequence(10, connection.query("SELECT w10").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9)] }
        try await checkSequence(11, connection.query("SELECT w11").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10)] }
        try await checkSequence(12, connection.query("SELECT w12").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11)] }
        try await checkSequence(13, connection.query("SELECT w13").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12)] }
        try await checkSequence(14, connection.query("SELECT w14").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13)] }
        try await checkSequence(15, connection.query("SELECT w15").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14)] }
        try await checkSequence(16, connection.query("SELECT w16").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15)] }
        try await checkSequence(17, connection.query("SELECT w17").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16)] }
        try await checkSequence(18, connection.query("SELECT w18").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17)] }
        try await checkSequence(19, connection.query("SELECT w19").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18)] }
        try await checkSequence(20, connection.query("SELECT w20").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19)] }
        try await checkSequence(21, connection.query("SELECT w21").decode((Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32, String?, Int32).self)) { t in [Self.shown(t.0), Self.shown(t.1), Self.shown(t.2), Self.shown(t.3), Self.shown(t.4), Self.shown(t.5), Self.shown(t.6), Self.shown(t.7), Self.shown(t.8), Self.shown(t.9), Self.shown(t.10), Self.shown(t.11), Self.shown(t.12), Self.shown(t.13), Self.shown(t.14), Self.shown(t.15), Self.shown(t.16), Self.shown(t.17), Self.shown(t.18), Self.shown(t.19), Self.shown(t.20)] }
        await connection.close()
    }
}
