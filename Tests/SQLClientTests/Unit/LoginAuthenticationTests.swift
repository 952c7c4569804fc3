import XCTest
import TDS
@testable import SQLClient

/// What each authentication puts in PRELOGIN and LOGIN7, and the FEATUREEXTACK checks.
final class LoginAuthenticationTests: XCTestCase {
    func login() -> Login7 { Login7(tdsVersion: .v7_4, userName: "sa", password: "pw") }

    func testSQLPasswordKeepsCredentialsAndAsksForUTF8() async throws {
        var auth = LoginAuthentication(.sqlPassword)
        try await auth.prepare()
        XCTAssertNil(auth.preloginFedAuthRequired)
        var l = login()
        auth.apply(to: &l, serverPrelogin: nil)
        XCTAssertEqual(l.userName, "sa")
        XCTAssertEqual(l.featureExt, [.utf8Support])
        XCTAssertEqual(auth.requestedFeatures, [.utf8Support])
        var old = Login7(tdsVersion: .v7_1, userName: "sa")
        auth.apply(to: &old, serverPrelogin: nil)
        XCTAssertNil(old.featureExt, "no FeatureExt before 7.4")
    }

    func testAccessTokenEchoesTheServersFedAuthRequired() async throws {
        for answer: UInt8? in [1, 0, nil] {
            var auth = LoginAuthentication(.accessToken("tok"))
            try await auth.prepare()
            XCTAssertEqual(auth.preloginFedAuthRequired, 1)
            var l = login()
            auth.apply(to: &l, serverPrelogin: Prelogin(fedAuthRequired: answer))
            XCTAssertEqual(l.userName, "")
            XCTAssertEqual(l.password.reveal(), "")
            let fed = try XCTUnwrap(l.featureExt?.first { $0.id == Login7Feature.fedAuthID })
            XCTAssertEqual(fed, .fedAuthAccessToken("tok", echo: answer == 1))
            XCTAssertEqual(auth.requestedFeatures, [.utf8Support, .fedAuth])
        }
    }

    func testTheProviderIsCalledAtEveryAttempt() async throws {
        let counter = Counter()
        let auth = LoginAuthentication(.accessTokenProvider { "token-\(await counter.next())" })
        for expected in ["token-1", "token-2"] {
            var attempt = auth
            try await attempt.prepare()
            var l = login()
            attempt.apply(to: &l, serverPrelogin: nil)
            XCTAssertEqual(try FedAuth.decode(l.featureExt?.last?.data ?? []).accessToken, expected)
        }
        var failing = LoginAuthentication(.accessTokenProvider { throw CocoaError(.userCancelled) })
        do { try await failing.prepare(); XCTFail() } catch let e as SQLClientError { XCTAssertEqual(e.code, .loginFailed) }
        var empty = LoginAuthentication(.accessToken(""))
        do { try await empty.prepare(); XCTFail() } catch let e as SQLClientError { XCTAssertEqual(e.code, .invalidConfiguration) }
    }

    func testNTLMSetsIntegratedSecurityAndTheNegotiateMessage() async throws {
        var auth = LoginAuthentication(.ntlm(NTLMCredentials(domain: "D", user: "u", password: "p")))
        try await auth.prepare()
        var l = login()
        auth.apply(to: &l, serverPrelogin: nil)
        XCTAssertTrue(l.optionFlags2.contains(.integratedSecurity))
        XCTAssertEqual(l.userName, "")
        XCTAssertEqual(Array(l.sspi.prefix(8)), Array("NTLMSSP\0".utf8))
        var plain = LoginAuthentication(.sqlPassword)
        XCTAssertThrowsError(try plain.sspiResponse(to: [1, 2])) { XCTAssertEqual(($0 as? SQLClientError)?.code, .protocolError) }
    }

    func testFeatureExtAckChecks() async throws {
        var auth = LoginAuthentication(.accessToken("t"))
        try await auth.prepare()
        var l = login()
        auth.apply(to: &l, serverPrelogin: nil)
        XCTAssertNoThrow(try auth.check(FeatureExtAck(features: [.init(id: .fedAuth, data: []), .init(id: .utf8Support, data: [1])])))
        XCTAssertThrowsError(try auth.check(FeatureExtAck(features: [.init(id: .utf8Support, data: [1])]))) {
            XCTAssertTrue(($0 as? SQLClientError)?.message.contains("did not acknowledge FEDAUTH") ?? false, "\($0)")
        }
        XCTAssertThrowsError(try auth.check(nil))
        var sql = LoginAuthentication(.sqlPassword)
        var l2 = login()
        sql.apply(to: &l2, serverPrelogin: nil)
        XCTAssertNoThrow(try sql.check(nil))
        XCTAssertThrowsError(try sql.check(FeatureExtAck(features: [.init(id: .fedAuth, data: [])]))) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .protocolError)
        }
    }
}

private actor Counter {
    var value = 0
    func next() -> Int { value += 1; return value }
}
