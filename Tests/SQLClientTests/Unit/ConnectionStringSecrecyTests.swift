import XCTest
import TDS
@testable import SQLClient

/// Errors about malformed connection strings never echo entry text that may be part of a
/// password holding an unquoted ';' (entries are named by position).
final class ConnectionStringSecrecyTests: XCTestCase {
    private func message(_ text: String) -> String {
        do {
            _ = try SQLConnectionConfiguration(connectionString: text)
            XCTFail("\(text.count)-character connection string accepted")
            return ""
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .invalidConfiguration)
            return "\(error) \(error.message) \(String(reflecting: error))"
        } catch {
            XCTFail("\(type(of: error))")
            return ""
        }
    }

    func testEntryWithoutEqualsIsNamedByPosition() {
        let m = message("Server=127.0.0.1,1433;UID=demo;PWD=my;SecretPass")
        XCTAssertFalse(m.contains("SecretPass"), m)
        XCTAssertFalse(m.contains("my;"), m)
        XCTAssertTrue(m.contains("entry 4 has no '='"), m)
        XCTAssertTrue(m.contains("must be quoted"), m)
        let last = message("Server=h;Database=db;oops")
        XCTAssertTrue(last.contains("entry 3 has no '='"), last)
        XCTAssertFalse(last.contains("oops"), last)
    }

    func testUnknownKeyAfterAnUnquotedPasswordIsNotEchoed() {
        let m = message("Server=h;PWD=ab;Hidden=cd")
        XCTAssertFalse(m.contains("Hidden"), m)
        XCTAssertFalse(m.contains("cd"), m)
        XCTAssertTrue(m.contains("follows the password"), m)
        // Elsewhere an unknown key is named (typos are common and keys are not secret).
        let typo = message("Sever=h;PWD={a;b}")
        XCTAssertTrue(typo.contains("unknown connection string key \"Sever\""), typo)
        let quoted = message("Server=h;PWD={ab};Hidden=cd")
        XCTAssertTrue(quoted.contains("\"Hidden\""), quoted)
    }

    /// A value that does not parse is named by its key only: `Password=ab;Timeout=<rest>` may be a
    /// password holding an unquoted ';', so "<rest>" must never appear.
    func testBadValuesAreNamedByKeyOnly() {
        let cases = ["Timeout", "Connect Timeout", "Command Timeout", "Packet Size", "TDS Version", "Text Size",
                     "TrustServerCertificate", "Encrypt", "Server"]
        for key in cases {
            let value = key == "Server" ? "[se<cret>rest" : "se<cret>rest"   // an unclosed '[' for Server
            let text = "Server=h;UID=u;Password=At1;\(key)=\(value)"
            let m = message(text)
            XCTAssertFalse(m.contains("se<cret>rest") || m.contains("cret"), "\(key): \(m)")
            XCTAssertTrue(m.contains("invalid value for \(key)"), "\(key): \(m)")
        }
    }

    func testQuotedPasswordWithSemicolonStillParses() throws {
        let config = try SQLConnectionConfiguration(connectionString: "Server=h;UID=demo;PWD={my;SecretPass}")
        XCTAssertEqual(config.password.reveal(), "my;SecretPass")
    }
}
