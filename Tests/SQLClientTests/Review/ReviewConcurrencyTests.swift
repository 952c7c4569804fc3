import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// A reviewer's probes of the request turns, cancellation, close and transactions (issue 27
/// items 5 and 6) as a new user and a hostile caller would use them. Every wait is bounded by a
/// watchdog that counts yields (a hang fails the test instead of hanging the suite).
final class ReviewConcurrencyTests: XCTestCase {
    struct Hang: Error, CustomStringConvertible {
        var what: String
        var description: String { "hung: \(what)" }
    }

    /// First result wins: the body's, or the watchdog's failure after `yields` yields.
    private final class Once<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, any Error>?
        private var finished = false
        var isFinished: Bool { lock.withLock { finished } }
        func set(_ c: CheckedContinuation<T, any Error>) { lock.withLock { continuation = c } }
        func finish(_ result: Result<T, any Error>) {
            let c: CheckedContinuation<T, any Error>? = lock.withLock {
                guard !finished else { return nil }
                finished = true
                defer { continuation = nil }
                return continuation
            }
            c?.resume(with: result)
        }
    }

    /// Runs `body`; fails with ``Hang`` (and cancels it) when it has not finished after `yields`
    /// yields of a watchdog task.
    func bounded<T: Sendable>(_ what: String, yields: Int = 3_000_000,
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let once = Once<T>()
        return try await withCheckedThrowingContinuation { c in
            once.set(c)
            let work = Task {
                do { once.finish(.success(try await body())) } catch { once.finish(.failure(error)) }
            }
            Task {
                for _ in 0 ..< yields {
                    if once.isFinished { return }
                    await Task.yield()
                }
                once.finish(.failure(Hang(what: what)))
                work.cancel()
            }
        }
    }

    static let d = TransactionReplayTests.handleDescriptor
    static let begin = TransactionReplayTests.tm("TM_BEGIN_XACT", [TransactionReplayTests.env(.beginTransaction, new: d, old: []),
                                                                   RPCTokens.done(.inTransaction)])
    static let commit = TransactionReplayTests.tm("TM_COMMIT_XACT", [TransactionReplayTests.env(.commitTransaction, new: [], old: d),
                                                                     RPCTokens.done()])

    static func code(_ error: any Error) -> SQLClientError.Code? { (error as? SQLClientError)?.code }
}

// MARK: - Turns under a storm of requests, some cancelled

extension ReviewConcurrencyTests {
    /// 48 tasks send requests on one connection at once; every third is cancelled at a
    /// different point (before it asks, while it waits for its turn, while it runs). Each ends
    /// with its result or `.cancelled`, no turn is lost or left behind, and the connection
    /// answers the next request.
    func testManyRequestsSomeCancelledAllEndAndTheConnectionGoesOn() async throws {
        for round in 0 ..< 3 {
            let server = try RPCReplay.start(ReplaySession(name: "storm", exchanges: [
                RPCTokens.batch("SELECT 'last'", [RPCTokens.done([.count], count: 42)]),
            ]))
            defer { server.stop() }
            let connection = try await RPCReplay.connect(server)
            let outcomes = try await bounded("storm round \(round)") { () -> [String] in
                try await withThrowingTaskGroup(of: String.self) { group in
                    var tasks: [Task<String, Never>] = []
                    for i in 0 ..< 48 {
                        let task = Task { () -> String in
                            do {
                                // Unmatched by the session: the replay server answers an empty DONE.
                                _ = try await connection.execute(SQLQuery(unsafeSQL: "SELECT \(i)"))
                                return "ok"
                            } catch {
                                return Self.code(error) == .cancelled ? "cancelled" : "error \(error)"
                            }
                        }
                        tasks.append(task)
                        if i % 3 == 0 {
                            for _ in 0 ..< (i % 7) { await Task.yield() }
                            task.cancel()
                        }
                    }
                    for task in tasks { group.addTask { await task.value } }
                    var all: [String] = []
                    for try await outcome in group { all.append(outcome) }
                    return all
                }
            }
            XCTAssertEqual(outcomes.count, 48)
            XCTAssertEqual(outcomes.filter { $0 != "ok" && $0 != "cancelled" }, [], "round \(round)")
            XCTAssertGreaterThanOrEqual(outcomes.filter { $0 == "ok" }.count, 32, "the tasks never cancelled all ran")
            let turns = await connection.turns.count
            XCTAssertEqual(turns, 0, "nobody waits for a turn")
            let queued = await connection.machine.queuedRequests.count
            XCTAssertEqual(queued, 0)
            let last = try await bounded("the request after the storm") { try await connection.execute("SELECT 'last'") }
            XCTAssertEqual(last.rowsAffected, 42)
            await connection.close()
        }
    }
}

