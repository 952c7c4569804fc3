import Foundation
import XCTest
@testable import SQLClient

/// Cancelling the Swift task that reads a large result sends ATTENTION, reads to the DONE with
/// DONE_ATTN and leaves the same connection answering the next query correctly.
final class CancelLiveTests: XCTestCase {
    static let big = "SELECT a.id AS a, b.id AS b, c.name AS c, d.sku AS d FROM people a CROSS JOIN people b CROSS JOIN people g "
        + "CROSS JOIN people c CROSS JOIN products d CROSS JOIN people e CROSS JOIN people f"

    struct Outcome: Sendable {
        var rows: Int
        var error: SQLClientError?
    }

    /// Reads the big result, signalling after 100 rows, until the end or an error.
    static func readRows(_ connection: SQLConnection, signal: AsyncStream<Int>.Continuation) async -> Outcome {
        var n = 0
        do {
            for try await _ in connection.query("\(unsafeRaw: big) WHERE a.id >= \(Int32(0))") {
                n += 1
                if n == 100 { signal.yield(n) }
            }
            return Outcome(rows: n)
        } catch let error as SQLClientError {
            return Outcome(rows: n, error: error)
        } catch {
            return Outcome(rows: n, error: SQLClientError(.protocolError, "\(error)"))
        }
    }

    static func executeBig(_ connection: SQLConnection) async -> Result<SQLResult, SQLClientError> {
        do {
            return .success(try await connection.execute("\(unsafeRaw: big) WHERE a.id > \(Int32(-1))"))
        } catch {
            return .failure(error as? SQLClientError ?? SQLClientError(.protocolError, "\(error)"))
        }
    }

    func testCancellingTheTaskPartWayLeavesTheConnectionReady() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let total = try await connection.execute("SELECT COUNT(*) AS n FROM (\(unsafeRaw: Self.big)) x").resultSets.first?.rows.first?["n"]?.intValue
        let expected = try XCTUnwrap(total)
        XCTAssertGreaterThan(expected, 10_000)

        let (firstRows, signal) = AsyncStream<Int>.makeStream()
        let reader = Task.detached { [connection, signal] in await CancelLiveTests.readRows(connection, signal: signal) }
        for await _ in firstRows { break }
        reader.cancel()
        let outcome = await reader.value
        XCTAssertEqual(outcome.error?.code, .cancelled, "\(String(describing: outcome.error))")
        XCTAssertGreaterThanOrEqual(outcome.rows, 100)
        XCTAssertLessThan(outcome.rows, expected, "the result was cut part-way")

        // The same connection answers the next queries correctly (the rest was drained to DONE+ATTN).
        let next = try await connection.execute("SELECT name FROM people WHERE id = \(Int32(3))")
        XCTAssertEqual(next.rows.map { $0["name"]?.stringValue }, ["Chloé"])
        let count = try await connection.execute("SELECT COUNT(*) AS n FROM people")
        XCTAssertEqual(count.resultSets.first?.rows.first?["n"]?.intValue, 4)
        let open = await connection.isOpen
        XCTAssertTrue(open)
    }

    /// `cancel()` from another task while a buffered execute runs: the execute fails with
    /// `.cancelled` (or completes if the server finished first); the connection stays usable.
    func testExplicitCancelDuringAnExecute() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let (started, signal) = AsyncStream<Void>.makeStream()
        let run = Task.detached { [connection, signal] in
            signal.yield()
            return await CancelLiveTests.executeBig(connection)
        }
        for await _ in started { break }
        try await Task.sleep(for: .milliseconds(50))
        try await connection.cancel()
        switch await run.value {
        case .success(let r): XCTAssertGreaterThan(r.rows.count, 0)
        case .failure(let error): XCTAssertEqual(error.code, .cancelled, "\(error)")
        }
        let r = try await connection.execute("SELECT \(Int32(8)) AS n")
        XCTAssertEqual(r.rows.first?["n"]?.intValue, 8)
    }

    /// Cancelling the task of a buffered parameterized execute: `.cancelled` (unless it had
    /// already finished), and the connection answers the next query.
    func testCancellingABufferedExecute() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        for _ in 0 ..< 3 {
            let (started, signal) = AsyncStream<Void>.makeStream()
            let run = Task.detached { [connection, signal] in
                signal.yield()
                return await CancelLiveTests.executeBig(connection)
            }
            for await _ in started { break }
            run.cancel()
            switch await run.value {
            case .success(let r): XCTAssertEqual(r.rows.count, 12_288)
            case .failure(let error): XCTAssertEqual(error.code, .cancelled, "\(error)")
            }
            let r = try await connection.execute("SELECT name FROM people WHERE id = \(Int32(1))")
            XCTAssertEqual(r.rows.first?["name"]?.stringValue, "Alice")
        }
    }
}
