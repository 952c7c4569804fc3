#if ServiceLifecycle
import Logging
import ServiceLifecycle
import XCTest
@testable import SQLClient
import SQLClientTesting

/// The `ServiceLifecycle` trait: ``SQLConnectionPool`` as a `Service` in a `ServiceGroup`.
final class PoolServiceTests: XCTestCase {
    /// Opens when `open()` is called; waiters before that wait (no time involved).
    final class Gate: @unchecked Sendable {
        private let lock = NSLock()
        private var isOpen = false
        private var waiters: [CheckedContinuation<Void, Never>] = []
        func wait() async {
            await withCheckedContinuation { c in
                let resumeNow = lock.withLock { () -> Bool in
                    if isOpen { return true }
                    waiters.append(c)
                    return false
                }
                if resumeNow { c.resume() }
            }
        }
        func open() {
            let all = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                isOpen = true
                defer { waiters = [] }
                return waiters
            }
            for c in all { c.resume() }
        }
    }

    enum Outcome: Equatable { case finished, refused }

    /// Waits (yielding, bounded) until the pool's counts satisfy `condition`.
    func waitFor(_ pool: SQLConnectionPool, _ what: String, _ condition: (SQLConnectionPool.Metrics) -> Bool) async throws {
        for _ in 0 ..< 20_000 {
            if condition(pool.metrics) { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("never: \(what) (\(pool.metrics))")
        throw CancellationError()
    }

    /// Waits (bounded, 5 s) until `condition` holds.
    func eventually(_ what: String, _ condition: () -> Bool) async throws {
        for _ in 0 ..< 5_000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("never: \(what)")
    }

    func testGracefulShutdownWith50RequestsInFlight() async throws {
        try Bridge.require()
        let socketsBefore = Bridge.openSockets()   // another test's connections still open (none when they all closed)
        var options = SQLConnectionPool.Options()
        options.maximumConnections = 4
        options.closeTimeout = .seconds(30)   // the drain: long enough for the 4 lent ones to finish
        options.leaseTimeout = .seconds(60)
        let pool = try SQLConnectionPool(configuration: Bridge.configuration(), options: options)
        let group = ServiceGroup(services: [pool], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let running = Task { try await group.run() }

        let gate = Gate()
        let requests = (0 ..< 50).map { i in
            Task { () -> Result<Outcome, SQLClientError> in
                do {
                    let v = try await pool.withConnection { connection -> Int? in
                        await gate.wait()
                        return try await connection.execute("SELECT \(i) AS i").resultSets.first?.rows.first?["i"]?.intValue
                    }
                    XCTAssertEqual(v, i)
                    return .success(.finished)
                } catch let error as SQLClientError {
                    return error.code == .connectionClosed ? .success(.refused) : .failure(error)
                } catch {
                    return .failure(SQLClientError(.ioError, "untyped: \(error)"))
                }
            }
        }
        try await waitFor(pool, "4 lent, 46 waiting") { $0.leased == 4 && $0.waiting == 46 }
        if let socketsBefore { XCTAssertEqual(Bridge.openSockets(), socketsBefore + 4, "the pool's connections, seen from this process") }

        await group.triggerGracefulShutdown()
        // The 46 waiting are refused with the typed error while the 4 lent ones still hold theirs.
        try await waitFor(pool, "the waiting leases refused") { $0.waiting == 0 && $0.isClosed }
        do {
            _ = try await pool.execute("SELECT 1 AS one")
            XCTFail("a new lease during the drain was served")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed)
        }
        XCTAssertEqual(pool.metrics.leased, 4)
        gate.open()

        var outcomes: [Outcome] = []
        for request in requests {
            switch await request.value {
            case .success(let outcome): outcomes.append(outcome)
            case .failure(let error): XCTFail("not the typed refusal: \(error)")
            }
        }
        try await running.value
        XCTAssertEqual(outcomes.count, 50)
        XCTAssertEqual(outcomes.filter { $0 == .finished }.count, 4, "the lent ones finished within the drain")
        XCTAssertEqual(outcomes.filter { $0 == .refused }.count, 46)
        let after = pool.metrics
        XCTAssertEqual(after.open + after.opening + after.closing, 0, "\(after)")
        if let socketsBefore {
            // A closed SocketStream releases its descriptor once its readiness source's cancel
            // handler has run (on the dispatch queue, right after close()): wait for that, bounded.
            try await eventually("no socket to the server left open") { Bridge.openSockets() == socketsBefore }
        }
    }

    func testCancellationClosesAtOnce() async throws {
        try Bridge.require()
        let socketsBefore = Bridge.openSockets()   // another test's connections still open (none when they all closed)
        var options = SQLConnectionPool.Options()
        options.maximumConnections = 2
        options.closeTimeout = .seconds(600)   // never reached: cancellation does not drain
        let pool = try SQLConnectionPool(configuration: Bridge.configuration(), options: options)
        let group = ServiceGroup(services: [pool], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let running = Task { try await group.run() }
        let gate = Gate()
        let held = Task { () -> SQLClientError? in
            do {
                try await pool.withConnection { connection in
                    await gate.wait()
                    _ = try await connection.execute("SELECT 1 AS one")
                }
                return nil
            } catch {
                return error as? SQLClientError
            }
        }
        try await waitFor(pool, "1 lent") { $0.leased == 1 }
        running.cancel()
        _ = try? await running.value
        // run() returned with the lent connection closed under its user, not after 600 s.
        let after = pool.metrics
        XCTAssertTrue(after.isClosed)
        XCTAssertEqual(after.open + after.opening + after.closing, 0, "\(after)")
        gate.open()
        let error = await held.value
        XCTAssertNotNil(error, "the request on a connection closed by the cancellation fails")
        if let socketsBefore {
            // A closed SocketStream releases its descriptor once its readiness source's cancel
            // handler has run (on the dispatch queue, right after close()): wait for that, bounded.
            try await eventually("no socket to the server left open") { Bridge.openSockets() == socketsBefore }
        }
    }
}
#endif
