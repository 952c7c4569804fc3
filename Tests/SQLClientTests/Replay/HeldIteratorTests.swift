import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// A streaming iterator left unfinished but kept alive (as top-level code in main.swift keeps it
/// after `break`) must not make the same task's next request wait forever: the connection
/// cancels the earlier request (ATTENTION, drained to DONE_ATTN) and runs the new one.
extension ReplayConnectionTests {
    func testHeldIteratorIsCancelledWhenTheSameTaskStartsAnotherRequest() async throws {
        var parts: [[UInt8]] = [Self.colMetadata()]
        for i in 0 ..< 20_000 { parts.append(Self.row(Int32(i), "row number \(i)")) }
        parts.append(Self.done([.count], 20_000))
        let server = try start([
            Self.exchange("SELECT id, name FROM big", parts),
            Self.exchange("SELECT id, name FROM small", [Self.colMetadata(), Self.row(42, "answer"), Self.done([.count], 1)]),
        ])
        defer { server.stop() }
        var config = configuration(server)
        config.cancelTimeout = .seconds(30)
        let connection = try await SQLConnection.connect(config)
        // The iterator outlives the next request, as a top-level loop's does.
        var iterator = connection.query("SELECT id, name FROM big").makeAsyncIterator()
        var seen: [Int] = []
        while seen.count < 3, let row = try await iterator.next() {
            seen.append(row["id"]?.intValue ?? -1)
        }
        XCTAssertEqual(seen, [0, 1, 2])

        let tables = try await connection.execute("SELECT id, name FROM small")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["id"]?.intValue, 42)
        XCTAssertEqual(tables.resultSets.first?.rows.first?["name"]?.stringValue, "answer")

        // Resumed, the old iterator gives at most the rows it had already fetched, then `.cancelled`.
        var later = 0
        do {
            while try await iterator.next() != nil { later += 1 }
            XCTFail("the preempted stream ended without an error after \(later) rows")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .cancelled, "\(error)")
        }
        XCTAssertLessThan(later, 20_000)
        let open = await connection.isOpen
        XCTAssertTrue(open)
        await connection.close()
        server.stop()  // waits for the connection's log
        XCTAssertEqual(server.connections.first?.attentions, 1)
        XCTAssertEqual(server.unmatchedRequests, [])
    }
}
