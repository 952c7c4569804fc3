import XCTest
@testable import TDS

/// [MS-TDS] 2.2.6.4 FeatureExt: the FEDAUTH feature for the security-token library, and the
/// FEATUREEXTACK check that a server acknowledges only what was requested (2.2.7.11).
final class MessageLogin7FeatureExtTests: XCTestCase {
    func testFedAuthSecurityTokenLayout() throws {
        let feature = Login7Feature.fedAuthAccessToken("eyJ0", echo: true)
        XCTAssertEqual(feature.id, 0x02)
        // Options: library 0x01 << 1 | fFedAuthEcho; then a 4-byte length and the UTF-16LE token.
        XCTAssertEqual(feature.data, [0x03, 8, 0, 0, 0, 0x65, 0, 0x79, 0, 0x4A, 0, 0x30, 0])
        XCTAssertEqual(Login7Feature.fedAuthAccessToken("eyJ0", echo: false).data.first, 0x02)
        let decoded = try FedAuth.decode(feature.data)
        XCTAssertEqual(decoded.library, .securityToken)
        XCTAssertTrue(decoded.echo)
        XCTAssertEqual(decoded.accessToken, "eyJ0")
        XCTAssertNil(decoded.nonce)
        // With the server's nonce.
        let nonce = [UInt8](repeating: 7, count: 32)
        let withNonce = try FedAuth.decode(Login7Feature.fedAuthSecurityToken([1, 2], echo: false, nonce: nonce).data)
        XCTAssertEqual(withNonce.nonce, nonce)
        XCTAssertEqual(withNonce.token?.reveal(), [1, 2])
        // Through LOGIN7 and back.
        let login = Login7(tdsVersion: .v7_4, userName: "", featureExt: [.utf8Support, feature])
        XCTAssertEqual(try Login7.decode(from: login.encode()).featureExt, [.utf8Support, feature])
    }

    func testTheTokenIsNeverPrinted() {
        let feature = Login7Feature.fedAuthAccessToken("secret-token-value", echo: true)
        XCTAssertFalse("\(feature)".contains("secret"))
        XCTAssertFalse(String(reflecting: feature).contains("secret"))
        let fed = FedAuth(library: .securityToken, echo: true, token: Array("secret".utf8))
        XCTAssertFalse("\(fed)".contains("secret"))
        var dumped = ""
        dump(fed, to: &dumped)
        XCTAssertFalse(dumped.contains("secret"))
    }

    func testMalformedFedAuthData() {
        for data: [UInt8] in [[], [0x03], [0x03, 9, 0, 0, 0, 1], [0x03, 0, 0, 0, 0, 1, 2, 3], [0x05]] {
            XCTAssertThrowsError(try FedAuth.decode(data), "\(data)")
        }
        XCTAssertEqual(try FedAuth.decode([0x05, 0x01]).workflow, 0x01)   // ADAL, workflow byte
    }

    func testFeatureExtAckMustOnlyAcknowledgeRequestedFeatures() throws {
        let ack = FeatureExtAck(features: [.init(id: .utf8Support, data: [1]), .init(id: .fedAuth, data: [])])
        XCTAssertNoThrow(try ack.validate(requested: [.utf8Support, .fedAuth]))
        XCTAssertThrowsError(try ack.validate(requested: [.utf8Support])) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .unexpectedToken)
            XCTAssertTrue("\(error)".contains("FEDAUTH"), "\(error)")
        }
        XCTAssertNoThrow(try FeatureExtAck(features: []).validate(requested: []))
    }
}
