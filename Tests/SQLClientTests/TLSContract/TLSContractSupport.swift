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
    /// Apple platforms) against this platform's server: OpenSSL's memory server where the tests
    /// link OpenSSL, else Python's `ssl` module (scripts/tls-contract-server.py);
    /// `SQLCLIENT_TLS_CONTRACT_SERVER=python` picks the latter anywhere. Skips with a message when
    /// there is no provider, no `openssl` command for the certificates, or no server.
    static func current() throws -> TLSContractEnvironment {
        guard let provider = DefaultTLSProvider.provider else { throw XCTSkip("this platform has no TLS provider") }
        let certificates = try TLSContractCertificates.make()
        let wanted = ProcessInfo.processInfo.environment["SQLCLIENT_TLS_CONTRACT_SERVER"]
        #if canImport(CSQLClientOpenSSL)
        if wanted != "python" {
            return TLSContractEnvironment(provider: provider, makeServer: { certificate, key, tls13, alpn in
                let identity = try TLSServerIdentity(certificateFile: certificate, privateKeyFile: key)
                return try OpenSSLTLSServerSession(identity: identity, allowTLS13: tls13, selectTDS8ALPN: alpn)
            }, certificates: certificates)
        }
        #endif
        _ = wanted
        try PythonTLSContractServer.checkAvailable()
        return TLSContractEnvironment(provider: provider, makeServer: { certificate, key, tls13, alpn in
            try PythonTLSContractServer(certificate: certificate, key: key, allowTLS13: tls13, alpn: alpn)
        }, certificates: certificates)
    }
}

/// The contract's server in a child process: Python's `ssl` module over memory BIOs
/// (scripts/tls-contract-server.py), for platforms whose tests link no OpenSSL. Each call is one
/// request line and one answer line; the child ends when this object goes away.
final class PythonTLSContractServer: TLSContractServer, @unchecked Sendable {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/tls-contract-server.py")

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var pending: [UInt8] = []

    /// Skips unless `python3` with the `ssl` module runs.
    static func checkAvailable() throws {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        probe.arguments = ["python3", "-c", "import ssl; ssl.MemoryBIO"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        probe.terminationHandler = { _ in done.signal() }
        do {
            try probe.run()
            guard try probe.waitForExit(done, timeout: 60) == 0 else { throw XCTSkip("python3 has no ssl module") }
        } catch let skip as XCTSkip {
            throw skip
        } catch {
            throw XCTSkip("no python3 for the TLS contract's server: \(error)")
        }
    }

    init(certificate: String, key: String, allowTLS13: Bool, alpn: Bool) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script.path, "--cert", certificate, "--key", key]
            + (allowTLS13 ? ["--tls13"] : []) + (alpn ? ["--alpn"] : [])
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// Sends one request; returns the answer's words after `ok`.
    private func request(_ op: String, _ bytes: [UInt8] = []) throws -> [String] {
        try lock.withLock {
            let hex = bytes.isEmpty ? "" : " " + bytes.map { String(format: "%02x", $0) }.joined()
            try input.fileHandleForWriting.write(contentsOf: Array("\(op)\(hex)\n".utf8))
            while !pending.contains(0x0A) {
                let more = output.fileHandleForReading.availableData
                guard !more.isEmpty else { throw TLSServerError("the Python TLS server ended") }
                pending += more
            }
            let end = pending.firstIndex(of: 0x0A) ?? pending.endIndex
            let line = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(min(pending.count, end + 1))
            let words = line.split(separator: " ").map(String.init)
            guard words.first == "ok" else { throw TLSServerError("the Python TLS server refused: \(line)") }
            return Array(words.dropFirst())
        }
    }

