import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// Entra ID sign-in through the FEDAUTH MSAL workflow ([MS-TDS] 2.2.6.4, 2.2.7.12, 2.2.6.3) with
/// each credential, against a local Entra ID (``LocalEntraServer``) and a TDS server that sends
/// FEDAUTHINFO and checks the token it gets (audience, identity). Loopback only.
final class EntraLoginTests: XCTestCase {
    func testServicePrincipalWithSecretSignsInWithWorkflowOne() async throws {
        let s = try EntraScenario(expectedIdentity: "app-1")
        defer { s.stop() }
        s.entra.register(clientID: "app-1", secret: "s3cret-value")
        let credential = ClientSecretCredential(clientID: "app-1", secret: "s3cret-value", environment: s.environment())
        let claims = try await s.logIn(.entra(credential, cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "app-1")
        XCTAssertEqual(claims["aud"] as? String, EntraScenario.resource)
        XCTAssertEqual(s.tds.records.last?.fedAuth?.workflow, 0x01)
        XCTAssertEqual(s.entra.requests, ["POST /\(s.entra.tenant)/oauth2/v2.0/token"])
        XCTAssertFalse(String(describing: credential).contains("s3cret"))
    }

    func testManagedIdentityAppServiceAndInstanceMetadata() async throws {
        let s = try EntraScenario(expectedIdentity: "user-assigned-1")
        defer { s.stop() }
        let appService = s.environment(["IDENTITY_ENDPOINT": s.entra.appServiceEndpoint, "IDENTITY_HEADER": s.entra.identityHeader])
        s.entra.expiryForm = .dateString
        var claims = try await s.logIn(.entra(ManagedIdentityCredential(identity: .clientID("user-assigned-1"), environment: appService),
                                              cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "user-assigned-1")
        XCTAssertEqual(s.tds.records.last?.fedAuth?.workflow, 0x03)

        // The instance metadata endpoint, overridden to loopback; system- then user-assigned by resource id.
        s.entra.expiryForm = .digitStrings
        s.expectedIdentity = "system-assigned"
        claims = try await s.logIn(.entra(ManagedIdentityCredential(imdsEndpoint: s.entra.authorityHost, environment: s.environment()),
                                          cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "system-assigned")
        s.expectedIdentity = "/subscriptions/x/identities/mi"
        claims = try await s.logIn(.entra(ManagedIdentityCredential(identity: .init(userID: "/subscriptions/x/identities/mi"),
                                                                    imdsEndpoint: s.entra.authorityHost, environment: s.environment()),
                                          cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "/subscriptions/x/identities/mi")
        XCTAssertEqual(s.entra.requests, ["GET /msi/token", "GET /metadata/identity/oauth2/token", "GET /metadata/identity/oauth2/token"])
    }

    func testWorkloadIdentityExchangesTheFederatedTokenFile() async throws {
        let s = try EntraScenario(expectedIdentity: "aks-app")
        defer { s.stop() }
        let dir = try EntraScenario.temporaryDirectory()
        let file = dir + "/token"
        try "federated-assertion-xyz\n".write(toFile: file, atomically: true, encoding: .utf8)
        s.entra.register(clientID: "aks-app", assertion: "federated-assertion-xyz")
        let env = s.environment(["AZURE_FEDERATED_TOKEN_FILE": file, "AZURE_CLIENT_ID": "aks-app", "AZURE_TENANT_ID": s.entra.tenant])
        let claims = try await s.logIn(.entra(WorkloadIdentityCredential(environment: env), cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "aks-app")
    }

    func testAzureCLIAndAzureDeveloperCLI() async throws {
        let s = try EntraScenario(expectedIdentity: "developer@contoso")
        defer { s.stop() }
        let dir = try EntraScenario.temporaryDirectory()
        try LocalEntraServer.writeFakeCLI("az", in: dir, identity: "developer@contoso")
        try LocalEntraServer.writeFakeCLI("azd", in: dir, identity: "developer@contoso")
        let env = s.environment(["PATH": dir])
        var claims = try await s.logIn(.entra(DeveloperCLICredential(.azureCLI, environment: env), cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "developer@contoso")
        let azLog = try String(contentsOfFile: dir + "/az.log", encoding: .utf8)
        XCTAssertEqual(azLog, "account get-access-token --resource https://database.windows.net/ -o json\n")
        claims = try await s.logIn(.entra(DeveloperCLICredential(.azureDeveloperCLI, environment: env), cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "developer@contoso")
        let azdLog = try String(contentsOfFile: dir + "/azd.log", encoding: .utf8)
        XCTAssertEqual(azdLog, "auth token --output json --scope https://database.windows.net//.default\n")
        XCTAssertEqual(s.entra.requests, [], "the CLIs get the token themselves")
    }

    func testDeviceCodePollsAsRFC8628Says() async throws {
        let s = try EntraScenario(expectedIdentity: "device-code-user")
        defer { s.stop() }
        s.entra.slowDowns = 1
        s.entra.pendingPolls = 2
        let clock = ManualEntraClock()
        let prompts = Prompts()
        let credential = DeviceCodeCredential(environment: s.environment(), http: EntraHTTPClient(clock: clock)) { prompts.add($0) }
        // The waits are the injected clock's (no real sleeping); the login's budget must cover them.
        let claims = try await s.logIn(.entra(credential, cache: EntraTokenCache(clock: clock)), loginTimeout: .seconds(60))
        XCTAssertEqual(claims["appid"] as? String, "device-code-user")
        XCTAssertEqual(prompts.all.count, 1)
        XCTAssertTrue(prompts.all.first?.contains("enter the code LOCAL-CODE") == true)
        // interval 0; slow_down adds 5 s; then two authorization_pending polls 5 s apart; then the token.
        XCTAssertEqual(clock.sleeps, [.seconds(5), .seconds(5), .seconds(5)])
        XCTAssertEqual(s.entra.requests.filter { $0.hasSuffix("/token") }.count, 4)
    }

    func testAccessTokenCallbackGetsAuthorityAndResource() async throws {
        let s = try EntraScenario(expectedIdentity: "callback-app")
        defer { s.stop() }
        let seen = Prompts()
        let claims = try await s.logIn(.accessTokenCallback { request in
            seen.add("\(request.authority) \(request.resource) \(request.scope)")
            return FakeEntraToken.make(audience: request.resource, identity: "callback-app", expiresOn: Date().addingTimeInterval(600))
        })
        XCTAssertEqual(claims["appid"] as? String, "callback-app")
        XCTAssertEqual(seen.all, ["\(s.entra.stsURL) https://database.windows.net/ https://database.windows.net//.default"])
    }

    func testRefusalsAreTypedAndNameTheCodeNotTheSecret() async throws {
        let s = try EntraScenario(expectedIdentity: "app-1")
        defer { s.stop() }
        s.entra.register(clientID: "app-1", secret: "right-secret")
        for (client, secret, code) in [("app-1", "wrong-secret-123", "AADSTS7000215"), ("ghost-app", "ghost-secret-456", "AADSTS700016")] {
            let credential = ClientSecretCredential(clientID: client, secret: secret, environment: s.environment())
            do {
                try await s.logIn(.entra(credential, cache: EntraTokenCache()))
                XCTFail("\(client) signed in")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .loginFailed)
                let underlying = try XCTUnwrap(error.underlying as? EntraCredentialError)
                XCTAssertEqual(underlying.kind, .authenticationFailed)
                XCTAssertEqual(underlying.credential, "ActiveDirectoryServicePrincipal")
                XCTAssertEqual(underlying.endpoint, "\(s.entra.stsURL)/oauth2/v2.0/token")
                XCTAssertTrue(error.description.contains(code), error.description)
                XCTAssertFalse(error.description.contains(secret))
                XCTAssertFalse("\(error.localizedDescription)\(String(reflecting: error))".contains(secret))
            }
        }
    }

    func testAnSTSURLOffEntraIsNotFollowed() async throws {
        // A server naming an STSURL on a host that is not Entra's gives the tenant only: the secret goes
        // to the configured authority host (here the local one), never to the host the server named.
        let s = try EntraScenario(expectedIdentity: "app-1", stsURL: "https://evil.example/00000000-0000-0000-0000-00000000abcd")
        defer { s.stop() }
        s.entra.register(clientID: "app-1", secret: "s3cret-value")
        let credential = ClientSecretCredential(clientID: "app-1", secret: "s3cret-value", environment: s.environment())
        try await s.logIn(.entra(credential, cache: EntraTokenCache()))
        XCTAssertEqual(s.entra.requests.count, 1)
        // With no authority host configured the default is Entra's public host: refused here by a transport that sends nothing.
        let transport = RecordingTransport()
        let bare = ClientSecretCredential(clientID: "app-1", secret: "s3cret-value", environment: EntraEnvironment(),
                                          http: EntraHTTPClient(transport: transport))
        _ = try? await bare.token(for: EntraTokenRequest(authority: "https://evil.example/t1", resource: EntraScenario.resource),
                                  timeout: .seconds(1))
        XCTAssertEqual(transport.requests, ["https://login.microsoftonline.com/t1/oauth2/v2.0/token"])
    }

    func testConnectionStringNamesTheCredentials() throws {
        func auth(_ s: String) throws -> SQLAuthentication {
            try SQLConnectionConfiguration(connectionString: "Server=127.0.0.1,1;" + s).authentication
        }
        guard case .entra(let sp, _) = try auth("Authentication=ActiveDirectoryServicePrincipal;User ID=app-1;Password=pw-secret-9") else {
            return XCTFail("service principal")
        }
        XCTAssertEqual((sp as? ClientSecretCredential)?.clientID, "app-1")
        XCTAssertFalse(try auth("Authentication=ActiveDirectoryServicePrincipal;User ID=app-1;Password=pw-secret-9").description.contains("pw-secret"))
        for (text, type) in [("Active Directory Managed Identity", "ManagedIdentityCredential"), ("ActiveDirectoryMSI", "ManagedIdentityCredential"),
                             ("ActiveDirectoryWorkloadIdentity", "WorkloadIdentityCredential"),
                             ("ActiveDirectoryDeviceCodeFlow", "DeviceCodeCredential"), ("ActiveDirectoryDefault", "DefaultAzureCredential")] {
            guard case .entra(let c, _) = try auth("Authentication=\(text)") else { return XCTFail(text) }
            XCTAssertEqual("\(Swift.type(of: c))", type, text)
        }
        guard case .entra(let mi, _) = try auth("Authentication=ActiveDirectoryManagedIdentity;User ID=/subscriptions/a/b") else { return XCTFail() }
        XCTAssertEqual((mi as? ManagedIdentityCredential)?.identity, .resourceID("/subscriptions/a/b"))
        XCTAssertThrowsError(try auth("Authentication=ActiveDirectoryPassword;User ID=a@b;Password=p")) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .unsupported)
            XCTAssertTrue("\(error)".contains("ActiveDirectoryServicePrincipal"))
            XCTAssertTrue("\(error)".contains("ActiveDirectoryDefault"))
        }
        XCTAssertThrowsError(try auth("Authentication=ActiveDirectoryServicePrincipal;User ID=app-1")) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration)
        }
    }
}

final class Prompts: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ s: String) { lock.withLock { items.append(s) } }
    var all: [String] { lock.withLock { items } }
}