// MARK: - Cancel at each point of a streamed read

extension ReviewConcurrencyTests {
    /// A streamed query cancelled (task cancellation, or `connection.cancel()` from another
    /// task) before the first row, after the first row while the read-ahead runs, and (task
    /// cancellation) while the cursor waits for a stalled server: the reader ends with
    /// `.cancelled` (or had ended), and the next request on the connection runs (or, after the
    /// stalled server, the connection closes when the cancel bound passes on the manual clock).
    func testCancellingAStreamAtEachPointThenTheNextRequestRuns() async throws {
        let count = 20_000
        let rows = [ReplayConnectionTests.colMetadata()] + (0 ..< count).map { ReplayConnectionTests.row(Int32($0), "r") }
            + [ReplayConnectionTests.done([.count], UInt64(count))]
        let after = RPCTokens.batch("SELECT 'after'", [RPCTokens.done([.count], count: 5)])
        for point in 0 ..< 5 {   // connection.cancel() on a stalled stream: the test below
            let stalled = point >= 4
            let stream = RPCTokens.batch("SELECT id FROM big", rows,
                                         faults: stalled ? .init(stallAfter: 3_000) : .init())
            let server = try RPCReplay.start(ReplaySession(name: "cancel-\(point)", exchanges: [stream, after]))
            defer { server.stop() }
            let clock = ManualConnectionClock()
            let connection = try await RPCReplay.connect(server, clock: clock) { $0.cancelTimeout = .milliseconds(300) }
            // Point 4: the reader has a row, so the request was sent (cancelled before it is
            // written, a request leaves nothing to drain and the next one simply runs).
            let (firstRow, firstRowSeen) = AsyncStream<Void>.makeStream()
            let seen = try await bounded("cancel point \(point)") { () -> Int in
                let reader = Task { () -> Int in
                    var n = 0
                    for try await _ in connection.query("SELECT id FROM big") {
                        n += 1
                        if n == 1 { firstRowSeen.yield(); firstRowSeen.finish() }
                        if point == 2, n == 1 { withUnsafeCurrentTask { $0?.cancel() } }
                    }
                    return n
                }
                switch point {
                case 0: reader.cancel()   // before it asked
                case 1:   // once the request runs (read-ahead under way)
                    while await connection.machine.request == nil { await Task.yield() }
                    reader.cancel()
                case 3:   // connection.cancel() racing with the reader
                    while await connection.machine.request == nil { await Task.yield() }
                    try await connection.cancel()
                case 4:   // the cursor waits for bytes that never come
                    for await _ in firstRow { break }
                    for _ in 0 ..< 1_000 { await Task.yield() }
                    reader.cancel()
                default: break
                }
                do {
                    let n = try await reader.value
                    XCTAssertFalse(stalled, "a stalled stream ended normally at point \(point)")
                    return n
                } catch {
                    XCTAssertEqual(Self.code(error), .cancelled, "point \(point): \(error)")
                    return -1
                }
            }
            if seen >= 0 { XCTAssertEqual(seen, count, "a stream not cancelled in time reads every row") }
            if stalled {
                // The stalled server never acknowledges the ATTENTION: the next request waits for
                // the drain, and the connection closes when the cancel bound passes.
                let outcome = try await bounded("next request after point \(point)") { () -> SQLClientError.Code? in
                    let next = Task { try await connection.execute("SELECT 'after'") }
                    try await clock.waitForSleeper(until: .milliseconds(300))
                    clock.advance(by: .milliseconds(300))
                    do { _ = try await next.value; return nil } catch { return Self.code(error) }
                }
                XCTAssertTrue(outcome == .connectionClosed || outcome == .timeout, "point \(point): \(String(describing: outcome))")
                let open = await connection.isOpen
                XCTAssertFalse(open)
            } else {
                let next = try await bounded("next request after point \(point)") { try await connection.execute("SELECT 'after'") }
                XCTAssertEqual(next.rowsAffected, 5, "point \(point)")
                let open = await connection.isOpen
                XCTAssertTrue(open)
            }
            await connection.close()
        }
    }
}

