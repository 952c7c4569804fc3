import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// Idle connection resiliency end to end, against ``LoginScenarioServer`` with a
/// ``SessionRecoveryScenario``: a session changed (database, language, a SET option), the idle
/// connection dropped by the server (FIN, RST), the next query runs on a recovered session; the
/// recovery LOGIN7's SESSIONRECOVERY data decoded field by field; and each case that is never
/// recovered, as its typed error.
final class SessionRecoveryTests: XCTestCase {
    func config(_ port: UInt16, _ change: (inout SQLConnectionConfiguration) -> Void = { _ in }) -> SQLConnectionConfiguration {
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "app",
                                           password: "pw", database: "shop", encryption: .notSupported)
        c.connectTimeout = .seconds(20)
        c.applicationName = "recovery-tests"
        change(&c)
        return c
    }

    func server(_ scenario: SessionRecoveryScenario = .init(),
                login: @escaping @Sendable (LoginScenarioServer.LoginContext) -> LoginScenarioServer.LoginReply = { _ in .accept })
        throws -> LoginScenarioServer {
        var behaviour = LoginScenarioServer.Behaviour(login: login)
        behaviour.sessionRecovery = scenario
        return try LoginScenarioServer(name: "resilient", behaviour: behaviour)
    }

    /// The session as the server reports it: database, language, options.
    func serverSession(_ connection: SQLConnection) async throws -> [String?] {
        try await Self.serverSession(connection)
    }

    static func serverSession(_ connection: SQLConnection) async throws -> [String?] {
        let row = try await connection.execute("SELECT DB_NAME(), @@LANGUAGE, @@OPTIONS").resultSets.first?.rows.first
        return ["database", "language", "options"].map { row?[$0]?.stringValue }
    }

    func changeSession(_ connection: SQLConnection) async throws {
        _ = try await connection.execute("USE archive")
        _ = try await connection.execute("SET LANGUAGE Deutsch")
        _ = try await connection.execute("SET NOCOUNT ON")
    }

    func expectConnectionLost(_ reason: SQLSessionRecoveryError.Reason, file: StaticString = #filePath, line: UInt = #line,
                              _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("no error (expected connectionLost \(reason))", file: file, line: line)
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionLost, "\(error)", file: file, line: line)
            XCTAssertEqual(error.sessionRecoveryError?.reason, reason, "\(error)", file: file, line: line)
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    // MARK: - Recovered

    func testDroppedIdleConnectionIsRecoveredWithItsSession() async throws {
        for drop in [LoginScenarioServer.Drop.fin, .reset] {
            let server = try server()
            defer { server.stop() }
            let events = EventLog()
            let connection = try await SQLConnection.connect(config(server.port) {
                $0.logger = SQLClientLogger(minimumLevel: .info) { events.append($0) }
            })
            let first = try XCTUnwrap(server.records(atLeast: 1).first?.login)
            XCTAssertEqual(first.featureExt?.first { $0.id == Login7Feature.sessionRecoveryID }?.data, [],
                           "the first login asks for SESSIONRECOVERY without data")
            try await changeSession(connection)
            let before = try await serverSession(connection)
            XCTAssertEqual(before, ["archive", "Deutsch", "ANSI_NULLS=ON;NOCOUNT=ON;QUOTED_IDENTIFIER=ON"])

            XCTAssertEqual(server.dropConnections(drop), 1)
            let after = try await serverSession(connection)
            XCTAssertEqual(after, before, "\(drop): the recovered session equals the one before")
            let session = await connection.session
            XCTAssertEqual(session.database, "archive")
            XCTAssertEqual(session.language, "Deutsch")
            let recoveries = await connection.sessionRecoveries
            XCTAssertEqual(recoveries, 1)

            // The recovery LOGIN7, field by field.
            let records = server.records(atLeast: 2)
            XCTAssertEqual(records.count, 2)
            let login = try XCTUnwrap(records.last?.login)
            XCTAssertEqual(login.userName, "app")
            XCTAssertEqual(login.database, "shop", "LOGIN7 names the configured database; the recovery data the current one")
            let data = try XCTUnwrap(login.featureExt?.first { $0.id == Login7Feature.sessionRecoveryID }?.data)
            let feature = try XCTUnwrap(try SessionRecoveryFeature.decode(data))
            XCTAssertEqual(feature.initial.database, "shop")
            XCTAssertEqual(feature.initial.collation, ServerTokens.latin1GeneralCP1CIAS)
            XCTAssertEqual(feature.initial.language, "us_english")
            XCTAssertEqual(feature.initial.states, [SessionState.State(
                id: 0, value: Array("ANSI_NULLS=ON;NOCOUNT=OFF;QUOTED_IDENTIFIER=ON".utf8))])
            XCTAssertEqual(feature.toBe.database, "archive")
            XCTAssertEqual(feature.toBe.collation, [], "unchanged")
            XCTAssertEqual(feature.toBe.language, "Deutsch")
            XCTAssertEqual(feature.toBe.states, [SessionState.State(
                id: 0, value: Array("ANSI_NULLS=ON;NOCOUNT=ON;QUOTED_IDENTIFIER=ON".utf8))])
            XCTAssertEqual(records.last?.requests.count, 1, "the query went out once, on the recovered session")

            let recovered = events.events.filter { $0.kind == .recovery && $0.level == .info }
            XCTAssertEqual(recovered.count, 1, "\(events.events)")
            XCTAssertEqual(recovered.first?.metadata[SQLLogEvent.Key.recoveryAttempts], "1")
            XCTAssertNotNil(recovered.first?.metadata[SQLLogEvent.Key.durationMilliseconds])

            // A second drop is recovered too, from the same initial state.
            server.dropConnections(drop)
            let again = try await serverSession(connection)
            XCTAssertEqual(again, before)
            let third = try XCTUnwrap(server.records(atLeast: 3).last?.login?.featureExt?.first { $0.id == 1 }?.data)
            XCTAssertEqual(try SessionRecoveryFeature.decode(third)?.initial.database, "shop")
            await connection.close()
        }
    }

    /// The retry interval on the connection's injected clock: the first attempt is refused, the
    /// second starts only once the clock passes ConnectRetryInterval, and recovers the session.
    func testSecondAttemptWaitsForTheIntervalOnTheInjectedClock() async throws {
        let server = try server { $0.connectionIndex == 1 ? .fail(number: 4060, message: "Cannot open database") : .accept }
        defer { server.stop() }
        let clock = ManualConnectionClock()
        let events = EventLog()
        let configuration = config(server.port) {
            $0.connectRetry = SQLConnectRetryPolicy(count: 2, interval: .seconds(10))
            $0.logger = SQLClientLogger(minimumLevel: .info) { events.append($0) }
        }
        let socket = try await SocketStream.connect(host: "127.0.0.1", port: Int(server.port), timeout: .seconds(10))
        let connection = try await SQLConnection.connect(configuration, port: Int(server.port), over: socket, clock: clock)
        _ = try await connection.execute("USE archive")
        server.dropConnections(.fin)
        let query = Task { [connection] in try await SessionRecoveryTests.serverSession(connection) }
        try await clock.waitForSleeper(until: .seconds(10))
        XCTAssertEqual(server.records(atLeast: 2).count, 2, "the first attempt was made at once and refused")
        let waiting = await connection.isOpen
        XCTAssertTrue(waiting)
        let state = await connection.machine.state
        XCTAssertEqual(state, .recovering)
        clock.advance(by: .seconds(10))
        let after = try await query.value
        XCTAssertEqual(after.first, "archive")
        XCTAssertEqual(server.records(atLeast: 3).count, 3)
        let recovered = try XCTUnwrap(events.events.first { $0.kind == .recovery && $0.level == .info })
        XCTAssertEqual(recovered.metadata[SQLLogEvent.Key.recoveryAttempts], "2")
        XCTAssertEqual(recovered.metadata[SQLLogEvent.Key.durationMilliseconds], "10000.000")
        await connection.close()
    }

    /// TDS 8.0 (strict): the recovery runs the TLS handshake again; a close_notify before the FIN
    /// (TLS) or an RST both count as a loss while idle.
    func testStrictTLSConnectionIsRecovered() async throws {
        let certs: TestCertificates
        do { certs = try TestCertificates.make() } catch { throw XCTSkip("openssl is not available: \(error)") }
        for drop in [LoginScenarioServer.Drop.fin, .reset] {
            var behaviour = LoginScenarioServer.Behaviour(
                tlsFirst: .init(certificatePath: certs.serverCertificate, keyPath: certs.serverKey), encryption: .required)
            behaviour.sessionRecovery = SessionRecoveryScenario()
            let server = try LoginScenarioServer(name: "strict", behaviour: behaviour)
            defer { server.stop() }
            var configuration = config(server.port)
            configuration.address = SQLServerAddress(host: "localhost", port: Int(server.port))
            configuration.encryption = .strict
            configuration.tls = TLSConfiguration(caFile: certs.caCertificate)
            let connection = try await SQLConnection.connect(configuration)
            try await changeSession(connection)
            let before = try await serverSession(connection)
            server.dropConnections(drop)
            let after = try await serverSession(connection)
            XCTAssertEqual(after, before, "\(drop)")
            let records = server.records(atLeast: 2)
            XCTAssertEqual(records.last?.alpn, "tds/8.0")
            XCTAssertEqual(records.count, 2)
            await connection.close()
        }
    }

    func testAccessTokenIsRequestedAgainForTheRecoveryLogin() async throws {
        var behaviour = LoginScenarioServer.Behaviour(fedAuthRequired: 1)
        behaviour.sessionRecovery = SessionRecoveryScenario()
        let server = try LoginScenarioServer(name: "entra", behaviour: behaviour)
        defer { server.stop() }
        let calls = CallCounter()
        let connection = try await SQLConnection.connect(config(server.port) {
            $0.authentication = .accessTokenProvider { "token-\(calls.increment())" }
        })
        _ = try await connection.execute("USE archive")
        server.dropConnections(.fin)
        let after = try await serverSession(connection)
        XCTAssertEqual(after.first, "archive")
        XCTAssertEqual(calls.value, 2, "the provider is asked again for the recovery login")
        let logins = server.records(atLeast: 2).compactMap(\.login)
        let tokens = logins.compactMap { $0.featureExt?.first { $0.id == Login7Feature.fedAuthID } }
            .compactMap { try? FedAuth.decode($0.data).accessToken }
        XCTAssertEqual(tokens, ["token-1", "token-2"])
        await connection.close()
    }

    func testPooledConnectionDroppedWhileIdleIsReplacedAtLeaseNotRecovered() async throws {
        let server = try server()
        defer { server.stop() }
        let pool = try SQLConnectionPool(configuration: config(server.port), options: .init(maximumConnections: 1))
        try await pool.withConnection { _ = try await $0.execute("USE archive") }
        server.dropConnections(.reset)
        let database = try await pool.withConnection { try await self.serverSession($0).first }
        // The pool's check at lease (issue 44) finds the RST before anything is written: the
        // connection is discarded and a new one logged in; its session is the login's, as the
        // RESETCONNECTION the reused one would have carried makes it. No recovery login.
        XCTAssertEqual(database, "shop")
        XCTAssertEqual(pool.metrics.sessionRecoveries, 0)
        XCTAssertEqual(pool.metrics.discardedAtLease, 1)
        XCTAssertEqual(pool.metrics.created, 2, "the pooled connection was replaced, not recovered")
        let data = try XCTUnwrap(server.records(atLeast: 2).last?.login?.featureExt?.first { $0.id == 1 }?.data)
        XCTAssertEqual(data, [], "a first login (SESSIONRECOVERY asked for, no session to recover)")
        await pool.close()
    }

    func testRoutingIsFollowedByTheRecoveryLogin() async throws {
        let replica = try server()
        defer { replica.stop() }
        // The first login is accepted here; the recovery login is routed to the replica.
        let listener = try server { [port = replica.port] context in
            context.connectionIndex == 0 ? .accept : .route(server: "127.0.0.1", port: port)
        }
        defer { listener.stop() }
        let connection = try await SQLConnection.connect(config(listener.port))
        _ = try await connection.execute("USE archive")
        listener.dropConnections(.fin)
        let after = try await serverSession(connection)
        XCTAssertEqual(after.first, "archive")
        let data = try XCTUnwrap(replica.records(atLeast: 1).first?.login?.featureExt?.first { $0.id == 1 }?.data)
        XCTAssertEqual(try SessionRecoveryFeature.decode(data)?.toBe.database, "archive")
        XCTAssertEqual(listener.records.count, 2)
        await connection.close()
    }

    func testNTLMRunsAgainForTheRecoveryLogin() async throws {
        var behaviour = LoginScenarioServer.Behaviour()
        behaviour.ntlmChallenge = LoginScenarioServer.ntlmChallenge(serverChallenge: [1, 2, 3, 4, 5, 6, 7, 8],
                                                                    timestamp: 0x01D9_0000_0000_0000)
        behaviour.sessionRecovery = SessionRecoveryScenario()
        let server = try LoginScenarioServer(name: "windows", behaviour: behaviour)
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config(server.port) {
            $0.authentication = .ntlm(NTLMCredentials(domain: "CORP", user: "alice", password: "S3cret"))
        })
        _ = try await connection.execute("SET LANGUAGE Deutsch")
        server.dropConnections(.reset)
        let after = try await serverSession(connection)
        XCTAssertEqual(after[1], "Deutsch")
        let records = server.records(atLeast: 2)
        XCTAssertEqual(records.count, 2)
        for record in records {
            XCTAssertEqual(Array(record.login?.sspi.prefix(9) ?? []), Array("NTLMSSP\0".utf8) + [1], "NEGOTIATE in LOGIN7")
            XCTAssertEqual(Array(record.sspi?.prefix(9) ?? []), Array("NTLMSSP\0".utf8) + [3], "AUTHENTICATE in SSPI")
        }
        await connection.close()
    }

    // MARK: - Never recovered

    func testALossInTheMiddleOfARequestIsNotRecovered() async throws {
        let server = try server()
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config(server.port))
        do {
            _ = try await connection.execute("SHUTDOWN WITH NOWAIT")
            XCTFail("no error")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed, "the rules for a request in flight are unchanged: \(error)")
            XCTAssertNil(error.sessionRecoveryError)
        }
        let open = await connection.isOpen
        XCTAssertFalse(open)
        XCTAssertEqual(server.records.count, 1, "no recovery login")
    }

    func testInsideATransactionTheRequestFailsWithConnectionLost() async throws {
        let server = try server()
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config(server.port))
        _ = try await connection.execute("BEGIN TRANSACTION")
        server.dropConnections(.reset)
        await expectConnectionLost(.insideTransaction) { _ = try await self.serverSession(connection) }
        let open = await connection.isOpen
        XCTAssertFalse(open)
        XCTAssertEqual(server.records.count, 1, "no recovery login was attempted")
    }

    func testNotAcknowledgedAtLogin() async throws {
        let server = try server(SessionRecoveryScenario(acknowledgeAtLogin: false))
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config(server.port))
        _ = try await connection.execute("USE archive")
        server.dropConnections(.fin)
        await expectConnectionLost(.notAcknowledged) { _ = try await self.serverSession(connection) }
        XCTAssertEqual(server.records.count, 1)
    }

    func testNotAcknowledgedByTheRecoveryLogin() async throws {
        let server = try server(SessionRecoveryScenario(acknowledgeRecovery: false))
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config(server.port))
        server.dropConnections(.fin)
        await expectConnectionLost(.notAcknowledged) { _ = try await self.serverSession(connection) }
        XCTAssertEqual(server.records(atLeast: 2).count, 2, "the recovery login was made and refused")
    }

    func testUnrecoverableSessionState() async throws {
        let server = try server()
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config(server.port))
        _ = try await connection.execute("EXEC sp_mark_unrecoverable")
        server.dropConnections(.fin)
        await expectConnectionLost(.unrecoverableState) { _ = try await self.serverSession(connection) }
        XCTAssertEqual(server.records.count, 1)
    }

    func testRetryBudgetExhausted() async throws {
        // ConnectRetryCount=1: one attempt, at once (no interval is waited); the server refuses it.
        let server = try server { $0.connectionIndex == 0 ? .accept : .fail(number: 18456, message: "Login failed") }
        defer { server.stop() }
        let events = EventLog()
        let connection = try await SQLConnection.connect(config(server.port) {
            $0.connectRetry = SQLConnectRetryPolicy(count: 1, interval: .seconds(1))
            $0.logger = SQLClientLogger(minimumLevel: .warning) { events.append($0) }
        })
        server.dropConnections(.reset)
        do {
            _ = try await serverSession(connection)
            XCTFail("no error")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionLost)
            XCTAssertEqual(error.sessionRecoveryError?.reason, .retryBudgetExhausted)
            XCTAssertEqual(error.sessionRecoveryError?.attempts, 1)
            XCTAssertEqual(error.sessionRecoveryError?.lastAttemptError?.code, .loginFailed)
        }
        XCTAssertEqual(events.events.filter { $0.kind == .recovery && $0.level == .warning }.count, 1)
        XCTAssertEqual(events.events.filter { $0.kind == .recovery && $0.level == .error }.count, 1)
    }

    func testRecoveryOffWithConnectRetryCountZero() async throws {
        let server = try server()
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config(server.port) {
            $0.connectRetry = SQLConnectRetryPolicy(count: 0)
        })
        let login = try XCTUnwrap(server.records(atLeast: 1).first?.login)
        XCTAssertNil(login.featureExt?.first { $0.id == Login7Feature.sessionRecoveryID }, "not asked for")
        server.dropConnections(.fin)
        await expectConnectionLost(.disabled) { _ = try await self.serverSession(connection) }
    }
}

/// A counter shared with a `@Sendable` closure.
final class CallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() -> Int { lock.withLock { count += 1; return count } }
    var value: Int { lock.withLock { count } }
}
