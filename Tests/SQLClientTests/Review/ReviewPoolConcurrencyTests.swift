import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// A reviewer's probes of the pool's lease queue (one `WaiterQueue`, issue 27 item 5) under
/// contention: leases cancelled while they wait or run, and lease timeouts on a manual clock
/// (in ReviewConcurrencyTests, for its bounded waits).
extension ReviewConcurrencyTests {
    static func reviewPool(_ server: ReplayServer, clock: any ConnectionClock = SystemConnectionClock(),
                     _ adjust: (inout SQLConnectionPool.Options) -> Void = { _ in }) throws -> SQLConnectionPool {
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "u",
                                                       password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
        var options = SQLConnectionPool.Options(maximumConnections: 2)
        adjust(&options)
        return try SQLConnectionPool(configuration: configuration, options: options, clock: clock,
                                     connector: { try await SQLConnection.connect($0) })
    }

    /// 40 tasks run a request each through a pool of 2 connections; every third is cancelled
    /// at a different moment (before it asks, while it waits for a lease, while it runs). Each
    /// ends with its result or `.cancelled`; afterwards nobody waits, nothing is lent, the pool
    /// serves the next request, and close() returns.
    func testLeasesCancelledUnderContentionLoseNoConnection() async throws {
        let server = try RPCReplay.start(ReplaySession(name: "pool-storm", exchanges: [
            RPCTokens.batch("SELECT 'last'", [RPCTokens.done([.count], count: 9)]),
        ]))
        defer { server.stop() }
        let pool = try Self.reviewPool(server)
        let outcomes = try await bounded("pool storm") { () -> [String] in
            var tasks: [Task<String, Never>] = []
            for i in 0 ..< 40 {
                let task = Task { () -> String in
                    do {
                        _ = try await pool.execute(SQLQuery(unsafeSQL: "SELECT \(i)"))   // unmatched: an empty DONE
                        return "ok"
                    } catch {
                        return Self.code(error) == .cancelled ? "cancelled" : "error \(error)"
                    }
                }
                tasks.append(task)
                if i % 3 == 0 {
                    for _ in 0 ..< (i % 5) { await Task.yield() }
                    task.cancel()
                }
            }
            var all: [String] = []
            for task in tasks { all.append(await task.value) }
            return all
        }
        XCTAssertEqual(outcomes.filter { $0 != "ok" && $0 != "cancelled" }, [])
        XCTAssertGreaterThanOrEqual(outcomes.filter { $0 == "ok" }.count, 26, "the tasks never cancelled all ran")
        let metrics = pool.metrics
        XCTAssertEqual(metrics.waiting, 0, "\(metrics)")
        XCTAssertEqual(metrics.leased, 0, "\(metrics)")
        XCTAssertLessThanOrEqual(metrics.open, 2, "\(metrics)")
        let last = try await bounded("the request after the storm") { try await pool.execute("SELECT 'last'") }
        XCTAssertEqual(last.rowsAffected, 9)
        try await bounded("pool close") { await pool.close() }
    }

    /// Leases waiting behind one held connection: the first times out on the manual clock,
    /// the second is cancelled, the third waits on; close() then fails the third with
    /// `.connectionClosed` and returns once the holder gives its connection back.
    func testTimeoutCancelAndCloseOfWaitingLeases() async throws {
        let server = try RPCReplay.start(ReplaySession(name: "pool-waiters", exchanges: []))
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let pool = try Self.reviewPool(server, clock: clock) { $0.maximumConnections = 1; $0.leaseTimeout = .seconds(5) }
        let (release, releaseSignal) = AsyncStream<Void>.makeStream()
        let holder = Task { try await pool.withConnection { _ in for await _ in release { break } } }
        let codes = try await bounded("waiting leases") { () -> [SQLClientError.Code?] in
            while pool.metrics.leased == 0 { await Task.yield() }
            let timesOut = Task { try await pool.withConnection { _ in } }
            while pool.metrics.waiting < 1 { await Task.yield() }
            try await clock.waitForSleepers(1)
            clock.advance(by: .seconds(3))
            let cancelled = Task { try await pool.withConnection { _ in } }
            while pool.metrics.waiting < 2 { await Task.yield() }
            clock.advance(by: .seconds(2))   // the first's deadline passes, not the second's
            var codes: [SQLClientError.Code?] = []
            do { try await timesOut.value; codes.append(nil) } catch { codes.append(Self.code(error)) }
            cancelled.cancel()
            do { try await cancelled.value; codes.append(nil) } catch { codes.append(Self.code(error)) }
            let third = Task { try await pool.withConnection { _ in } }
            while pool.metrics.waiting < 1 { await Task.yield() }
            let closing = Task { await pool.close() }
            do { try await third.value; codes.append(nil) } catch { codes.append(Self.code(error)) }
            releaseSignal.yield()
            try await holder.value
            await closing.value
            return codes
        }
        XCTAssertEqual(codes, [.timeout, .cancelled, .connectionClosed])
        XCTAssertEqual(pool.metrics.waiting, 0)
        XCTAssertEqual(pool.metrics.leased, 0)
    }
}