// MARK: - close() while everything waits

extension ReviewConcurrencyTests {
    /// close() while a stream is held (its server stalled), a request waits for its turn behind
    /// it and a transaction waits for the connection: every one of them ends with
    /// `.connectionClosed`, nothing hangs, and nobody is left in a queue.
    func testCloseWhileAStreamARequestAndATransactionWaitEndsThemAll() async throws {
        let rows = [ReplayConnectionTests.colMetadata()] + (0 ..< 100).map { ReplayConnectionTests.row(Int32($0), "r") }
        let server = try RPCReplay.start(ReplaySession(name: "close-all", exchanges: [
            RPCTokens.batch("SELECT id FROM big", rows, faults: .init(stallAfter: 500)),
        ]))
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        let codes = try await bounded("close with waiters") { () -> [SQLClientError.Code?] in
            let held = Task { () -> Int in
                var n = 0
                for try await _ in connection.query("SELECT id FROM big") { n += 1 }
                return n
            }
            while await connection.machine.request == nil { await Task.yield() }
            let queued = Task { try await connection.execute("SELECT 'queued'") }
            while await connection.machine.queuedRequests.isEmpty { await Task.yield() }
            let transaction = Task.detached { try await connection.withTransaction { tx in try await tx.execute("SELECT 1") } }
            // Granted at once (only a request runs) its begin queues; else it waits for the grant.
            while await connection.reservations.count == 0, await connection.machine.queuedRequests.count < 2 {
                await Task.yield()
            }
            await connection.close()
            var codes: [SQLClientError.Code?] = []
            do { _ = try await held.value; codes.append(nil) } catch { codes.append(Self.code(error)) }
            do { _ = try await queued.value; codes.append(nil) } catch { codes.append(Self.code(error)) }
            do { _ = try await transaction.value; codes.append(nil) } catch { codes.append(Self.code(error)) }
            return codes
        }
        XCTAssertEqual(codes, [.connectionClosed, .connectionClosed, .connectionClosed])
        let (turns, reservations) = await (connection.turns.count, connection.reservations.count)
        XCTAssertEqual(turns, 0)
        XCTAssertEqual(reservations, 0)
        do {
            _ = try await connection.execute("SELECT 'later'")
            XCTFail("a request after close ran")
        } catch {
            XCTAssertEqual(Self.code(error), .connectionClosed)
        }
    }
}

// MARK: - Transactions

extension ReviewConcurrencyTests {
    /// The handle used from a detached task while the closure sends its own requests, both at
    /// once: all of them run inside the transaction (its descriptor), one at a time, before the
    /// commit; a request of an unrelated task waits and runs after the commit outside it.
    func testHandleFromADetachedTaskConcurrentWithTheClosure() async throws {
        let inTran = DoneStatus.inTransaction
        let session = ReplaySession(name: "tx-concurrent", exchanges: [Self.begin]
            + (0 ..< 10).map { RPCTokens.batch("SELECT \($0)", [RPCTokens.done([inTran, .count], count: UInt64($0))]) }
            + [Self.commit, RPCTokens.batch("SELECT 'outside'", [RPCTokens.done([.count], count: 1)])])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let (connection, recorder) = try await TransactionReplayTests.recordedConnection(server)
        let outside = try await bounded("concurrent handle") { () -> Task<SQLResult, any Error> in
            try await connection.withTransaction { tx -> Task<SQLResult, any Error> in
                let detached = Task.detached { () -> [Int?] in
                    var counts: [Int?] = []
                    for i in stride(from: 1, to: 10, by: 2) {
                        counts.append(try await tx.execute(SQLQuery(unsafeSQL: "SELECT \(i)")).rowsAffected)
                    }
                    return counts
                }
                let outside = Task.detached { try await connection.execute("SELECT 'outside'") }
                var mine: [Int?] = []
                for i in stride(from: 0, to: 10, by: 2) {
                    mine.append(try await connection.execute(SQLQuery(unsafeSQL: "SELECT \(i)")).rowsAffected)
                }
                let theirs = try await detached.value
                XCTAssertEqual(mine, [0, 2, 4, 6, 8])
                XCTAssertEqual(theirs, [1, 3, 5, 7, 9])
                return outside
            }
        }
        let outsideResult = try await bounded("outside request") { try await outside.value }
        XCTAssertEqual(outsideResult.rowsAffected, 1)
        let seen = try recorder.descriptors()
        let descriptor = OutgoingRequest.descriptor(from: Self.d)
        XCTAssertEqual(seen.map(\.kind), ["tm 5"] + Array(repeating: "batch", count: 10) + ["tm 7", "batch"], "\(seen)")
        XCTAssertEqual(seen.map(\.descriptor), [0] + Array(repeating: descriptor, count: 11) + [0])
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
        await connection.close()
    }

