import Foundation
import XCTest
import TDS
import SQLClientTesting
@testable import SQLClient
#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif

/// The server side of the TLS contract: a memory TLS server the suite drives against the client
/// ``TLSSession`` under test (OpenSSL's ``OpenSSLTLSServerSession`` on Linux).
protocol TLSContractServer: AnyObject, Sendable {
    /// Feeds client handshake bytes; returns the server's answer and whether its side is done.
    func handshake(_ received: [UInt8]) throws -> (output: [UInt8], isComplete: Bool)
    func encrypt(_ plaintext: [UInt8]) throws -> [UInt8]
    func decrypt(_ ciphertext: [UInt8]) throws -> [UInt8]
    var negotiatedProtocol: String? { get }
    var selectedALPN: String? { get }
    var requestedServerName: String? { get }
}

/// What the contract needs from a platform: the provider under test and a way to make servers.
struct TLSContractEnvironment: Sendable {
    /// The provider whose sessions must pass the contract.
    var provider: any TLSProvider
    /// Makes a server presenting `certificate` (PEM file) with `key`; TLS 1.3 and ALPN `tds/8.0` when asked.
    var makeServer: @Sendable (_ certificate: String, _ key: String, _ allowTLS13: Bool, _ alpn: Bool) throws -> any TLSContractServer
    /// The certificate files.
    var certificates: TLSContractCertificates

    /// This platform's environment: the default provider (OpenSSL on Linux; Network.framework on
    /// Apple platforms) against this platform's server; skips with a message when there is none.
    static func current() throws -> TLSContractEnvironment {
        guard let provider = DefaultTLSProvider.provider else { throw XCTSkip("this platform has no TLS provider") }
        let certificates = try TLSContractCertificates.make()
        #if canImport(CSQLClientOpenSSL)
        return TLSContractEnvironment(provider: provider, makeServer: { certificate, key, tls13, alpn in
            let identity = try TLSServerIdentity(certificateFile: certificate, privateKeyFile: key)
            return try OpenSSLTLSServerSession(identity: identity, allowTLS13: tls13, selectTDS8ALPN: alpn)
        }, certificates: certificates)
        #else
        _ = provider
        throw XCTSkip("no TLS test server on this platform: the contract's server side is OpenSSL's memory server, "
                      + "which only Linux links (a Security.framework identity server is not written yet)")
        #endif
    }
}

#if canImport(CSQLClientOpenSSL)
extension OpenSSLTLSServerSession: TLSContractServer {}
#endif

/// The contract's certificates, made with the `openssl` command: ``TestCertificates``' CA, server
/// (DNS localhost, IP 127.0.0.1 and ::1), localhost-only and unrelated CA, plus an expired
/// server certificate from the same CA.
struct TLSContractCertificates: Sendable {
    let base: TestCertificates
    var caCertificate: String { base.caCertificate }
    var otherCACertificate: String { base.otherCACertificate }
    var serverCertificate: String { base.serverCertificate }
    var serverKey: String { base.serverKey }
    var expiredCertificate: String { base.directory.appendingPathComponent("expired.pem").path }

    static func make() throws -> TLSContractCertificates {
        let base: TestCertificates
        do { base = try TestCertificates.make() } catch {
            throw XCTSkip("cannot make test certificates with the openssl command: \(error)")
        }
        let made = TLSContractCertificates(base: base)
        try lock.withLock {
            if FileManager.default.fileExists(atPath: made.expiredCertificate) { return }
            // Signed by the test CA with the server's key and names; its validity ended a day ago.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                                 "-CAcreateserial", "-out", "expired.pem", "-days", "-1", "-extfile", "san.ext"]
            process.currentDirectoryURL = base.directory
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let done = DispatchSemaphore(value: 0)
            process.terminationHandler = { _ in done.signal() }
            try process.run()
            guard try process.waitForExit(done, timeout: 60) == 0 else {
                throw XCTSkip("openssl cannot make an expired certificate here (x509 -days -1)")
            }
        }
        return made
    }

