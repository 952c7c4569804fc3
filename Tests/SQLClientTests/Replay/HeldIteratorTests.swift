import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// A streaming iterator left unfinished but kept alive (as top-level code in main.swift keeps a
/// loop's iterator after `break`): the next request waits for it, whichever task asks (nothing
/// depends on the calling task); releasing the iterator cancels the held request (ATTENTION,
/// drained to DONE_ATTN) and the next one runs.
extension ReplayConnectionTests {
    /// A server answering `SELECT id, name FROM big` with 20,000 rows, then `… FROM small` with
    /// one, and a connection to it.
    private func bigAndSmall() async throws -> (ReplayServer, SQLConnection) {
        var parts: [[UInt8]] = [Self.colMetadata()]
        for i in 0 ..< 20_000 { parts.append(Self.row(Int32(i), "row number \(i)")) }
        parts.append(Self.done([.count], 20_000))
        let server = try start([
            Self.exchange("SELECT id, name FROM big", parts),
            Self.exchange("SELECT id, name FROM small", [Self.colMetadata(), Self.row(42, "answer"), Self.done([.count], 1)]),
        ])
        var config = configuration(server)
        config.cancelTimeout = .seconds(30)
        do {
            return (server, try await SQLConnection.connect(config))
        } catch {
            server.stop()
            throw error
        }
    }

    func testHeldIteratorMakesTheNextRequestWaitUntilItIsReleased() async throws {
        let (server, connection) = try await bigAndSmall()
        defer { server.stop() }
        var iterator: SQLRowSequence.AsyncIterator? = connection.query("SELECT id, name FROM big").makeAsyncIterator()
        var seen: [Int] = []
        while seen.count < 3, let row = try await iterator?.next() {
            seen.append(row["id"]?.intValue ?? -1)
        }
        XCTAssertEqual(seen, [0, 1, 2])

        let next = Task { try await connection.execute("SELECT id, name FROM small") }
        // The next request is queued behind the held stream (not run, not failed).
        while await connection.machine.queuedRequests.isEmpty { await Task.yield() }
        let queued = await connection.machine.queuedRequests.count
        XCTAssertEqual(queued, 1)

        iterator = nil   // released: the held request is cancelled and drained
        let tables = try await next.value
        XCTAssertEqual(tables.resultSets.first?.rows.first?["id"]?.intValue, 42)
        XCTAssertEqual(tables.resultSets.first?.rows.first?["name"]?.stringValue, "answer")
        let open = await connection.isOpen
        XCTAssertTrue(open)
        await connection.close()
        server.stop()  // waits for the connection's log
        XCTAssertEqual(server.connections.first?.attentions, 1)
        XCTAssertEqual(server.unmatchedRequests, [])
    }

    /// Where the iterator cannot be released (a loop's hidden iterator in top-level code),
    /// `connection.cancel()` ends the held stream: the connection reads it to the
    /// acknowledgement itself, the next request runs, and the old iterator throws `.cancelled`.
    func testCancelEndsAStreamNobodyReads() async throws {
        let (server, connection) = try await bigAndSmall()
        defer { server.stop() }
        var iterator = connection.query("SELECT id, name FROM big").makeAsyncIterator()
        let first = try await iterator.next()
        XCTAssertEqual(first?["id"]?.intValue, 0)

        try await connection.cancel()
        let tables = try await connection.execute("SELECT id, name FROM small")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["id"]?.intValue, 42)

        var later = 0
        do {
            while try await iterator.next() != nil { later += 1 }
            XCTFail("the cancelled stream ended without an error after \(later) rows")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .cancelled, "\(error)")
        }
        XCTAssertLessThan(later, 20_000)
        await connection.close()
        server.stop()
        XCTAssertEqual(server.connections.first?.attentions, 1)
        XCTAssertEqual(server.unmatchedRequests, [])
    }
}
