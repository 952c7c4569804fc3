import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// `execute()` gathering a result set's row blocks (``SQLResult/append(rows:)``) and the rows'
/// nchar/nvarchar text kept as UTF-8 in those blocks, against a replay server: rows in order
/// when messages come between every row, several result sets with and without a DONE between
/// them, a result set the response leaves open; hostile text (CJK, emoji, empty, NULL by 0xFFFF
/// and by the NBCROW bitmap, U+0000, U+FFFF, nchar padding, a lone surrogate) read as values,
/// typed and Decodable, through `query` and `execute`, the same Strings Swift makes.
final class SQLConnectionExecuteBlocksTests: XCTestCase {
    typealias R = ReplayConnectionTests

    func start(_ exchanges: [ReplaySession.Exchange]) throws -> ReplayServer {
        let server = ReplayServer(session: ReplaySession(name: "test", exchanges: exchanges))
        _ = try server.start()
        return server
    }

    func connect(_ server: ReplayServer) async throws -> SQLConnection {
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)),
                                                       user: "u", password: "p", encryption: .notSupported,
                                                       connectTimeout: .seconds(20))
        return try await SQLConnection.connect(configuration)
    }

    static func info(_ text: String) -> [UInt8] {
        ServerTokens.message(number: 5701, text: text, procedure: "", line: 1, version: .v7_4)
    }

    /// A message after every row of the first result set (each flushes the blocks gathered so
    /// far: 3,000 flushes of one row), a second result set whose COLMETADATA follows the rows
    /// with no DONE between, a third left open by the response (no DONE at all): every set's rows
    /// in order, none lost or moved to another set, the messages in order.
    func testExecuteKeepsEverySetsRowsWhenMessagesFollowEveryRowAndDonesAreMissing() async throws {
        let count = 3000
        var parts = [R.colMetadata()]
        for i in 0 ..< count {
            parts.append(R.row(Int32(i), "r\(i)"))
            parts.append(Self.info("after \(i)"))
        }
        parts.append(R.colMetadata())   // no DONE before it
        for i in 0 ..< 5000 { parts.append(R.row(Int32(-i), nil)) }
        parts.append(R.done([.more, .count], 5000))
        parts.append(R.colMetadata())
        for i in 0 ..< 7 { parts.append(R.row(Int32(100 + i), "open")) }
        // The response ends here: the third result set has no DONE.
        let server = try start([R.exchange("SELECT hostile", parts)])
        defer { server.stop() }
        let connection = try await connect(server)
        do {
            let result = try await connection.execute("SELECT hostile")
            XCTAssertEqual(result.resultSets.count, 3)
            XCTAssertEqual(result.resultSets.map(\.rows.count), [count, 5000, 7])
            let first = result.resultSets.first?.rows.map { $0[0].intValue ?? -1 } ?? []
            XCTAssertTrue(first == Array(0 ..< count), "first out of order at \(first.indices.first { first[$0] != $0 } ?? -1)")
            XCTAssertTrue(result.resultSets.first?.rows.map { $0[1].stringValue ?? "" } == (0 ..< count).map { "r\($0)" }, "first set's names")
            XCTAssertTrue(result.resultSets.dropFirst().first?.rows.map { $0[0].intValue ?? 1 } == (0 ..< 5000).map { -$0 }, "second set's ids")
            XCTAssertEqual(result.resultSets.last?.rows.map { $0[0].intValue ?? 0 }, Array(100 ..< 107))
            XCTAssertTrue(result.messages.map(\.message) == (0 ..< count).map { "after \($0)" }, "messages in order")
        } catch {
            XCTFail("execute: \(error)")
        }
        await connection.close()
    }

    /// Raw row bytes: an int and an nvarchar(20) value given as UTF-16 units (any, valid or not),
    /// or NULL (0xFFFF, or by the NBCROW bitmap when `nbc`).
    static func row(_ id: Int32, _ units: [UInt16]?, nbc: Bool = false) -> [UInt8] {
        var b: [UInt8] = [nbc ? 0xD2 : 0xD1]
        if nbc { b.append(units == nil ? 0b10 : 0) }
        b += [4] + withUnsafeBytes(of: id.littleEndian, Array.init)
        if let units {
            b += [UInt8(units.count * 2 & 0xFF), UInt8(units.count * 2 >> 8)] + units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        } else if !nbc {
            b += [0xFF, 0xFF]
        }
        return b
    }

    struct Named: Decodable, Equatable {
        let id: Int
        let name: String?
    }

    /// Hostile but valid text, row after row (thousands, so across packets and blocks), then a
    /// row with a lone low surrogate: `query` gives every row before it with Strings equal,
    /// byte for byte and in Characters and UTF-16 count, to the ones Swift makes from the same
    /// units, then the protocol error; `execute` throws it; without the bad row `execute` and
    /// `decode` give the same Strings.
    func testHostileTextReadsAsSwiftsOwnStringsThroughQueryExecuteAndDecode() async throws {
        let samples: [[UInt16]?] = [
            Array("plain ascii".utf16), [], nil, Array("漢字かな交じり".utf16), [0xD83D, 0xDE00, 0x41, 0xD83D, 0xDE00],
            [0x00, 0x41, 0x00], [0xFFFF, 0xFFFE, 0x7F, 0x80, 0x7FF, 0x800], Array("ab        ".utf16), [0xD800, 0xDC00],
            [0xDBFF, 0xDFFF], Array("é".utf16) + [0x301], Array("🇫🇷👩‍👩‍👧".utf16).prefix(20).map { $0 },
        ]
        let n = 6000
        var good: [[UInt8]] = [], expected: [String?] = []
        for i in 0 ..< n {
            let s = samples[i % samples.count]
            good.append(Self.row(Int32(i), s, nbc: i % 3 == 0))
            expected.append(s.map { String(decoding: $0, as: UTF16.self) })
        }
        let columns = R.colMetadata()
        let bad = Self.row(Int32(n), [0x41, 0xDC00])
        let server = try start([
            R.exchange("SELECT text", [columns] + good + [R.done([.count], UInt64(n))]),
            R.exchange("SELECT text", [columns] + good + [R.done([.count], UInt64(n))]),
            R.exchange("SELECT bad", [columns] + good + [bad, R.done([.count], UInt64(n + 1))]),
        ])
        defer { server.stop() }
        let connection = try await connect(server)
        func check(_ got: String?, _ i: Int, _ how: String) {
            let want = expected[i]
            guard let got, let want else { XCTAssertEqual(got, want, "\(how) row \(i)"); return }
            XCTAssertEqual(Array(got.utf8), Array(want.utf8), "\(how) row \(i)")
            XCTAssertEqual(got.count, want.count, "\(how) row \(i): Characters")
            XCTAssertEqual(got.utf16.count, want.utf16.count, "\(how) row \(i): UTF-16")
            XCTAssertEqual(got, want, "\(how) row \(i)")
        }
        let result = try await connection.execute("SELECT text")
        let rows = result.rows
        XCTAssertEqual(rows.count, n)
        for (i, row) in rows.enumerated() { check(row[1].stringValue, i, "execute") }
        let decoded = try result.decode(Named.self)
        XCTAssertEqual(decoded.count, n)
        for (i, d) in decoded.enumerated() {
            XCTAssertEqual(d.id, i)
            check(d.name, i, "decode")
        }
        var count = 0
        for try await row in connection.query("SELECT text") {
            check(row[1].stringValue, count, "query")
            count += 1
        }
        XCTAssertEqual(count, n)
        count = 0
        do {
            for try await row in connection.query("SELECT bad") {
                check(row[1].stringValue, count, "query with a bad row")
                count += 1
            }
            XCTFail("the lone surrogate is an error")
        } catch {
            XCTAssertEqual(count, n, "every row before the bad one: \(error)")
        }
        await connection.close()
    }
}
