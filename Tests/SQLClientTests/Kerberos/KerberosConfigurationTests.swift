#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// Kerberos without a KDC: the connection-string keys, the SPN Microsoft's drivers would use, the
/// error kinds read from GSSAPI status codes, and a machine without libgssapi_krb5 (simulated with
/// SQLCLIENT_GSSAPI_LIBRARY): a clear `.unsupported` naming the Debian package, or NTLM when the
/// configuration gives a fallback.
final class KerberosConfigurationTests: XCTestCase {
    private func authentication(_ text: String) throws -> SQLAuthentication {
        try SQLConnectionConfiguration(connectionString: "Server=sql1.example.com;" + text).authentication
    }

    func testConnectionStringKeysSelectKerberos() throws {
        for entry in ["Integrated Security=true", "Integrated Security=SSPI", "Trusted_Connection=yes", "Integrated Security=yes"] {
            guard case .kerberos(let k) = try authentication(entry) else { return XCTFail(entry) }
            XCTAssertNil(k.serverSPN, entry)
            XCTAssertNil(k.principal, entry)
        }
        guard case .kerberos(let k) = try authentication("Integrated Security=SSPI;ServerSPN=MSSQLSvc/sql1.example.com:1433@EXAMPLE.COM;UID=bob@EXAMPLE.COM")
        else { return XCTFail("ServerSPN") }
        XCTAssertEqual(k.serverSPN, "MSSQLSvc/sql1.example.com:1433@EXAMPLE.COM")
        XCTAssertEqual(k.principal, "bob@EXAMPLE.COM")
        guard case .kerberos(let spaced) = try authentication("Trusted_Connection=yes;Server SPN = MSSQLSvc/x:1") else { return XCTFail("Server SPN") }
        XCTAssertEqual(spaced.serverSPN, "MSSQLSvc/x:1")
        // A password still means NTLM; no integrated security means SQL authentication.
        guard case .ntlm = try authentication(#"Integrated Security=true;User ID=CORP\alice;Password=pw"#) else { return XCTFail("NTLM") }
        guard case .sqlPassword = try authentication("Integrated Security=false;User ID=sa;Password=pw") else { return XCTFail("SQL") }
        guard case .sqlPassword = try authentication("ServerSPN=MSSQLSvc/x:1;User ID=sa;Password=pw") else { return XCTFail("SPN alone") }
        XCTAssertThrowsError(try authentication(#"User ID=CORP\alice"#)) { XCTAssertEqual(($0 as? SQLClientError)?.code, .invalidConfiguration) }
        XCTAssertThrowsError(try authentication("Integrated Security=maybe"))
        // A description names no key material.
        let described = SQLAuthentication.kerberos(KerberosCredentials(principal: "a@R", keytab: "/secret/path.keytab",
            ntlmFallback: NTLMCredentials(domain: "D", user: "u", password: "hunter2"))).description
        XCTAssertFalse(described.contains("hunter2"))
        XCTAssertFalse(described.contains("/secret/path.keytab"))
        XCTAssertTrue(described.hasPrefix("kerberos("), described)
    }

    /// MSSQLSvc/<fqdn>:<port>, :<instance> for a named instance without a port, the explicit ServerSPN,
    /// and the host canonicalised (an address by reverse lookup).
    func testServicePrincipalName() {
        let upper: (String) -> String = { $0.uppercased() + ".CORP.EXAMPLE.COM" }
        func spn(_ address: SQLServerAddress, port: Int = 1433, _ k: KerberosCredentials = KerberosCredentials()) -> String {
            KerberosAuthenticator.servicePrincipalName(for: address, port: port, credentials: k, canonicalize: upper)
        }
        XCTAssertEqual(spn(SQLServerAddress(host: "sql1")), "MSSQLSvc/SQL1.CORP.EXAMPLE.COM:1433")
        XCTAssertEqual(spn(SQLServerAddress(host: "sql1", port: 14_330)), "MSSQLSvc/SQL1.CORP.EXAMPLE.COM:14330")
        XCTAssertEqual(spn(SQLServerAddress(host: "sql1", instance: "SALES"), port: 49_152), "MSSQLSvc/SQL1.CORP.EXAMPLE.COM:SALES")
        XCTAssertEqual(spn(SQLServerAddress(host: "sql1", port: 2000, instance: "SALES")), "MSSQLSvc/SQL1.CORP.EXAMPLE.COM:2000")
        XCTAssertEqual(spn(SQLServerAddress(host: "sql1"), KerberosCredentials(serverSPN: " MSSQLSvc/other:1 ")), "MSSQLSvc/other:1")
        XCTAssertEqual(spn(SQLServerAddress(host: "sql1"), KerberosCredentials(serverSPN: "")), "MSSQLSvc/SQL1.CORP.EXAMPLE.COM:1433")
        // The real lookups: 127.0.0.1 is localhost in /etc/hosts; an unknown name stays as given.
        XCTAssertEqual(KerberosAuthenticator.canonicalHostName("127.0.0.1"), "localhost")
        XCTAssertEqual(KerberosAuthenticator.canonicalHostName("localhost"), "localhost")
        XCTAssertEqual(KerberosAuthenticator.canonicalHostName("no-such-host.invalid"), "no-such-host.invalid")
        XCTAssertEqual(KerberosAuthenticator.canonicalHostName(""), "")
    }

    func testErrorKindsFromMITStatusCodes() {
        func kind(_ major: UInt32, _ minor: Int32) -> KerberosError.Kind {
            KerberosError(major: major, minor: UInt32(bitPattern: minor), text: "").kind
        }
        XCTAssertEqual(kind(0x000D_0000, -1_765_328_228), .kdcUnreachable)
        XCTAssertEqual(kind(0x000D_0000, -1_765_328_377), .unknownServer)
        XCTAssertEqual(kind(0x000D_0000, -1_765_328_352), .credentialsExpired)
        XCTAssertEqual(kind(0x0007_0000, -1_765_328_189), .noCredentials)
        XCTAssertEqual(kind(0x0007_0000, 0), .noCredentials)
        XCTAssertEqual(kind(0x000B_0000, 0), .credentialsExpired)
        XCTAssertEqual(kind(0x0009_0000, 0), .defectiveToken)
        XCTAssertEqual(kind(0x000D_0000, 12), .other)
        XCTAssertTrue(LoginAuthentication.allowsNTLMFallback(SQLClientError(.unsupported, "no library")))
        XCTAssertTrue(LoginAuthentication.allowsNTLMFallback(SQLClientError(.loginFailed, "", underlying: KerberosError(.unknownServer, ""))))
        XCTAssertFalse(LoginAuthentication.allowsNTLMFallback(SQLClientError(.loginFailed, "", underlying: KerberosError(.credentialsExpired, ""))))
        XCTAssertFalse(LoginAuthentication.allowsNTLMFallback(SQLClientError(.timeout, "")))
    }

    /// No libgssapi_krb5 (SQLCLIENT_GSSAPI_LIBRARY names a library that does not exist): Kerberos is
    /// `.unsupported` naming the Debian package, before anything but PRELOGIN is sent; with an NTLM
    /// fallback the login goes on with NTLM (the LOGIN7 carries an NTLM NEGOTIATE_MESSAGE).
    func testWithoutLibgssapiTheErrorNamesThePackageAndNTLMFallsBack() async throws {
        #if canImport(GSS)
        throw XCTSkip("GSS.framework is part of the system: there is no library to miss")
        #endif
        let before = ProcessInfo.processInfo.environment["SQLCLIENT_GSSAPI_LIBRARY"]
        setenv("SQLCLIENT_GSSAPI_LIBRARY", "libgssapi_krb5_absent_for_tests.so.9", 1)
        defer { if let before { setenv("SQLCLIENT_GSSAPI_LIBRARY", before, 1) } else { unsetenv("SQLCLIENT_GSSAPI_LIBRARY") } }
        let server = try LoginScenarioServer(name: "no-gssapi", behaviour: .init())
        defer { server.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "", password: "",
                                                encryption: .notSupported)
        config.connectTimeout = .seconds(10)
        config.authentication = .kerberos(KerberosCredentials())
        do {
            _ = try await SQLConnection.connect(config)
            XCTFail("Kerberos without a GSSAPI library logged in")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .unsupported, "\(error)")
            XCTAssertTrue(error.message.contains("libgssapi-krb5-2"), error.message)
            XCTAssertEqual((error.underlying as? KerberosError)?.kind, .libraryUnavailable)
        }
        XCTAssertNil(server.records.first?.login, "no LOGIN7 is sent when Kerberos cannot start")

        config.authentication = .kerberos(KerberosCredentials(ntlmFallback: NTLMCredentials(domain: "CORP", user: "alice", password: "pw")))
        let fallback = try LoginScenarioServer(name: "ntlm-fallback", behaviour: .init())
        defer { fallback.stop() }
        config.address = SQLServerAddress(host: "127.0.0.1", port: Int(fallback.port))
        // The scripted server accepts LOGIN7 without an SSPI leg: enough to see what LOGIN7 carried.
        let connection = try await SQLConnection.connect(config)
        await connection.close()
        let sspi = fallback.records.first?.login?.sspi ?? []
        XCTAssertEqual(Array(sspi.prefix(8)), Array("NTLMSSP\0".utf8), "LOGIN7's SSPI field holds NTLM's NEGOTIATE_MESSAGE")
    }
}

/// The SSPI tokens a server may send in one login: NTLM one, Kerberos (SPNEGO) at most
/// ``KerberosAuthenticator/maximumLegs``; one more is a protocol error, not another GSSAPI call.
final class KerberosSSPILegTests: XCTestCase {
    func testSSPITokensPerLoginAreBounded() {
        for limit in [1, KerberosAuthenticator.maximumLegs] {
            var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false, expectsSSPI: true)
            machine.configureLogin(maximumSSPITokens: limit)
            _ = machine.connected()
            _ = machine.preloginReceived(Prelogin(encryption: .notSupported))
            let token = Token.sspi(SSPIToken(buffer: [0xA1, 0x00]))
            for leg in 1 ... limit {
                guard case .sspiChallenge(let bytes) = machine.tokenReceived(token) else { return XCTFail("leg \(leg) of \(limit)") }
                XCTAssertEqual(bytes, [0xA1, 0x00])
                XCTAssertTrue(machine.messageEnded().isEmpty, "the client's answer comes next")
            }
            guard case .closeConnection(let context) = machine.tokenReceived(token) else { return XCTFail("token \(limit + 1) was taken") }
            XCTAssertEqual(context.error.code, .protocolError)
            XCTAssertTrue(context.error.message.contains(limit == 1 ? "NTLM has only one" : "more than \(limit) SSPI tokens"), context.error.message)
        }
    }
}

/// `sqlclient -E` on a machine without libgssapi_krb5 (simulated): exit status 3 and the Debian
/// package named; with `-U DOMAIN\user -P …` the login falls back to NTLM.
final class KerberosCLIWithoutLibraryTests: XCTestCase {
    func testTrustedConnectionWithoutLibgssapi() throws {
        #if canImport(GSS)
        throw XCTSkip("GSS.framework is part of the system: there is no library to miss")
        #endif
        let server = try LoginScenarioServer(name: "cli-no-gssapi", behaviour: .init())
        defer { server.stop() }
        let env = ["SQLCLIENT_GSSAPI_LIBRARY": "libgssapi_krb5_absent_for_tests.so.9"]
        let target = ["-S", "127.0.0.1,\(server.port)", "-N", "disable", "-l", "10", "-Q", "SELECT 1"]
        let missing = try CLI.run(["-E"] + target, environment: env)
        XCTAssertEqual(missing.status, 3, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("libgssapi-krb5-2"), missing.stderr)
        let fallback = try CLI.run(["-E", "-U", #"CORP\alice"#, "-P", "Xq7-secret"] + target, environment: env)
        XCTAssertEqual(fallback.status, 0, fallback.stderr)
        XCTAssertFalse(fallback.stderr.contains("Xq7-secret"), fallback.stderr)
        let sspi = server.records.last?.login?.sspi ?? []
        XCTAssertEqual(Array(sspi.prefix(8)), Array("NTLMSSP\0".utf8), "LOGIN7 carried NTLM's NEGOTIATE_MESSAGE")
    }
}
