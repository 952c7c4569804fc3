import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// A request waiting for its turn (in the connection's `WaiterQueue`) whose task is cancelled:
/// it throws `.cancelled` at once, leaves the machine's queue and is never sent; the request it
/// waited behind goes on undisturbed, and the next request runs.
extension ReplayConnectionTests {
    func testACancelledRequestWaitingForItsTurnLeavesTheQueueUnsent() async throws {
        let count = 20_000   // more than the reader ahead holds: the request is still running when the next asks
        let server = try start([
            Self.exchange("SELECT id FROM held", [Self.colMetadata()] + (0 ..< count).map { Self.row(Int32($0), "r") }
                          + [Self.done([.count], UInt64(count))]),
            Self.exchange("SELECT id FROM next", [Self.colMetadata(), Self.row(7, "seven"), Self.done([.count], 1)]),
        ])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        var held = connection.query("SELECT id FROM held").makeAsyncIterator()
        let first = try await held.next()
        XCTAssertEqual(first?[0].intValue, 0)

        let waiting = Task { try await connection.execute("SELECT id FROM cancelled") }
        var turns = 0
        while await connection.machine.queuedRequests.isEmpty {
            turns += 1
            if turns > 1_000_000 { return XCTFail("the request never queued behind the held stream") }
            await Task.yield()
        }
        waiting.cancel()
        do {
            _ = try await waiting.value
            XCTFail("the cancelled request ran")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .cancelled, "\(error)")
        }
        let queued = await connection.machine.queuedRequests.count
        XCTAssertEqual(queued, 0, "the cancelled request left the queue")
        let turnsLeft = await connection.turns.count
        XCTAssertEqual(turnsLeft, 0, "nobody waits for a turn")

        var rows = 1
        while let row = try await held.next() {
            XCTAssertEqual(row[0].intValue, rows)
            rows += 1
        }
        XCTAssertEqual(rows, count, "the held stream went on undisturbed")
        let next = try await connection.execute("SELECT id FROM next")
        XCTAssertEqual(next.rows.first?[0].intValue, 7)
        await connection.close()
        server.stop()   // waits for the connection's log
        XCTAssertEqual(server.connections.first?.attentions, 0)
        XCTAssertEqual(server.unmatchedRequests, [], "the cancelled request was never sent")
    }
}
