import Foundation
import XCTest
@testable import SQLClient
import TDS

/// The connection-string keys and defaults of authentication, connect retry, keep-alive,
/// ApplicationIntent and MultiSubnetFailover.
final class SQLConnectivityOptionsTests: XCTestCase {
    func config(_ text: String) throws -> SQLConnectionConfiguration {
        try SQLConnectionConfiguration(connectionString: "Server=db.example.com;" + text)
    }

    func testDefaultsAreSqlClients() throws {
        let c = try config("User ID=u;Password=p")
        guard case .sqlPassword = c.authentication else { return XCTFail("\(c.authentication)") }
        XCTAssertNil(c.connectRetry.count)
        XCTAssertEqual(c.connectRetry.effectiveCount(host: "db.example.com"), 1)
        XCTAssertEqual(c.connectRetry.effectiveCount(host: "srv.database.windows.net"), 2)
        XCTAssertEqual(c.connectRetry.effectiveCount(host: "ws-ondemand.sql.azuresynapse.net"), 5)
        XCTAssertEqual(c.connectRetry.interval, .seconds(10))
        XCTAssertEqual(c.connectRetry.errorNumbers, [4060, 10928, 10929, 40197, 40501, 40613, 42108, 42109])
        XCTAssertTrue(c.connectRetry.errorNumbers.isDisjoint(with: SQLConnectRetryPolicy.optInErrorNumbers))
        XCTAssertEqual(c.keepAlive, SQLKeepAlive(idle: .seconds(30), interval: .seconds(1)))
        XCTAssertEqual(c.applicationIntent, .readWrite)
        XCTAssertFalse(c.multiSubnetFailover)
    }

    func testKeysAndSynonyms() throws {
        let c = try config("ConnectRetryCount=2;Connect Retry Interval=1;ApplicationIntent=ReadOnly;"
                           + "MultiSubnetFailover=true;KeepAlive=45;KeepAliveInterval=3")
        XCTAssertEqual(c.connectRetry.count, 2)
        XCTAssertEqual(c.connectRetry.effectiveCount(host: "x.database.windows.net"), 2)
        XCTAssertEqual(c.connectRetry.interval, .seconds(1))
        XCTAssertEqual(c.applicationIntent, .readOnly)
        XCTAssertTrue(c.multiSubnetFailover)
        XCTAssertEqual(c.keepAlive, SQLKeepAlive(idle: .seconds(45), interval: .seconds(3)))
        XCTAssertNil(try config("KeepAlive=0").keepAlive)
        XCTAssertEqual(try config("Connect Retry Count=0").connectRetry.count, 0)
        XCTAssertEqual(try config("Application Intent=readwrite").applicationIntent, .readWrite)
    }

    func testOutOfRangeValuesAreRefusedWithoutEcho() {
        for entry in ["ConnectRetryCount=256", "ConnectRetryCount=-1", "ConnectRetryInterval=0", "ConnectRetryInterval=61",
                      "ConnectRetryCount=9223372036854775808", "ApplicationIntent=ReadMostly", "MultiSubnetFailover=perhaps",
                      "KeepAlive=x", "KeepAliveInterval=0", "Authentication=Kerberos"] {
            XCTAssertThrowsError(try config(entry), entry) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration, "\(entry): \(error)")
                let value = String(entry.split(separator: "=")[1])
                XCTAssertFalse("\(error)".contains("\"\(value)\"") || "\(error)".contains("=\(value)"), "\(error) echoes the value")
            }
        }
    }

    func testAuthenticationSelection() throws {
        guard case .accessToken(let token) = try config("Authentication=ActiveDirectoryAccessToken").authentication else {
            return XCTFail("ActiveDirectoryAccessToken")
        }
        XCTAssertEqual(token, "")
        guard case .ntlm(let c) = try config(#"Integrated Security=true;User ID=CORP\alice;Password=pw"#).authentication else {
            return XCTFail("Integrated Security with DOMAIN\\user")
        }
        XCTAssertEqual(c.domain, "CORP")
        XCTAssertEqual(c.user, "alice")
        XCTAssertEqual(c.password.reveal(), "pw")
        guard case .ntlm = try config(#"UID=CORP\bob;PWD=x"#).authentication else {
            return XCTFail("a DOMAIN\\user selects NTLM")
        }
        guard case .sqlPassword = try config("Authentication=SqlPassword;UID=u;PWD=p").authentication else {
            return XCTFail("SqlPassword")
        }
        // Integrated security without a password is Kerberos (KerberosConfigurationTests).
        for entry in ["Integrated Security=SSPI", "Trusted_Connection=yes"] {
            guard case .kerberos = try config(entry).authentication else { return XCTFail(entry) }
        }
        for entry in ["Authentication=ActiveDirectoryPassword", "Authentication=ActiveDirectoryIntegrated"] {
            XCTAssertThrowsError(try config(entry), entry) { XCTAssertEqual(($0 as? SQLClientError)?.code, .unsupported) }
        }
        XCTAssertThrowsError(try config("Authentication=ActiveDirectoryAccessToken;Integrated Security=true;UID=A\\b;PWD=x"))
        // Never a token or password in a description.
        XCTAssertEqual(SQLAuthentication.accessToken("eyJhbGciOi.secret").description, "accessToken(redacted)")
        XCTAssertFalse(SQLAuthentication.ntlm(NTLMCredentials(domain: "D", user: "u", password: "hunter2")).description.contains("hunter2"))
    }

    func testRetryPolicyRanges() {
        XCTAssertNoThrow(try SQLConnectRetryPolicy(count: 255, interval: .seconds(60)).validate())
        XCTAssertThrowsError(try SQLConnectRetryPolicy(count: 256).validate())
        XCTAssertThrowsError(try SQLConnectRetryPolicy(interval: .milliseconds(500)).validate())
        XCTAssertEqual(SQLKeepAlive(idle: .seconds(1_000_000), interval: .zero).seconds.idle, 32_767)
        XCTAssertEqual(SQLKeepAlive(idle: .seconds(1_000_000), interval: .zero).seconds.interval, 1)
    }
}
