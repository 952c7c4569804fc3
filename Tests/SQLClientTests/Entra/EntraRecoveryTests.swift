import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// Tokens asked again when an idle connection is logged in again (session recovery), and a
/// developer CLI that never answers.
final class EntraRecoveryTests: XCTestCase {
    func testTheRecoveryLoginAsksForATokenAgain() async throws {
        var behaviour = LoginScenarioServer.Behaviour(fedAuthRequired: 1)
        behaviour.sessionRecovery = SessionRecoveryScenario()
        behaviour.fedAuthInfo = ("https://login.microsoftonline.com/t1", "https://database.windows.net/")
        let server = try LoginScenarioServer(name: "entra", behaviour: behaviour)
        defer { server.stop() }
        let calls = Prompts()
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "",
                                                password: "", database: "shop", encryption: .notSupported)
        config.connectTimeout = .seconds(20)
        config.authentication = .accessTokenCallback { request in
            calls.add(request.resource)
            return "token-\(calls.all.count)"
        }
        let connection = try await SQLConnection.connect(config)
        _ = try await connection.execute("USE archive")
        server.dropConnections(.fin)
        _ = try await connection.execute("SELECT 1")
        let recoveries = await connection.sessionRecoveries
        XCTAssertEqual(recoveries, 1)
        XCTAssertEqual(calls.all, ["https://database.windows.net/", "https://database.windows.net/"])
        XCTAssertEqual(server.records(atLeast: 2).compactMap(\.fedAuthToken), ["token-1", "token-2"])
        await connection.close()
    }

    func testACLIThatNeverAnswersIsKilledAtTheLoginTimeout() async throws {
        let s = try EntraScenario(expectedIdentity: "x")
        defer { s.stop() }
        let dir = try EntraScenario.temporaryDirectory()
        try "#!/bin/sh\nexec /bin/sleep 30\n".write(toFile: dir + "/az", atomically: true, encoding: .utf8)
        chmod(dir + "/az", 0o755)
        let started = Date()
        do {
            _ = try await SQLConnection.connect(s.configuration(.entra(DeveloperCLICredential(.azureCLI, environment: s.environment(["PATH": dir])),
                                                                        cache: EntraTokenCache()), loginTimeout: .seconds(1)))
            XCTFail("a CLI that never answers gave a token")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }
}

/// Nothing secret reaches the log, even at trace level with sensitive data allowed.
final class EntraLoggingTests: XCTestCase {
    func testNeitherTheSecretNorTheTokenIsLogged() async throws {
        let s = try EntraScenario(expectedIdentity: "log-app")
        defer { s.stop() }
        s.entra.register(clientID: "log-app", secret: "log-secret-913")
        let events = EventLog()
        var config = s.configuration(.entra(ClientSecretCredential(clientID: "log-app", secret: "log-secret-913", environment: s.environment()),
                                            cache: EntraTokenCache()))
        config.logger = SQLClientLogger(minimumLevel: .trace, includesSensitiveData: true) { events.append($0) }
        let connection = try await SQLConnection.connect(config)
        _ = try await connection.execute("SELECT 1")
        await connection.close()
        let token = try XCTUnwrap(s.tds.records.last?.fedAuthToken)
        let text = events.events.map { "\($0)" }.joined(separator: "\n") + "\(config)"
        XCTAssertFalse(events.events.isEmpty)
        XCTAssertFalse(text.contains("log-secret-913"))
        XCTAssertFalse(text.contains(token))
        XCTAssertFalse(text.contains(String(token.prefix(20))))
    }
}
