#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
import Foundation
import XCTest
@testable import SQLClient

/// A TLS server over memory BIOs, to drive ``OpenSSLTLSSession`` without a socket.
final class MemoryTLSServer {
    private let ctx: OpaquePointer
    private let ssl: OpaquePointer
    private let rbio: OpaquePointer
    private let wbio: OpaquePointer
    private(set) var isComplete = false

    init(certificate: String, key: String) throws {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw SQLClientError(.tlsFailed, "ctx") }
        guard SSL_CTX_use_certificate_file(ctx, certificate, SSL_FILETYPE_PEM) == 1,
              SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1,
              let ssl = SSL_new(ctx), let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            SSL_CTX_free(ctx)
            throw SQLClientError(.tlsFailed, "server setup")
        }
        _ = csqlclient_SSL_CTX_set_max_proto_version(ctx, csqlclient_TLS_version(13))
        SSL_set_bio(ssl, rbio, wbio)
        SSL_set_accept_state(ssl)
        self.ctx = ctx
        self.ssl = ssl
        self.rbio = rbio
        self.wbio = wbio
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(ctx)
    }

    /// Feeds client bytes; returns the server's reply bytes. A failed handshake returns what the
    /// server has to say (an alert) and leaves `isComplete` false.
    func feed(_ bytes: [UInt8]) -> [UInt8] {
        if !bytes.isEmpty { _ = bytes.withUnsafeBytes { BIO_write(rbio, $0.baseAddress, Int32($0.count)) } }
        if !isComplete && SSL_do_handshake(ssl) == 1 { isComplete = true }
        return drain()
    }

    func encrypt(_ bytes: [UInt8]) -> [UInt8] {
        _ = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        return drain()
    }

    func decrypt(_ bytes: [UInt8]) -> [UInt8] {
        _ = bytes.withUnsafeBytes { BIO_write(rbio, $0.baseAddress, Int32($0.count)) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            out += buffer[0 ..< Int(n)]
        }
        return out
    }

    private func drain() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while csqlclient_BIO_pending(wbio) > 0 {
            let n = buffer.withUnsafeMutableBytes { BIO_read(wbio, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            out += buffer[0 ..< Int(n)]
        }
        return out
    }
}

final class OpenSSLTLSSessionTests: XCTestCase {
    private func certificates() throws -> TestCertificates {
        do { return try TestCertificates.make() } catch {
            throw XCTSkip("cannot make test certificates with the openssl command: \(error)")
        }
    }

    /// Runs a handshake between a client session and a memory server; returns the client.
    @discardableResult
    private func handshake(serverName: String, _ configuration: TLSConfiguration,
                           certs: TestCertificates) throws -> (any TLSSession, MemoryTLSServer) {
        let server = try MemoryTLSServer(certificate: certs.serverCertificate, key: certs.serverKey)
        let client = try OpenSSLTLSProvider().makeClientSession(serverName: serverName, configuration: configuration)
        var toServer = try waitFor { try await client.startHandshake() }
        XCTAssertEqual(toServer.first, 0x16, "a ClientHello is a TLS handshake record")
        for _ in 0 ..< 10 {
            let toClient = server.feed(toServer)
            let step = try waitFor { try await client.continueHandshake(toClient) }
            toServer = step.output
            if step.isComplete {
                if !toServer.isEmpty { _ = server.feed(toServer) }
                return (client, server)
            }
        }
        XCTFail("the handshake did not finish in 10 rounds")
        return (client, server)
    }

    func testHandshakeWithCAFileAndHostNameThenRecordsBothWays() throws {
        let certs = try certificates()
        let (client, server) = try handshake(serverName: "localhost",
                                             TLSConfiguration(caFile: certs.caCertificate), certs: certs)
        XCTAssertTrue(server.isComplete)
        XCTAssertEqual(client.negotiatedProtocol, "TLSv1.2")
        XCTAssertNotNil(client.peerCertificateDER)
        let message = Array("LOGIN7 would travel here".utf8)
        let record = try waitFor { try await client.encrypt(message) }
        XCTAssertEqual(record.first, 0x17, "application data record")
        XCTAssertNotEqual(Array(record.dropFirst(5)), message)
        XCTAssertEqual(server.decrypt(record), message)
        let reply = server.encrypt(Array("LOGINACK".utf8))
        // Fed one byte at a time, the client returns the plaintext only when the record is whole.
        var plain: [UInt8] = []
        for byte in reply { plain += try waitFor { try await client.decrypt([byte]) } }
        XCTAssertEqual(String(decoding: plain, as: UTF8.self), "LOGINACK")
    }