/// The service principal with a certificate: an RS256 client assertion with x5t#S256, checked by the local Entra ID.
final class EntraCertificateTests: XCTestCase {
    func testServicePrincipalWithCertificateSignsIn() async throws {
        let certs: TestCertificates
        do { certs = try TestCertificates.make() } catch { throw XCTSkip("openssl is not available: \(error)") }
        let s = try EntraScenario(expectedIdentity: "cert-app")
        defer { s.stop() }
        s.entra.register(clientID: "cert-app", certificatePath: certs.serverCertificate)
        let credential = ClientCertificateCredential(clientID: "cert-app", certificatePath: certs.serverCertificate,
                                                     privateKeyPath: certs.serverKey, environment: s.environment())
        let claims = try await s.logIn(.entra(credential, cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "cert-app")
        XCTAssertEqual(s.tds.records.last?.fedAuth?.workflow, 0x01)
        // PS256 (RSASSA-PSS), as newer MSAL versions sign: the local Entra ID verifies it with PSS.
        let ps256 = ClientCertificateCredential(clientID: "cert-app", certificatePath: certs.serverCertificate,
                                                privateKeyPath: certs.serverKey, signatureAlgorithm: .ps256, environment: s.environment())
        let assertion = try ps256.clientAssertion(audience: "https://login.example/token", now: Date())
        let header = try XCTUnwrap(assertion.split(separator: ".").first)
        var padded = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while padded.count % 4 != 0 { padded += "=" }
        let headerJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: XCTUnwrap(Data(base64Encoded: padded))) as? [String: Any])
        XCTAssertEqual(headerJSON["alg"] as? String, "PS256")
        let viaPS256 = try await s.logIn(.entra(ps256, cache: EntraTokenCache()))
        XCTAssertEqual(viaPS256["appid"] as? String, "cert-app")
        // The same certificate and key in a PKCS#12 file with a password.
        let p12 = certs.directory.appendingPathComponent("sp.p12").path
        let export = Process()
        export.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        export.arguments = ["pkcs12", "-export", "-in", certs.serverCertificate, "-inkey", certs.serverKey, "-out", p12, "-passout", "pass:p12-pw"]
        try export.run()
        export.waitUntilExit()
        XCTAssertEqual(export.terminationStatus, 0)
        let pfx = ClientCertificateCredential(clientID: "cert-app", certificatePath: p12, certificatePassword: "p12-pw",
                                              environment: s.environment())
        let fromP12 = try await s.logIn(.entra(pfx, cache: EntraTokenCache()))
        XCTAssertEqual(fromP12["appid"] as? String, "cert-app")
        // Signed by another key (the other CA's) for the same certificate: refused with Entra's code.
        let wrong = ClientCertificateCredential(clientID: "cert-app", certificatePath: certs.serverCertificate,
                                                privateKeyPath: certs.localhostOnlyKey, environment: s.environment())
        do {
            try await s.logIn(.entra(wrong, cache: EntraTokenCache()))
            XCTFail("signed by the wrong key")
        } catch let error as SQLClientError {
            XCTAssertEqual((error.underlying as? EntraCredentialError)?.kind, .authenticationFailed)
            XCTAssertTrue(error.description.contains("AADSTS700027"), error.description)
        }
    }
}

