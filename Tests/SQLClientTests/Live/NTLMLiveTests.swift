import Foundation
import XCTest
@testable import SQLClient

/// Windows authentication (NTLM) end to end: pysqlbridge's login state machine on its own socket
/// with pyspnego's NTLM acceptor (scripts/pysqlbridge_ntlm.py serve), over TLS, raw NTLMSSP and
/// SPNEGO-wrapped; a wrong password is a clear login failure (pysqlbridge closes the connection
/// without an ERROR token; 18456 itself is tested on the scenario server, SQLConnectionLoginTests).
final class NTLMLiveTests: XCTestCase {
    func testNTLMLoginAgainstPyspnego() async throws {
        let users = try NTLMAcceptor.userFile(["CORP:alice:S3cret-pass", "CORP:bob:other"])
        for spnego in [false, true] {
            let (server, port) = try NTLMAcceptor.startServer(userFile: users, spnego: spnego)
            defer { server.stop() }
            func config(_ password: String) -> SQLConnectionConfiguration {
                var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port), user: "", password: "",
                                                   encryption: .on, tls: TLSConfiguration(trustServerCertificate: true))
                c.authentication = .ntlm(NTLMCredentials(domain: "CORP", user: "alice", password: password,
                                                         wrapping: spnego ? .spnego : .raw))
                c.connectTimeout = .seconds(30)
                return c
            }
            let connection = try await SQLConnection.connect(config("S3cret-pass"))
            let login = try await connection.execute("SELECT SUSER_SNAME() AS login").resultSets.first?.rows.first?["login"]?.stringValue
            XCTAssertEqual(login?.lowercased(), #"corp\alice"#, "spnego: \(spnego)")
            let people = try await connection.execute("SELECT name FROM people WHERE id = 1").resultSets.first?.rows.first?["name"]?.stringValue
            XCTAssertNotNil(people)
            await connection.close()

            do {
                _ = try await SQLConnection.connect(config("wrong"))
                XCTFail("a wrong password logged in (spnego: \(spnego))")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .loginFailed, "\(error)")
                XCTAssertTrue(error.message.contains("refused"), error.message)
                XCTAssertFalse(error.message.contains("wrong"))
            }
        }
    }

    /// A connection string with `Integrated Security=true` and `DOMAIN\user` selects NTLM.
    func testConnectionStringSelectsNTLM() async throws {
        let users = try NTLMAcceptor.userFile(["CORP:alice:S3cret-pass"])
        let (server, port) = try NTLMAcceptor.startServer(userFile: users)
        defer { server.stop() }
        let connection = try await SQLConnection.connect(connectionString:
            #"Server=127.0.0.1,\#(port);Integrated Security=true;User ID=CORP\alice;Password=S3cret-pass;TrustServerCertificate=true"#)
        let login = try await connection.execute("SELECT SUSER_SNAME() AS login").resultSets.first?.rows.first?["login"]?.stringValue
        XCTAssertEqual(login?.lowercased(), #"corp\alice"#)
        await connection.close()
    }
}
