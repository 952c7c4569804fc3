import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// A clock tests move by hand; `sleep` moves it and records the wait.
final class ManualEntraClock: EntraClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    private var _sleeps: [Duration] = []
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }
    func now() -> Date { lock.withLock { current } }
    func sleep(for duration: Duration) async throws {
        lock.withLock {
            _sleeps.append(duration)
            current = current.addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
    }
    func advance(_ seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }
    var sleeps: [Duration] { lock.withLock { _sleeps } }
}

/// A transport that records what it is asked and never opens a socket (fails every request).
final class RecordingTransport: EntraHTTPTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var _requests: [String] = []
    var requests: [String] { lock.withLock { _requests } }
    func send(_ request: EntraHTTPRequest, timeout: Duration, maximumBodySize: Int) async throws -> EntraHTTPResponse {
        lock.withLock { _requests.append(request.url.absoluteString) }
        throw EntraHTTPTransportError.failed("the recording transport sends nothing")
    }
}

/// A local Entra ID and a TDS server that sends FEDAUTHINFO naming it and accepts a login only with
/// a token for Azure SQL's resource naming the expected identity.
final class EntraScenario: @unchecked Sendable {
    static let resource = "https://database.windows.net/"
    let entra: LocalEntraServer
    let tds: LoginScenarioServer
    private let lock = NSLock()
    private var _expected: String

    init(expectedIdentity: String, stsURL: String? = nil) throws {
        let e = try LocalEntraServer()
        entra = e
        let box = Box()
        _expected = expectedIdentity
        tds = try LoginScenarioServer(name: "azure", behaviour: {
            var b = LoginScenarioServer.Behaviour(fedAuthRequired: 1) { context in
                guard let token = context.fedAuthToken, let claims = FakeEntraToken.claims(token) else {
                    return .fail(number: 18456, message: "Login failed: no token")
                }
                guard claims["aud"] as? String == EntraScenario.resource else {
                    return .fail(number: 18456, message: "Login failed: wrong audience \(claims["aud"] ?? "")")
                }
                guard claims["appid"] as? String == box.scenario?.expectedIdentity else {
                    return .fail(number: 18456, message: "Login failed for identity \(claims["appid"] ?? "")")
                }
                return .accept
            }
            b.fedAuthInfo = (stsURL ?? e.stsURL, EntraScenario.resource)
            return b
        }())
        box.scenario = self
    }

    var expectedIdentity: String {
        get { lock.withLock { _expected } }
        set { lock.withLock { _expected = newValue } }
    }

    final class Box: @unchecked Sendable { weak var scenario: EntraScenario? }

    func stop() {
        tds.stop()
        entra.stop()
    }

    /// A configuration for the TDS server with `authentication`.
    func configuration(_ authentication: SQLAuthentication, loginTimeout: Duration = .seconds(10)) -> SQLConnectionConfiguration {
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(tds.port)), user: "", password: "",
                                           encryption: .notSupported)
        c.authentication = authentication
        c.connectTimeout = max(.seconds(20), loginTimeout)
        c.loginTimeout = loginTimeout
        return c
    }

    /// The environment every credential gets: the authority host is the local Entra ID.
    func environment(_ extra: [String: String] = [:]) -> EntraEnvironment {
        var v = ["AZURE_AUTHORITY_HOST": entra.authorityHost, "PATH": "/nonexistent-sqlclient-test"]
        for (k, value) in extra { v[k] = value }
        return EntraEnvironment(variables: v)
    }

    /// Connects, runs a batch, closes; returns the token the TDS server received.
    @discardableResult
    func logIn(_ authentication: SQLAuthentication, loginTimeout: Duration = .seconds(10),
               file: StaticString = #filePath, line: UInt = #line) async throws -> [String: Any] {
        let before = tds.records.count
        let connection = try await SQLConnection.connect(configuration(authentication, loginTimeout: loginTimeout))
        _ = try await connection.execute("SELECT 1")
        await connection.close()
        let record = tds.records[before...].last { $0.fedAuthToken != nil }
        XCTAssertEqual(record?.fedAuth?.library, .adal, file: file, line: line)
        XCTAssertEqual(record?.fedAuth?.echo, true, file: file, line: line)
        XCTAssertEqual(record?.login?.userName, "", file: file, line: line)
        return FakeEntraToken.claims(record?.fedAuthToken ?? "") ?? [:]
    }

    static func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "sqlclient-entra-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}
