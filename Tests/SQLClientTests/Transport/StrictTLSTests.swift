import Foundation
import XCTest
import TDS
import SQLClientTesting
@testable import SQLClient

/// TDS 8.0 TLS straight on the socket against the scenario server's TLS-first mode: ALPN
/// `tds/8.0` and SNI arrive, the certificate is always verified, PRELOGIN then travels inside TLS.
final class StrictTLSTests: XCTestCase {
    func certificates() throws -> TestCertificates {
        do { return try TestCertificates.make() } catch { throw XCTSkip("openssl is not available: \(error)") }
    }

    func server(_ certs: TestCertificates) throws -> LoginScenarioServer {
        try LoginScenarioServer(behaviour: .init(tlsFirst: .init(certificatePath: certs.serverCertificate, keyPath: certs.serverKey)))
    }

    // The scenario server's TLS-first mode is OpenSSL's (Linux): on Apple platforms the TLS
    // contract (Tests/SQLClientTests/TLSContract) runs strict mode against the Network.framework engine.
    #if canImport(CSQLClientOpenSSL)
    func testHandshakeOffersALPNAndSNIThenCarriesPrelogin() async throws {
        let certs = try certificates()
        let server = try server(certs)
        defer { server.stop() }
        let socket = try await SocketStream.connect(host: "localhost", port: Int(server.port), timeout: .seconds(10))
        defer { socket.close() }
        let session = try OpenSSLTLSProvider().makeStrictClientSession(
            serverName: "localhost", configuration: TLSConfiguration(caFile: certs.caCertificate))
        try await StrictTLS.handshake(session, over: socket)
        XCTAssertEqual(session.applicationProtocol, "tds/8.0")
        let stream = try TLSStream(base: socket, session: session)
        let prelogin = Prelogin(version: .init(major: 1, minor: 0, build: 0), encryption: .notSupported)
        try await stream.write(Packet.encode(message: prelogin.encode(), type: .prelogin, packetSize: 4096))
        var assembler = PacketAssembler()
        var reply: TDSMessage?
        while reply == nil {
            let bytes = try await stream.read(maxLength: 65_536)
            XCTAssertFalse(bytes.isEmpty)
            if bytes.isEmpty { return }
            assembler.append(bytes)
            while let out = try assembler.next() { if let m = out.message { reply = m } }
        }
        XCTAssertEqual(reply?.type, .tabularResult)
        XCTAssertNotNil(try Prelogin.decode(from: reply?.payload ?? []).version)
        let record = try XCTUnwrap(server.records.first)
        XCTAssertEqual(record.alpn, "tds/8.0")
        XCTAssertEqual(record.serverNameIndication, "localhost")
        XCTAssertEqual(record.prelogin?.encryption, .notSupported)
    }

    func testTheCertificateIsVerifiedEvenWhenTrustIsAsked() async throws {
        let certs = try certificates()
        let server = try server(certs)
        defer { server.stop() }
        // trustServerCertificate does not apply in strict mode: the unknown CA (system store) is refused.
        for tls in [TLSConfiguration(trustServerCertificate: true),
                    TLSConfiguration(caFile: certs.otherCACertificate),
                    TLSConfiguration(caFile: certs.caCertificate, hostNameInCertificate: "db.example.org")] {
            let socket = try await SocketStream.connect(host: "localhost", port: Int(server.port), timeout: .seconds(10))
            defer { socket.close() }
            let session = try OpenSSLTLSProvider().makeStrictClientSession(serverName: "localhost", configuration: tls)
            do {
                try await StrictTLS.handshake(session, over: socket)
                XCTFail("strict TLS accepted an unverifiable certificate with \(tls)")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .certificateVerificationFailed, "\(error)")
            }
        }
    }

    #endif

    func testStrictConfigurationAllowsTLS13AndForcesVerification() {
        let tls = StrictTLS.configuration(TLSConfiguration(trustServerCertificate: true, hostNameInCertificate: "db.example.org",
                                                           verifyHostName: false, minimumVersion: .tls1_0))
        XCTAssertFalse(tls.trustServerCertificate)
        XCTAssertTrue(tls.verifyHostName)
        XCTAssertEqual(tls.minimumVersion, .tls1_2)
        XCTAssertEqual(tls.maximumVersion, .tls1_3)
        XCTAssertEqual(tls.hostNameInCertificate, "db.example.org")
    }

    func testAServerWithoutTDS8ClosingTheHandshakeIsAClearError() async throws {
        // A plain TDS 7 server reads the ClientHello as a broken packet and closes.
        let listener = try LoopbackListener { fd in _ = LoopbackListener.readSome(fd) }
        defer { listener.stop() }
        let socket = try await SocketStream.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(10))
        defer { socket.close() }
        let provider = try XCTUnwrap(DefaultTLSProvider.provider, "this platform has no TLS provider")
        let session = try provider.makeStrictClientSession(serverName: "127.0.0.1", configuration: TLSConfiguration())
        do {
            try await StrictTLS.handshake(session, over: socket)
            XCTFail("the handshake succeeded against a closing server")
        } catch let error as SQLClientError {
            XCTAssertTrue([.connectionClosed, .tlsFailed, .ioError].contains(error.code), "\(error)")
            XCTAssertTrue(error.code != .connectionClosed || error.message.contains("TDS 8.0"), error.message)
        }
    }
}
