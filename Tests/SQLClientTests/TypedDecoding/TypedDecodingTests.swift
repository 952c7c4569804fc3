import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// Typed decoding (``SQLRow/decode(_:)-(repeat each T).Type``, ``SQLRowSequence/decode(_:)``)
/// over ``SQLCellDecodable``: every SQL type of the oracle sessions decoded as every Swift type
/// gives, from a row of wire bytes (the typed reads of ``WireRowBlock``), exactly what the same
/// row of decoded values (the ``SQLValue``s `query()` hands out) gives, and what `Decodable`
/// gives; failures name the column, its SQL type and the Swift type.
final class TypedDecodingTests: XCTestCase {
    typealias D = SQLRowDecoderTests

    /// `(Int32, T)` and `(Int32, T?)` decoded from `row`: each shown (to the bit), or the error.
    static func outcomes<T: SQLCellDecodable>(_ row: SQLRow, _ type: T.Type, _ show: (T) -> String) -> [String] {
        var out: [String] = []
        do {
            let (id, v) = try row.decode((Int32, T).self)
            out.append("\(T.self): \(id) \(show(v))")
        } catch {
            out.append("\(T.self): error: \(error)")
        }
        do {
            let (id, v) = try row.decode((Int32, T?).self)
            out.append("\(T.self)?: \(id) \(v.map(show) ?? "nil")")
        } catch {
            out.append("\(T.self)?: error: \(error)")
        }
        return out
    }

    static func text<T>(_ v: T) -> String { String(reflecting: v) }

    /// Every Swift type a cell decodes to, typed.
    static func typedOutcomes(_ row: SQLRow) -> [String] {
        typealias S = SQLRowDecoderTests
        var out: [String] = []
        out += outcomes(row, Bool.self, text)
        out += outcomes(row, String.self, text)
        out += outcomes(row, Double.self) { S.double($0) }
        out += outcomes(row, Float.self) { S.float($0) }
        out += outcomes(row, Int.self, text)
        out += outcomes(row, Int8.self, text)
        out += outcomes(row, Int16.self, text)
        out += outcomes(row, Int32.self, text)
        out += outcomes(row, Int64.self, text)
        out += outcomes(row, UInt.self, text)
        out += outcomes(row, UInt8.self, text)
        out += outcomes(row, UInt16.self, text)
        out += outcomes(row, UInt32.self, text)
        out += outcomes(row, UInt64.self, text)
        out += outcomes(row, Decimal.self) { S.decimal($0) }
        out += outcomes(row, Date.self) { S.date($0) }
        out += outcomes(row, UUID.self, text)
        out += outcomes(row, Data.self) { S.data($0) }
        out += outcomes(row, [UInt8].self, text)
        out += outcomes(row, SQLValue.self, text)
        out += outcomes(row, SQLDecimal.self, text)
        out += outcomes(row, SQLMoney.self, text)
        out += outcomes(row, SQLDate.self, text)
        out += outcomes(row, SQLTime.self, text)
        out += outcomes(row, SQLDateTime2.self, text)
        out += outcomes(row, SQLDateTimeOffset.self, text)
        out += outcomes(row, SQLDateTime.self, text)
        out += outcomes(row, SQLSmallDateTime.self, text)
        return out
    }

    /// The value a typed read of a Swift type must give for `value`, from the ``SQLValue``
    /// itself (the `query()` value) — the conversions the documentation gives — or nil when it must fail.
    static func expectedTyped(_ value: SQLValue) -> [String: String] {
        var e: [String: String] = [:]
        let base = value.baseValue
        if !value.isNull {
            e["SQLValue"] = text(value)
            e["SQLValue?"] = text(value)
        } else {
            e["SQLValue"] = text(SQLValue.null)
        }
        switch base {
        case .int(let v): e["Int64"] = text(Int64(v)); e["Int"] = text(Int(v))
        case .bigint(let v): e["Int64"] = text(v)
        case .smallint(let v): e["Int16"] = text(v); e["Int"] = text(Int(v))
        case .tinyint(let v): e["UInt8"] = text(v); e["Int"] = text(Int(v))
        case .bit(let b): e["Bool"] = text(b)
        case .float(let d): e["Double"] = SQLRowDecoderTests.double(d)
        case .real(let f): e["Float"] = SQLRowDecoderTests.float(f); e["Double"] = SQLRowDecoderTests.double(Double(f))
        case .string(let s): e["String"] = text(s)
        case .binary(let b): e["[UInt8]"] = text(b)
        case .uniqueIdentifier(let u): e["UUID"] = text(u)
        case .decimal(let d): e["SQLDecimal"] = text(d); e["Decimal"] = SQLRowDecoderTests.decimal(d.decimalValue)
        case .money(let m), .smallMoney(let m): e["SQLMoney"] = text(m); e["Decimal"] = SQLRowDecoderTests.decimal(m.decimalValue)
        case .date(let d): e["SQLDate"] = text(d)
        case .time(let t): e["SQLTime"] = text(t)
        case .datetime2(let d): e["SQLDateTime2"] = text(d)
        case .datetimeOffset(let d): e["SQLDateTimeOffset"] = text(d)
        case .datetime(let d): e["SQLDateTime"] = text(d)
        case .smallDateTime(let d): e["SQLSmallDateTime"] = text(d)
        default: break
        }
        if let d = value.dateValue(in: TimeZone(secondsFromGMT: 0) ?? .current) { e["Date"] = SQLRowDecoderTests.date(d) }
        return e
    }

