import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// The pool against the replay server (what the server receives is checked on its bytes) and
/// against ``FlakyServer`` (connections closed at random). Lease and idle timeouts run on a
/// ``ManualConnectionClock``: no test waits for time to pass.
final class SQLConnectionPoolTests: XCTestCase {
    static let intColumn = [ColumnMetadata(typeInfo: .int, name: "n")]

    static func selectAnswer(_ value: Int32) throws -> [[UInt8]] {
        [RPCTokens.colMetadata(intColumn), try RPCTokens.row([.int(value)], intColumn), RPCTokens.done([.count], count: 1)]
    }

    static func env(_ type: EnvChangeType, new: EnvChange.Value, old: EnvChange.Value) -> [UInt8] {
        var w = ByteWriter()
        EnvChange(type: type, newValue: new, oldValue: old).encode(into: &w)
        return w.bytes
    }

    static let descriptor: [UInt8] = [0x5A, 0, 0, 0, 0x33, 0, 0, 0x01]

    /// SELECT 1…3, `USE other` (database ENVCHANGE), `SELECT 2` answered with a RESETCONNECTION
    /// acknowledgement (ENVCHANGE 18) first, `BEGIN TRAN`, the Transaction Manager rollback.
    static func session() throws -> ReplaySession {
        ReplaySession(name: "pool", exchanges: [
            RPCTokens.batch("SELECT 1", try selectAnswer(1)),
            RPCTokens.batch("SELECT 2", [env(.resetConnectionAck, new: .bytes([]), old: .bytes([]))] + (try selectAnswer(2))),
            RPCTokens.batch("SELECT 3", try selectAnswer(3)),
            RPCTokens.batch("USE other", [env(.database, new: .text("other"), old: .text("master")), RPCTokens.done()]),
            RPCTokens.batch("BEGIN TRAN", [env(.beginTransaction, new: .bytes(descriptor), old: .bytes([])),
                                           RPCTokens.done(.inTransaction)]),
            ReplaySession.Exchange(request: .transactionManager(type: "TM_ROLLBACK_XACT", parameters: [
                .init(name: "name", value: ""), .init(name: "begin", value: "0"),
            ]), response: [ReplaySession.Segment(bytes: env(.rollbackTransaction, new: .bytes([]), old: .bytes(descriptor))),
                           ReplaySession.Segment(bytes: RPCTokens.done())]),
        ])
    }

    func startReplay(_ session: ReplaySession? = nil) throws -> ReplayServer {
        var options = ReplayServer.Options()
        options.recordsRequestMessages = true
        let server = ReplayServer(session: try session ?? Self.session(), options: options)
        _ = try server.start()
        return server
    }

    func pool(_ server: ReplayServer, clock: any ConnectionClock = SystemConnectionClock(),
              _ adjust: (inout SQLConnectionPool.Options) -> Void = { _ in }) throws -> SQLConnectionPool {
        try pool(port: Int(server.port), clock: clock, adjust)
    }

