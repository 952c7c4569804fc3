#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
@testable import SQLClient

/// The certificate decisions the Apple engine's verify block takes (plain Swift, the same on every platform).
final class TLSVerificationPolicyTests: XCTestCase {
    private func temporaryFile(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID().uuidString).pem")
        try text.write(to: url, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }

    private let pemA = "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n"   // DER 30 03 02 01 01
    private let pemB = "-----BEGIN CERTIFICATE-----\nMAMCAQI=\n-----END CERTIFICATE-----\n"   // DER 30 03 02 01 02

    func testIPLiteralsAreTheOnesInetPtonReadsAndAreNeverSentAsSNI() {
        let samples = ["127.0.0.1", "0.0.0.0", "255.255.255.255", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1..2.3",
                       "::1", "::", "fe80::1", "2001:db8::8a2e:370:7334", "2001:db8:0:0:0:0:2:1", "1:2:3:4:5:6:7:8",
                       "1:2:3:4:5:6:7:8:9", "1::2::3", "::ffff:10.0.0.1", "::ffff:10.0.0.256", "12345::", "g::1",
                       "localhost", "db.example.org", "", "1.2.3.4a", ":1", "1:", "[::1]"]
        for text in samples {
            var v4 = in_addr()
            var v6 = in6_addr()
            let expected = inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
            XCTAssertEqual(TLSVerificationPolicy.isIPAddressLiteral(text), expected, text)
        }
        XCTAssertTrue(TLSVerificationPolicy.isIPAddressLiteral("fe80::1%en0"), "a scoped IPv6 address")
        XCTAssertNil(try TLSVerificationPolicy(serverName: "127.0.0.1", configuration: TLSConfiguration()).sniName)
        XCTAssertNil(try TLSVerificationPolicy(serverName: "::1", configuration: TLSConfiguration()).sniName)
        XCTAssertEqual(try TLSVerificationPolicy(serverName: "10.0.0.5",
                                                 configuration: TLSConfiguration(hostNameInCertificate: "db.example.org")).sniName,
                       "db.example.org", "hostNameInCertificate is what SNI carries")
    }

    func testModesFollowTrustThenPinThenCAFileOrSystemRoots() throws {
        let ca = try temporaryFile(pemA + "junk\n" + pemB)
        let pin = try temporaryFile(pemB)
        XCTAssertEqual(try TLSVerificationPolicy(serverName: "h", configuration: TLSConfiguration(
            trustServerCertificate: true, caFile: ca, serverCertificate: "/nonexistent")).mode, .trustAny)
        XCTAssertEqual(try TLSVerificationPolicy(serverName: "h", configuration: TLSConfiguration(
            caFile: ca, serverCertificate: pin)).mode, .pinned([0x30, 0x03, 0x02, 0x01, 0x02]))
        XCTAssertEqual(try TLSVerificationPolicy(serverName: "h", configuration: TLSConfiguration(caFile: ca)).mode,
                       .chain(anchors: .only([[0x30, 0x03, 0x02, 0x01, 0x01], [0x30, 0x03, 0x02, 0x01, 0x02]]), hostName: "h"))
        XCTAssertEqual(try TLSVerificationPolicy(serverName: "h", configuration: TLSConfiguration(
            hostNameInCertificate: "", verifyHostName: false)).mode, .chain(anchors: .system, hostName: nil))
        XCTAssertThrowsError(try TLSVerificationPolicy(serverName: "h", configuration: TLSConfiguration(caFile: "/nonexistent/ca.pem"))) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .tlsFailed)
        }
        let empty = try temporaryFile("no certificate here")
        XCTAssertThrowsError(try TLSVerificationPolicy(serverName: "h", configuration: TLSConfiguration(caFile: empty))) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .tlsFailed)
        }
        XCTAssertThrowsError(try TLSVerificationPolicy(serverName: "", configuration: TLSConfiguration())) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .tlsFailed, "an empty name never turns the name check off")
        }
    }

    func testVerdictsNameTheCauseAndThePinNeverRunsTheChain() throws {
        let pin = try temporaryFile(pemB)
        let pinned = try TLSVerificationPolicy(serverName: "db", configuration: TLSConfiguration(serverCertificate: pin))
        XCTAssertNil(pinned.verdict(leafDER: [0x30, 0x03, 0x02, 0x01, 0x02]) { XCTFail("chain evaluated"); return .expired })
        XCTAssertTrue(pinned.verdict(leafDER: [0x30, 0x03, 0x02, 0x01, 0x01]) { nil }?.message
            .contains("is not the certificate in serverCertificate") ?? false)
        let chain = try TLSVerificationPolicy(serverName: "10.1.2.3",
                                              configuration: TLSConfiguration(hostNameInCertificate: "db.example.org"))
        XCTAssertNil(chain.verdict(leafDER: [1]) { nil })
        let wrong = chain.verdict(leafDER: [1]) { .hostNameMismatch }
        XCTAssertEqual(wrong?.code, .certificateVerificationFailed)
        XCTAssertTrue(wrong?.message.contains("does not name \"db.example.org\"") ?? false, "\(String(describing: wrong))")
        XCTAssertTrue(chain.verdict(leafDER: [1]) { .expired }?.message.contains("has expired") ?? false)
        XCTAssertTrue(chain.verdict(leafDER: [1]) { .untrustedIssuer }?.message.contains("not signed by a trusted") ?? false)
        XCTAssertTrue(chain.verdict(leafDER: [1]) { .other("revoked") }?.message.contains("[revoked]") ?? false)
        XCTAssertEqual(chain.verdict(leafDER: nil) { nil }?.code, .certificateVerificationFailed, "no certificate is no trust")
        let trusting = try TLSVerificationPolicy(serverName: "db", configuration: TLSConfiguration(trustServerCertificate: true))
        XCTAssertNil(trusting.verdict(leafDER: nil) { XCTFail("chain evaluated"); return .expired })
    }
}
