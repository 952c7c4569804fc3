import Foundation
import XCTest
import TDS
import SQLClientTesting
@testable import SQLClient

/// The contract every ``TLSSession`` must pass, whatever its engine: run against this platform's
/// default provider (``DefaultTLSProvider``: OpenSSL on Linux, Network.framework on Apple
/// platforms), through the same TDS code a connection uses (``PreloginTLSHandshake``,
/// ``StrictTLS``, ``TLSStream``) over an in-memory connection to a memory TLS server.
///
/// To check another provider, give ``TLSContractEnvironment`` its provider: nothing here names an engine.
final class TLSProviderContractTests: XCTestCase {
    private var environment: TLSContractEnvironment!

    override func setUpWithError() throws {
        environment = try TLSContractEnvironment.current()
    }

    private var certs: TLSContractCertificates { environment.certificates }

    /// The outcome of a handshake inside PRELOGIN: the client session, the server, the bytes after it.
    private struct Handshaken {
        var session: any TLSSession
        var server: any TLSContractServer
        var client: MemoryByteStream
        var serverStream: MemoryByteStream
        var clientLeftover: [UInt8]
        var serverLeftover: [UInt8]
    }

    /// Runs a handshake inside PRELOGIN between a session of the provider and a server presenting `certificate`.
    private func preloginHandshake(serverName: String = "localhost", _ tls: TLSConfiguration,
                                   certificate: String? = nil, key: String? = nil,
                                   behaviour: TLSContractServerBehaviour = .correct) async throws -> Handshaken {
        let server = try environment.makeServer(certificate ?? certs.serverCertificate, key ?? certs.serverKey, false, false)
        let session = try environment.provider.makeClientSession(serverName: serverName, configuration: tls)
        let (client, serverStream) = MemoryByteStream.pair()
        let serving = Task { try await servePreloginHandshake(server, on: serverStream, behaviour: behaviour) }
        var framer = PacketAssembler()
        do {
            try await PreloginTLSHandshake.perform(session, over: client, framer: &framer)
        } catch {
            client.close()
            _ = await serving.result
            throw error
        }
        let serverLeftover = try await serving.value
        return Handshaken(session: session, server: server, client: client, serverStream: serverStream,
                          clientLeftover: framer.takeRemaining(), serverLeftover: serverLeftover)
    }