    /// Every type of the oracle sessions (TDS 7.4) and every Swift type: typed decoding of a row
    /// of wire bytes gives exactly what a row of the same decoded values gives (whole, byte by
    /// byte and split at random), and for the types `Decodable` reads, what `Decodable` gives;
    /// the value of its own Swift type is the ``SQLValue``'s payload; NULL is nil for an
    /// Optional and a `.decodingFailed` naming the column for any other type.
    func testEveryTypeDecodesAsTheQueryValuesForEverySwiftType() throws {
        var compared = 0
        var checkedOwnType = 0
        var rng = SystemRandomNumberGenerator()
        for c in OracleFixtures.typeCases() {
            let (type, cases) = OracleFixtures.adapt(c, version: .v7_4, utf8Acknowledged: true)
            let columns = SQLColumns([SQLColumn(name: "id", typeInfo: .int, isNullable: false),
                                      SQLColumn(name: "v", typeInfo: type, isNullable: true)])
            let rows = (cases + cases).enumerated().map { [SQLValue.int(Int32($0.offset)), $0.element.value] }
            let valueRows = rows.map { SQLRow(columns: columns, values: $0) }
            let expected = valueRows.map { Self.typedOutcomes($0) }
            for (r, row) in valueRows.enumerated() {
                // The value of each Swift type the SQL value is (or converts to exactly) is the payload.
                let own = Self.expectedTyped(row[1])
                for line in expected[r] {
                    let parts = line.split(separator: ":", maxSplits: 1).map(String.init)
                    guard parts.count == 2, let want = own[parts[0]] else { continue }
                    XCTAssertEqual(parts[1], " \(r) \(want)", "\(c.name) \(cases[r % cases.count].label) as \(parts[0])")
                    checkedOwnType += 1
                }
                if row[1].isNull {
                    // NULL: nil for every Optional, and a failure for every non-optional but SQLValue.
                    for line in expected[r] where !line.hasPrefix("SQLValue") {
                        if line.contains("?: ") { XCTAssertTrue(line.hasSuffix(" nil"), "\(c.name): \(line)") }
                        else { XCTAssertTrue(line.contains("cannot convert NULL to"), "\(c.name): \(line)") }
                    }
                }
                // Decodable gives the same for the Swift types both read.
                let decodable = SQLRowDecoderTests.outcomes(row)
                let typed = Dictionary(expected[r].map { line -> (String, String) in
                    let p = line.split(separator: ":", maxSplits: 1).map(String.init)
                    return (p[0], p.count > 1 ? p[1] : "")
                }, uniquingKeysWith: { a, _ in a })
                for line in decodable {
                    let p = line.split(separator: ":", maxSplits: 1).map(String.init)
                    guard p.count == 2, let t = typed[p[0]] else { continue }
                    let dec = p[1].hasPrefix(" error") ? "error" : p[1]
                    let typ = t.hasPrefix(" error") ? "error" : String(t.drop(while: { $0 != " " }).dropFirst().drop(while: { $0 != " " }))
                    XCTAssertEqual(typ, dec, "\(c.name) \(cases[r % cases.count].label) as \(p[0]): typed \(t), Decodable \(p[1])")
                    compared += 1
                }
            }
            for split in DecoderVerifier.Split.allCases {
                if split == .byteByByte && Int.random(in: 0 ..< 8, using: &rng) != 0 { continue }   // an eighth of the types, to keep it short
                let blocks = try D.wireBlocks(columns, rows, split: split, limit: 3)
                if blocks.isEmpty { break }   // not kept as wire bytes: the rows above are the query() rows
                let wireRows = blocks.flatMap { Array($0) }
                XCTAssertEqual(wireRows.count, rows.count, c.name)
                for (r, row) in wireRows.enumerated() where r < rows.count {
                    let got = Self.typedOutcomes(row)
                    for (g, e) in zip(got, expected[r]) where g != e {
                        XCTFail("\(c.name) \(split) \(cases[r % cases.count].label): wire row gives \(g), decoded values \(e)")
                    }
                    compared += got.count
                }
            }
        }
        XCTAssertGreaterThan(compared, 20_000)
        XCTAssertGreaterThan(checkedOwnType, 500)
    }