/// Managed identity on Azure Arc (the key-file challenge) and in Cloud Shell.
final class EntraManagedIdentitySourcesTests: XCTestCase {
    func testAzureArcAndCloudShell() async throws {
        let s = try EntraScenario(expectedIdentity: "arc-system-assigned")
        defer { s.stop() }
        let dir = try EntraScenario.temporaryDirectory()
        let keyPath = dir + "/agent.key"
        try "arc-key-content-55".write(toFile: keyPath, atomically: true, encoding: .utf8)
        s.entra.setArcKey(path: keyPath, content: "arc-key-content-55")
        let arc = s.environment(["IDENTITY_ENDPOINT": s.entra.arcEndpoint, "IMDS_ENDPOINT": s.entra.authorityHost,
                                 "SQLCLIENT_ARC_TOKENS_DIR": dir + "/"])
        var claims = try await s.logIn(.entra(ManagedIdentityCredential(environment: arc), cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "arc-system-assigned")
        XCTAssertEqual(s.entra.requests, ["GET /arc/token", "GET /arc/token"])
        // A challenge naming a file outside the agent's folder is not followed.
        let elsewhere = s.environment(["IDENTITY_ENDPOINT": s.entra.arcEndpoint, "IMDS_ENDPOINT": s.entra.authorityHost])
        do {
            try await s.logIn(.entra(ManagedIdentityCredential(environment: elsewhere), cache: EntraTokenCache()))
            XCTFail("read a key file the endpoint named outside the Arc folder")
        } catch let error as SQLClientError {
            XCTAssertEqual((error.underlying as? EntraCredentialError)?.kind, .malformedResponse, "\(error)")
        }
        s.expectedIdentity = "cloud-shell-user"
        claims = try await s.logIn(.entra(ManagedIdentityCredential(environment: s.environment(["MSI_ENDPOINT": s.entra.cloudShellEndpoint])),
                                          cache: EntraTokenCache()))
        XCTAssertEqual(claims["appid"] as? String, "cloud-shell-user")
    }
}