    private static let lock = NSLock()
}

/// One direction of an in-memory connection.
final class MemoryPipe: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [UInt8] = []
    private var closed = false
    private var waiter: CheckedContinuation<Void, Never>?

    func write(_ bytes: [UInt8]) throws {
        let waiting: CheckedContinuation<Void, Never>? = try lock.withLock {
            guard !closed else { throw SQLClientError(.connectionClosed, "the memory pipe is closed") }
            buffer += bytes
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }

    func read(maxLength: Int) async -> [UInt8] {
        while true {
            let taken: [UInt8]? = lock.withLock {
                if !buffer.isEmpty {
                    let n = min(max(1, maxLength), buffer.count)
                    defer { buffer.removeFirst(n) }
                    return Array(buffer[0 ..< n])
                }
                return closed ? [] : nil
            }
            if let taken { return taken }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = lock.withLock {
                    if !buffer.isEmpty || closed { return true }
                    waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    func close() {
        let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
            closed = true
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }
}

/// One end of an in-memory connection, as a ``ByteStream``.
final class MemoryByteStream: ByteStream, @unchecked Sendable {
    private let inbound: MemoryPipe
    private let outbound: MemoryPipe
    private init(inbound: MemoryPipe, outbound: MemoryPipe) {
        self.inbound = inbound
        self.outbound = outbound
    }

    /// The client's and the server's ends.
    static func pair() -> (client: MemoryByteStream, server: MemoryByteStream) {
        let up = MemoryPipe()
        let down = MemoryPipe()
        return (MemoryByteStream(inbound: down, outbound: up), MemoryByteStream(inbound: up, outbound: down))
    }

    func read(maxLength: Int) async throws -> [UInt8] { await inbound.read(maxLength: maxLength) }
    func write(_ bytes: [UInt8]) async throws { try outbound.write(bytes) }
    func close() {
        outbound.close()
        inbound.close()
    }
}

/// How a contract server misbehaves.
enum TLSContractServerBehaviour: Sendable {
    case correct
    /// Its first flight's bytes from offset 40 on are replaced by garbage (headers stay plausible up to there).
    case garbageInFirstFlight
    /// Sends the first half of its first flight, then closes the connection.
    case stopsMidFlight
}

/// Serves the TLS handshake inside PRELOGIN packets ([MS-TDS] 3.2.5.2) on `stream` with
/// `server`; returns the bytes that followed the client's last handshake message.
func servePreloginHandshake(_ server: any TLSContractServer, on stream: MemoryByteStream,
                            behaviour: TLSContractServerBehaviour = .correct) async throws -> [UInt8] {
    var framer = PacketAssembler()
    var first = true
    while true {
        let payload = try await PreloginTLSHandshake.readMessage(from: stream, framer: &framer, what: "the client's flight",
                                                                 cap: 1 << 20, capName: "test")
        var (output, done) = try server.handshake(payload)
        if first {
            first = false
            switch behaviour {
            case .correct: break
            case .garbageInFirstFlight:
                for i in 40 ..< output.count { output[i] = UInt8(truncatingIfNeeded: i &* 7) }
            case .stopsMidFlight:
                try await stream.write(Packet.encode(message: Array(output[0 ..< output.count / 2]), type: .prelogin,
                                                     packetSize: 4096))
                stream.close()
                return []
            }
        }
        if !output.isEmpty { try await stream.write(Packet.encode(message: output, type: .prelogin, packetSize: 4096)) }
        if done { return framer.takeRemaining() }
    }
}

/// Serves the TLS handshake straight on `stream` (TDS 8.0).
func serveStrictHandshake(_ server: any TLSContractServer, on stream: MemoryByteStream) async throws {
    while true {
        let bytes = try await stream.read(maxLength: 65_536)
        guard !bytes.isEmpty else { throw SQLClientError(.connectionClosed, "the client closed") }
        let (output, done) = try server.handshake(bytes)
        if !output.isEmpty { try await stream.write(output) }
        if done { return }
    }
}
