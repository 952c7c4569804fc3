import Foundation
import XCTest
@testable import SQLClient

/// ServerCertificate files (PEM, DER) read into DER bytes, and the refusal texts.
final class CertificatePinningTests: XCTestCase {
    /// A minimal DER SEQUENCE (not a real certificate: the reader only frames it).
    let der: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x05]

    func testPEMAndDERFilesGiveTheSameBytes() {
        let pem = "junk before\n-----BEGIN CERTIFICATE-----\n" + Data(der).base64EncodedString() + "\n-----END CERTIFICATE-----\n"
        XCTAssertEqual(TLSConfiguration.certificateDER(fromFileContents: Array(pem.utf8)), der)
        XCTAssertEqual(TLSConfiguration.certificateDER(fromFileContents: der), der)
    }

    func testFilesThatHoldNoCertificateGiveNil() {
        XCTAssertNil(TLSConfiguration.certificateDER(fromFileContents: []))
        XCTAssertNil(TLSConfiguration.certificateDER(fromFileContents: Array("hello".utf8)))
        XCTAssertNil(TLSConfiguration.certificateDER(fromFileContents: [0x30, 0x05, 0x01]), "length beyond the bytes")
        XCTAssertNil(TLSConfiguration.certificateDER(fromFileContents: [0x30, 0x85, 0, 0, 0, 0, 1]), "5-byte length")
        XCTAssertNil(TLSConfiguration.certificateDER(fromFileContents: Array("-----BEGIN CERTIFICATE-----\n!!".utf8)))
    }

    func testPinIsReadFromTheFileAndIgnoredWhenTrusting() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pin-\(UUID().uuidString).cer")
        try Data(der).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        XCTAssertEqual(try TLSConfiguration(serverCertificate: url.path).pinnedCertificateDER(), der)
        XCTAssertNil(try TLSConfiguration(trustServerCertificate: true, serverCertificate: url.path).pinnedCertificateDER())
        XCTAssertNil(try TLSConfiguration().pinnedCertificateDER())
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("pin-\(UUID().uuidString).cer")
        try Data("not a certificate".utf8).write(to: empty)
        defer { try? FileManager.default.removeItem(at: empty) }
        XCTAssertThrowsError(try TLSConfiguration(serverCertificate: empty.path).pinnedCertificateDER()) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration)
        }
    }

    func testVerifyPinnedCertificateComparesEveryByte() throws {
        XCTAssertNoThrow(try TLSConfiguration.verifyPinnedCertificate(der, presented: der, serverName: "h"))
        var other = der
        other[4] = 6
        for presented in [other, nil] {
            XCTAssertThrowsError(try TLSConfiguration.verifyPinnedCertificate(der, presented: presented, serverName: "h")) {
                XCTAssertEqual(($0 as? SQLClientError)?.code, .certificateVerificationFailed)
            }
        }
    }

    func testEveryRefusalSuggestsAFixBeforeTheTrustSwitch() {
        let causes: [CertificateRefusal] = [.hostNameMismatch(expected: "x"), .expired, .notYetValid, .untrustedIssuer,
                                            .pinnedCertificateMismatch, .other("why")]
        for cause in causes {
            let text = SQLClientError.certificateRefused(cause, serverName: "db").message
            let trust = text.range(of: "trustServerCertificate")?.lowerBound
            let fix = ["hostNameInCertificate", "caFile", "serverCertificate"].compactMap { text.range(of: $0)?.lowerBound }.min()
            XCTAssertNotNil(trust, text)
            XCTAssertNotNil(fix, text)
            if let trust, let fix { XCTAssertLessThan(fix, trust, text) }
            XCTAssertTrue(text.contains("\"db\""), text)
        }
    }
}
