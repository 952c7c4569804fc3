import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// The logging hook: levels filter before any text is built, and nothing sensitive appears
/// unless the logger opted in.
final class SQLClientLoggerTests: XCTestCase {
    final class Sink: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [SQLLogEvent] = []
        func add(_ e: SQLLogEvent) { lock.withLock { stored.append(e) } }
        var events: [SQLLogEvent] { lock.withLock { stored } }
    }

    func testLevelsBelowTheMinimumAreNeverBuilt() {
        let sink = Sink()
        let logger = SQLClientLogger(minimumLevel: .notice) { sink.add($0) }
        var built = false
        logger.log(.debug, .requestStarted, { built = true; return "x" }())
        XCTAssertFalse(built)
        logger.attention(3, reason: "timeout", connection: 1)
        XCTAssertEqual(sink.events.map(\.kind), [.attention])
        XCTAssertEqual(sink.events.first?.level, .notice)
        XCTAssertEqual(sink.events.first?.metadata[SQLLogEvent.Key.request], "3")
    }

    func testLevelNamesAreSwiftLogsAndOrdered() {
        XCTAssertEqual(SQLLogLevel.allCases.map(\.rawValue), ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        XCTAssertLessThan(SQLLogLevel.trace, .debug)
        XCTAssertLessThan(SQLLogLevel.error, .critical)
    }

    func testParameterValuesOnlyWhenOptedIn() {
        for sensitive in [false, true] {
            let sink = Sink()
            let logger = SQLClientLogger(minimumLevel: .trace, includesSensitiveData: sensitive) { sink.add($0) }
            logger.requestStarted(1, kind: "rpc", text: "SELECT @P1", parameters: ["@P1 nvarchar(4000) = s3cret"], connection: 1)
            let e = sink.events[0]
            XCTAssertEqual(e.metadata[SQLLogEvent.Key.sql], "SELECT @P1")
            XCTAssertEqual(e.metadata[SQLLogEvent.Key.parameterCount], "1")
            XCTAssertEqual(e.description.contains("s3cret"), sensitive, e.description)
        }
    }

    func testPacketsGiveHeadersAndNeverALogin7Payload() {
        let sink = Sink()
        let logger = SQLClientLogger(minimumLevel: .trace, includesSensitiveData: true) { sink.add($0) }
        let batch = Packet.encode(message: [0xAB, 0x01], type: .sqlBatch, packetSize: 4096)
        let login = Packet.encode(message: [0x51, 0x52], type: .login7, packetSize: 4096)
        logger.packet(batch[...], sent: true, connection: 2)
        logger.packet(login[...], sent: true, connection: 2)
        logger.packet([0x04], sent: false, connection: 2)   // shorter than a header: ignored, no trap
        XCTAssertEqual(sink.events.count, 2)
        XCTAssertEqual(sink.events[0].metadata[SQLLogEvent.Key.packetType], "SQL_BATCH")
        XCTAssertEqual(sink.events[0].metadata[SQLLogEvent.Key.packetLength], "10")
        XCTAssertEqual(sink.events[0].metadata[SQLLogEvent.Key.payload], "AB01")
        XCTAssertNil(sink.events[1].metadata[SQLLogEvent.Key.payload], "LOGIN7 carries the password")
    }

    func testRequestFinishedLevelsDurationAndLogin() {
        let sink = Sink()
        let logger = SQLClientLogger(minimumLevel: .debug) { sink.add($0) }
        logger.requestFinished(1, duration: .milliseconds(12) + .microseconds(345), rows: 7, error: nil, connection: 1)
        let m = SQLServerMessage(number: 208, state: 1, severity: 16, message: "Invalid object name 'x'.", isError: true)
        logger.requestFinished(2, duration: .zero, rows: 0, error: SQLClientError(.serverError, m.message, serverMessage: m), connection: 1)
        var session = SQLSessionInfo()
        session.tdsVersion = .v7_4
        session.packetSize = 8000
        logger.loggedIn(session, connection: 1)
        let events = sink.events
        XCTAssertEqual(events.map(\.level), [.debug, .warning, .info])
        XCTAssertEqual(events[0].metadata[SQLLogEvent.Key.durationMilliseconds], "12.345")
        XCTAssertEqual(events[0].metadata[SQLLogEvent.Key.rows], "7")
        XCTAssertTrue(events[1].metadata[SQLLogEvent.Key.error]?.contains("Msg 208") ?? false)
        XCTAssertEqual(events[2].metadata[SQLLogEvent.Key.packetSize], "8000")
        XCTAssertEqual(events[2].metadata[SQLLogEvent.Key.tdsVersion], "\(TDSVersion.v7_4)")
    }

    func testConfigurationCarriesTheLoggerAndNeverPrintsIt() throws {
        var config = try SQLConnectionConfiguration(connectionString: "Server=h;User ID=u;Password=pw")
        XCTAssertNil(config.logger)
        config.logger = SQLClientLogger { _ in }
        XCTAssertNotNil(config.logger)
        XCTAssertFalse(config.description.contains("pw"))
    }

    /// On a connection: connect, login (negotiated version and packet size), each request's
    /// start and end (rows, duration), packets at trace level, close; a parameter value never.
    func testAConnectionReportsItsEventsWithoutParameterValues() async throws {
        let columns = [ColumnMetadata(typeInfo: .int, name: "n")]
        let session = ReplaySession(name: "logged", exchanges: [
            RPCTokens.batch("SELECT 1 AS n", [RPCTokens.colMetadata(columns), try RPCTokens.row([.int(1)], columns),
                                              try RPCTokens.row([.int(2)], columns), RPCTokens.done([.count], count: 2)]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let sink = Sink()
        let connection = try await RPCReplay.connect(server) {
            $0.logger = SQLClientLogger(minimumLevel: .trace) { sink.add($0) }
            $0.password = RedactedPassword("pw-d1stinct-value")
        }
        _ = try await connection.execute("SELECT 1 AS n")
        let secret = "s3cret-parameter-value"
        _ = try await connection.execute("SELECT \(secret) AS n")
        await connection.close()
        let events = sink.events
        let kinds = events.map(\.kind)
        XCTAssertEqual(kinds.filter { $0 != .packet }, [.connect, .login, .requestStarted, .requestFinished,
                                                        .requestStarted, .requestFinished, .close], "\(events)")
        let login = try XCTUnwrap(events.first { $0.kind == .login })
        XCTAssertEqual(login.metadata[SQLLogEvent.Key.tdsVersion], "\(TDSVersion.v7_4)")
        XCTAssertNotNil(login.metadata[SQLLogEvent.Key.packetSize])
        let finished = events.filter { $0.kind == .requestFinished }
        XCTAssertEqual(finished.first?.metadata[SQLLogEvent.Key.rows], "2")
        XCTAssertNotNil(finished.first?.metadata[SQLLogEvent.Key.durationMilliseconds])
        let started = events.filter { $0.kind == .requestStarted }
        XCTAssertEqual(started.map { $0.metadata[SQLLogEvent.Key.sql] }, ["SELECT 1 AS n", "SELECT @P1 AS n"])
        XCTAssertEqual(started.last?.metadata[SQLLogEvent.Key.parameterCount], "1")
        let packets = events.filter { $0.kind == .packet }
        XCTAssertTrue(packets.contains { $0.metadata[SQLLogEvent.Key.packetType] == "SQL_BATCH" })
        XCTAssertTrue(packets.contains { $0.metadata[SQLLogEvent.Key.packetType] == "RPC" })
        XCTAssertTrue(packets.contains { $0.metadata[SQLLogEvent.Key.direction] == "received" })
        XCTAssertFalse(events.contains { $0.description.contains(secret) || $0.description.contains("pw-d1stinct-value") },
                       "no parameter value, no password")
    }
}