    private static func bytes(_ hex: String?) -> [UInt8] {
        guard let hex, hex != "-" else { return [] }
        var out: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), next > index {
            out.append(UInt8(hex[index ..< next], radix: 16) ?? 0)
            index = next
        }
        return out
    }

    func handshake(_ received: [UInt8]) throws -> (output: [UInt8], isComplete: Bool) {
        let words = try request("hs", received)
        return (Self.bytes(words.first), words.dropFirst().first == "1")
    }
    func encrypt(_ plaintext: [UInt8]) throws -> [UInt8] { Self.bytes(try request("enc", plaintext).first) }
    func decrypt(_ ciphertext: [UInt8]) throws -> [UInt8] {
        ciphertext.isEmpty ? [] : Self.bytes(try request("dec", ciphertext).first)
    }
    private func info(_ i: Int) -> String? {
        guard let words = try? request("info"), words.count == 3, words[i] != "-" else { return nil }
        return words[i]
    }
    var negotiatedProtocol: String? { info(0) }
    var selectedALPN: String? { info(1) }
    var requestedServerName: String? { info(2) }
}

#if canImport(CSQLClientOpenSSL)
extension OpenSSLTLSServerSession: TLSContractServer {}
#endif

/// The contract's certificates, made once per process with the `openssl` command (OpenSSL or
/// LibreSSL) into a temporary folder, shaped as Apple's TLS server rules require (RSA 2048, names in
/// subjectAltName, extendedKeyUsage serverAuth, validity under 825 days): a CA, a server certificate
/// it signs (DNS localhost, IP 127.0.0.1 and ::1), an unrelated CA, and, made on first use, an
/// expired server certificate from the same CA.
struct TLSContractCertificates: Sendable {
    let directory: URL
    var caCertificate: String { path("ca.pem") }
    var otherCACertificate: String { path("other-ca.pem") }
    var serverCertificate: String { path("server.pem") }
    var serverKey: String { path("server.key") }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func make() throws -> TLSContractCertificates {
        try lock.withLock {
            if let made = cached { return made }
            let dir = FileManager.default.temporaryDirectory
                .appendingPathComponent("sqlclient-tls-contract-\(ProcessInfo.processInfo.processIdentifier)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
                .write(to: dir.appendingPathComponent("ca.ext"), atomically: true, encoding: .utf8)
            try ("subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\n"
                 + "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
                .write(to: dir.appendingPathComponent("server.ext"), atomically: true, encoding: .utf8)
            for ca in ["ca", "other-ca"] {
                try run(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(ca).key", "-out", "\(ca).csr",
                         "-subj", "/CN=SQLClient TLS contract \(ca)"], in: dir)
                try run(["x509", "-req", "-in", "\(ca).csr", "-signkey", "\(ca).key", "-out", "\(ca).pem", "-days", "30",
                         "-extfile", "ca.ext"], in: dir)
            }
            try run(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                     "-subj", "/CN=localhost"], in: dir)
            try run(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                     "-out", "server.pem", "-days", "30", "-extfile", "server.ext"], in: dir)
            let made = TLSContractCertificates(directory: dir)
            cached = made
            return made
        }
    }

    /// The server's key and names in a certificate from the same CA whose validity ended a day ago.
    func expiredCertificate() throws -> String {
        try Self.lock.withLock {
            let expired = path("expired.pem")
            if !FileManager.default.fileExists(atPath: expired) {
                do {
                    try Self.run(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                                  "-out", "expired.pem", "-days", "-1", "-extfile", "server.ext"], in: directory)
                } catch {
                    throw XCTSkip("this openssl cannot make an expired certificate (x509 -days -1): \(error)")
                }
            }
            return expired
        }
    }

    private static func run(_ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        do {
            try process.run()
            guard try process.waitForExit(done, timeout: 60) == 0 else {
                throw XCTSkip("openssl \(arguments.prefix(2).joined(separator: " ")) failed: no contract certificates")
            }
        } catch let skip as XCTSkip {
            throw skip
        } catch {
            throw XCTSkip("cannot run openssl to make the contract certificates: \(error)")
        }
    }

    nonisolated(unsafe) private static var cached: TLSContractCertificates?
    private static let lock = NSRecursiveLock()
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
