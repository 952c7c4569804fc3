#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
import Foundation

/// The server side of TLS through OpenSSL over two memory BIOs, so the handshake can travel
/// inside TDS PRELOGIN packets ([MS-TDS] 3.2.5.2) and the records bare afterwards: what
/// ``ReplayServer`` and ``RecordingProxy`` run towards their TLS clients.
///
/// It never touches a socket: feed it the client's bytes, send what it returns. TLS 1.2 only by default
/// (what SQL Server speaks inside PRELOGIN; TLS 1.3 would add post-handshake records that a
/// login-only session cannot carry). Safe to use from two threads (one reading, one writing):
/// every call holds the session's lock.
package final class OpenSSLTLSServerSession: @unchecked Sendable {
    private let ctx: OpaquePointer
    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer   // bytes from the client, read by OpenSSL
    private let writeBIO: OpaquePointer  // bytes from OpenSSL, to send to the client
    private let lock = NSLock()
    private var handshakeDone = false

    /// - Parameters:
    ///   - allowTLS13: also accept TLS 1.3 (TDS 8.0 and the TLS contract tests; TDS 7.x stays on 1.2).
    ///   - selectTDS8ALPN: answer ALPN `tds/8.0` when the client offers it.
    /// - Throws: ``TLSServerError`` when the certificate or key cannot be loaded.
    package init(identity: TLSServerIdentity, allowTLS13: Bool = false, selectTDS8ALPN: Bool = false) throws {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw CertificateMaker.failure("SSL_CTX_new") }
        csqlclient_SSL_CTX_disable_compression_and_renegotiation(ctx)
        _ = csqlclient_SSL_CTX_set_min_proto_version(ctx, csqlclient_TLS_version(12))
        _ = csqlclient_SSL_CTX_set_max_proto_version(ctx, csqlclient_TLS_version(allowTLS13 ? 13 : 12))
        if selectTDS8ALPN { csqlclient_SSL_CTX_select_alpn_tds8(ctx, 0) }
        do {
            let certificate = try Self.read(identity.certificatePEM) { PEM_read_bio_X509($0, nil, nil, nil) }
            defer { X509_free(certificate) }
            let key = try Self.read(identity.privateKeyPEM) { PEM_read_bio_PrivateKey($0, nil, nil, nil) }
            defer { EVP_PKEY_free(key) }
            guard SSL_CTX_use_certificate(ctx, certificate) == 1, SSL_CTX_use_PrivateKey(ctx, key) == 1,
                  SSL_CTX_check_private_key(ctx) == 1 else {
                throw CertificateMaker.failure("the server certificate and key")
            }
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        guard let ssl = SSL_new(ctx) else {
            SSL_CTX_free(ctx)
            throw CertificateMaker.failure("SSL_new")
        }
        guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            SSL_CTX_free(ctx)
            throw CertificateMaker.failure("BIO_new")
        }
        SSL_set_bio(ssl, rbio, wbio)
        SSL_set_accept_state(ssl)
        self.ctx = ctx
        self.ssl = ssl
        self.readBIO = rbio
        self.writeBIO = wbio
    }

    deinit {
        SSL_free(ssl)      // frees both BIOs
        SSL_CTX_free(ctx)
    }

    /// True once the handshake has completed.
    package var isHandshakeComplete: Bool { lock.withLock { handshakeDone } }

    /// Feeds handshake bytes from the client (the payload of its PRELOGIN packets); returns the
    /// bytes to send back (in PRELOGIN packets) and whether the handshake is complete.
    /// - Throws: ``TLSServerError`` when the handshake fails (the client refused the certificate,
    ///   no common protocol or cipher, bytes that are not TLS).
    package func handshake(_ received: [UInt8]) throws -> (output: [UInt8], isComplete: Bool) {
        try lock.withLock {
            ERR_clear_error()
            try feed(received)
            if handshakeDone { return (drainOutput(), true) }
            let rc = SSL_do_handshake(ssl)
            if rc == 1 {
                handshakeDone = true
                return (drainOutput(), true)
            }
            let code = SSL_get_error(ssl, rc)
            if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return (drainOutput(), false) }
            throw CertificateMaker.failure("the TLS handshake with the client")
        }
    }

    /// Encrypts application data into TLS records.
    /// - Throws: ``TLSServerError`` before the handshake completed or when OpenSSL fails.
    package func encrypt(_ plaintext: [UInt8]) throws -> [UInt8] {
        try lock.withLock {
            guard handshakeDone else { throw TLSServerError("encrypt before the TLS handshake completed") }
            ERR_clear_error()
            var offset = 0
            var output: [UInt8] = []
            while offset < plaintext.count {
                let chunk = min(plaintext.count - offset, 16_384)
                let rc = plaintext.withUnsafeBytes { raw -> Int32 in
                    guard let base = raw.baseAddress else { return 0 }
                    return SSL_write(ssl, base + offset, Int32(chunk))
                }
                guard rc > 0 else { throw CertificateMaker.failure("TLS encryption") }
                offset += Int(rc)
                output += drainOutput()
            }
            return output
        }
    }

    /// Feeds TLS records from the client; returns every plaintext byte they complete (possibly
    /// none yet). A close_notify ends the stream: what it completes is returned, later calls return nothing.
    /// - Throws: ``TLSServerError`` for records that do not decrypt.
    package func decrypt(_ ciphertext: [UInt8]) throws -> [UInt8] {
        try lock.withLock {
            guard handshakeDone else { throw TLSServerError("decrypt before the TLS handshake completed") }
            ERR_clear_error()
            try feed(ciphertext)
            var plaintext: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let rc = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if rc > 0 {
                    plaintext += buffer[0 ..< Int(rc)]
                    continue
                }
                let code = SSL_get_error(ssl, rc)
                if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_ZERO_RETURN { break }
                throw CertificateMaker.failure("TLS decryption")
            }
            return plaintext
        }
    }

    /// The negotiated protocol (for example "TLSv1.2") once the handshake is complete.
    package var negotiatedProtocol: String? {
        lock.withLock {
            guard handshakeDone, let name = SSL_get_version(ssl) else { return nil }
            return String(cString: name)
        }
    }

    /// The ALPN protocol selected for the client, once the handshake is complete; nil when none.
    package var selectedALPN: String? {
        lock.withLock {
            guard handshakeDone else { return nil }
            var data: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &data, &length)
            guard let data, length > 0 else { return nil }
            return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
        }
    }

    /// The server name the client sent (SNI), nil when none.
    package var requestedServerName: String? {
        lock.withLock { csqlclient_SSL_get_servername(ssl).map { String(cString: $0) } }
    }

    // MARK: - Helpers

    private static func read(_ pem: String, _ reader: (OpaquePointer) -> OpaquePointer?) throws -> OpaquePointer {
        let bytes = Array(pem.utf8)
        guard let bio = bytes.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
            throw CertificateMaker.failure("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        guard let object = reader(bio) else { throw CertificateMaker.failure("reading PEM") }
        return object
    }

    private func feed(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        let written = bytes.withUnsafeBytes { BIO_write(readBIO, $0.baseAddress, Int32($0.count)) }
        guard written == Int32(bytes.count) else { throw TLSServerError("cannot buffer received TLS bytes") }
    }

    private func drainOutput() -> [UInt8] {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while csqlclient_BIO_pending(writeBIO) > 0 {
            let n = buffer.withUnsafeMutableBytes { BIO_read(writeBIO, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            output += buffer[0 ..< Int(n)]
        }
        return output
    }
}
#endif
