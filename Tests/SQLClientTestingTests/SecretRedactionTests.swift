import Foundation
import SQLClientTesting
import TDS
import XCTest

/// The password replaced in text and in bytes, in every encoding, keeping lengths.
final class SecretRedactionTests: XCTestCase {
    static let secret = "hunter2-Ω"
    static var utf16: [UInt8] { Array(secret.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }

    func testEveryEncodingIsReplacedWithStarsOfTheSameLength() {
        let redaction = SecretRedaction(secrets: [Self.secret])
        for form in [Array(Self.secret.utf8), Self.utf16, Login7.obfuscate(Self.utf16)] {
            var bytes: [UInt8] = [1, 2, 3] + form + [4] + form
            XCTAssertEqual(redaction.redact(&bytes), 2)
            XCTAssertEqual(bytes.count, 4 + 2 * form.count)
            XCTAssertFalse(bytes.contains(subsequence: form))
            XCTAssertEqual(Array(bytes.prefix(3)), [1, 2, 3])
        }
        var utf16 = Self.utf16
        redaction.redact(&utf16)
        XCTAssertEqual(String(decoding: stride(from: 0, to: utf16.count, by: 2).map { UInt16(utf16[$0]) | UInt16(utf16[$0 + 1]) << 8 },
                              as: UTF16.self), String(repeating: "*", count: Self.secret.utf16.count))
        XCTAssertEqual(redaction.redact("ALTER LOGIN x WITH PASSWORD = '\(Self.secret)'"), "ALTER LOGIN x WITH PASSWORD = '<redacted>'")
    }

    func testShortSecretsAreNotSearchedFor() {
        let redaction = SecretRedaction(secrets: ["abc", ""])
        XCTAssertTrue(redaction.isEmpty)
        var bytes = Array("abcabc".utf8)
        XCTAssertEqual(redaction.redact(&bytes), 0)
    }

    func testFindingsLookInTheTextAndInEveryResponse() throws {
        let redaction = SecretRedaction(secrets: [Self.secret])
        let clean = ReplaySession(name: "s", exchanges: [.init(request: .sqlBatch("SELECT 1"), response: [.init(bytes: [0xFD])])])
        XCTAssertEqual(redaction.findings(inFileText: clean.text), [])
        let leaky = ReplaySession(name: "s", exchanges: [.init(request: .sqlBatch("SELECT 1"),
                                                               response: [.init(bytes: Login7.obfuscate(Self.utf16))])])
        XCTAssertEqual(redaction.findings(inFileText: leaky.text).count, 1)
        XCTAssertFalse(redaction.findings(inFileText: "-- \(Self.secret)").isEmpty)
    }
}
