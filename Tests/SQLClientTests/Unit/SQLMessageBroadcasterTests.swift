import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// Every subscriber sees every message from when it subscribed; a full buffer drops that
/// subscriber's oldest unread message and counts it.
final class SQLMessageBroadcasterTests: XCTestCase {
    static func message(_ i: Int) -> SQLServerMessage {
        SQLServerMessage(number: 0, state: 1, severity: 0, message: "m\(i)", isError: false)
    }

    func testTwoConcurrentSubscribersEachReceiveEveryMessage() async {
        let broadcaster = SQLMessageBroadcaster()
        let a = broadcaster.subscribe(), b = broadcaster.subscribe()
        func collect(_ s: SQLMessageSubscription) -> Task<[String], Never> {
            Task { var out: [String] = []; for await m in s { out.append(m.message); if out.count == 6 { break } }; return out }
        }
        let ta = collect(a), tb = collect(b)
        for i in 1 ... 6 { broadcaster.publish(Self.message(i)) }
        let expected = (1 ... 6).map { "m\($0)" }
        let ra = await ta.value, rb = await tb.value
        XCTAssertEqual(ra, expected)
        XCTAssertEqual(rb, expected)
        XCTAssertEqual(broadcaster.droppedCount, 0)
    }

    func testASubscriberSeesMessagesFromWhenItSubscribed() async {
        let broadcaster = SQLMessageBroadcaster()
        let early = broadcaster.subscribe()
        broadcaster.publish(Self.message(1))
        let late = broadcaster.subscribe()
        broadcaster.publish(Self.message(2))
        broadcaster.finish()
        var e: [String] = [], l: [String] = []
        for await m in early { e.append(m.message) }
        for await m in late { l.append(m.message) }
        XCTAssertEqual(e, ["m1", "m2"])
        XCTAssertEqual(l, ["m2"])
    }

    func testFullBufferDropsTheOldestOfThatSubscriberOnlyAndCountsIt() async {
        let broadcaster = SQLMessageBroadcaster(bufferLimit: 3)
        let reader = broadcaster.subscribe(), lagging = broadcaster.subscribe()
        var iterator = reader.makeAsyncIterator()
        var read: [String] = []
        for i in 1 ... 5 {
            broadcaster.publish(Self.message(i))
            if let m = await iterator.next() { read.append(m.message) }
        }
        XCTAssertEqual(read, ["m1", "m2", "m3", "m4", "m5"])
        XCTAssertEqual(reader.droppedCount, 0)
        XCTAssertEqual(lagging.droppedCount, 2)
        XCTAssertEqual(lagging.bufferedCount, 3)
        XCTAssertEqual(broadcaster.droppedCount, 2)
        broadcaster.finish()
        var kept: [String] = []
        for await m in lagging { kept.append(m.message) }
        XCTAssertEqual(kept, ["m3", "m4", "m5"], "the newest are kept")
    }

    func testFinishEndsWaitingAndLaterSubscribers() async {
        let broadcaster = SQLMessageBroadcaster()
        let s = broadcaster.subscribe()
        let waiting = Task { () -> SQLServerMessage? in var it = s.makeAsyncIterator(); return await it.next() }
        broadcaster.finish()
        let value = await waiting.value
        XCTAssertNil(value)
        var after = broadcaster.subscribe().makeAsyncIterator()
        let none = await after.next()
        XCTAssertNil(none)
        broadcaster.publish(Self.message(1))   // after finish: nobody receives it, no trap
        XCTAssertEqual(broadcaster.droppedCount, 0)
    }

    func testCancellingTheIteratingTaskEndsItsLoop() async {
        let broadcaster = SQLMessageBroadcaster()
        let s = broadcaster.subscribe()
        let task = Task { () -> Int in var n = 0; for await _ in s { n += 1 }; return n }
        broadcaster.publish(Self.message(1))
        task.cancel()
        let n = await task.value
        XCTAssertLessThanOrEqual(n, 1)
        broadcaster.publish(Self.message(2))
        XCTAssertEqual(s.bufferedCount, 0, "a cancelled subscription buffers nothing more")
    }

    func testIteratingTheBroadcasterTwiceIsTwoSubscriptionsReleasedAfterUse() async {
        let broadcaster = SQLMessageBroadcaster()
        do {
            var first = broadcaster.makeAsyncIterator()
            var second = broadcaster.makeAsyncIterator()
            XCTAssertEqual(broadcaster.subscriberCount, 2)
            broadcaster.publish(Self.message(7))
            let a = await first.next(), b = await second.next()
            XCTAssertEqual(a?.message, "m7")
            XCTAssertEqual(b?.message, "m7")
        }
        XCTAssertEqual(broadcaster.subscriberCount, 0)
        XCTAssertEqual(SQLMessageBroadcaster(bufferLimit: 0).bufferLimit, 1, "a limit below 1 is clamped, never a trap")
    }

    /// On a connection: two subscribers iterating `messages` concurrently each receive all six
    /// messages of a batch, in order (the unicast stream gave them 3 and 3).
    func testTwoSubscribersOfAConnectionEachReceiveAllOfABatchsMessages() async throws {
        let infos = (1 ... 6).map { ServerTokens.message(number: 0, text: "m\($0)", version: .v7_4) }
        let session = ReplaySession(name: "messages", exchanges: [
            RPCTokens.batch("PRINT 'six messages'", infos + [RPCTokens.done()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        let first = connection.messages.subscribe(), second = connection.messages.subscribe()
        func collect(_ s: SQLMessageSubscription) -> Task<[String], Never> {
            Task { var out: [String] = []; for await m in s { out.append(m.message); if out.count == 6 { break } }; return out }
        }
        let a = collect(first), b = collect(second)
        let result = try await connection.execute("PRINT 'six messages'")
        let expected = (1 ... 6).map { "m\($0)" }
        XCTAssertEqual(result.messages.map(\.message), expected)
        let gotA = await a.value, gotB = await b.value
        XCTAssertEqual(gotA, expected)
        XCTAssertEqual(gotB, expected)
        XCTAssertEqual(connection.messages.droppedCount, 0)
        // Closing ends every subscriber's loop.
        let late = connection.messages.subscribe()
        await connection.close()
        var after = 0
        for await _ in late { after += 1 }
        XCTAssertEqual(after, 0)
    }
}
