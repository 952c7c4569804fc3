import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// Query timeouts and cancellations against replay sessions that stall mid-response and never
/// acknowledge ATTENTION: the request fails with `.timeout` within its bound, and the connection
/// is closed and reports itself unusable rather than being handed back half-read.
final class CancelReplayTests: XCTestCase {
    static let columns = [ColumnMetadata(typeInfo: .int, name: "n")]

    /// A response that sends COLMETADATA and one row, then stalls (and ignores ATTENTION);
    /// Fixtures/sessions/rpc-attention-ignored.tdssession holds the same for a SQL batch.
    static func stallingSession(_ request: ReplaySession.Request) throws -> ReplaySession {
        let head = RPCTokens.colMetadata(columns) + (try RPCTokens.row([.int(1)], columns))
        let rest = try RPCTokens.row([.int(2)], columns) + RPCTokens.done([.count], count: 2)
        let exchange = ReplaySession.Exchange(request: request,
                                              response: [.init(bytes: head), .init(bytes: rest)],
                                              faults: .init(stallAfter: head.count))
        return ReplaySession(name: "rpc-stall", version: .v7_4, attention: .ignore, exchanges: [exchange])
    }

    func testQueryTimeoutWithUnacknowledgedAttentionClosesTheConnection() async throws {
        let session = try RPCReplay.fixture("rpc-attention-ignored.tdssession")
        XCTAssertEqual(session.attention, .ignore)
        XCTAssertEqual(session.withoutComments(name: "s"), try Self.stallingSession(.sqlBatch("SELECT n FROM slow")).withoutComments(name: "s"),
                       "the fixture is the session the other tests build")
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        // Time is the test's: the bounds pass when the clock is moved, not after a wait.
        let clock = ManualConnectionClock()
        let connection = try await RPCReplay.connect(server, clock: clock) {
            $0.queryTimeout = .milliseconds(300)
            $0.cancelTimeout = .milliseconds(400)
        }
        let request = Task { try await connection.execute("SELECT n FROM slow") }
        try await clock.waitForSleeper(until: .milliseconds(300))   // the query timeout, armed at the write
        clock.advance(by: .milliseconds(300))                      // ATTENTION; the cancel bound starts
        try await clock.waitForSleeper(until: .milliseconds(700))
        clock.advance(by: .milliseconds(400))                      // never acknowledged: closed
        do {
            _ = try await request.value
            XCTFail("the stalled query must time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("ATTENTION"), error.message)
            XCTAssertTrue(error.message.contains("0.3 seconds"), error.message)
        }
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
        let clock = ManualConnectionClock()
        let connection = try await RPCReplay.connect(server, clock: clock) {
            $0.queryTimeout = .seconds(60)
            $0.cancelTimeout = .milliseconds(300)
        }
        let request = Task { try await connection.execute("SELECT n FROM slow WHERE n > \(Int32(0))", timeout: .milliseconds(200)) }
        try await clock.waitForSleeper(until: .milliseconds(200))   // the request's own timeout, not the configuration's 60 s
        clock.advance(by: .milliseconds(200))
        try await clock.waitForSleeper(until: .milliseconds(500))
        clock.advance(by: .milliseconds(300))
        do {
            _ = try await request.value
            XCTFail("the stalled RPC must time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("0.2 seconds"), error.message)
        }
        let open = await connection.isOpen
        XCTAssertFalse(open)
    }

    /// Cancelling the task that streams a stalled response: the task ends with `.cancelled` at
    /// once; the unacknowledged ATTENTION then closes the connection after the cancel bound.
    func testTaskCancellationAgainstAServerThatNeverAcknowledges() async throws {
        let server = try RPCReplay.start(try Self.stallingSession(.sqlBatch("SELECT n FROM slow")))
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let connection = try await RPCReplay.connect(server, clock: clock) { $0.cancelTimeout = .milliseconds(300) }
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
        // connection is closed when the cancel bound passes, and the request refused.
        let next = Task { try await connection.execute("SELECT 1") }
        try await clock.waitForSleeper(until: .milliseconds(300))
        clock.advance(by: .milliseconds(300))
        do {
            _ = try await next.value
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
        let clock = ManualConnectionClock()
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(10))
        let login = Task { try await SQLConnection.connect(config, port: listener.port, over: stream, clock: clock) }
        try await clock.waitForSleeper(until: .milliseconds(300))   // the login timeout, not the 60 s connect timeout
        clock.advance(by: .milliseconds(300))
        do {
            _ = try await login.value
            XCTFail("the silent server must time the login out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("login"), error.message)
        }
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

    // MARK: - A server that pauses mid-result and acknowledges ATTENTION

    /// One whole client message ([MS-TDS] 2.2.3 packets to EOM, cut by the one packet framer):
    /// (type, payload); nil at end of stream or on a malformed packet.
    static func readMessage(_ fd: Int32, _ framer: inout PacketAssembler) -> (UInt8, [UInt8])? {
        while true {
            do {
                if let message = try framer.nextMessage() { return (message.type.rawValue, message.payload) }
            } catch {
                return nil
            }
            let bytes = LoopbackListener.readSome(fd)
            guard !bytes.isEmpty else { return nil }
            framer.append(bytes)
        }
    }

    static func packet(_ payload: [UInt8], type: UInt8 = 0x04, last: Bool) -> [UInt8] {
        let n = payload.count + 8
        return [type, last ? 1 : 0, UInt8(n >> 8), UInt8(n & 0xFF), 0, 0, 1, 0] + payload
    }

    /// Serves PRELOGIN and LOGIN7, then answers "SELECT slow" with COLMETADATA and a row in a
    /// packet without EOM and waits: an ATTENTION gets DONE(DONE_ATTN). Other batches get one row.
    static func pausingServer(_ fd: Int32) {
        var pausedOnce = false
        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        while let (type, _) = readMessage(fd, &framer) {
            switch type {
            case 0x12:
                let prelogin = Prelogin(version: .init(major: 16, minor: 0, build: 1), encryption: .notSupported,
                                        instanceOption: [0], mars: 0).encode()
                LoopbackListener.writeAll(fd, packet(prelogin, last: true))
            case 0x10:
                let login = ServerTokens.loginResponse(clientVersion: .v7_4, packetSize: 4096, utf8: false).flatMap(\.bytes)
                LoopbackListener.writeAll(fd, packet(login, last: true))
            case 0x01:
                // The first batch pauses; the next ones answer at once.
                if pausedOnce {
                    let body = RPCTokens.colMetadata(columns) + ((try? RPCTokens.row([.int(2)], columns)) ?? []) + RPCTokens.done([.count], count: 1)
                    LoopbackListener.writeAll(fd, packet(body, last: true))
                } else {
                    pausedOnce = true
                    let head = RPCTokens.colMetadata(columns) + ((try? RPCTokens.row([.int(1)], columns)) ?? [])
                    LoopbackListener.writeAll(fd, packet(head, last: false))
                }
            case 0x06:
                LoopbackListener.writeAll(fd, packet(RPCTokens.done([.attention]), last: true))
            default:
                return
            }
        }
    }

    /// A query timeout whose ATTENTION the server acknowledges: `.timeout`, and the same
    /// connection answers the next query.
    func testQueryTimeoutAcknowledgedLeavesTheConnectionReady() async throws {
        let listener = try LoopbackListener { fd in CancelReplayTests.pausingServer(fd) }
        defer { listener.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: listener.port), user: "u",
                                                password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
        config.queryTimeout = .milliseconds(300)
        config.cancelTimeout = .seconds(10)
        let clock = ManualConnectionClock()
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(10))
        let connection = try await SQLConnection.connect(config, port: listener.port, over: stream, clock: clock)
        defer { Task { await connection.close() } }
        let request = Task { try await connection.execute("SELECT slow") }
        try await clock.waitForSleeper(until: .milliseconds(300))
        clock.advance(by: .milliseconds(300))   // ATTENTION, which this server acknowledges
        do {
            _ = try await request.value
            XCTFail("the paused query must time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("did not finish"), error.message)
        }
        let open = await connection.isOpen
        XCTAssertTrue(open, "an acknowledged cancellation leaves the connection usable")
        let next = try await connection.execute("SELECT \(unsafeRaw: "n") FROM fast")
        XCTAssertEqual(next.rows.first?["n"]?.intValue, 2)
    }
}

extension ReplaySession {
    /// The same session with comments dropped and another name (to compare a fixture file with a built session).
    func withoutComments(name: String) -> ReplaySession {
        var copy = self
        copy.name = name
        copy.comment = nil
        copy.exchanges = exchanges.map { e in
            var e = e
            e.comment = nil
            e.response = [.init(bytes: e.responseBytes)]
            return e
        }
        return copy
    }
}