    /// Savepoints two deep: the inner body throws (rolled back to the inner savepoint), the
    /// outer catches and goes on, then a second outer savepoint throws and is rolled back; the
    /// transaction commits. The requests are exactly: begin, save, save, batch, rollback-to,
    /// batch, save, rollback-to, commit.
    func testNestedSavepointsWithAThrow() async throws {
        let inTran = DoneStatus.inTransaction
        let tm = TransactionReplayTests.tm
        let session = ReplaySession(name: "tx-savepoints", exchanges: [
            Self.begin,
            tm("TM_SAVE_XACT", [RPCTokens.done(inTran)]), tm("TM_SAVE_XACT", [RPCTokens.done(inTran)]),
            RPCTokens.batch("DELETE FROM inner", [RPCTokens.done([inTran, .count], count: 2)]),
            tm("TM_ROLLBACK_XACT", [RPCTokens.done(inTran)]),
            RPCTokens.batch("UPDATE outer", [RPCTokens.done([inTran, .count], count: 1)]),
            tm("TM_SAVE_XACT", [RPCTokens.done(inTran)]), tm("TM_ROLLBACK_XACT", [RPCTokens.done(inTran)]),
            Self.commit,
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let (connection, recorder) = try await TransactionReplayTests.recordedConnection(server)
        struct Planned: Error {}
        try await bounded("savepoints") {
            try await connection.withTransaction { tx in
                try await tx.withSavepoint { outer in
                    do {
                        try await outer.withSavepoint { inner in
                            _ = try await inner.execute("DELETE FROM inner")
                            throw Planned()
                        }
                        XCTFail("the inner savepoint's body threw")
                    } catch is Planned {}
                    _ = try await outer.execute("UPDATE outer")
                }
                do {
                    try await tx.withSavepoint { _ in throw Planned() }
                } catch is Planned {}
            }
        }
        let seen = try recorder.descriptors()
        XCTAssertEqual(seen.map(\.kind), ["tm 5", "tm 9", "tm 9", "batch", "tm 8", "batch", "tm 9", "tm 8", "tm 7"], "\(seen)")
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
        let inTransaction = await connection.isInTransaction
        XCTAssertFalse(inTransaction)
        await connection.close()
    }

    /// A T-SQL COMMIT inside the closure ends the transaction on the server; a savepoint asked
    /// for afterwards (through the handle, or a nested withTransaction on the connection) must
    /// not wait for the reservation its own task holds: it ends (with an error or by running),
    /// and the outer closure returns.
    func testASavepointAfterTheServerEndedTheTransactionDoesNotDeadlock() async throws {
        let session = ReplaySession(name: "tx-ended-early", exchanges: [
            Self.begin,
            RPCTokens.batch("COMMIT", [TransactionReplayTests.env(.commitTransaction, new: [], old: Self.d), RPCTokens.done()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        let outcome = try await bounded("savepoint after COMMIT", yields: 1_000_000) { () -> String in
            do {
                try await connection.withTransaction { tx in
                    _ = try await tx.execute("COMMIT")
                    let active = await tx.isActive
                    XCTAssertFalse(active)
                    try await tx.withSavepoint { _ in }
                }
                return "ran"
            } catch {
                return "\(Self.code(error).map { "\($0)" } ?? "\(error)")"
            }
        }
        XCTAssertEqual(outcome, "invalidState")
        let reservations = await connection.reservations.count
        XCTAssertEqual(reservations, 0)
        await connection.close()
    }
}

extension ReviewConcurrencyTests {
    /// `connection.cancel()` while the stream's reader waits for bytes of a server that has
    /// stopped sending (and will not acknowledge): SQLConnection.cancel()'s docs say the reader
    /// throws `.cancelled` "at once if it is waiting". It must end before the cancel bound
    /// passes (the manual clock does not move until it has).
    func testConnectionCancelEndsAReaderWaitingOnAStalledServerAtOnce() async throws {
        let rows = [ReplayConnectionTests.colMetadata()] + (0 ..< 1_000).map { ReplayConnectionTests.row(Int32($0), "r") }
        let server = try RPCReplay.start(ReplaySession(name: "cancel-stalled", exchanges: [
            RPCTokens.batch("SELECT id FROM big", rows, faults: .init(stallAfter: 3_000)),
        ]))
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let connection = try await RPCReplay.connect(server, clock: clock) { $0.cancelTimeout = .milliseconds(300) }
        let (firstRow, signal) = AsyncStream<Void>.makeStream()
        let reader = Task.detached { [connection, signal] () -> SQLClientError? in
            do {
                for try await _ in connection.query("SELECT id FROM big") { signal.yield() }
                return nil
            } catch {
                return error as? SQLClientError
            }
        }
        for await _ in firstRow { break }
        for _ in 0 ..< 10_000 { await Task.yield() }   // it has taken the rows received and waits for more
        try await connection.cancel()
        let beforeTheBound: SQLClientError?
        do {
            beforeTheBound = try await bounded("the reader after connection.cancel()", yields: 1_000_000) { await reader.value }
        } catch is Hang {
            // Let the cancel bound pass so that the reader ends and the test can report.
            clock.advance(by: .milliseconds(300))
            let late = try await bounded("the reader after the cancel bound") { await reader.value }
            return XCTFail("the reader still waited after connection.cancel(); it ended only when the cancel bound passed, with \(String(describing: late))")
        }
        XCTAssertEqual(beforeTheBound?.code, .cancelled, "\(String(describing: beforeTheBound))")
        clock.advance(by: .milliseconds(300))
        await connection.close()
    }
}

extension ReviewConcurrencyTests {
    /// A handle kept past its closure: `withSavepoint` through it fails with `.invalidState`
    /// and sends nothing (as every request through it does), instead of quietly starting a new
    /// top-level transaction that the handle's docs say cannot happen.
    func testASavepointThroughAHandleKeptPastItsClosureFails() async throws {
        let server = try RPCReplay.start(ReplaySession(name: "tx-kept-savepoint", exchanges: [Self.begin, Self.commit]))
        defer { server.stop() }
        let (connection, recorder) = try await TransactionReplayTests.recordedConnection(server)
        let kept = try await connection.withTransaction { tx in tx }
        let outcome = try await bounded("savepoint through a kept handle") { () -> SQLClientError.Code? in
            do {
                try await kept.withSavepoint { _ in }
                return nil
            } catch {
                return Self.code(error)
            }
        }
        XCTAssertEqual(outcome, .invalidState)
        let seen = try recorder.descriptors()
        XCTAssertEqual(seen.map(\.kind), ["tm 5", "tm 7"], "nothing sent for the savepoint: \(seen)")
        let inTransaction = await connection.isInTransaction
        XCTAssertFalse(inTransaction)
        await connection.close()
    }
}

extension ReviewConcurrencyTests {
    /// The server closes the connection in the middle of a response inside a transaction while
    /// a second transaction waits for the connection and a request of another task waits for
    /// its turn: the running request fails, and the waiting transaction and request end with
    /// `.connectionClosed` (nothing hangs, nobody is left in a queue).
    func testServerClosingMidResponseWhileATransactionWaits() async throws {
        let rows = [ReplayConnectionTests.colMetadata()] + (0 ..< 2_000).map { ReplayConnectionTests.row(Int32($0), "r") }
            + [ReplayConnectionTests.done([.count], 2_000)]
        let server = try RPCReplay.start(ReplaySession(name: "tx-server-closes", exchanges: [
            Self.begin, RPCTokens.batch("SELECT id FROM big", rows, faults: .init(closeAfter: 5_000)),
        ]))
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        let (go, goSignal) = AsyncStream<Void>.makeStream()
        let codes = try await bounded("server closes under a transaction") { () -> [SQLClientError.Code?] in
            let first = Task { () -> SQLClientError.Code? in
                do {
                    try await connection.withTransaction { tx in
                        for await _ in go { break }   // the others wait first
                        for try await _ in tx.query("SELECT id FROM big") {}
                    }
                    return nil
                } catch {
                    return Self.code(error)
                }
            }
            while await !connection.isInTransaction { await Task.yield() }
            let second = Task.detached { () -> SQLClientError.Code? in
                do {
                    try await connection.withTransaction { _ in XCTFail("the second transaction ran") }
                    return nil
                } catch {
                    return Self.code(error)
                }
            }
            while await connection.reservations.count == 0 { await Task.yield() }
            let other = Task.detached { () -> SQLClientError.Code? in
                do { _ = try await connection.execute("SELECT 'other'"); return nil } catch { return Self.code(error) }
            }
            while await connection.machine.queuedRequests.isEmpty { await Task.yield() }
            goSignal.yield()
            return [await first.value, await second.value, await other.value]
        }
        XCTAssertNotNil(codes[0], "the transaction whose response was cut failed")
        XCTAssertEqual(Array(codes.dropFirst()), [.connectionClosed, .connectionClosed])
        let (turns, reservations, open) = await (connection.turns.count, connection.reservations.count, connection.isOpen)
        XCTAssertEqual(turns, 0)
        XCTAssertEqual(reservations, 0)
        XCTAssertFalse(open)
    }
}

extension ReviewConcurrencyTests {
    /// Inside a transaction, a detached task streams through the handle and drops its iterator
    /// after the first row (the request is abandoned: ATTENTION, drained on the connection),
    /// while the closure's own request waits for that stream: the closure's request then runs
    /// inside the transaction and the transaction commits.
    func testAStreamAbandonedThroughTheHandleLetsTheClosuresRequestRun() async throws {
        let inTran = DoneStatus.inTransaction
        let rows = [ReplayConnectionTests.colMetadata()] + (0 ..< 20_000).map { ReplayConnectionTests.row(Int32($0), "r") }
            + [ReplayConnectionTests.done([.count, inTran], 20_000)]
        let session = ReplaySession(name: "tx-abandoned-stream", exchanges: [
            Self.begin, RPCTokens.batch("SELECT id FROM big", rows),
            RPCTokens.batch("UPDATE t", [RPCTokens.done([inTran, .count], count: 3)]), Self.commit,
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let (connection, recorder) = try await TransactionReplayTests.recordedConnection(server)
        let affected = try await bounded("abandoned stream inside a transaction") { () -> Int? in
            try await connection.withTransaction { tx -> Int? in
                let (firstRow, signal) = AsyncStream<Void>.makeStream()
                let (drop, dropSignal) = AsyncStream<Void>.makeStream()
                let streamer = Task.detached { () -> Int? in
                    var iterator = tx.query("SELECT id FROM big").makeAsyncIterator()
                    let first = try await iterator.next()?[0].intValue
                    signal.yield()
                    for await _ in drop { break }
                    return first   // the iterator is released here, the stream unread
                }
                for await _ in firstRow { break }
                let update = Task { try await tx.execute("UPDATE t").rowsAffected }
                while await connection.machine.queuedRequests.isEmpty { await Task.yield() }
                dropSignal.yield()
                let first = try await streamer.value
                XCTAssertEqual(first, 0)
                return try await update.value
            }
        }
        XCTAssertEqual(affected, 3)
        let seen = try recorder.descriptors()
        let descriptor = OutgoingRequest.descriptor(from: Self.d)
        XCTAssertEqual(seen.map(\.kind), ["tm 5", "batch", "batch", "tm 7"], "\(seen)")
        XCTAssertEqual(seen.map(\.descriptor), [0, descriptor, descriptor, descriptor])
        let inTransaction = await connection.isInTransaction
        XCTAssertFalse(inTransaction)
        await connection.close()
    }
}
