import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// The token cache shared by every connection, the default chain's choice, and hostile endpoints.
final class EntraTokenSharingTests: XCTestCase {
    func testHundredLoginsOverEightConnectionsCostOneTokenRequest() async throws {
        let s = try EntraScenario(expectedIdentity: "pool-app")
        defer { s.stop() }
        s.entra.register(clientID: "pool-app", secret: "pool-secret")
        let cache = EntraTokenCache()
        let auth = SQLAuthentication.entra(ClientSecretCredential(clientID: "pool-app", secret: "pool-secret", environment: s.environment()),
                                           cache: cache)
        let config = s.configuration(auth)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0 ..< 8 {
                group.addTask {
                    for _ in stride(from: lane, to: 100, by: 8) {
                        let c = try await SQLConnection.connect(config)
                        _ = try await c.execute("SELECT 1")
                        await c.close()
                    }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(s.tds.records.filter { $0.fedAuthToken != nil }.count, 100)
        XCTAssertEqual(s.entra.tokenRequests, 1)
        let asked = await cache.requests
        XCTAssertEqual(asked, 1)

        // A pool of 8 connections serving 100 requests: the same single token.
        let pool = try SQLConnectionPool(configuration: config, maximumConnections: 8)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0 ..< 100 { group.addTask { _ = try await pool.execute("SELECT 1") } }
            try await group.waitForAll()
        }
        await pool.close()
        XCTAssertEqual(s.entra.tokenRequests, 1)
    }

    func testATokenAboutToExpireIsRefreshedOnceBeforeItDoes() async throws {
        let s = try EntraScenario(expectedIdentity: "refresh-app")
        defer { s.stop() }
        let clock = ManualEntraClock()
        s.entra.now = { clock.now() }
        s.entra.lifetime = 600
        s.entra.register(clientID: "refresh-app", secret: "refresh-secret")
        let cache = EntraTokenCache(clock: clock)
        let auth = SQLAuthentication.entra(ClientSecretCredential(clientID: "refresh-app", secret: "refresh-secret",
                                                                  environment: s.environment(), http: EntraHTTPClient(clock: clock)),
                                           cache: cache)
        let start = clock.now()
        let first = try await s.logIn(auth)
        XCTAssertEqual(first["serial"] as? Int, 1)
        clock.advance(299)   // 5 minutes and 1 second before expiry: still fresh
        let still = try await s.logIn(auth)
        XCTAssertEqual(still["serial"] as? Int, 1)
        XCTAssertEqual(s.entra.tokenRequests, 1)

        clock.advance(2)     // inside the last 5 minutes: refreshed, once, by 8 logins at once
        try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0 ..< 8 { group.addTask { try await s.logIn(auth)["serial"] as? Int } }
            for try await serial in group { XCTAssertEqual(serial, 2) }
        }
        XCTAssertEqual(s.entra.tokenRequests, 2)
        XCTAssertLessThan(clock.now(), start.addingTimeInterval(600), "refreshed before the old token expired")
        clock.advance(1)
        let after = try await s.logIn(auth)
        XCTAssertEqual(after["serial"] as? Int, 2)
        XCTAssertEqual(s.entra.tokenRequests, 2)
        let exp = try XCTUnwrap(after["exp"] as? Int)
        XCTAssertEqual(TimeInterval(exp), start.addingTimeInterval(301 + 600).timeIntervalSince1970, accuracy: 1)
    }