    func pool(port: Int, clock: any ConnectionClock = SystemConnectionClock(), logger: SQLClientLogger? = nil,
              _ adjust: (inout SQLConnectionPool.Options) -> Void = { _ in }) throws -> SQLConnectionPool {
        var configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port), user: "u",
                                                       password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
        configuration.logger = logger
        var options = SQLConnectionPool.Options(maximumConnections: 1)
        adjust(&options)
        return try SQLConnectionPool(configuration: configuration, options: options, clock: clock,
                                     connector: { try await SQLConnection.connect($0) })
    }

    /// Waits (polling, bounded) for a condition that I/O on other threads makes true.
    func eventually(_ what: String, _ condition: () -> Bool) async throws {
        for _ in 0 ..< 5_000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(2))
        }
        XCTFail("never: \(what)")
        throw SQLClientError(.timeout, "never: \(what)")
    }

    /// The replay server's log of each connection, once the pool closed them all.
    func logs(_ server: ReplayServer, count: Int) async throws -> [ReplayServer.ConnectionLog] {
        try await eventually("\(count) connections logged") { server.connections.count == count }
        return server.connections
    }

    static func first(_ result: SQLResult) -> SQLValue? { result.resultSets.first?.rows.first?[0] }

    // MARK: - RESETCONNECTION

    func testResetConnectionIsOnTheFirstRequestAfterReuseAndOnlyThere() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let pool = try pool(server)
        try await pool.withConnection { connection in
            _ = try await connection.execute("SELECT 1")
            _ = try await connection.execute("SELECT 3")
        }
        // Reused: the first request carries RESETCONNECTION, the second does not; a lease that sends nothing
        // leaves it for the next request, whoever sends it.
        let value = try await pool.withConnection { connection in
            let first = try await connection.execute("SELECT 2")
            _ = try await connection.execute("SELECT 3")
            return Self.first(first)
        }
        XCTAssertEqual(value, .int(2))
        try await pool.withConnection { _ in }
        // A parameterized query (an RPC) carries it the same way.
        _ = try await pool.execute("SELECT \(Int32(7))")
        let one = try await pool.execute("SELECT 1")
        XCTAssertEqual(Self.first(one), .int(1))
        let metrics = pool.metrics
        XCTAssertEqual(metrics.created, 1)
        XCTAssertEqual(metrics.resetsAcknowledged, 1, "the ENVCHANGE 18 that came with SELECT 2")
        await pool.close()
        let requests = try await logs(server, count: 1)[0].requestMessages
        XCTAssertEqual(requests.map(\.type), [.sqlBatch, .sqlBatch, .sqlBatch, .sqlBatch, .rpc, .sqlBatch])
        XCTAssertEqual(requests.map { $0.firstStatus.contains(.resetConnection) }, [false, false, true, false, true, true])
        XCTAssertFalse(requests.contains { $0.firstStatus.contains(.resetConnectionSkipTransaction) })
    }

    func testResetReturnsTheTrackedSessionToTheLoginDatabase() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let pool = try pool(server)
        let changed = try await pool.withConnection { connection in
            _ = try await connection.execute("USE other")
            return await connection.session.database
        }
        XCTAssertEqual(changed, "other")
        let reused = try await pool.withConnection { await $0.session.database }
        XCTAssertEqual(reused, "master", "RESETCONNECTION returns the session to the login's database")
        await pool.close()
    }

    // MARK: - Health

    func testConnectionReturnedInsideATransactionIsRolledBackAndNotReused() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let events = EventLog()
        let pool = try pool(port: Int(server.port), logger: SQLClientLogger(minimumLevel: .debug) { events.append($0) })
        let inside = try await pool.withConnection { connection in
            _ = try await connection.execute("BEGIN TRAN")
            return await connection.isInTransaction
        }
        XCTAssertTrue(inside)
        let next = try await pool.withConnection { connection in
            (await connection.isInTransaction, Self.first(try await connection.execute("SELECT 1")))
        }
        XCTAssertEqual(next.0, false)
        XCTAssertEqual(next.1, .int(1))
        let metrics = pool.metrics
        XCTAssertEqual(metrics.created, 2, "the second lease got a new connection")
        XCTAssertEqual(metrics.discarded, 1)
        await pool.close()
        let logs = try await logs(server, count: 2)
        let first = try XCTUnwrap(logs.first { $0.requests.contains(.sqlBatch("BEGIN TRAN")) })
        XCTAssertEqual(first.requests.last, .transactionManager(type: "TM_ROLLBACK_XACT", parameters: [
            .init(name: "name", value: ""), .init(name: "begin", value: "0"),
        ]), "rolled back before it was closed")
        let second = try XCTUnwrap(logs.first { !$0.requests.contains(.sqlBatch("BEGIN TRAN")) })
        XCTAssertEqual(second.requestMessages.map { $0.firstStatus.contains(.resetConnection) }, [false],
                       "a new connection's first request needs no reset")
        // The logger heard it: the discard with its reason, and each connection's opening and closing.
        let pooled = events.events.filter { $0.kind == .pool }
        let discard = try XCTUnwrap(pooled.first { $0.metadata[SQLLogEvent.Key.poolEvent] == "discarded" })
        XCTAssertEqual(discard.level, .warning)
        XCTAssertEqual(discard.metadata[SQLLogEvent.Key.poolReason], "inTransaction")
        XCTAssertEqual(discard.message, "pooled connection 1 closed: returned inside an open transaction")
        XCTAssertEqual(pooled.compactMap { $0.metadata[SQLLogEvent.Key.poolEvent] }.sorted(),
                       ["closed", "discarded", "opened", "opened", "poolClosed"])
    }

    func testPoolingOffOpensAConnectionPerLeaseAndClosesItOnReturn() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let pool = try pool(server) {
            $0.pooling = false
            $0.maximumConnections = 2
        }
        for _ in 0 ..< 3 {
            let one = try await pool.execute("SELECT 1")
            XCTAssertEqual(Self.first(one), .int(1))
        }
        try await eventually("all closed") { pool.metrics.open + pool.metrics.closing == 0 }
        XCTAssertEqual(pool.metrics.created, 3)
        let logs = try await logs(server, count: 3)
        XCTAssertEqual(logs.flatMap(\.requestMessages).map { $0.firstStatus.contains(.resetConnection) }, [false, false, false],
                       "never reused, never reset")
        await pool.close()
    }

    func testConnectionWhoseAttentionTimedOutIsDiscarded() async throws {
        // The server stalls on SELECT slow and ignores the ATTENTION that follows the query timeout.
        var session = try Self.session()
        session.attention = .ignore
        session.exchanges.append(RPCTokens.batch("SELECT slow", [], faults: .init(stallAfter: 0)))
        let server = try startReplay(session)
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let port = Int(server.port)
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port), user: "u",
                                                       password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
        // The connections' own timers (query timeout, ATTENTION bound) run on the manual clock too.
        let pool = try SQLConnectionPool(configuration: configuration, options: .init(maximumConnections: 1), clock: clock) {
            let socket = try await SocketStream.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
            return try await SQLConnection.connect($0, port: port, over: socket, clock: clock)
        }
        let slow = Task { try await pool.withConnection { try await $0.execute("SELECT slow", timeout: .seconds(1)) } }
        // The query timeout, armed when the request starts (the login's own timer and the pool's
        // lease timer sleep too, so a count of sleepers cannot tell that the request has started).
        try await clock.waitForSleeper(until: .seconds(1))
        clock.advance(by: .seconds(1))       // the query timeout: ATTENTION, which the server ignores
        try await clock.waitForSleeper(until: .seconds(6))   // the ATTENTION bound (cancelTimeout, 5 s)
        clock.advance(by: .seconds(5))
        do {
            _ = try await slow.value
            XCTFail("the request should fail")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("ATTENTION"), error.message)
        }
        XCTAssertEqual(pool.metrics.discarded, 1, "closed by its ATTENTION timeout: not lent again")
        let next = try await pool.execute("SELECT 1")
        XCTAssertEqual(Self.first(next), .int(1))
        XCTAssertEqual(pool.metrics.created, 2)
        await pool.close()
    }

    func testValidationDiscardsAConnectionThatFailsItsCheck() async throws {
        // The server cuts the connection when it receives the check (SELECT 1).
        var session = try Self.session()
        session.exchanges[0].faults.closeAfter = 0
        let server = try startReplay(session)
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let pool = try pool(server, clock: clock) { $0.validationThreshold = .seconds(30) }
        _ = try await pool.execute("SELECT 3")
        clock.advance(by: .seconds(31))
        let three = try await pool.execute("SELECT 3")
        XCTAssertEqual(Self.first(three), .int(3), "served by a new connection")
        let metrics = pool.metrics
        XCTAssertEqual(metrics.discarded, 1)
        XCTAssertEqual(metrics.created, 2)
        await pool.close()
        let logs = try await logs(server, count: 2)
        XCTAssertEqual(logs.flatMap(\.requests).filter { $0 == .sqlBatch("SELECT 1") }.count, 1, "one check, on the idle connection")
    }

    // MARK: - Leases

    func testLeaseTimeoutWithEveryConnectionBusy() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let pool = try pool(server, clock: clock) { $0.leaseTimeout = .seconds(5) }
        let holding = Gate()
        let holder = Task { try await pool.withConnection { _ in await holding.wait() } }
        try await eventually("the connection is lent") { pool.metrics.leased == 1 }
        let waiter = Task { try await pool.withConnection { _ in } }
        try await eventually("a lease waits") { pool.metrics.waiting == 1 }
        try await clock.waitForSleepers(1)   // the pool's timer, for the waiter's deadline
        clock.advance(by: .seconds(4))
        XCTAssertEqual(pool.metrics.waiting, 1, "not yet")
        clock.advance(by: .seconds(1))
        do {
            try await waiter.value
            XCTFail("the lease should time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout)
            XCTAssertTrue(error.message.contains("1 of at most 1 connections lent"), error.message)
        }
        XCTAssertEqual(pool.metrics.leaseTimeouts, 1)
        await holding.open()
        try await holder.value
        let after = try await pool.execute("SELECT 1")
        XCTAssertEqual(Self.first(after), .int(1), "the pool still serves")
        await pool.close()
    }

    func testCancellingAWaitingTaskTakesItOutOfTheQueue() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let pool = try pool(server)
        let holding = Gate()
        let holder = Task { try await pool.withConnection { _ in await holding.wait() } }
        try await eventually("the connection is lent") { pool.metrics.leased == 1 }
        let waiter = Task { try await pool.withConnection { _ in "ran" } }
        try await eventually("a lease waits") { pool.metrics.waiting == 1 }
        waiter.cancel()
        do {
            _ = try await waiter.value
            XCTFail("the cancelled lease should throw")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertEqual(pool.metrics.waiting, 0)
        await holding.open()
        try await holder.value
        let metrics = pool.metrics
        XCTAssertEqual(metrics.leases, 1, "the cancelled lease never got the connection")
        XCTAssertEqual(metrics.idle, 1)
        await pool.close()
    }

    func testWaitersAreServedInTheOrderTheyAsked() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let pool = try pool(server)
        let holding = Gate()
        let holder = Task { try await pool.withConnection { _ in await holding.wait() } }
        try await eventually("the connection is lent") { pool.metrics.leased == 1 }
        let order = Recorder()
        var waiters: [Task<Void, any Error>] = []
        for i in 0 ..< 5 {
            waiters.append(Task { try await pool.withConnection { _ in await order.append(i) } })
            try await eventually("lease \(i) waits") { pool.metrics.waiting == i + 1 }
        }
        await holding.open()
        for waiter in waiters { try await waiter.value }
        try await holder.value
        let served = await order.values
        XCTAssertEqual(served, [0, 1, 2, 3, 4])
        await pool.close()
    }

    func testConnectionIsReturnedWhenTheBodyThrowsOrItsTaskIsCancelled() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let pool = try pool(server)
        struct Oops: Error {}
        do {
            try await pool.withConnection { _ in throw Oops() }
            XCTFail("the body's error comes out")
        } catch is Oops {}
        XCTAssertEqual(pool.metrics.idle, 1)
        let started = Gate()
        let task = Task {
            try await pool.withConnection { connection in
                await started.open()
                try await Task.sleep(for: .seconds(600))   // ended by the cancellation below
            }
        }
        await started.wait()
        task.cancel()
        _ = try? await task.value
        let metrics = pool.metrics
        XCTAssertEqual(metrics.leased, 0)
        XCTAssertEqual(metrics.idle, 1)
        XCTAssertEqual(metrics.created, 1)
        await pool.close()
    }

    func testStreamedRowsHoldTheLeaseUntilTheyEnd() async throws {
        let columns = Self.intColumn
        let session = ReplaySession(name: "rows", exchanges: [
            RPCTokens.batch("SELECT n FROM t", [RPCTokens.colMetadata(columns)] + (try (1 ... 3).map {
                try RPCTokens.row([.int(Int32($0))], columns)
            }) + [RPCTokens.done([.count], count: 3)]),
        ])
        let server = try startReplay(session)
        defer { server.stop() }
        let pool = try pool(server)
        var values: [SQLValue] = []
        var leasedDuring: [Int] = []
        for try await row in pool.query("SELECT n FROM t") {
            values.append(row[0])
            leasedDuring.append(pool.metrics.leased)
        }
        XCTAssertEqual(values, [.int(1), .int(2), .int(3)])
        XCTAssertEqual(leasedDuring, [1, 1, 1])
        XCTAssertEqual(pool.metrics.leased, 0)
        XCTAssertEqual(pool.metrics.idle, 1)
        await pool.close()
    }

    /// A pool's rows are the connection's `SQLRowSequence` (issue 39: no second sequence type), so
    /// they decode to tuples too, with the lease held until the last row.
    func testPooledRowsDecodeAsTypedTuples() async throws {
        let columns = Self.intColumn
        let session = ReplaySession(name: "typed rows", exchanges: [
            RPCTokens.batch("SELECT n FROM t", [RPCTokens.colMetadata(columns)] + (try (1 ... 3).map {
                try RPCTokens.row([.int(Int32($0 * 10))], columns)
            }) + [RPCTokens.done([.count], count: 3)]),
        ])
        let server = try startReplay(session)
        defer { server.stop() }
        let pool = try pool(server)
        let rows: SQLRowSequence = pool.query("SELECT n FROM t")
        var values: [Int] = []
        var leasedDuring: [Int] = []
        for try await n in rows.decode(Int.self) {
            values.append(n)
            leasedDuring.append(pool.metrics.leased)
        }
        XCTAssertEqual(values, [10, 20, 30])
        XCTAssertEqual(leasedDuring, [1, 1, 1])
        XCTAssertEqual(pool.metrics.leased, 0)
        XCTAssertEqual(pool.metrics.idle, 1)
        await pool.close()
    }

    func testAConnectionThatCannotBeOpenedFailsTheLeaseWithTheConnectError() async throws {
        let listener = try LoopbackListener(accepting: false)
        let port = listener.port
        listener.stop()   // nothing listens there now
        let pool = try pool(port: port)
        do {
            try await pool.withConnection { _ in }
            XCTFail("nothing listens")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionFailed, "\(error)")
        }
        XCTAssertEqual(pool.metrics.connectFailures, 1)
        await pool.close()
    }

    // MARK: - Idle timeout, minimum

    func testIdleConnectionsAboveTheMinimumCloseAfterTheIdleTimeout() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let pool = try pool(server, clock: clock) {
            $0.maximumConnections = 3
            $0.minimumConnections = 1
            $0.idleTimeout = .seconds(60)
        }
        try await eventually("the minimum is open") { pool.metrics.open == 1 }
        let holding = Gate()
        let holders = (0 ..< 3).map { _ in Task { try await pool.withConnection { _ in await holding.wait() } } }
        try await eventually("three lent") { pool.metrics.leased == 3 }
        await holding.open()
        for holder in holders { try await holder.value }
        XCTAssertEqual(pool.metrics.idle, 3)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(61))
        try await eventually("two closed") { pool.metrics.open == 1 && pool.metrics.closing == 0 }
        XCTAssertEqual(pool.metrics.expired, 2)
        await pool.close()
        _ = try await logs(server, count: 3)
    }

    // MARK: - Closing

    func testCloseStopsNewLeasesAndWaitsForLentConnections() async throws {
        let server = try startReplay()
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let pool = try pool(server, clock: clock) {
            $0.maximumConnections = 2
            $0.closeTimeout = .seconds(10)
        }
        let holding = Gate()
        let polite = Task { try await pool.withConnection { _ in await holding.wait() } }
        let stubborn = Task {
            try await pool.withConnection { connection in
                // Never gives the connection back by itself; the close bound ends it.
                while await connection.isOpen { try await Task.sleep(for: .milliseconds(5)) }
            }
        }
        try await eventually("both lent") { pool.metrics.leased == 2 }
        let closing = Task { await pool.close() }
        try await eventually("closing") { pool.metrics.isClosed }
        do {
            try await pool.withConnection { _ in }
            XCTFail("a closed pool lends nothing")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed)
            XCTAssertEqual(error.message, "the connection pool is closed")
        }
        await holding.open()
        try await polite.value
        try await eventually("the polite one is closed") { pool.metrics.open == 1 && pool.metrics.closing == 0 }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(10))
        await closing.value
        try await stubborn.value
        let metrics = pool.metrics
        XCTAssertEqual(metrics.open + metrics.opening + metrics.closing, 0)
        _ = try await logs(server, count: 2)
        await pool.close()   // again: returns at once
    }

    // MARK: - A server that closes connections at random

    func testPoolRecoversFromAServerThatClosesConnectionsAtRandom() async throws {
        let server = try FlakyServer(seed: 0x5EED_F1A4, closeProbability: 0.08)
        defer { server.stop() }
        let fdBefore = try XCTUnwrap(ProcessResources.openDescriptors())
        let pool = try pool(port: server.port) {
            $0.maximumConnections = 8
            $0.minimumConnections = 8
        }
        try await eventually("the minimum is open") { pool.metrics.open == 8 }
        let outcomes = try await withThrowingTaskGroup(of: [String].self) { group in
            for task in 0 ..< 16 {
                group.addTask {
                    var seen: [String] = []
                    for q in 0 ..< 40 {
                        let value = Int32(task * 1000 + q)
                        do {
                            let result = try await pool.execute(SQLQuery(unsafeSQL: "SELECT \(value)"))
                            seen.append(Self.first(result) == .int(value) ? "ok" : "wrong value")
                        } catch let error as SQLClientError {
                            seen.append(error.code.name)
                        }
                    }
                    return seen
                }
            }
            var all: [String] = []
            for try await seen in group { all += seen }
            return all
        }
        let counts = Dictionary(outcomes.map { ($0, 1) }, uniquingKeysWith: +)
        print("POOL: random closes \(server.cuts), outcomes \(counts), \(pool.metrics)")
        XCTAssertEqual(outcomes.count, 640)
        XCTAssertEqual(counts["wrong value"], nil)
        XCTAssertGreaterThan(counts["ok"] ?? 0, 400)
        XCTAssertGreaterThan(outcomes.count - (counts["ok"] ?? 0), 0, "the server did cut some requests")
        // connectionLost: a connection found cut while idle, which this server (no SESSIONRECOVERY) cannot recover.
        XCTAssertEqual(Set(counts.keys).subtracting(["ok", "connectionClosed", "ioError", "connectionLost"]), [], "\(counts)")
        XCTAssertLessThanOrEqual(server.mostOpenAtOnce, 8, "the server never saw more than the maximum")
        // The chaos stops. Connections cut right after an answer are found out at their next
        // request; rounds of eight leases held at once run until all eight connections serve.
        server.closeProbability = 0
        var served = 0
        for _ in 0 ..< 10 where served < 8 {
            let holding = Gate()
            let round = (0 ..< 8).map { i in
                Task {
                    try await pool.withConnection { connection -> SQLValue? in
                        let value = try? await connection.execute(SQLQuery(unsafeSQL: "SELECT \(i)"))
                        await holding.wait()
                        return value.flatMap(Self.first)
                    }
                }
            }
            try await eventually("eight lent") { pool.metrics.leased == 8 }
            await holding.open()
            served = 0
            for (i, task) in round.enumerated() where try await task.value == .int(Int32(i)) { served += 1 }
        }
        XCTAssertEqual(served, 8, "eight connections serve at once")
        try await eventually("the pool is back to 8") { pool.metrics.open == 8 && pool.metrics.closing == 0 }
        let metrics = pool.metrics
        XCTAssertEqual(metrics.created - metrics.discarded, 8, "\(metrics)")
        await pool.close()
        try await eventually("the server sees no connection") { server.openConnections == 0 }
        let fdAfter = await ProcessResources.settleDescriptors(to: fdBefore) ?? -1
        XCTAssertLessThanOrEqual(fdAfter, fdBefore, "file descriptors leaked")
    }
}

/// A one-shot gate: `wait()` suspends until `open()` (or returns at once after it).
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

/// The events a logger's handler received, in order.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var received: [SQLLogEvent] = []
    func append(_ event: SQLLogEvent) { lock.withLock { received.append(event) } }
    var events: [SQLLogEvent] { lock.withLock { received } }
}

/// Values appended from several tasks, in arrival order.
actor Recorder {
    private(set) var values: [Int] = []
    func append(_ value: Int) { values.append(value) }
}
