#if SwiftLog
import InMemoryLogging
import Logging
import XCTest
@testable import SQLClient
import SQLClientTesting

/// The `SwiftLog` trait: a swift-log `Logger` (here swift-log's own `InMemoryLogHandler`)
/// receives the same events as ``SQLClientLogger``, at PostgresNIO's levels and metadata keys,
/// and never a password or a parameter value.
final class SwiftLogAdapterTests: XCTestCase {
    static let secretValue = "tok-9f8e7d6c-SECRET-VALUE"

    func text(_ entry: InMemoryLogHandler.Entry) -> String {
        "\(entry.message) " + entry.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    func testQueryFailingQueryAndLeaseGiveTheRecords() async throws {
        try Bridge.require()
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "sqlclient-test") { _ in handler }
        logger.logLevel = .trace
        // The user's SQLClientLogger opts into sensitive data: the events carry the parameter
        // value, which the swift-log records must still not show.
        let ownEvents = Collected<SQLLogEvent>()
        var configuration = Bridge.configuration()
        configuration.logger = SQLClientLogger(minimumLevel: .trace, includesSensitiveData: true) { ownEvents.append($0) }
        let pool = try SQLConnectionPool(configuration: configuration, options: nil, backgroundLogger: logger)
        XCTAssertNotNil(pool.configuration.backgroundLogger)

        let value = try await pool.execute("SELECT 42 AS answer").resultSets.first?.rows.first?["answer"]?.intValue
        XCTAssertEqual(value, 42)
        let secret = Self.secretValue
        let echoed = try await pool.execute("SELECT \(secret) AS v").resultSets.first?.rows.first?["v"]?.stringValue
        XCTAssertEqual(echoed, secret)
        do {
            _ = try await pool.execute("SELECT * FROM no_such_table_41")
            XCTFail("the failing query succeeded")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError, "\(error)")
        }
        await pool.close()

        let entries = handler.entries
        // Login: a connection-lifecycle record at debug, with the connection id and the server.
        let login = try XCTUnwrap(entries.first { $0.metadata["sqlclient.event"] == "login" })
        XCTAssertEqual(login.level, .debug)
        XCTAssertNotNil(login.metadata["sqlclient.connection.id"])
        XCTAssertEqual(login.metadata["server.address"], "127.0.0.1")
        XCTAssertNil(login.metadata["db.namespace"], "no database configured")
        // The query: started and finished at debug, with connection and request ids.
        let started = try XCTUnwrap(entries.first { $0.metadata["sqlclient.event"] == "requestStarted"
                && $0.metadata["sql.text"] == "SELECT 42 AS answer" })
        XCTAssertEqual(started.level, .debug)
        let connectionID = try XCTUnwrap(started.metadata["sqlclient.connection.id"])
        let requestID = try XCTUnwrap(started.metadata["sqlclient.request.id"])
        let finished = try XCTUnwrap(entries.first { $0.metadata["sqlclient.event"] == "requestFinished"
                && $0.metadata["sqlclient.connection.id"] == connectionID && $0.metadata["sqlclient.request.id"] == requestID })
        XCTAssertEqual(finished.level, .debug)
        XCTAssertEqual(finished.metadata["sql.rows"], "1")
        // The failing query: a debug record naming the error, not an error log.
        let failed = try XCTUnwrap(entries.first { $0.metadata["sqlclient.event"] == "requestFinished" && $0.metadata["error.code"] != nil })
        XCTAssertEqual(failed.level, .debug)
        XCTAssertEqual(failed.metadata["error.code"], "serverError")
        XCTAssertNotNil(failed.metadata["sql.error_number"].map { Int("\($0)") ?? nil } ?? nil, "the SQL error number")
        XCTAssertEqual(entries.filter { $0.level >= .warning }.map(text), [], "nothing here is a fault")
        // The lease: trace records, with the wait.
        let leased = entries.filter { $0.metadata["sql.pool.event"] == "leased" }
        XCTAssertEqual(leased.count, 3)
        XCTAssertTrue(leased.allSatisfy { $0.level == .trace && $0.metadata["sql.duration_ms"] != nil })
        XCTAssertEqual(entries.filter { $0.metadata["sql.pool.event"] == "released" }.count, 3)
        // Wire events at trace.
        let packets = entries.filter { $0.metadata["sqlclient.event"] == "packet" }
        XCTAssertFalse(packets.isEmpty)
        XCTAssertTrue(packets.allSatisfy { $0.level == .trace })
        // No secret: the password, the parameter value, a packet payload.
        for entry in entries {
            let t = text(entry)
            XCTAssertFalse(t.contains(Bridge.password), t)
            XCTAssertFalse(t.contains(secret), t)
            XCTAssertNil(entry.metadata["tds.payload"])
            XCTAssertNil(entry.metadata["sql.parameters"])
        }
        // One source: the user's logger saw the value (it opted in) and the same requests.
        XCTAssertTrue(ownEvents.all.contains { ($0.metadata[SQLLogEvent.Key.parameters] ?? "").contains(secret) })
        let own = ownEvents.all.filter { $0.kind == .requestFinished }.map { "\($0.metadata["sql.connection"] ?? "")/\($0.metadata["sql.request"] ?? "")" }
        let adapted = entries.filter { $0.metadata["sqlclient.event"] == "requestFinished" }
            .map { "\($0.metadata["sqlclient.connection.id"].map { "\($0)" } ?? "")/\($0.metadata["sqlclient.request.id"].map { "\($0)" } ?? "")" }
        XCTAssertEqual(own, adapted)
        XCTAssertEqual(own.count, 3)
    }

    func testInfoLevelLoggerGetsNoRequestRecords() async throws {
        try Bridge.require()
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "sqlclient-test") { _ in handler }
        logger.logLevel = .info
        var configuration = Bridge.configuration()
        configuration.backgroundLogger = logger
        let connection = try await SQLConnection.connect(configuration)
        _ = try await connection.execute("SELECT 1 AS one")
        await connection.close()
        XCTAssertEqual(handler.entries.map(text), [], "lifecycle and requests are debug, packets trace")
    }

    func testSessionRecoveryIsAWarningWithTheNamespace() async throws {
        let server = try RecoveringServer.start()
        defer { server.stop() }
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "sqlclient-test") { _ in handler }
        logger.logLevel = .debug
        var configuration = RecoveringServer.configuration(server)
        configuration.backgroundLogger = logger
        try await RecoveringServer.recoverOnce(configuration, server)

        let recovery = handler.entries.filter { $0.metadata["sqlclient.event"] == "recovery" }
        XCTAssertEqual(recovery.map(\.level), [.warning, .warning], recovery.map(text).joined(separator: "\n"))
        XCTAssertTrue(recovery.last.map { "\($0.message)".hasPrefix("session recovered") } ?? false)
        XCTAssertTrue(recovery.allSatisfy { $0.metadata["db.namespace"] == "shop" && $0.metadata["sqlclient.connection.id"] != nil })
        XCTAssertEqual(handler.entries.filter { $0.metadata["sqlclient.event"] == "login" }.count, 2,
                       "the first login and the recovery's LOGIN7 (SESSIONRECOVERY), both acknowledged")
        for entry in handler.entries { XCTAssertFalse(text(entry).contains(RecoveringServer.password), text(entry)) }
    }
}
#endif
