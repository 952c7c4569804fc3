import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// The driver's request lifecycle end to end against a test server: a query timeout during a
/// long write (the server stops reading), requests waiting on a connection that is closed.
final class SQLConnectionLifecycleTests: XCTestCase {
    func configuration(_ port: Int) -> SQLConnectionConfiguration {
        SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port), user: "u",
                                   password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
    }

    /// A 60 MB batch to a server that stops reading for 4 s, with a 2 s query timeout: `.timeout`
    /// within a few seconds of the server reading again; what the server received is
    /// well-formed (the batch cut short by an EOM|IGNORE packet, then ATTENTION); the same
    /// connection then runs `SELECT 1`.
    func testTimeoutDuringALargeWriteKeepsTheConnection() async throws {
        let server = try HostileServer(.slowReader(stall: 4))
        defer { server.stop() }
        let sql = "SELECT 1 -- " + String(repeating: "x", count: 30_000_000)   // 60 MB in UTF-16
        var config = configuration(server.port)
        config.queryTimeout = .seconds(2)
        let connection = try await SQLConnection.connect(config)
        let started = ContinuousClock.now
        do {
            _ = try await connection.execute(SQLQuery(unsafeSQL: sql))
            XCTFail("the batch did not time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("within 2.0 seconds"), error.message)
        }
        let ended = ContinuousClock.now
        let readAgain = try XCTUnwrap(server.readAgainAt)
        XCTAssertGreaterThan(ended, readAgain, "nothing could end before the server read again")
        XCTAssertGreaterThanOrEqual(ended - started, .seconds(4))
        XCTAssertLessThan(ended - readAgain, .seconds(3), "the timeout ends soon after the server reads again")
        let open = await connection.isOpen
        XCTAssertTrue(open, "the server acknowledged: the connection stays usable")
        let rows = try await connection.execute("SELECT 1").resultSets.first?.rows
        XCTAssertEqual(rows?.first?[0], .int(1))

        let received = server.received
        print("LIFECYCLE: 60 MB batch: \(received.map { "\($0.type) \($0.packets) packets \($0.bytes) bytes \($0.lastStatus)" })")
        XCTAssertEqual(received.map(\.type), [.prelogin, .login7, .sqlBatch, .attention, .sqlBatch])
        guard received.count == 5 else { return }
        let batch = received[2]
        XCTAssertTrue(batch.lastStatus.contains(.ignore), "cut short by EOM|IGNORE: \(batch.lastStatus)")
        XCTAssertTrue(batch.lastStatus.contains(.endOfMessage))
        XCTAssertLessThan(batch.bytes, 60_000_000, "not the whole batch")
        XCTAssertGreaterThan(batch.packets, 100, "the batch was cut after many packets, not before the first")
        XCTAssertEqual(received[3].bytes, 0, "ATTENTION is a bare header")
        XCTAssertEqual(received[4].text, "SELECT 1")
    }

    /// 100 requests waiting for their turn on a connection that is closed all fail with
    /// `.connectionClosed` within a second, and so does the running one.
    func testRequestsWaitingOnAClosedConnectionFailPromptly() async throws {
        let server = try HostileServer(.slowReader(stall: 5))
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server.port))
        let results = try await withThrowingTaskGroup(of: SQLClientError.Code?.self) { group in
            for i in 0 ... 100 {
                group.addTask {
                    do {
                        _ = try await connection.execute("SELECT \(unsafeRaw: String(i))")
                        return nil
                    } catch let error as SQLClientError {
                        return error.code
                    }
                }
            }
            // Until one runs and 100 wait for their turn (the server answers nothing).
            while await connection.machine.queuedRequests.count < 100 { await Task.yield() }
            let running = await connection.machine.request != nil
            XCTAssertTrue(running)
            let closed = ContinuousClock.now
            await connection.close()
            var codes: [SQLClientError.Code?] = []
            for try await code in group { codes.append(code) }
            XCTAssertLessThan(ContinuousClock.now - closed, .seconds(1), "every request failed within a second")
            return codes
        }
        XCTAssertEqual(results.count, 101)
        XCTAssertEqual(results.filter { $0 == .connectionClosed }.count, 101, "\(results)")
    }

    /// The driver with an injected clock: no wall-clock wait decides anything. A query timeout of
    /// 10 minutes passes in an instant when the test moves the clock, the server acknowledges
    /// the ATTENTION, and the request fails with `.timeout`.
    func testQueryTimeoutDrivenByTheInjectedClock() async throws {
        let server = try HostileServer(.slowReader(stall: 0))
        defer { server.stop() }
        let clock = ManualConnectionClock()
        var config = configuration(server.port)
        config.queryTimeout = .seconds(600)
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        let connection = try await SQLConnection.connect(config, over: stream, clock: clock)
        // A request the server does not answer: an RPC (the slow reader answers only batches).
        let running = Task { try await connection.execute(rpc: [RPCCall(procedure: .name("wait_forever"))]) }
        try await clock.waitForSleepers(1)     // the login timer stopped; the query timer sleeps
        clock.advance(by: .seconds(600))
        do {
            _ = try await running.value
            XCTFail("no timeout")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("600"), error.message)
        }
        XCTAssertEqual(server.received.map(\.type), [.prelogin, .login7, .rpc, .attention])
        await connection.close()
    }
}