    func testIPAddressIsCheckedAgainstTheIPSubjectAltName() throws {
        let certs = try certificates()
        try handshake(serverName: "127.0.0.1", TLSConfiguration(caFile: certs.caCertificate), certs: certs)
        XCTAssertThrowsError(try handshake(serverName: "127.0.0.2", TLSConfiguration(caFile: certs.caCertificate),
                                           certs: certs)) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .certificateVerificationFailed)
        }
    }

    func testWrongHostNameIsRefused() throws {
        let certs = try certificates()
        XCTAssertThrowsError(try handshake(serverName: "db.example.org",
                                           TLSConfiguration(caFile: certs.caCertificate), certs: certs)) { error in
            let e = error as? SQLClientError
            XCTAssertEqual(e?.code, .certificateVerificationFailed)
            XCTAssertTrue(e?.message.contains("db.example.org") ?? false, "\(error)")
            XCTAssertTrue(e?.message.contains("hostname mismatch") ?? false, "\(error)")
        }
        // hostNameInCertificate names what the certificate carries when connecting by another name.
        try handshake(serverName: "db.example.org",
                      TLSConfiguration(caFile: certs.caCertificate, hostNameInCertificate: "localhost"), certs: certs)
    }

    func testUnknownCAIsRefusedUnlessTrusted() throws {
        let certs = try certificates()
        XCTAssertThrowsError(try handshake(serverName: "localhost",
                                           TLSConfiguration(caFile: certs.otherCACertificate), certs: certs)) { error in
            let e = error as? SQLClientError
            XCTAssertEqual(e?.code, .certificateVerificationFailed)
            XCTAssertTrue(e?.message.contains("unable to get local issuer certificate") ?? false, "\(error)")
        }
        // The system trust store does not know the test CA either.
        XCTAssertThrowsError(try handshake(serverName: "localhost", TLSConfiguration(), certs: certs)) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .certificateVerificationFailed)
        }
        // Trusting the server certificate skips the chain and the name.
        let (client, _) = try handshake(serverName: "anything.invalid",
                                        TLSConfiguration(trustServerCertificate: true), certs: certs)
        XCTAssertEqual(client.negotiatedProtocol, "TLSv1.2")
    }

    func testRefusalsNameTheCauseAndSuggestTheCAFileOrHostNameBeforeTheTrustSwitch() throws {
        let certs = try certificates()
        XCTAssertThrowsError(try handshake(serverName: "db.example.org",
                                           TLSConfiguration(caFile: certs.caCertificate), certs: certs)) { error in
            let text = (error as? SQLClientError)?.message ?? ""
            XCTAssertTrue(text.contains("does not name \"db.example.org\""), text)
            let hint = try? XCTUnwrap(text.range(of: "hostNameInCertificate"))
            let trust = try? XCTUnwrap(text.range(of: "trustServerCertificate"))
            XCTAssertTrue(hint != nil && trust != nil && hint!.lowerBound < trust!.lowerBound, text)
        }
        XCTAssertThrowsError(try handshake(serverName: "localhost",
                                           TLSConfiguration(caFile: certs.otherCACertificate), certs: certs)) { error in
            let text = (error as? SQLClientError)?.message ?? ""
            XCTAssertTrue(text.contains("not signed by a trusted certificate authority"), text)
            XCTAssertLessThan(text.range(of: "caFile (CA File=)")?.lowerBound ?? text.endIndex,
                              text.range(of: "trustServerCertificate")?.lowerBound ?? text.startIndex, text)
        }
    }

    func testServerCertificatePinsTheExactCertificateInPEMOrDER() throws {
        let certs = try certificates()
        // An exact match is the whole verification: no CA known, and a name the certificate lacks.
        let (client, _) = try handshake(serverName: "db.example.org",
                                        TLSConfiguration(serverCertificate: certs.serverCertificate), certs: certs)
        let presented = try XCTUnwrap(client.peerCertificateDER)
        let pem = try XCTUnwrap(FileManager.default.contents(atPath: certs.serverCertificate))
        XCTAssertEqual(TLSConfiguration.certificateDER(fromFileContents: [UInt8](pem)), presented)
        // The same certificate as DER bytes (a .cer file).
        let der = certs.directory.appendingPathComponent("server.cer")
        try Data(presented).write(to: der)
        try handshake(serverName: "localhost", TLSConfiguration(serverCertificate: der.path), certs: certs)
    }

    func testServerCertificateRefusesAnotherCertificateEvenWithAValidChain() throws {
        let certs = try certificates()
        XCTAssertThrowsError(try handshake(serverName: "localhost",
                                           TLSConfiguration(caFile: certs.caCertificate,
                                                            serverCertificate: certs.caCertificate),
                                           certs: certs)) { error in
            let e = error as? SQLClientError
            XCTAssertEqual(e?.code, .certificateVerificationFailed)
            XCTAssertTrue(e?.message.contains("is not the certificate in serverCertificate") ?? false, "\(error)")
        }
    }

    func testUnreadableServerCertificateFailsUnlessVerificationIsOff() throws {
        XCTAssertThrowsError(try OpenSSLTLSProvider().makeClientSession(
            serverName: "localhost", configuration: TLSConfiguration(serverCertificate: "/nonexistent/server.cer"))) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration)
            XCTAssertTrue((error as? SQLClientError)?.message.contains("/nonexistent/server.cer") ?? false)
        }
        // TrustServerCertificate turns verification off: the pin is not consulted (as in SqlClient).
        XCTAssertNoThrow(try OpenSSLTLSProvider().makeClientSession(
            serverName: "localhost",
            configuration: TLSConfiguration(trustServerCertificate: true, serverCertificate: "/nonexistent/server.cer")))
    }

    func testMissingCAFileIsATLSError() throws {
        XCTAssertThrowsError(try OpenSSLTLSProvider().makeClientSession(
            serverName: "localhost", configuration: TLSConfiguration(caFile: "/nonexistent/ca.pem"))) { error in
            let e = error as? SQLClientError
            XCTAssertEqual(e?.code, .tlsFailed)
            XCTAssertTrue(e?.message.contains("/nonexistent/ca.pem") ?? false)
        }
    }

    func testTLS13CanBeOffered() throws {
        let certs = try certificates()
        let (client, _) = try handshake(serverName: "localhost",
                                        TLSConfiguration(caFile: certs.caCertificate, maximumVersion: .tls1_3),
                                        certs: certs)
        XCTAssertEqual(client.negotiatedProtocol, "TLSv1.3")
    }

    func testEncryptBeforeHandshakeIsRefused() throws {
        let client = try OpenSSLTLSProvider().makeClientSession(
            serverName: "localhost", configuration: TLSConfiguration(trustServerCertificate: true))
        XCTAssertThrowsError(try waitFor { try await client.encrypt([1, 2, 3]) }) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .tlsFailed)
        }
    }
}
#endif
