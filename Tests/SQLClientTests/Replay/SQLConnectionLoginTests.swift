import Foundation
import XCTest
import TDS
import SQLClientTesting
@testable import SQLClient

/// Logins the way Azure SQL, SQL Server 2022 with strict encryption, an availability group and
/// an old server answer them, against ``LoginScenarioServer`` (built from [MS-TDS]): TDS 8.0
/// strict, routing, access tokens, NTLM's SSPI legs, retries, keep-alive, ApplicationIntent,
/// MultiSubnetFailover and a TDS 7.1 server refusing a 7.4 login.
final class SQLConnectionLoginTests: XCTestCase {
    func certificates() throws -> TestCertificates {
        do { return try TestCertificates.make() } catch { throw XCTSkip("openssl is not available: \(error)") }
    }

    func config(_ host: String = "127.0.0.1", _ port: UInt16, encryption: SQLEncryption = .notSupported,
                _ change: (inout SQLConnectionConfiguration) -> Void = { _ in }) -> SQLConnectionConfiguration {
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: host, port: Int(port)), user: "app",
                                           password: "pw", database: "shop", encryption: encryption)
        c.connectTimeout = .seconds(20)
        c.applicationName = "login-tests"
        change(&c)
        return c
    }

    /// The `server` column every SQL batch gets from the scenario server: its name.
    func serverName(_ connection: SQLConnection) async throws -> String? {
        try await connection.execute("SELECT @@SERVERNAME").resultSets.first?.rows.first?["server"]?.stringValue
    }

    func expectError(_ code: SQLClientError.Code, _ text: String? = nil, file: StaticString = #filePath, line: UInt = #line,
                     _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("no error (expected \(code))", file: file, line: line)
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
            if let text { XCTAssertTrue(error.message.contains(text), error.message, file: file, line: line) }
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    // MARK: - TDS 8.0 strict

    func testStrictRunsTLSFirstWithALPNAndVerifiesTheCertificate() async throws {
        let certs = try certificates()
        let server = try LoginScenarioServer(name: "strict", behaviour: .init(
            tlsFirst: .init(certificatePath: certs.serverCertificate, keyPath: certs.serverKey), encryption: .required))
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config("localhost", server.port, encryption: .strict) {
            $0.tls = TLSConfiguration(caFile: certs.caCertificate)
        })
        let session = await connection.session
        XCTAssertEqual(session.encryption, .strict)
        let name = try await serverName(connection)
        XCTAssertEqual(name, "strict")
        await connection.close()
        let record = try XCTUnwrap(server.records(atLeast: 1).first)
        XCTAssertEqual(record.alpn, "tds/8.0")
        XCTAssertEqual(record.serverNameIndication, "localhost")
        XCTAssertEqual(record.prelogin?.encryption, .notSupported, "strict sends ENCRYPT_NOT_SUP inside TLS")
        XCTAssertEqual(record.login?.userName, "app")

        // HostNameInCertificate is honoured (an IP connected to, the name checked and sent as SNI).
        let byAddress = try await SQLConnection.connect(config("127.0.0.1", server.port, encryption: .strict) {
            $0.tls = TLSConfiguration(caFile: certs.caCertificate, hostNameInCertificate: "localhost")
        })
        await byAddress.close()
        XCTAssertEqual(server.records(atLeast: 2).last?.serverNameIndication, "localhost")
        // trustServerCertificate does not apply: an unknown CA is refused.
        await expectError(.certificateVerificationFailed) {
            _ = try await SQLConnection.connect(self.config("localhost", server.port, encryption: .strict) {
                $0.tls = TLSConfiguration(trustServerCertificate: true)
            })
        }
        await expectError(.certificateVerificationFailed) {
            _ = try await SQLConnection.connect(self.config("localhost", server.port, encryption: .strict) {
                $0.tls = TLSConfiguration(caFile: certs.caCertificate, hostNameInCertificate: "db.example.org")
            })
        }
    }

    /// An empty `hostNameInCertificate` (API or connection string) is no name given: the host
    /// connected to is checked. A certificate naming only localhost, reached as 127.0.0.1, is
    /// refused with "" as with nil, and accepted when the name is given.
    func testEmptyHostNameInCertificateChecksTheHost() async throws {
        let certs = try certificates()
        let server = try LoginScenarioServer(name: "named", behaviour: .init(
            tlsFirst: .init(certificatePath: certs.localhostOnlyCertificate, keyPath: certs.localhostOnlyKey)))
        defer { server.stop() }
        for name in ["", nil] as [String?] {
            await expectError(.certificateVerificationFailed, "127.0.0.1") {
                _ = try await SQLConnection.connect(self.config("127.0.0.1", server.port, encryption: .strict) {
                    $0.tls = TLSConfiguration(caFile: certs.caCertificate, hostNameInCertificate: name)
                })
            }
        }
        let text = "Server=127.0.0.1,\(server.port);User ID=app;Password=pw;Encrypt=Strict;CA File=\(certs.caCertificate);"
            + "HostNameInCertificate="
        await expectError(.certificateVerificationFailed, "127.0.0.1") {
            _ = try await SQLConnection.connect(connectionString: text)
        }
        let connection = try await SQLConnection.connect(config("127.0.0.1", server.port, encryption: .strict) {
            $0.tls = TLSConfiguration(caFile: certs.caCertificate, hostNameInCertificate: "localhost")
        })
        let name = try await serverName(connection)
        XCTAssertEqual(name, "named")
        await connection.close()
    }

    func testEncryptStrictInAConnectionString() throws {
        let c = try SQLConnectionConfiguration(connectionString: "Server=h;Encrypt=Strict;TrustServerCertificate=true")
        XCTAssertEqual(c.encryption, .strict)
    }

    // MARK: - Routing

    func testRoutingIsFollowedOnceWithTheSameOptionsAndTheRoutedName() async throws {
        let replica = try LoginScenarioServer(name: "replica", behaviour: .init())
        defer { replica.stop() }
        let listener = try LoginScenarioServer(name: "listener", behaviour: .init(login: { [port = replica.port] _ in
            .route(server: #"localhost\AG1"#, port: port)
        }))
        defer { listener.stop() }
        let connection = try await SQLConnection.connect(config("127.0.0.1", listener.port))
        let session = await connection.session
        XCTAssertEqual(session.host, "localhost")
        XCTAssertEqual(session.port, Int(replica.port))
        XCTAssertEqual(session.redirectedFrom, "127.0.0.1:\(listener.port)")
        XCTAssertEqual(connection.port, Int(replica.port))
        let name = try await serverName(connection)
        XCTAssertEqual(name, "replica")
        await connection.close()
        let first = try XCTUnwrap(listener.records(atLeast: 1).first?.login)
        let second = try XCTUnwrap(replica.records(atLeast: 1).first?.login)
        XCTAssertEqual(first.serverName, "127.0.0.1")
        XCTAssertEqual(second.serverName, #"localhost\AG1"#, "LOGIN7 ServerName names the routed server")
        XCTAssertEqual(second.userName, first.userName)
        XCTAssertEqual(second.password.reveal(), "pw")
        XCTAssertEqual(second.database, first.database)
        XCTAssertEqual(second.appName, first.appName)
        XCTAssertEqual(listener.records.count, 1)
    }

    func testASecondRedirectIsRefused() async throws {
        let third = try LoginScenarioServer(name: "third", behaviour: .init())
        defer { third.stop() }
        let second = try LoginScenarioServer(name: "second", behaviour: .init(login: { [port = third.port] _ in
            .route(server: "127.0.0.1", port: port)
        }))
        defer { second.stop() }
        let first = try LoginScenarioServer(name: "first", behaviour: .init(login: { [port = second.port] _ in
            .route(server: "127.0.0.1", port: port)
        }))
        defer { first.stop() }
        await expectError(.protocolError, "only one redirection per login") {
            _ = try await SQLConnection.connect(self.config("127.0.0.1", first.port))
        }
        XCTAssertEqual(third.records.count, 0)
    }

    func testRoutingAfterLoginIsAProtocolError() async throws {
        var behaviour = LoginScenarioServer.Behaviour()
        behaviour.routeAfterLogin = ("elsewhere", 1433)
        let server = try LoginScenarioServer(behaviour: behaviour)
        defer { server.stop() }
        let connection = try await SQLConnection.connect(config("127.0.0.1", server.port))
        await expectError(.protocolError, "after the login") { _ = try await connection.execute("SELECT 1") }
        let open = await connection.isOpen
        XCTAssertFalse(open)
    }

    /// The routed server's certificate is checked against the routed host name: a certificate for
    /// "localhost" only is accepted when the ENVCHANGE says localhost, refused when it says 127.0.0.1.
    func testTheRoutedServersCertificateIsCheckedAgainstTheRoutedName() async throws {
        let certs = try certificates()
        let localhostOnly = LoginScenarioServer.Certificate(certificatePath: certs.localhostOnlyCertificate, keyPath: certs.localhostOnlyKey)
        let replica = try LoginScenarioServer(name: "replica", behaviour: .init(tlsFirst: localhostOnly))
        defer { replica.stop() }
        for (routedName, accepted) in [("localhost", true), ("127.0.0.1", false)] {
            let listener = try LoginScenarioServer(name: "listener", behaviour: .init(
                tlsFirst: .init(certificatePath: certs.serverCertificate, keyPath: certs.serverKey),
                login: { [port = replica.port] _ in .route(server: routedName, port: port) }))
            defer { listener.stop() }
            let c = config("127.0.0.1", listener.port, encryption: .strict) { $0.tls = TLSConfiguration(caFile: certs.caCertificate) }
            if accepted {
                let connection = try await SQLConnection.connect(c)
                let name = try await serverName(connection)
                XCTAssertEqual(name, "replica")
                await connection.close()
            } else {
                await expectError(.certificateVerificationFailed) { _ = try await SQLConnection.connect(c) }
            }
        }
    }

    // MARK: - Access tokens (FEDAUTH)

    func testAccessTokenTravelsInFedAuthWithTheServersEcho() async throws {
        let token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.payload.signature"
        for answer: UInt8? in [1, nil] {
            let server = try LoginScenarioServer(behaviour: .init(fedAuthRequired: answer))
            defer { server.stop() }
            let connection = try await SQLConnection.connect(config("127.0.0.1", server.port) { $0.authentication = .accessToken(token) })
            await connection.close()
            let record = try XCTUnwrap(server.records(atLeast: 1).first)
            XCTAssertEqual(record.prelogin?.fedAuthRequired, 1, "PRELOGIN FEDAUTHREQUIRED")
            let login = try XCTUnwrap(record.login)
            XCTAssertEqual(login.userName, "")
            XCTAssertEqual(login.password.reveal(), "")
            let feature = try XCTUnwrap(login.featureExt?.first { $0.id == Login7Feature.fedAuthID })
            let fed = try FedAuth.decode(feature.data)
            XCTAssertEqual(fed.library, .securityToken)
            XCTAssertEqual(fed.echo, answer == 1, "fFedAuthEcho follows the server's FEDAUTHREQUIRED")
            XCTAssertEqual(fed.accessToken, token)
            XCTAssertEqual(feature.data.count, 1 + 4 + token.utf16.count * 2)
            XCTAssertTrue(login.requestsUTF8Support)
        }
    }

    /// A LOGIN7 that would pass [MS-TDS] 2.2.6.4's 128K - 1 bytes (an access token of 70,000
    /// characters, 140,000 bytes in FEDAUTH): `.invalidConfiguration` naming the total, never
    /// the token, and no LOGIN7 sent.
    func testALoginOverTheLOGIN7TotalIsRefusedBeforeItIsSent() async throws {
        let server = try LoginScenarioServer(behaviour: .init(fedAuthRequired: 1))
        let token = String(repeating: "t", count: 70_000)
        do {
            _ = try await SQLConnection.connect(config("127.0.0.1", server.port) { $0.authentication = .accessToken(token) })
            XCTFail("a LOGIN7 over 128K - 1 bytes was sent")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .invalidConfiguration, "\(error)")
            XCTAssertTrue(error.message.contains("131071"), error.message)
            XCTAssertFalse(error.message.contains("tttt"), "the token is never shown")
        }
        server.stop()
        XCTAssertEqual(server.records.count, 1)
        XCTAssertNil(server.records.first?.login, "no LOGIN7 went out")
    }

    func testATokenProviderIsAskedAtEveryConnect() async throws {
        let server = try LoginScenarioServer(behaviour: .init(fedAuthRequired: 1))
        defer { server.stop() }
        let counter = TokenCounter()
        let c = config("127.0.0.1", server.port) { $0.authentication = .accessTokenProvider { "token-\(await counter.next())" } }
        for _ in 0 ..< 2 { await (try await SQLConnection.connect(c)).close() }
        let tokens = try server.records(atLeast: 2).map { record -> String? in
            try FedAuth.decode(record.login?.featureExt?.first { $0.id == Login7Feature.fedAuthID }?.data ?? []).accessToken
        }
        XCTAssertEqual(tokens, ["token-1", "token-2"])
    }

    func testFeatureExtAckIsChecked() async throws {
        var silent = LoginScenarioServer.Behaviour(fedAuthRequired: 1)
        silent.omitFedAuthAcknowledgement = true
        let noAck = try LoginScenarioServer(behaviour: silent)
        defer { noAck.stop() }
        await expectError(.protocolError, "did not acknowledge FEDAUTH") {
            _ = try await SQLConnection.connect(self.config("127.0.0.1", noAck.port) { $0.authentication = .accessToken("t") })
        }
        var extra = LoginScenarioServer.Behaviour()
        extra.extraAcknowledgements = [.init(id: .columnEncryption, data: [1])]
        let unrequested = try LoginScenarioServer(behaviour: extra)
        defer { unrequested.stop() }
        await expectError(.protocolError, "did not request") {
            _ = try await SQLConnection.connect(self.config("127.0.0.1", unrequested.port))
        }
    }

    // MARK: - NTLM's SSPI legs and login failures

    func testNTLMExchangeAndA18456Refusal() async throws {
        let challenge = LoginScenarioServer.ntlmChallenge(serverChallenge: [1, 2, 3, 4, 5, 6, 7, 8], timestamp: 0x01D9_0000_0000_0000)
        for refuse in [false, true] {
            var behaviour = LoginScenarioServer.Behaviour(login: { context in
                refuse ? .fail(number: 18456, message: "Login failed for user 'CORP\\alice'.") : .accept
            })
            behaviour.ntlmChallenge = challenge
            let server = try LoginScenarioServer(behaviour: behaviour)
            defer { server.stop() }
            let c = config("127.0.0.1", server.port) {
                $0.authentication = .ntlm(NTLMCredentials(domain: "CORP", user: "alice", password: "S3cret"))
            }
            if refuse {
                do {
                    _ = try await SQLConnection.connect(c)
                    XCTFail("a refused NTLM login succeeded")
                } catch let error as SQLClientError {
                    XCTAssertEqual(error.code, .loginFailed)
                    XCTAssertEqual(error.serverMessage?.number, 18456)
                }
            } else {
                await (try await SQLConnection.connect(c)).close()
            }
            let record = try XCTUnwrap(server.records(atLeast: 1).first)
            XCTAssertTrue(record.login?.optionFlags2.contains(.integratedSecurity) ?? false)
            XCTAssertEqual(record.login?.userName, "")
            XCTAssertEqual(Array(record.login?.sspi.prefix(9) ?? []), Array("NTLMSSP\0".utf8) + [1])
            let answer = try XCTUnwrap(record.sspi, "the SSPI message (packet type 0x11)")
            XCTAssertEqual(Array(answer.prefix(9)), Array("NTLMSSP\0".utf8) + [3])
        }
    }

    /// SQL Server 2000 answers a 7.2+ LOGIN7 it refuses with ERROR and a 9-byte (7.1) DONE.
    func testA71ServerRefusingAnyVersionIsLoginFailed() async throws {
        let server = try LoginScenarioServer(behaviour: .init(login: { _ in
            .fail(number: 18456, message: "Login failed for user 'app'.", version: .v7_1)
        }))
        defer { server.stop() }
        for version in [TDSVersion.v7_1, .v7_2, .v7_3B, .v7_4] {
            do {
                _ = try await SQLConnection.connect(config("127.0.0.1", server.port) { $0.tdsVersion = version })
                XCTFail("\(version): the login succeeded")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .loginFailed, "\(version): \(error)")
                XCTAssertEqual(error.serverMessage?.number, 18456, "\(version)")
            }
        }
    }

    // MARK: - Retry

    func testTransientErrorsAreRetriedAndOthersAreNot() async throws {
        let flaky = try LoginScenarioServer(name: "flaky", behaviour: .init(login: { context in
            context.connectionIndex < 2 ? .fail(number: 40613, message: "Database 'shop' on server 'x' is not currently available.",
                                                severity: 20)
                : .accept
        }))
        defer { flaky.stop() }
        let connection = try await SQLConnection.connect(config("127.0.0.1", flaky.port) {
            $0.connectRetry = SQLConnectRetryPolicy(count: 2, interval: .seconds(1))
        })
        let name = try await serverName(connection)
        XCTAssertEqual(name, "flaky")
        await connection.close()
        XCTAssertEqual(flaky.records.count, 3)

        let refusing = try LoginScenarioServer(behaviour: .init(login: { _ in .fail(number: 18456, message: "Login failed.") }))
        defer { refusing.stop() }
        await expectError(.loginFailed) {
            _ = try await SQLConnection.connect(self.config("127.0.0.1", refusing.port) {
                $0.connectRetry = SQLConnectRetryPolicy(count: 2, interval: .seconds(1))
            })
        }
        XCTAssertEqual(refusing.records.count, 1, "18456 is not retried")
        // Not enough budget left for the interval: no retry.
        let again = try LoginScenarioServer(behaviour: .init(login: { _ in .fail(number: 40613, message: "busy", severity: 20) }))
        defer { again.stop() }
        await expectError(.loginFailed) {
            _ = try await SQLConnection.connect(self.config("127.0.0.1", again.port) {
                $0.connectRetry = SQLConnectRetryPolicy(count: 5, interval: .seconds(30))
            })
        }
        XCTAssertEqual(again.records.count, 1)
    }

    // MARK: - Keep-alive, ApplicationIntent, MultiSubnetFailover

    func testKeepAliveIsSetOnTheSocket() async throws {
        let server = try LoginScenarioServer(behaviour: .init())
        defer { server.stop() }
        for (keepAlive, expected) in [(SQLKeepAlive.default, (true, Int32(30), Int32(1))),
                                      (SQLKeepAlive(idle: .seconds(45), interval: .seconds(3)), (true, 45, 3))] {
            let connection = try await SQLConnection.connect(config("127.0.0.1", server.port) { $0.keepAlive = keepAlive })
            let socket = await connection.socket
            let settings = try XCTUnwrap((socket as? SocketStream)?.keepAliveSettings)
            XCTAssertEqual(settings.enabled, expected.0)
            XCTAssertEqual(settings.idleSeconds, expected.1)
            XCTAssertEqual(settings.intervalSeconds, expected.2)
            await connection.close()
        }
        let off = try await SQLConnection.connect(config("127.0.0.1", server.port) { $0.keepAlive = nil })
        let offSocket = await off.socket
        XCTAssertEqual((offSocket as? SocketStream)?.keepAliveSettings?.enabled, false)
        await off.close()
    }

    func testApplicationIntentAndMultiSubnetFailover() async throws {
        let server = try LoginScenarioServer(behaviour: .init())
        defer { server.stop() }
        let readOnly = try await SQLConnection.connect(config("localhost", server.port) {
            $0.applicationIntent = .readOnly
            $0.multiSubnetFailover = true
        })
        await readOnly.close()
        let readWrite = try await SQLConnection.connect(config("127.0.0.1", server.port))
        await readWrite.close()
        let logins = server.records(atLeast: 2).map(\.login)
        XCTAssertEqual(logins.first??.typeFlags.contains(.readOnlyIntent), true)
        XCTAssertEqual(logins.last??.typeFlags.contains(.readOnlyIntent), false)
    }
}

private actor TokenCounter {
    var value = 0
    func next() -> Int { value += 1; return value }
}