    static let columns = SQLColumns([
        SQLColumn(name: "id", typeInfo: .int, isNullable: false),
        SQLColumn(name: "name", typeInfo: .nvarchar(20), isNullable: true),
        SQLColumn(name: "amount", typeInfo: .bigint, isNullable: true),
    ])

    /// The same rows as decoded values and as wire bytes.
    func bothShapes(_ rows: [[SQLValue]]) throws -> [(String, [SQLRow])] {
        let values = rows.map { SQLRow(columns: Self.columns, values: $0) }
        let wire = try D.wireBlocks(Self.columns, rows, split: .whole).flatMap { Array($0) }
        XCTAssertEqual(wire.count, rows.count)
        return [("values", values), ("wire", wire)]
    }

    func testErrorsNameTheColumnItsSQLTypeAndTheSwiftType() throws {
        for (shape, rows) in try bothShapes([[.int(1), .null, .bigint(5_000_000_000)], [.int(2), .string("b"), .null]]) {
            func failure(_ body: () throws -> Void) -> SQLDecodingFailure? {
                do { try body() } catch let e as SQLClientError {
                    XCTAssertEqual(e.code, .decodingFailed, shape)
                    return e.decodingFailure
                } catch { XCTFail("\(shape): \(error)") }
                XCTFail("\(shape): no error")
                return nil
            }
            // NULL for a non-optional.
            let null = failure { _ = try rows[0].decode((Int32, String).self) }
            XCTAssertEqual(null, SQLDecodingFailure(columnName: "name", columnIndex: 1, sqlType: "nvarchar(20)", swiftType: "String", reason: .null), shape)
            // A value that does not convert.
            let range = failure { _ = try rows[0].decode((Int32, String?, Int32).self) }
            XCTAssertEqual(range, SQLDecodingFailure(columnName: "amount", columnIndex: 2, sqlType: "bigint", swiftType: "Int32", reason: .notConvertible), shape)
            let optional = failure { _ = try rows[0].decode((Int32, String?, Int32?).self) }
            XCTAssertEqual(optional?.reason, .notConvertible, "an Optional still fails for a value that does not convert (\(shape))")
            XCTAssertEqual(optional?.swiftType, "Int32", shape)
            let type = failure { _ = try rows[1].decode((UUID, String).self) }
            XCTAssertEqual(type, SQLDecodingFailure(columnName: "id", columnIndex: 0, sqlType: "int", swiftType: "UUID", reason: .notConvertible), shape)
            // More types than values.
            let missing = failure { _ = try rows[1].decode((Int, String?, Int64?, Int).self) }
            XCTAssertEqual(missing, SQLDecodingFailure(columnName: "", columnIndex: 3, sqlType: "", swiftType: "Int", reason: .noColumn), shape)
            // The message names them too.
            do {
                _ = try rows[0].decode((Int32, String?, Int8).self)
                XCTFail("no error")
            } catch {
                XCTAssertEqual("\(error)", "SQLClientError.decodingFailed: column \"amount\" (index 2): cannot convert value 5000000000 to Int8 (the column is bigint) [cause: column \"amount\" (index 2, bigint): not convertible as Int8]")
            }
            // A row that decodes after the failures.
            let (id, name, amount) = try rows[1].decode((Int, String?, Int64?).self)
            XCTAssertEqual(id, 2)
            XCTAssertEqual(name, "b")
            XCTAssertNil(amount)
        }
        // A row built by code with fewer values than columns: the missing column is named.
        let short = SQLRow(columns: Self.columns, values: [.int(1), .string("a")])
        do {
            _ = try short.decode((Int, String, Int64?).self)
            XCTFail("no error")
        } catch let e as SQLClientError {
            XCTAssertEqual(e.decodingFailure, SQLDecodingFailure(columnName: "amount", columnIndex: 2, sqlType: "bigint", swiftType: "Optional<Int64>", reason: .noColumn))
        }
        // Decodable failures carry the same fields.
        struct Narrow: Decodable { let amount: Int8 }
        do {
            _ = try SQLRow(columns: Self.columns, values: [.int(1), .null, .bigint(300)]).decode(Narrow.self)
            XCTFail("no error")
        } catch let e as SQLClientError {
            XCTAssertEqual(e.decodingFailure, SQLDecodingFailure(columnName: "amount", columnIndex: 2, sqlType: "bigint", swiftType: "Int8", reason: .notConvertible))
        }
        struct Missing: Decodable { let nope: Int }
        do {
            _ = try SQLRow(columns: Self.columns, values: [.int(1), .null, .null]).decode(Missing.self)
            XCTFail("no error")
        } catch let e as SQLClientError {
            XCTAssertEqual(e.decodingFailure?.reason, .noColumn)
            XCTAssertEqual(e.decodingFailure?.columnName, "nope")
        }
    }

