#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization
import TDS

/// TLS through the system's OpenSSL (Linux): an `SSL` object over two memory BIOs, so the
/// handshake bytes can travel inside TDS PRELOGIN packets.
///
/// Verification: unless `trustServerCertificate` is set, the chain is checked against `caFile`
/// (PEM) or the system's default trust store, and the certificate must name the host
/// (`SSL_set1_host` for DNS names, the IP SAN for address literals).
package struct OpenSSLTLSProvider: TLSProvider {
    /// The provider (stateless: each session has its own OpenSSL context).
    package init() {}

    package func makeClientSession(serverName: String, configuration: TLSConfiguration) throws -> any TLSSession {
        try OpenSSLTLSSession(serverName: serverName, configuration: configuration)
    }
}

/// One OpenSSL client session over memory BIOs. See ``TLSSession``.
///
/// `@unchecked Sendable`: the OpenSSL handles (`OpaquePointer`) are not `Sendable`; every call
/// on them holds the lock of `handshakeDone`.
package final class OpenSSLTLSSession: TLSSession, @unchecked Sendable {
    /// Whether the handshake completed. Every OpenSSL call holds its lock: the connection's reader
    /// and writer may encrypt and decrypt at once.
    private let handshakeDone = Mutex(false)
    private let ctx: OpaquePointer
    let ssl: OpaquePointer   // internal: the TDS 8.0 extension (StrictTLS.swift) sets ALPN on it
    private let readBIO: OpaquePointer   // bytes from the server, read by OpenSSL
    private let writeBIO: OpaquePointer  // bytes from OpenSSL, to send to the server
    private let serverName: String
    /// The certificate the server must present (``TLSConfiguration/serverCertificate``), DER; nil when none is pinned.
    private let pinnedCertificate: [UInt8]?
    /// The name the certificate must carry (``TLSConfiguration/hostNameInCertificate`` ?? the server name).
    private let expectedName: String

    init(serverName: String, configuration: TLSConfiguration) throws {
        self.serverName = serverName
        let pinned = try configuration.pinnedCertificateDER()
        self.pinnedCertificate = pinned
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw OpenSSLTLSSession.error(.tlsFailed, "SSL_CTX_new failed")
        }
        csqlclient_SSL_CTX_disable_compression_and_renegotiation(ctx)
        let minVersion = csqlclient_TLS_version(Int32(configuration.minimumVersion.rawValue))
        let maxVersion = csqlclient_TLS_version(Int32(max(configuration.maximumVersion, configuration.minimumVersion).rawValue))
        guard csqlclient_SSL_CTX_set_min_proto_version(ctx, minVersion) == 1,
              csqlclient_SSL_CTX_set_max_proto_version(ctx, maxVersion) == 1 else {
            SSL_CTX_free(ctx)
            throw OpenSSLTLSSession.error(.tlsFailed, "cannot set the TLS version range")
        }
        if configuration.trustServerCertificate || pinned != nil {
            // A pinned certificate is checked byte for byte once the handshake completes.
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
            if let caFile = configuration.caFile {
                guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                    SSL_CTX_free(ctx)
                    throw OpenSSLTLSSession.error(.tlsFailed, "cannot load the CA file \(caFile)")
                }
            } else if SSL_CTX_set_default_verify_paths(ctx) != 1 {
                SSL_CTX_free(ctx)
                throw OpenSSLTLSSession.error(.tlsFailed, "cannot load the system trust store")
            }
        }
        guard let ssl = SSL_new(ctx) else {
            SSL_CTX_free(ctx)
            throw OpenSSLTLSSession.error(.tlsFailed, "SSL_new failed")
        }
        guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            SSL_CTX_free(ctx)
            throw OpenSSLTLSSession.error(.tlsFailed, "BIO_new failed")
        }
        SSL_set_bio(ssl, rbio, wbio)
        SSL_set_connect_state(ssl)

        // An empty expected name is "not given": the host connected to is checked, never nothing.
        let expectedName = configuration.expectedHostName(connectingTo: serverName)
        let isAddress = OpenSSLTLSSession.isIPAddress(expectedName)
        if !isAddress && !expectedName.isEmpty {
            _ = csqlclient_SSL_set_tlsext_host_name(ssl, expectedName)
        }
        if !configuration.trustServerCertificate && pinned == nil && configuration.verifyHostName {
            guard !expectedName.isEmpty else {
                SSL_free(ssl)
                SSL_CTX_free(ctx)
                throw OpenSSLTLSSession.error(.tlsFailed, "no host name to check the server's certificate against")
            }
            let ok: Int32
            if isAddress {
                ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), expectedName)
            } else {
                ok = SSL_set1_host(ssl, expectedName)
            }
            guard ok == 1 else {
                SSL_free(ssl)
                SSL_CTX_free(ctx)
                throw OpenSSLTLSSession.error(.tlsFailed, "cannot set the expected host name \(expectedName)")
            }
        }
        self.expectedName = expectedName
        self.ctx = ctx
        self.ssl = ssl
        self.readBIO = rbio
        self.writeBIO = wbio
    }

    deinit {
        SSL_free(ssl)      // frees both BIOs
        SSL_CTX_free(ctx)
    }

    package func startHandshake() async throws -> [UInt8] {
        try handshakeDone.withLock { try handshakeStep([], &$0).output }
    }

    package func continueHandshake(_ received: [UInt8]) async throws -> TLSHandshakeStep {
        try handshakeDone.withLock { try handshakeStep(received, &$0) }
    }

    package func encrypt(_ plaintext: [UInt8]) async throws -> [UInt8] {
        try handshakeDone.withLock { try encryptLocked(plaintext, handshakeDone: $0) }
    }

    package func decrypt(_ ciphertext: [UInt8]) async throws -> [UInt8] {
        try handshakeDone.withLock { try decryptLocked(ciphertext, handshakeDone: $0) }
    }

    /// One handshake step (the lock held; `handshakeDone` is its flag).
    private func handshakeStep(_ received: [UInt8], _ handshakeDone: inout Bool) throws -> TLSHandshakeStep {
        ERR_clear_error()
        try feed(received)
        if handshakeDone { return TLSHandshakeStep(output: drainOutput(), isComplete: true) }
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            if let pinnedCertificate {
                try TLSConfiguration.verifyPinnedCertificate(pinnedCertificate, presented: peerCertificateLocked,
                                                             serverName: serverName)
            }
            handshakeDone = true
            return TLSHandshakeStep(output: drainOutput(), isComplete: true)
        }
        let code = SSL_get_error(ssl, rc)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE {
            return TLSHandshakeStep(output: drainOutput(), isComplete: false)
        }
        let verify = SSL_get_verify_result(ssl)
        if verify != Int(csqlclient_X509_V_OK()) {
            throw Self.certificateRefusal(verifyResult: verify, serverName: serverName, expectedName: expectedName)
        }
        throw OpenSSLTLSSession.error(.tlsFailed, "TLS handshake failed")
    }

    private func encryptLocked(_ plaintext: [UInt8], handshakeDone: Bool) throws -> [UInt8] {
        guard handshakeDone else { throw SQLClientError(.tlsFailed, "encrypt before the TLS handshake completed") }
        ERR_clear_error()
        var offset = 0
        var output: [UInt8] = []
        // Room for the records: the plaintext and each 16 KiB record's header, nonce and tag.
        output.reserveCapacity(plaintext.count + (plaintext.count / 16_384 + 1) * 64)
        while offset < plaintext.count {
            let chunk = min(plaintext.count - offset, 16_384)
            let rc = plaintext.withUnsafeBytes { raw -> Int32 in
                guard let base = raw.baseAddress else { return 0 }
                return SSL_write(ssl, base + offset, Int32(chunk))
            }
            if rc <= 0 {
                throw OpenSSLTLSSession.error(.tlsFailed, "TLS encryption failed")
            }
            offset += Int(rc)
            drainOutput(into: &output)
        }
        return output
    }

    private func decryptLocked(_ ciphertext: [UInt8], handshakeDone: Bool) throws -> [UInt8] {
        guard handshakeDone else { throw SQLClientError(.tlsFailed, "decrypt before the TLS handshake completed") }
        ERR_clear_error()
        try feed(ciphertext)
        // Read straight into the array returned, no bounce buffer: room for what was fed (the
        // plaintext is shorter than its records), doubled while OpenSSL holds more.
        var plaintext = [UInt8](repeating: 0, count: Swift.max(ciphertext.count, 16_384))
        var used = 0
        while true {
            if used == plaintext.count { plaintext.append(contentsOf: repeatElement(0, count: plaintext.count)) }
            let rc = plaintext.withUnsafeMutableBytes { raw -> Int32 in
                guard let base = raw.baseAddress else { return 0 }
                return SSL_read(ssl, base + used, Int32(Swift.min(raw.count - used, Int(Int32.max))))
            }
            if rc > 0 {
                used += Int(rc)
                continue
            }
            let code = SSL_get_error(ssl, rc)
            if code == SSL_ERROR_WANT_READ { break }
            if code == SSL_ERROR_ZERO_RETURN {
                if used == 0 { throw SQLClientError(.connectionClosed, "the server closed the TLS session") }
                break
            }
            throw OpenSSLTLSSession.error(.tlsFailed, "TLS decryption failed")
        }
        plaintext.removeSubrange(used...)
        return plaintext
    }

    package var negotiatedProtocol: String? {
        handshakeDone.withLock { handshakeDone in
            guard handshakeDone, let name = SSL_get_version(ssl) else { return nil }
            return String(cString: name)
        }
    }

    package var peerCertificateDER: [UInt8]? { handshakeDone.withLock { _ in peerCertificateLocked } }

    private var peerCertificateLocked: [UInt8]? {
        guard let cert = csqlclient_SSL_get_peer_certificate(ssl) else { return nil }
        defer { X509_free(cert) }
        var pointer: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(cert, &pointer)
        guard length > 0, let bytes = pointer else { return nil }
        defer { CRYPTO_free(bytes, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
    }

    // MARK: - Helpers

    /// Runs `body` holding the session's lock, with whether the handshake completed (for the
    /// TDS 8.0 extension in StrictTLS.swift).
    func withSessionLock<T: Sendable>(_ body: (_ handshakeDone: Bool) -> T) -> T { handshakeDone.withLock { body($0) } }

    private func feed(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        let written = bytes.withUnsafeBytes { raw in
            BIO_write(readBIO, raw.baseAddress, Int32(raw.count))
        }
        guard written == Int32(bytes.count) else {
            throw OpenSSLTLSSession.error(.tlsFailed, "cannot buffer received TLS bytes")
        }
    }

    private func drainOutput() -> [UInt8] {
        var output: [UInt8] = []
        drainOutput(into: &output)
        return output
    }

    /// Appends the records OpenSSL wrote to `output`, read straight into its tail.
    private func drainOutput(into output: inout [UInt8]) {
        while true {
            let pending = Int(csqlclient_BIO_pending(writeBIO))
            guard pending > 0 else { return }
            let start = output.count
            output.append(contentsOf: repeatElement(0, count: pending))
            let n = output.withUnsafeMutableBytes { raw -> Int32 in
                guard let base = raw.baseAddress else { return 0 }
                return BIO_read(writeBIO, base + start, Int32(pending))
            }
            output.removeSubrange((start + Swift.max(Int(n), 0))...)
            if n <= 0 { return }
        }
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// An error carrying OpenSSL's queued reasons (they never contain application data).
    static func error(_ code: SQLClientError.Code, _ what: String) -> SQLClientError {
        var reasons: [String] = []
        while true {
            let e = ERR_get_error()
            if e == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(e, &buffer, buffer.count)
            reasons.append(stringFromCBuffer(buffer))
        }
        let detail = reasons.isEmpty ? what : what + ": " + reasons.joined(separator: "; ")
        return SQLClientError(code, detail)
    }
}
#endif