    private func assertRefused(_ expected: String, _ body: () async throws -> Void,
                               file: StaticString = #filePath, line: UInt = #line) async {
        do {
            try await body()
            XCTFail("the handshake succeeded; expected a refusal containing \"\(expected)\"", file: file, line: line)
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .certificateVerificationFailed, "\(error)", file: file, line: line)
            XCTAssertTrue(error.message.contains(expected), "\(error.message)", file: file, line: line)
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
        }
    }

    // MARK: - Handshakes

    func testFullEncryptionHandshakeInsidePreloginThenRecordsBothWays() async throws {
        let h = try await preloginHandshake(TLSConfiguration(caFile: certs.caCertificate))
        XCTAssertEqual(h.session.negotiatedProtocol, "TLSv1.2")
        XCTAssertEqual(h.server.requestedServerName, "localhost", "SNI carries the host")
        let pem = try XCTUnwrap(FileManager.default.contents(atPath: certs.serverCertificate))
        XCTAssertEqual(h.session.peerCertificateDER, TLSConfiguration.certificateDER(fromFileContents: [UInt8](pem)))
        let stream = try TLSStream(base: h.client, session: h.session, leftover: h.clientLeftover)
        let login = Packet.encode(message: Array(repeating: 0x4C, count: 20_000), type: .login7, packetSize: 4096)
        try await stream.write(login)
        var received: [UInt8] = try h.server.decrypt(h.serverLeftover)
        while received.count < login.count {
            let bytes = try await h.serverStream.read(maxLength: 65_536)
            XCTAssertFalse(bytes.isEmpty)
            if bytes.isEmpty { break }
            received += try h.server.decrypt(bytes)
        }
        XCTAssertEqual(received, login, "a message over one record's 16 KiB arrives whole")
        let reply = Array("LOGINACK from the server".utf8)
        // The server's records arrive byte by byte: the stream returns plaintext once a record is whole.
        for byte in try h.server.encrypt(reply) { try await h.serverStream.write([byte]) }
        var plain: [UInt8] = []
        while plain.count < reply.count { plain += try await stream.read(maxLength: 65_536) }
        XCTAssertEqual(plain, reply)
    }

    /// A response of many records, read in pieces smaller than a record (what one read does
    /// not take waits for the next), then larger than all of them (the plaintext of everything
    /// received comes back in one read, as it was decrypted): the bytes in order, none lost.
    func testRecordsReadInPiecesSmallerAndLargerThanARecordArriveInOrder() async throws {
        let h = try await preloginHandshake(TLSConfiguration(caFile: certs.caCertificate))
        let stream = try TLSStream(base: h.client, session: h.session, leftover: h.clientLeftover)
        let response = (0 ..< 300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        try await h.serverStream.write(try h.server.encrypt(response))
        var plain: [UInt8] = []
        while plain.count < 50_000 {
            let bytes = try await stream.read(maxLength: 1000)
            XCTAssertFalse(bytes.isEmpty)
            XCTAssertLessThanOrEqual(bytes.count, 1000)
            if bytes.isEmpty { break }
            plain += bytes
        }
        while plain.count < response.count {
            let bytes = try await stream.read(maxLength: 524_288)
            XCTAssertFalse(bytes.isEmpty)
            if bytes.isEmpty { break }
            plain += bytes
        }
        XCTAssertEqual(plain, response)
    }

    func testLoginOnlyEncryptsLogin7AloneThenThePlaintextFollows() async throws {
        let h = try await preloginHandshake(TLSConfiguration(caFile: certs.caCertificate))
        let login = Packet.encode(message: Array("LOGIN7 body".utf8), type: .login7, packetSize: 4096)
        let records = try await h.session.encrypt(login)
        XCTAssertEqual(records.first, 0x17, "LOGIN7 travels as TLS application data, bare on the wire")
        XCTAssertFalse(records.contains(subsequence: login))
        try await h.client.write(records)
        try await h.client.write(Array("plain TDS".utf8))
        var raw: [UInt8] = h.serverLeftover
        while raw.count < records.count + 9 { raw += try await h.serverStream.read(maxLength: 65_536) }
        XCTAssertEqual(try h.server.decrypt(Array(raw[0 ..< records.count])), login)
        XCTAssertEqual(Array(raw[records.count...]), Array("plain TDS".utf8), "after LOGIN7 the session is plaintext")
    }

    func testStrictHandshakeOffersALPNAndTLS13ThenCarriesPrelogin() async throws {
        let server = try environment.makeServer(certs.serverCertificate, certs.serverKey, true, true)
        let session = try environment.provider.makeStrictClientSession(
            serverName: "localhost", configuration: TLSConfiguration(caFile: certs.caCertificate))
        let (client, serverStream) = MemoryByteStream.pair()
        let serving = Task { try await serveStrictHandshake(server, on: serverStream) }
        try await StrictTLS.handshake(session, over: client)
        try await serving.value
        XCTAssertEqual(session.applicationProtocol, "tds/8.0")
        XCTAssertEqual(server.selectedALPN, "tds/8.0")
        XCTAssertEqual(session.negotiatedProtocol, "TLSv1.3")
        let stream = try TLSStream(base: client, session: session)
        let prelogin = Packet.encode(message: Prelogin(version: .init(major: 1, minor: 0, build: 0), encryption: .notSupported).encode(),
                                     type: .prelogin, packetSize: 4096)
        try await stream.write(prelogin)
        var plain: [UInt8] = []
        while plain.count < prelogin.count { plain += try server.decrypt(try await serverStream.read(maxLength: 65_536)) }
        XCTAssertEqual(plain, prelogin, "PRELOGIN travels inside TLS")
        // The server's answer follows its TLS 1.3 session tickets: only the answer comes out.
        try await serverStream.write(try server.encrypt(Array("answer".utf8)))
        var answer: [UInt8] = []
        while answer.count < 6 { answer += try await stream.read(maxLength: 65_536) }
        XCTAssertEqual(answer, Array("answer".utf8))
    }

    func testStrictAlwaysVerifiesEvenWhenTrustIsAsked() async throws {
        let server = try environment.makeServer(certs.serverCertificate, certs.serverKey, true, true)
        let session = try environment.provider.makeStrictClientSession(
            serverName: "localhost", configuration: TLSConfiguration(trustServerCertificate: true, caFile: certs.otherCACertificate))
        let (client, serverStream) = MemoryByteStream.pair()
        let serving = Task { try? await serveStrictHandshake(server, on: serverStream) }
        await assertRefused("not signed by a trusted certificate authority") {
            try await StrictTLS.handshake(session, over: client)
        }
        client.close()
        _ = await serving.value
    }

    func testTLS13IsNegotiatedWhenOfferedAndTLS12IsTheDefault() async throws {
        for (maximum, expected) in [(TLSConfiguration.ProtocolVersion.tls1_3, "TLSv1.3"), (.tls1_2, "TLSv1.2")] {
            let server = try environment.makeServer(certs.serverCertificate, certs.serverKey, true, false)
            let session = try environment.provider.makeClientSession(
                serverName: "localhost", configuration: TLSConfiguration(caFile: certs.caCertificate, maximumVersion: maximum))
            var toServer = try await session.startHandshake()
            var complete = false
            for _ in 0 ..< 8 where !complete {
                let (toClient, _) = try server.handshake(toServer)
                let step = try await session.continueHandshake(toClient)
                toServer = step.output
                complete = step.isComplete
            }
            if !toServer.isEmpty { _ = try server.handshake(toServer) }
            XCTAssertTrue(complete)
            XCTAssertEqual(session.negotiatedProtocol, expected)
            XCTAssertEqual(server.negotiatedProtocol, expected)
        }
    }

    // MARK: - Certificates

    func testCAFileVerifiesTheChainAndTheNameOrTheIPAddress() async throws {
        for name in ["localhost", "127.0.0.1", "::1"] {
            let h = try await preloginHandshake(serverName: name, TLSConfiguration(caFile: certs.caCertificate))
            XCTAssertEqual(h.session.negotiatedProtocol, "TLSv1.2", name)
            XCTAssertEqual(h.server.requestedServerName, name == "localhost" ? "localhost" : nil, "no SNI for an IP literal")
        }
    }

    func testWrongHostIsRefusedAndHostNameInCertificateNamesWhatItCarries() async throws {
        await assertRefused("does not name \"db.example.org\"") {
            _ = try await self.preloginHandshake(serverName: "db.example.org", TLSConfiguration(caFile: self.certs.caCertificate))
        }
        await assertRefused("does not name \"127.0.0.2\"") {
            _ = try await self.preloginHandshake(serverName: "127.0.0.2", TLSConfiguration(caFile: self.certs.caCertificate))
        }
        let h = try await preloginHandshake(serverName: "db.example.org",
                                            TLSConfiguration(caFile: certs.caCertificate, hostNameInCertificate: "localhost"))
        XCTAssertEqual(h.server.requestedServerName, "localhost", "SNI carries hostNameInCertificate")
    }

    func testExpiredCertificateIsRefusedAsExpiredUnlessPinnedOrTrusted() async throws {
        let expired = try certs.expiredCertificate()
        await assertRefused("has expired") {
            _ = try await self.preloginHandshake(TLSConfiguration(caFile: self.certs.caCertificate), certificate: expired)
        }
        // Pinning exactly this certificate is the documented way to keep verification on until renewal.
        _ = try await preloginHandshake(TLSConfiguration(serverCertificate: expired), certificate: expired)
        _ = try await preloginHandshake(TLSConfiguration(trustServerCertificate: true), certificate: expired)
    }

    func testPinnedCertificateIsTheWholeVerificationAndAnotherIsRefused() async throws {
        // No CA known and a name the certificate lacks: the exact match is enough.
        let h = try await preloginHandshake(serverName: "db.example.org",
                                            TLSConfiguration(serverCertificate: certs.serverCertificate))
        XCTAssertNotNil(h.session.peerCertificateDER)
        // Another certificate, even one with a valid chain, is refused.
        let other = certs.caCertificate
        await assertRefused("is not the certificate in serverCertificate") {
            _ = try await self.preloginHandshake(TLSConfiguration(caFile: self.certs.caCertificate, serverCertificate: other))
        }
    }

    func testUnknownCAIsRefusedUnlessTrusted() async throws {
        await assertRefused("not signed by a trusted certificate authority") {
            _ = try await self.preloginHandshake(TLSConfiguration(caFile: self.certs.otherCACertificate))
        }
        // The system roots do not know the test CA either.
        await assertRefused("not signed by a trusted certificate authority") {
            _ = try await self.preloginHandshake(TLSConfiguration())
        }
        let h = try await preloginHandshake(serverName: "anything.invalid", TLSConfiguration(trustServerCertificate: true))
        XCTAssertEqual(h.session.negotiatedProtocol, "TLSv1.2")
    }

    func testConfigurationErrorsComeFromMakingTheSession() throws {
        XCTAssertThrowsError(try environment.provider.makeClientSession(
            serverName: "localhost", configuration: TLSConfiguration(caFile: "/nonexistent/ca.pem"))) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .tlsFailed)
        }
        XCTAssertThrowsError(try environment.provider.makeClientSession(
            serverName: "localhost", configuration: TLSConfiguration(serverCertificate: "/nonexistent/server.cer"))) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .invalidConfiguration)
        }
    }

    // MARK: - Hostile servers

    func testGarbageInTheMiddleOfTheHandshakeIsATLSError() async throws {
        do {
            _ = try await preloginHandshake(TLSConfiguration(caFile: certs.caCertificate), behaviour: .garbageInFirstFlight)
            XCTFail("a corrupted server flight was accepted")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .tlsFailed, "\(error)")
        }
    }

    func testAServerThatStopsMidFlightIsAClosedConnectionNotAHang() async throws {
        do {
            _ = try await preloginHandshake(TLSConfiguration(caFile: certs.caCertificate), behaviour: .stopsMidFlight)
            XCTFail("half a server flight completed a handshake")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed, "\(error)")
        }
    }

    func testHalfAServerFlightAsksForMoreAndNothingIsSent() async throws {
        let server = try environment.makeServer(certs.serverCertificate, certs.serverKey, false, false)
        let session = try environment.provider.makeClientSession(
            serverName: "localhost", configuration: TLSConfiguration(caFile: certs.caCertificate))
        let hello = try await session.startHandshake()
        let (flight, _) = try server.handshake(hello)
        let half = try await session.continueHandshake(Array(flight[0 ..< flight.count / 2]))
        XCTAssertEqual(half, TLSHandshakeStep(output: [], isComplete: false))
        // The rest completes the flight: the client now answers with its key exchange flight.
        let rest = try await session.continueHandshake(Array(flight[(flight.count / 2)...]))
        XCTAssertFalse(rest.output.isEmpty)
        let (finished, done) = try server.handshake(rest.output)
        XCTAssertTrue(done)
        let last = try await session.continueHandshake(finished)
        XCTAssertTrue(last.isComplete)
    }

    func testEncryptAndDecryptBeforeTheHandshakeAreRefused() async throws {
        let session = try environment.provider.makeClientSession(
            serverName: "localhost", configuration: TLSConfiguration(trustServerCertificate: true))
        for step in [{ try await session.encrypt([1, 2, 3]) }, { try await session.decrypt([0x17, 3, 3, 0, 1, 0]) }] {
            do {
                _ = try await step()
                XCTFail("a record step before the handshake succeeded")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .tlsFailed)
            }
        }
    }
}

private extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, subsequence.count <= count else { return false }
        return (0 ... count - subsequence.count).contains { Array(self[$0 ..< $0 + subsequence.count]) == subsequence }
    }
}