    func testATupleReadsTheFirstColumnsAndTypesOfEveryKind() throws {
        for (shape, rows) in try bothShapes([[.int(7), .string("seven"), .bigint(-7)], [.int(8), .null, .null]]) {
            let (a, b, c) = try rows[0].decode((Int32, String?, Int64?).self)
            XCTAssertEqual(a, 7, shape); XCTAssertEqual(b, "seven", shape); XCTAssertEqual(c, -7, shape)
            typealias IntAndValue = (Int, SQLValue)   // (a tuple naming SQLValue in a test module reads as a tuple of metatypes)
            let (d, e) = try rows[1].decode(IntAndValue.self)
            XCTAssertEqual(d, 8, shape); XCTAssertEqual(e, .null, shape)
            // Fewer types than columns: the first columns.
            let (f, g) = try rows[0].decode((UInt8, String).self)
            XCTAssertEqual(f, 7, shape); XCTAssertEqual(g, "seven", shape)
            // Conversions: an int as Double, a bigint as Decimal, an int as String.
            let (h, i, j) = try rows[0].decode((Double, String, Decimal).self)
            XCTAssertEqual(h, 7, shape); XCTAssertEqual(i, "seven", shape); XCTAssertEqual(j, Decimal(-7), shape)
            typealias TextAndValue = (String, SQLValue?)
            let (k, l) = try rows[0].decode(TextAndValue.self)
            XCTAssertEqual(k, "7", shape); XCTAssertEqual(l, .string("seven"), shape)
        }
    }

    /// `query(_:).decode(_:)` over a replay server: the rows as tuples, a NULL for a
    /// non-optional thrown from iteration with its column.
    func testQueryDecodeStreamsTuples() async throws {
        typealias R = ReplayConnectionTests
        let n = 5_000
        var parts: [[UInt8]] = [R.colMetadata()]
        for i in 0 ..< n { parts.append(R.row(Int32(i), i % 7 == 0 ? nil : "n\(i)")) }
        parts.append(R.done([.count], UInt64(n)))
        let server = ReplayServer(session: ReplaySession(name: "typed", exchanges: [
            R.exchange("SELECT typed", parts), R.exchange("SELECT typed", parts),
        ]))
        _ = try server.start()
        defer { server.stop() }
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)),
                                                       user: "u", password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
        let connection = try await SQLConnection.connect(configuration)
        var i = 0
        for try await (id, name) in connection.query("SELECT typed").decode((Int, String?).self) {
            XCTAssertEqual(id, i)
            XCTAssertEqual(name, i % 7 == 0 ? nil : "n\(i)")
            i += 1
        }
        XCTAssertEqual(i, n)
        var read = 0
        do {
            for try await (_, _) in connection.query("SELECT typed").decode((Int, String).self) { read += 1 }
            XCTFail("NULL decoded as a String")
        } catch let e as SQLClientError {
            XCTAssertEqual(e.decodingFailure?.reason, .null)
            XCTAssertEqual(e.decodingFailure?.columnIndex, 1)
            XCTAssertEqual(e.decodingFailure?.swiftType, "String")
        }
        XCTAssertEqual(read, 0, "row 0 is NULL")
        await connection.close()
    }
}
