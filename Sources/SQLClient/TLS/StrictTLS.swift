#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif
import TDS

/// TDS 8.0 ("strict" encryption, [MS-TDS] 3.2.5.1): TLS on the TCP connection before anything
/// else, then PRELOGIN and LOGIN7 inside it, the whole session encrypted.
///
/// The handshake sits directly on the socket bytes (no PRELOGIN framing), offers ALPN `tds/8.0`,
/// allows TLS 1.2 and 1.3, sends SNI with the host name and always verifies the certificate (chain
/// and name; `hostNameInCertificate` names what it must carry), as Microsoft.Data.SqlClient
/// documents for `Encrypt=Strict`: `trustServerCertificate` does not apply.
enum StrictTLS {
    /// The ALPN protocol id of TDS 8.0.
    static let alpn = "tds/8.0"

    /// The TLS settings strict mode uses: `configuration` with verification forced on and the
    /// version range TLS 1.2–1.3 (a higher minimum is kept).
    static func configuration(_ configuration: TLSConfiguration) -> TLSConfiguration {
        var tls = configuration
        tls.trustServerCertificate = false
        tls.verifyHostName = true
        tls.minimumVersion = max(configuration.minimumVersion, .tls1_2)
        tls.maximumVersion = .tls1_3
        return tls
    }

    /// Runs `session`'s handshake on `stream`'s raw bytes, then checks the ALPN answer: a server
    /// may agree to `tds/8.0` or choose none (a TLS-terminating proxy); any other protocol is refused.
    /// Bytes the server sent after its last handshake record stay buffered in the session.
    /// - Throws: ``SQLClientError`` `.tlsFailed`, `.certificateVerificationFailed`,
    ///   `.connectionClosed` (the server closed during the handshake, as servers without TDS 8.0 do),
    ///   `.protocolError` (another ALPN protocol).
    static func handshake(_ session: any TLSSession, over stream: any ByteStream) async throws {
        var output = try await session.startHandshake()
        var complete = false
        for _ in 0 ..< 64 {
            if !output.isEmpty { try await stream.write(output) }
            if complete { break }
            let received = try await stream.read(maxLength: 16_384 + 512)
            if received.isEmpty {
                throw SQLClientError(.connectionClosed, "the server closed the connection during the TDS 8.0 TLS handshake"
                                     + " (a server without TDS 8.0 support does this; use Encrypt=true instead of strict)")
            }
            let step = try await session.continueHandshake(received)
            output = step.output
            complete = step.isComplete
        }
        guard complete else { throw SQLClientError(.tlsFailed, "the TDS 8.0 TLS handshake did not finish") }
        if let chosen = session.applicationProtocol, chosen != alpn {
            throw SQLClientError(.protocolError, "the server chose ALPN protocol \"\(chosen)\", not \(alpn)")
        }
    }
}

extension TLSProvider {
    package func makeStrictClientSession(serverName: String, configuration: TLSConfiguration) throws -> any TLSSession {
        throw SQLClientError(.unsupported, "this TLS provider does not implement TDS 8.0 (strict encryption)")
    }
}

extension TLSSession {
    package var applicationProtocol: String? { nil }
}

#if canImport(CSQLClientOpenSSL)
extension OpenSSLTLSProvider {
    package func makeStrictClientSession(serverName: String, configuration: TLSConfiguration) throws -> any TLSSession {
        let session = try OpenSSLTLSSession(serverName: serverName, configuration: StrictTLS.configuration(configuration))
        try session.offerALPN([StrictTLS.alpn])
        return session
    }
}

extension OpenSSLTLSSession {
    /// Offers `protocols` in the ClientHello's ALPN extension (before the handshake starts).
    func offerALPN(_ protocols: [String]) throws {
        var wire: [UInt8] = []
        for p in protocols {
            let bytes = Array(p.utf8)
            guard !bytes.isEmpty, bytes.count <= 255 else {
                throw SQLClientError(.invalidConfiguration, "ALPN protocol \"\(p)\" must be 1–255 bytes")
            }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        let ok = withSessionLock { _ in
            wire.withUnsafeBufferPointer { csqlclient_SSL_set_alpn(ssl, $0.baseAddress, UInt32($0.count)) }
        }
        guard ok == 1 else { throw OpenSSLTLSSession.error(.tlsFailed, "cannot offer ALPN") }
    }

    /// The ALPN protocol the server selected, once the handshake is complete.
    package var applicationProtocol: String? {
        withSessionLock { handshakeDone in
            guard handshakeDone else { return nil }
            var data: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &data, &length)
            guard let data, length > 0 else { return nil }
            return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
        }
    }
}
#endif