    func testExpiryFormsTheEndpointsSend() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func expiry(_ json: String) throws -> Date {
            try EntraHTTPClient.parseToken(Array(json.utf8), credential: "t", endpoint: "e", request: nil, now: now).expiresOn
        }
        XCTAssertEqual(try expiry(#"{"access_token":"a","expires_in":3599}"#), now.addingTimeInterval(3599))
        XCTAssertEqual(try expiry(#"{"access_token":"a","expires_in":"3599"}"#), now.addingTimeInterval(3599))
        XCTAssertEqual(try expiry(#"{"access_token":"a","expires_on":"1800003600"}"#), Date(timeIntervalSince1970: 1_800_003_600))
        XCTAssertEqual(try expiry(#"{"access_token":"a","expires_on":1800003600}"#), Date(timeIntervalSince1970: 1_800_003_600))
        XCTAssertEqual(try expiry(#"{"access_token":"a","expires_on":"01/15/2027 08:00:00 PM +00:00"}"#),
                       ISO8601DateFormatter().date(from: "2027-01-15T20:00:00Z"))
        XCTAssertEqual(try expiry(#"{"token":"a","expiresOn":"2027-01-15T20:00:00Z"}"#), ISO8601DateFormatter().date(from: "2027-01-15T20:00:00Z"))
        XCTAssertThrowsError(try expiry(#"{"access_token":"a"}"#)) {
            XCTAssertEqual(($0 as? EntraCredentialError)?.kind, .malformedResponse)
        }
    }

    func testDefaultChainChoosesEachStepInTurn() async throws {
        let s = try EntraScenario(expectedIdentity: "")
        defer { s.stop() }
        let dir = try EntraScenario.temporaryDirectory()
        let empty = try EntraScenario.temporaryDirectory()
        let azOnly = try EntraScenario.temporaryDirectory(), azdOnly = try EntraScenario.temporaryDirectory()
        try LocalEntraServer.writeFakeCLI("az", in: azOnly, identity: "cli-user")
        try LocalEntraServer.writeFakeCLI("az", in: azdOnly, identity: "nobody", loggedIn: false)
        try LocalEntraServer.writeFakeCLI("azd", in: azdOnly, identity: "azd-user")
        try "wi-assertion".write(toFile: dir + "/federated", atomically: true, encoding: .utf8)
        s.entra.register(clientID: "env-app", secret: "env-secret")
        s.entra.register(clientID: "wi-app", assertion: "wi-assertion")
        let tenant = s.entra.tenant
        let cases: [(String, [String: String], String)] = [
            ("EnvironmentCredential", ["AZURE_TENANT_ID": tenant, "AZURE_CLIENT_ID": "env-app", "AZURE_CLIENT_SECRET": "env-secret", "PATH": azOnly], "env-app"),
            ("ActiveDirectoryWorkloadIdentity", ["AZURE_TENANT_ID": tenant, "AZURE_CLIENT_ID": "wi-app",
                                                 "AZURE_FEDERATED_TOKEN_FILE": dir + "/federated", "PATH": azOnly], "wi-app"),
            ("ActiveDirectoryManagedIdentity", ["IDENTITY_ENDPOINT": s.entra.appServiceEndpoint, "IDENTITY_HEADER": s.entra.identityHeader,
                                                "PATH": azOnly], "system-assigned"),
            ("AzureCliCredential", ["PATH": azOnly], "cli-user"),
            ("AzureDeveloperCliCredential", ["PATH": azdOnly], "azd-user"),
        ]
        for (step, variables, identity) in cases {
            s.expectedIdentity = identity
            let chain = DefaultAzureCredential(environment: s.environment(variables))
            let claims = try await s.logIn(.entra(chain, cache: EntraTokenCache()))
            XCTAssertEqual(claims["appid"] as? String, identity, step)
            XCTAssertEqual(chain.chosenStep, step)
        }
        // The metadata endpoint when one is given explicitly.
        s.expectedIdentity = "system-assigned"
        let imds = DefaultAzureCredential(imdsEndpoint: s.entra.authorityHost, environment: s.environment(["PATH": empty]))
        try await s.logIn(.entra(imds, cache: EntraTokenCache()))
        XCTAssertEqual(imds.chosenStep, "ActiveDirectoryManagedIdentity")
    }

    func testDefaultChainWithNothingConfiguredFailsWithoutSendingAnything() async throws {
        let empty = try EntraScenario.temporaryDirectory()
        let transport = RecordingTransport()
        let chain = DefaultAzureCredential(environment: EntraEnvironment(variables: ["PATH": empty]),
                                           http: EntraHTTPClient(transport: transport))
        do {
            _ = try await chain.token(for: EntraTokenRequest(authority: "https://login.microsoftonline.com/t", resource: EntraScenario.resource),
                                      timeout: .seconds(5))
            XCTFail("a token from nothing")
        } catch let error as EntraCredentialError {
            XCTAssertEqual(error.kind, .notAvailable)
            XCTAssertEqual(error.steps.map(\.credential), ["EnvironmentCredential", "ActiveDirectoryWorkloadIdentity",
                                                           "ActiveDirectoryManagedIdentity", "AzureCliCredential", "AzureDeveloperCliCredential"])
            XCTAssertTrue(error.description.contains("az is not on PATH"), error.description)
            XCTAssertTrue(error.description.contains("not an Azure VM"), error.description)
        }
        XCTAssertEqual(transport.requests, [], "no request: the metadata address is not probed off Azure")
    }

    func testARetryAfterThatFitsTheTimeLeftIsWaitedOnTheInjectedClock() async throws {
        let s = try EntraScenario(expectedIdentity: "retry-app")
        defer { s.stop() }
        s.entra.register(clientID: "retry-app", secret: "retry-secret")
        s.entra.transientFailures = 2
        let clock = ManualEntraClock()
        let claims = try await s.logIn(.entra(ClientSecretCredential(clientID: "retry-app", secret: "retry-secret", environment: s.environment(),
                                                                     http: EntraHTTPClient(clock: clock)), cache: EntraTokenCache(clock: clock)))
        XCTAssertEqual(claims["appid"] as? String, "retry-app")
        XCTAssertEqual(clock.sleeps, [.seconds(1), .seconds(1)])
        XCTAssertEqual(s.entra.tokenRequests, 3)
    }

    func testHostileEndpointsEndInTypedErrorsWithinTheLoginTimeout() async throws {
        let secret = "hostile-secret-7731"
        let cases: [(LocalEntraServer.Hostile, SQLClientError.Code, EntraCredentialError.Kind?)] = [
            (.endless, .loginFailed, .responseTooLarge),
            (.slow(seconds: 4), .timeout, nil),
            (.malformed, .loginFailed, .malformedResponse),
            (.wrongAudience, .loginFailed, .wrongAudience),
            (.serverError(retryAfter: 30), .loginFailed, .httpError),
        ]
        var scenarios: [EntraScenario] = []
        defer { for s in scenarios { s.stop() } }   // at the end: stopping waits for a slow answer's thread
        for (mode, code, kind) in cases {
            let s = try EntraScenario(expectedIdentity: "app-h")
            scenarios.append(s)
            s.entra.register(clientID: "app-h", secret: secret)
            s.entra.hostile = mode
            let auth = SQLAuthentication.entra(ClientSecretCredential(clientID: "app-h", secret: secret, environment: s.environment()),
                                               cache: EntraTokenCache())
            let started = Date()
            do {
                _ = try await SQLConnection.connect(s.configuration(auth, loginTimeout: .milliseconds(1500)))
                XCTFail("\(mode): connected")
            } catch let error as SQLClientError {
                let elapsed = Date().timeIntervalSince(started)
                XCTAssertEqual(error.code, code, "\(mode): \(error)")
                if let kind { XCTAssertEqual((error.underlying as? EntraCredentialError)?.kind, kind, "\(mode): \(error)") }
                XCTAssertLessThan(elapsed, 3.0, "\(mode) took \(elapsed) s")
                let printed = "\(error) \(error.localizedDescription) \(String(reflecting: error))"
                XCTAssertFalse(printed.contains(secret), "\(mode)")
                if case .serverError = mode { XCTAssertTrue(printed.contains("retry after 30"), printed) }
            }
            // At once (an endless answer must not stream on), except a slow one, whose thread sleeps: at the end.
            if case .slow = mode {} else { s.stop() }
        }
    }
}
