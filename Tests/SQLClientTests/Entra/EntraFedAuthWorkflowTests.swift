import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// The FEDAUTH MSAL workflow in the login machine and the LOGIN7 it builds ([MS-TDS] 2.2.6.4,
/// 2.2.7.12, 2.2.6.3), and tokens asked again on a redirect.
final class EntraFedAuthWorkflowTests: XCTestCase {
    func info(sts: String = "https://login.microsoftonline.com/t1", spn: String = "https://database.windows.net/") -> FedAuthInfo {
        var r = ByteReader(Array(LoginScenarioServer.fedAuthInfoToken(stsURL: sts, spn: spn).dropFirst()))
        return (try? FedAuthInfo.decode(from: &r)) ?? FedAuthInfo(options: [])
    }

    func machine(expectsFedAuthInfo: Bool) -> ConnectionStateMachine {
        var m = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        m.configureLogin(expectsFedAuthInfo: expectsFedAuthInfo)
        _ = m.connected()
        _ = m.preloginReceived(Prelogin(encryption: .notSupported))
        return m
    }

    func testFedAuthInfoIsHandedToTheDriverOnceAndItsMessageEndIsNotTheLoginsEnd() {
        var m = machine(expectsFedAuthInfo: true)
        let parsed = info()
        XCTAssertEqual(parsed.stsURL, "https://login.microsoftonline.com/t1")
        XCTAssertEqual(parsed.spn, "https://database.windows.net/")
        guard case .fedAuthInfoReceived(let got) = m.tokenReceived(.fedAuthInfo(parsed)) else { return XCTFail("not handed over") }
        XCTAssertEqual(got, parsed)
        XCTAssertTrue(m.messageEnded().isEmpty, "the FEDAUTH token message comes next")
        XCTAssertEqual(m.state, .loginSent)
        guard case .closeConnection(let second) = m.tokenReceived(.fedAuthInfo(parsed)) else { return XCTFail("a second one was taken") }
        XCTAssertEqual(second.error.code, .protocolError)
    }

    func testFedAuthInfoIsRefusedWhenNotAskedForOrIncomplete() {
        var unasked = machine(expectsFedAuthInfo: false)
        guard case .closeConnection(let a) = unasked.tokenReceived(.fedAuthInfo(info())) else { return XCTFail() }
        XCTAssertEqual(a.error.code, .protocolError)
        var incomplete = machine(expectsFedAuthInfo: true)
        guard case .closeConnection(let b) = incomplete.tokenReceived(.fedAuthInfo(info(spn: ""))) else { return XCTFail() }
        XCTAssertTrue(b.error.message.contains("SPN"), b.error.message)
    }

    func testLogin7AsksForTheMSALLibraryWithTheCredentialsWorkflow() throws {
        for (credential, workflow) in [(ClientSecretCredential(clientID: "a", secret: "b") as any EntraTokenCredential, UInt8(0x01)),
                                       (ManagedIdentityCredential(environment: EntraEnvironment()), 0x03)] {
            var auth = LoginAuthentication(.entra(credential))
            var login = Login7(tdsVersion: .v7_4, userName: "u", password: "p")
            auth.apply(to: &login, serverPrelogin: Prelogin(encryption: .notSupported, fedAuthRequired: 1))
            let feature = try XCTUnwrap(login.featureExt?.first { $0.id == Login7Feature.fedAuthID })
            XCTAssertEqual(feature.data, [0x02 << 1 | 1, workflow])
            let decoded = try FedAuth.decode(feature.data)
            XCTAssertEqual(decoded.library, .adal)
            XCTAssertEqual(decoded.workflow, workflow)
            XCTAssertEqual(login.userName, "")
            XCTAssertEqual(login.password, "")
        }
    }

    func testTheFedAuthTokenMessageCarriesTheTokenAndTheNonce() async throws {
        let nonce = [UInt8](repeating: 7, count: 32)
        let auth = LoginAuthentication(.accessTokenCallback { request in "token-for-\(request.resource)" })
        let bytes = try await auth.fedAuthTokenMessage(for: info(), serverPrelogin: Prelogin(encryption: .notSupported, nonce: nonce),
                                                       timeout: .seconds(1))
        let message = try FedAuthTokenMessage.decode(from: bytes)
        XCTAssertEqual(message.nonce, nonce)
        XCTAssertEqual(message, FedAuthTokenMessage(accessToken: "token-for-https://database.windows.net/", nonce: nonce))
        XCTAssertFalse(message.description.contains("token-for"))
    }

    func testARedirectedLoginSendsATokenToTheNewServerFromTheCache() async throws {
        let entra = try LocalEntraServer()
        defer { entra.stop() }
        entra.register(clientID: "app-r", secret: "secret-r")
        let behaviour = { (login: @escaping @Sendable (LoginScenarioServer.LoginContext) -> LoginScenarioServer.LoginReply) in
            var b = LoginScenarioServer.Behaviour(fedAuthRequired: 1, login: login)
            b.fedAuthInfo = (entra.stsURL, "https://database.windows.net/")
            return b
        }
        let replica = try LoginScenarioServer(name: "replica", behaviour: behaviour { $0.fedAuthToken == nil ? .close : .accept })
        defer { replica.stop() }
        let listener = try LoginScenarioServer(name: "listener", behaviour: behaviour { [port = replica.port] c in
            c.fedAuthToken == nil ? .close : .route(server: "127.0.0.1", port: port)
        })
        defer { listener.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(listener.port)), user: "",
                                                password: "", encryption: .notSupported)
        config.authentication = .entra(ClientSecretCredential(clientID: "app-r", secret: "secret-r",
                                                              environment: EntraEnvironment(variables: ["AZURE_AUTHORITY_HOST": entra.authorityHost])),
                                       cache: EntraTokenCache())
        let connection = try await SQLConnection.connect(config)
        let session = await connection.session
        XCTAssertEqual(session.port, Int(replica.port))
        await connection.close()
        let sent = [listener.records.last?.fedAuthToken, replica.records.last?.fedAuthToken]
        XCTAssertNotNil(sent[0])
        XCTAssertEqual(sent[0], sent[1], "the replica got the cached token")
        XCTAssertEqual(entra.tokenRequests, 1)
    }
}
