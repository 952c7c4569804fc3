#if canImport(CSQLClientOpenSSL)
import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// The replay server's TLS inside PRELOGIN: code under test keeps its default encryption and
/// only trusts the generated CA.
final class ReplayServerTLSTests: XCTestCase {
    static let session = try! ReplaySession(text: """
        >>> SQL_BATCH
        | SELECT 1 AS c
        <<<
        81 01 00 00 00 00 00 09 00 38 01 63 00
        D1 01 00 00 00
        FD 10 00 C1 00 01 00 00 00 00 00 00 00
        """)

    func configuration(port: UInt16, encryption: SQLEncryption, caFile: String?) -> SQLConnectionConfiguration {
        SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
                                   encryption: encryption, tls: TLSConfiguration(caFile: caFile),
                                   connectTimeout: .seconds(10))
    }

    func testDefaultEncryptionRunsTheWholeSessionUnderTLSWithTheGeneratedCA() async throws {
        let identity = try TLSServerIdentity.generated()
        let server = ReplayServer(session: Self.session, options: .init(tls: identity))
        let port = try server.start()
        defer { server.stop() }
        let config = configuration(port: port, encryption: .on, caFile: try identity.caCertificateFile())
        XCTAssertEqual(config.encryption, try SQLConnectionConfiguration(server: "x", user: "u", password: "p").encryption,
                       "the test uses the default encryption")
        let connection = try await SQLConnection.connect(config)
        let results = try await connection.execute("SELECT 1 AS c")
        XCTAssertEqual(results.resultSets.first?.rows.first?["c"], .int(1))
        await connection.close()
        server.stop()
        let log = try XCTUnwrap(server.connections.first)
        XCTAssertEqual(log.clientEncryption, Prelogin.Encryption.on.rawValue)
        XCTAssertEqual(log.tlsProtocol, "TLSv1.2")
        XCTAssertFalse(log.tlsLoginOnly)
        XCTAssertEqual(log.requests, [.login7, .sqlBatch("SELECT 1 AS c")])
    }

    func testEncryptOffGetsTLSForTheLoginOnly() async throws {
        let identity = try TLSServerIdentity.generated()
        let server = ReplayServer(session: Self.session, options: .init(tls: identity))
        let port = try server.start()
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(port: port, encryption: .off,
                                                                       caFile: try identity.caCertificateFile()))
        let results = try await connection.execute("SELECT 1 AS c")
        XCTAssertEqual(results.resultSets.first?.rows.first?["c"], .int(1))
        await connection.close()
        server.stop()
        let log = try XCTUnwrap(server.connections.first)
        XCTAssertEqual(log.tlsProtocol, "TLSv1.2")
        XCTAssertTrue(log.tlsLoginOnly)
        XCTAssertEqual(log.requests.count, 2)
    }

    func testACertificateFromAnotherCAIsRefusedByTheClient() async throws {
        let server = ReplayServer(session: Self.session, options: .init(tls: try TLSServerIdentity.generated()))
        let port = try server.start()
        defer { server.stop() }
        let other = try TLSServerIdentity.generate()   // a second CA the client trusts instead
        do {
            let connection = try await SQLConnection.connect(configuration(port: port, encryption: .on,
                                                                           caFile: try other.caCertificateFile()))
            await connection.close()
            XCTFail("the client accepted a certificate its CA did not sign")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .certificateVerificationFailed, "\(error)")
        }
    }

    func testWithoutTLSThePreloginAnswerIsNotSupported() async throws {
        let server = ReplayServer(session: Self.session)
        let port = try server.start()
        defer { server.stop() }
        do {
            let connection = try await SQLConnection.connect(configuration(port: port, encryption: .on, caFile: nil))
            await connection.close()
            XCTFail("encryption .on connected to a plaintext server")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .encryptionNotAvailable, "\(error)")
        }
    }

    func testAnIdentityReadFromFilesIsServed() async throws {
        let generated = try TLSServerIdentity.generate(names: ["localhost", "127.0.0.1"])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("replay-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cert = dir.appendingPathComponent("server.pem"), key = dir.appendingPathComponent("server.key")
        try generated.certificatePEM.write(to: cert, atomically: true, encoding: .utf8)
        try generated.privateKeyPEM.write(to: key, atomically: true, encoding: .utf8)
        let fromFiles = try TLSServerIdentity(certificateFile: cert.path, privateKeyFile: key.path)
        XCTAssertNil(fromFiles.caCertificatePEM)
        let server = ReplayServer(session: Self.session, options: .init(tls: fromFiles))
        let port = try server.start()
        defer { server.stop() }
        let ca = dir.appendingPathComponent("ca.pem")
        try generated.writeCACertificate(to: ca)
        let connection = try await SQLConnection.connect(configuration(port: port, encryption: .on, caFile: ca.path))
        let results = try await connection.execute("SELECT 1 AS c")
        XCTAssertEqual(results.resultSets.first?.rows.first?["c"], .int(1))
        await connection.close()
    }

    func testABadKeyFileIsATypedError() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("replay-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cert = dir.appendingPathComponent("c.pem"), key = dir.appendingPathComponent("k.pem")
        try "not a certificate".write(to: cert, atomically: true, encoding: .utf8)
        try "nor a key".write(to: key, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try TLSServerIdentity(certificateFile: cert.path, privateKeyFile: key.path)) { error in
            XCTAssertTrue(error is TLSServerError, "\(error)")
        }
    }
}
#endif
