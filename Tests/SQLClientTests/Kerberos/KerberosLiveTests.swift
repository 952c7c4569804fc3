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

/// Kerberos end to end against a real MIT KDC (scripts/kdc.sh) and MIT's GSSAPI acceptor in front of
/// pysqlbridge (scripts/pysqlbridge_kerberos.py): the login, the server seeing the Kerberos principal,
/// and each failure a clear typed error well within the login timeout.
final class KerberosLiveTests: XCTestCase {
    /// The login timeout of these tests: every failure must come well before it.
    static let loginTimeout: Duration = .seconds(10)

    override class func tearDown() {
        KerberosRealm.stopShared()
        super.tearDown()
    }

    private func config(port: Int, _ credentials: KerberosCredentials, encryption: SQLEncryption = .on) -> SQLConnectionConfiguration {
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port), user: "", password: "",
                                           encryption: encryption, tls: TLSConfiguration(trustServerCertificate: true))
        c.authentication = .kerberos(credentials)
        c.connectTimeout = Self.loginTimeout
        return c
    }

    /// Connects with `configuration`, expecting failure: the error and the time it took.
    private func failure(_ configuration: SQLConnectionConfiguration, file: StaticString = #filePath,
                         line: UInt = #line) async -> (SQLClientError?, Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let connection = try await SQLConnection.connect(configuration)
            await connection.close()
            XCTFail("the login succeeded", file: file, line: line)
            return (nil, clock.now - start)
        } catch {
            let elapsed = clock.now - start
            XCTAssertLessThan(elapsed, Self.loginTimeout, "\(error)", file: file, line: line)
            guard let error = error as? SQLClientError else {
                XCTFail("not an SQLClientError: \(error)", file: file, line: line)
                return (nil, elapsed)
            }
            return (error, elapsed)
        }
    }

    private func login(of connection: SQLConnection) async throws -> String? {
        try await connection.execute("SELECT SUSER_SNAME() AS login").resultSets.first?.rows.first?["login"]?.stringValue
    }

    /// kinit's ticket in a cache; the SPN derived from 127.0.0.1 (reverse lookup: localhost) and the
    /// port; the server's GSSAPI acceptor sees alice@SQLCLIENT.TEST; the AP-REP checked, whether it
    /// comes in the login response's message (as SQL Server sends it) or in a message of its own.
    func testLoginThroughTheKDCWithTheTicketCache() async throws {
        let realm = try KerberosRealm.shared()
        do {
            let (separate, port) = try realm.startServer(separateFinalToken: true)
            defer { separate.stop() }
            try realm.addService("MSSQLSvc/localhost:\(port)")
            let connection = try await SQLConnection.connect(config(port: port, KerberosCredentials(credentialCache: try realm.kinit())))
            let principal = try await login(of: connection)
            XCTAssertEqual(principal, "alice@\(KerberosRealm.realm)")
            await connection.close()
        }
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let cache = try realm.kinit()
        XCTAssertEqual(KerberosAuthenticator.servicePrincipalName(for: SQLServerAddress(host: "127.0.0.1", port: port), port: port,
                                                                  credentials: KerberosCredentials()), "MSSQLSvc/localhost:\(port)")
        let connection = try await SQLConnection.connect(config(port: port, KerberosCredentials(credentialCache: cache)))
        let principal = try await login(of: connection)
        XCTAssertEqual(principal, "alice@\(KerberosRealm.realm)")
        let name = try await connection.execute("SELECT name FROM people WHERE id = 1").resultSets.first?.rows.first?["name"]?.stringValue
        XCTAssertNotNil(name)
        await connection.close()

        // The connection string: Integrated Security=SSPI with the default cache (KRB5CCNAME).
        setenv("KRB5CCNAME", cache, 1)
        defer { unsetenv("KRB5CCNAME") }
        for key in ["Integrated Security=SSPI", "Trusted_Connection=yes", "Integrated Security=true;ServerSPN=MSSQLSvc/localhost:\(port)"] {
            let viaString = try await SQLConnection.connect(connectionString:
                "Server=127.0.0.1,\(port);\(key);TrustServerCertificate=true;Connect Timeout=10")
            let who = try await login(of: viaString)
            XCTAssertEqual(who, "alice@\(KerberosRealm.realm)", key)
            await viaString.close()
        }
    }

    /// A keytab and principal from the configuration (gss_acquire_cred_from's client_keytab): no kinit.
    func testLoginWithKeytabAndPrincipalFromConfiguration() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let empty = "MEMORY:sqlclient-keytab-test-\(UUID().uuidString.prefix(8))"
        let connection = try await SQLConnection.connect(config(port: port, KerberosCredentials(
            principal: "alice@\(KerberosRealm.realm)", keytab: realm.clientKeytab, credentialCache: empty)))
        let who = try await login(of: connection)
        XCTAssertEqual(who, "alice@\(KerberosRealm.realm)")
        await connection.close()
    }

    /// No ticket: a cache that does not exist.
    func testNoTicketIsAClearError() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let missing = "FILE:" + realm.directory.appendingPathComponent("no-such-cache").path
        let (error, _) = await failure(config(port: port, KerberosCredentials(credentialCache: missing)))
        XCTAssertEqual(error?.code, .loginFailed, "\(String(describing: error))")
        XCTAssertEqual((error?.underlying as? KerberosError)?.kind, .noCredentials, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("kinit") ?? false, "\(String(describing: error))")
    }

    /// An expired ticket: a principal whose tickets live 1 s (kdc.sh's shortlived), the realm's clock
    /// skew 1 s. The test waits for klist to call the ticket expired (about 2 s, polled).
    func testExpiredTicketIsAClearError() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let cache = try realm.kinit("shortlived", lifetime: "1s")
        let until = Date().addingTimeInterval(5)
        while realm.hasValidTicket(cache), Date() < until { try await Task.sleep(for: .milliseconds(200)) }
        XCTAssertFalse(realm.hasValidTicket(cache), "the 1-second ticket did not expire")
        try await Task.sleep(for: .seconds(1.1)) // past the realm's 1 s clock skew
        let (error, _) = await failure(config(port: port, KerberosCredentials(credentialCache: cache)))
        XCTAssertEqual(error?.code, .loginFailed, "\(String(describing: error))")
        XCTAssertEqual((error?.underlying as? KerberosError)?.kind, .credentialsExpired, "\(String(describing: error))")
    }

    /// ServerSPN names a principal the KDC does not have.
    func testWrongSPNIsAClearError() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        let cache = try realm.kinit()
        let (error, _) = await failure(config(port: port, KerberosCredentials(serverSPN: "MSSQLSvc/no-such-host.sqlclient.test:1433",
                                                                           credentialCache: cache)))
        XCTAssertEqual(error?.code, .loginFailed, "\(String(describing: error))")
        XCTAssertEqual((error?.underlying as? KerberosError)?.kind, .unknownServer, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("SPN") ?? false, "\(String(describing: error))")
    }

    /// A ticket-granting ticket but no KDC to get the service ticket from (krb5.conf names a closed port).
    func testKDCUnreachableIsAClearError() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let cache = try realm.kinit()
        setenv("KRB5_CONFIG", try realm.unreachableConfig(), 1)
        defer { setenv("KRB5_CONFIG", realm.krb5Config, 1) }
        let (error, _) = await failure(config(port: port, KerberosCredentials(credentialCache: cache)))
        XCTAssertEqual(error?.code, .loginFailed, "\(String(describing: error))")
        XCTAssertEqual((error?.underlying as? KerberosError)?.kind, .kdcUnreachable, "\(String(describing: error))")
    }

    /// A KDC that accepts the TCP connection and never answers: the login fails with `.timeout` at
    /// the login timeout (2 s here), not after Kerberos's own retries.
    func testSilentKDCEndsAtTheLoginTimeout() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let cache = try realm.kinit()
        let (silent, silentPort) = KerberosRealm.loopbackSocket(listening: true)
        guard silent >= 0 else { throw XCTSkip("no loopback socket for the silent KDC") }
        defer { close(silent) }
        setenv("KRB5_CONFIG", try realm.config(kdcPort: silentPort), 1)
        defer { setenv("KRB5_CONFIG", realm.krb5Config, 1) }
        var c = config(port: port, KerberosCredentials(credentialCache: cache))
        c.connectTimeout = .seconds(2)
        let (error, elapsed) = await failure(c)
        XCTAssertEqual(error?.code, .timeout, "\(String(describing: error))")
        XCTAssertLessThan(elapsed, .seconds(4))
    }

    /// The server cannot accept the ticket (its keytab lacks the SPN's key) and closes the connection.
    func testServerRefusingTheTokenIsAClearError() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer(keytab: realm.clientKeytab)
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let cache = try realm.kinit()
        let (error, _) = await failure(config(port: port, KerberosCredentials(credentialCache: cache)))
        XCTAssertEqual(error?.code, .loginFailed, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("refused") ?? false, "\(String(describing: error))")
    }

    /// A hostile server answering the Kerberos token with garbage SSPI tokens (no GSSAPI on its side:
    /// SQLClientTesting's scripted server): each a typed error, bounded, no crash; and a server that
    /// sends LOGINACK without proving itself (no AP-REP) is refused (mutual authentication).
    func testHostileServerTokensAndMissingMutualAuthentication() async throws {
        let realm = try KerberosRealm.shared()
        let spn = "MSSQLSvc/hostile.sqlclient.test:1433"
        try realm.addService(spn)
        let cache = try realm.kinit()
        var garbage: [[UInt8]] = [
            [],                                                                       // an empty token
            [0xA1, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],                                    // a 4-byte length past the end
            [0xA1, 0x07, 0x30, 0x05, 0xA0, 0x03, 0x0A, 0x01, 0x02],                  // NegTokenResp: reject
            [0xA1, 0x0C, 0x30, 0x0A, 0xA0, 0x03, 0x0A, 0x01, 0x00, 0xA2, 0x03, 0x04, 0x01, 0x00], // accept-completed, junk AP-REP
            [0x60, 0x80, 0x00, 0x00],                                                  // indefinite length
            Array(repeating: 0xA1, count: 4000),
        ]
        var generator = SystemRandomNumberGenerator()
        garbage.append((0 ..< 300).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
        for token in garbage {
            var behaviour = LoginScenarioServer.Behaviour()
            behaviour.ntlmChallenge = token
            let server = try LoginScenarioServer(name: "hostile", behaviour: behaviour)
            defer { server.stop() }
            let (error, _) = await failure(config(port: Int(server.port), KerberosCredentials(serverSPN: spn, credentialCache: cache),
                                                  encryption: .notSupported))
            XCTAssertTrue([.protocolError, .loginFailed].contains(error?.code), "\(token.prefix(8)): \(String(describing: error))")
            XCTAssertNotNil(error?.underlying as? KerberosError, "\(token.prefix(8)): \(String(describing: error))")
            // The LOGIN7 carried GSSAPI's SPNEGO token (an [APPLICATION 0] with the SPNEGO OID).
            let sspi = server.records.first?.login?.sspi ?? []
            XCTAssertEqual(Array(sspi.prefix(1)), [0x60])
            XCTAssertNotNil(sspi.firstRange(of: SPNEGO.spnegoOID))
        }
        let silent = try LoginScenarioServer(name: "no-ap-rep", behaviour: .init())
        defer { silent.stop() }
        let (error, _) = await failure(config(port: Int(silent.port), KerberosCredentials(serverSPN: spn, credentialCache: cache),
                                              encryption: .notSupported))
        XCTAssertEqual(error?.code, .loginFailed, "\(String(describing: error))")
        XCTAssertEqual((error?.underlying as? KerberosError)?.kind, .mutualAuthenticationFailed, "\(String(describing: error))")
    }

    /// sqlclient -E (sqlcmd's trusted connection) against the same realm and acceptor; --server-spn.
    func testCLITrustedConnection() async throws {
        let realm = try KerberosRealm.shared()
        let (server, port) = try realm.startServer()
        defer { server.stop() }
        try realm.addService("MSSQLSvc/localhost:\(port)")
        let cache = try realm.kinit()
        let env = ["KRB5_CONFIG": realm.krb5Config, "KRB5CCNAME": cache]
        let result = try CLI.run(["-S", "127.0.0.1,\(port)", "-E", "-C", "-h", "-1", "-Q", "SELECT SUSER_SNAME()"], environment: env)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout.split(separator: "\n").first.map(String.init)?.trimmingCharacters(in: .whitespaces),
                       "alice@\(KerberosRealm.realm)", result.stdout + result.stderr)
        let wrong = try CLI.run(["-S", "127.0.0.1,\(port)", "-E", "-C", "--server-spn", "MSSQLSvc/nowhere.sqlclient.test:1", "-Q", "SELECT 1"],
                                environment: env)
        XCTAssertEqual(wrong.status, 3, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("SPN"), wrong.stderr)
    }
}
