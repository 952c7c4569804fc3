import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// Query timeouts and cancellations against replay sessions that stall mid-response and never
/// acknowledge ATTENTION: the request fails with `.timeout` within its bound, and the connection
/// is closed and reports itself unusable rather than being handed back half-read.
final class CancelReplayTests: XCTestCase {
    static let columns = [ColumnMetadata(typeInfo: .int, name: "n")]

    /// A response that sends COLMETADATA and one row, then stalls (and ignores ATTENTION).
    static func stallingSession(_ request: ReplaySession.Request) throws -> ReplaySession {
        let head = RPCTokens.colMetadata(columns) + (try RPCTokens.row([.int(1)], columns))
        let rest = try RPCTokens.row([.int(2)], columns) + RPCTokens.done([.count], count: 2)
        let exchange = ReplaySession.Exchange(request: request,
                                              response: [.init(bytes: head), .init(bytes: rest)],
                                              faults: .init(stallAfter: head.count))
        return ReplaySession(name: "rpc-stall", attention: .ignore, exchanges: [exchange])
    }

    func testQueryTimeoutWithUnacknowledgedAttentionClosesTheConnection() async throws {
        let server = try RPCReplay.start(try Self.stallingSession(.sqlBatch("SELECT n FROM slow")))
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server) {
            $0.queryTimeout = .milliseconds(300)
            $0.cancelTimeout = .milliseconds(400)
        }
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await connection.execute("SELECT n FROM slow")
            XCTFail("the stalled query must time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("ATTENTION"), error.message)
        }
        let elapsed = clock.now - start
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(700), "query timeout + cancel bound")
        XCTAssertLessThan(elapsed, .seconds(5), "the failure comes within its bound")
        let open = await connection.isOpen
        XCTAssertFalse(open, "the connection reports itself closed")
        do {
            _ = try await connection.execute("SELECT 1")
            XCTFail("a closed connection refuses requests")
        } catch let error as SQLClientError {
            XCTAssertTrue([.connectionClosed, .timeout].contains(error.code), "\(error)")
        }
    }

    /// The per-request timeout of a parameterized query overrides the configuration's.
    func testPerRequestTimeoutOfAnRPC() async throws {
        let server = try RPCReplay.start(try Self.stallingSession(.rpc(procedure: "sp_executesql", parameters: [])))
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server) { $0.cancelTimeout = .milliseconds(300) }
        do {
            _ = try await connection.execute(literal: "SELECT n FROM slow WHERE n > \(Int32(0))", timeout: .milliseconds(200))
            XCTFail("the stalled RPC must time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
        }
        let open = await connection.isOpen
        XCTAssertFalse(open)
    }

    /// Cancelling the task that streams a stalled response: the task ends with `.cancelled` at
    /// once; the unacknowledged ATTENTION then closes the connection after the cancel bound.
    func testTaskCancellationAgainstAServerThatNeverAcknowledges() async throws {
        let server = try RPCReplay.start(try Self.stallingSession(.sqlBatch("SELECT n FROM slow")))
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server) { $0.cancelTimeout = .milliseconds(300) }
        let (firstRow, signal) = AsyncStream<Void>.makeStream()
        let reader = Task.detached { [connection, signal] () -> SQLClientError? in
            do {
                for try await _ in connection.query("SELECT n FROM slow") { signal.yield() }
                return nil
            } catch {
                return error as? SQLClientError
            }
        }
        for await _ in firstRow { break }
        reader.cancel()
        let error = await reader.value
        XCTAssertEqual(error?.code, .cancelled, "\(String(describing: error))")
        // The next request waits for the abandoned one; it was never acknowledged, so the
        // connection is closed and the request refused.
        do {
            _ = try await connection.execute("SELECT 1")
            XCTFail("the connection must be closed")
        } catch let error as SQLClientError {
            XCTAssertTrue([.connectionClosed, .timeout].contains(error.code), "\(error)")
        }
        let open = await connection.isOpen
        XCTAssertFalse(open)
    }

    /// The login timeout bounds PRELOGIN/LOGIN7 against a server that accepts and never answers.
    func testLoginTimeoutAgainstASilentServer() async throws {
        let listener = try LoopbackListener { fd in while !LoopbackListener.readSome(fd).isEmpty {} }
        defer { listener.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: listener.port), user: "u",
                                                password: "p", encryption: .notSupported, connectTimeout: .seconds(60))
        config.loginTimeout = .milliseconds(300)
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await SQLConnection.connect(config)
            XCTFail("the silent server must time the login out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("login"), error.message)
        }
        XCTAssertLessThan(clock.now - start, .seconds(10))
    }

    func testCommandTimeoutConnectionStringKey() throws {
        let c = try SQLConnectionConfiguration(connectionString: "Server=h;User ID=u;Password=p;Command Timeout=7")
        XCTAssertEqual(c.queryTimeout, .seconds(7))
        XCTAssertEqual(c.cancelTimeout, .seconds(5))
        XCTAssertNil(c.loginTimeout)
        XCTAssertNil(try SQLConnectionConfiguration(connectionString: "Server=h;User ID=u;Password=p;Command Timeout=0").queryTimeout)
        XCTAssertNil(try SQLConnectionConfiguration(connectionString: "Server=h;User ID=u;Password=p").queryTimeout)
        XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=h;User ID=u;Password=p;Command Timeout=x")) { e in
            XCTAssertEqual((e as? SQLClientError)?.code, .invalidConfiguration)
        }
    }
}
