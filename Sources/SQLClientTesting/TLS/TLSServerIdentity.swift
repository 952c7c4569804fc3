import Foundation
#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif

/// What a test server (``ReplayServer``, ``RecordingProxy``) presents to TLS clients: a server
/// certificate and its private key (PEM), and, when the identity was generated here, the
/// certificate of the CA that signed it, for the client to trust.
///
/// ```swift
/// let identity = try TLSServerIdentity.generated()          // once per process, about 0.1 s
/// var config = SQLConnectionConfiguration(...)               // encryption stays .on
/// config.tls.caFile = try identity.caCertificateFile()
/// ```
public struct TLSServerIdentity: Sendable, Hashable {
    /// The server certificate (PEM, `-----BEGIN CERTIFICATE-----`).
    public var certificatePEM: String
    /// The certificate's private key (PEM, unencrypted).
    public var privateKeyPEM: String
    /// The CA certificate that signed ``certificatePEM`` (PEM), for a generated identity; nil
    /// for one read from files (whose CA its owner knows).
    public var caCertificatePEM: String?

    /// An identity from PEM text (certificate, private key and, optionally, the CA that signed it).
    public init(certificatePEM: String, privateKeyPEM: String, caCertificatePEM: String? = nil) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.caCertificatePEM = caCertificatePEM
    }

    /// Reads a certificate and its key from PEM files (`--certificate PEM --key PEM`).
    /// - Throws: the file system's error for an unreadable file; ``TLSServerError`` when a file holds no PEM block.
    public init(certificateFile: String, privateKeyFile: String) throws {
        let certificate = try String(contentsOfFile: certificateFile, encoding: .utf8)
        let key = try String(contentsOfFile: privateKeyFile, encoding: .utf8)
        guard certificate.contains("-----BEGIN CERTIFICATE-----") else {
            throw TLSServerError("\(certificateFile) holds no PEM certificate")
        }
        guard key.contains("PRIVATE KEY-----") else { throw TLSServerError("\(privateKeyFile) holds no PEM private key") }
        self.init(certificatePEM: certificate, privateKeyPEM: key)
    }

    /// The names a generated certificate carries by default (subjectAltName): what a client on
    /// this machine connects to.
    public static let loopbackNames = ["localhost", "127.0.0.1", "::1"]

    /// Generates a CA ("SQLClientTesting CA", ECDSA P-256) and a server certificate it signs for
    /// `names` (DNS names and IP addresses, in subjectAltName; the first is also the common
    /// name), valid from an hour ago for `days` days. Made with OpenSSL's C API (no `openssl`
    /// command).
    /// - Throws: ``TLSServerError`` when OpenSSL fails, or on a platform without OpenSSL.
    public static func generate(names: [String] = loopbackNames, days: Int = 30) throws -> TLSServerIdentity {
        #if canImport(CSQLClientOpenSSL)
        return try CertificateMaker.make(names: names.isEmpty ? loopbackNames : names, days: min(max(days, 1), 3650))
        #else
        throw TLSServerError("TLS test servers need OpenSSL (Linux)")
        #endif
    }

    /// One identity for ``loopbackNames``, generated the first time it is asked for in this
    /// process and shared by every later caller.
    /// - Throws: ``TLSServerError`` as ``generate(names:days:)``.
    public static func generated() throws -> TLSServerIdentity {
        try sharedLock.withLock {
            if let shared { return shared }
            let made = try generate()
            shared = made
            return made
        }
    }

    /// Writes the CA certificate (or, for an identity read from files, the server certificate
    /// itself) to `url`, for a client's CA file.
    public func writeCACertificate(to url: URL) throws {
        try Data((caCertificatePEM ?? certificatePEM).utf8).write(to: url, options: .atomic)
    }

    /// A file holding the CA certificate (see ``writeCACertificate(to:)``), written once per
    /// identity into the temporary directory; returns its path.
    public func caCertificateFile() throws -> String {
        let pem = caCertificatePEM ?? certificatePEM
        return try Self.sharedLock.withLock {
            if let path = Self.caFiles[pem] { return path }
            let url = FileManager.default.temporaryDirectory
                .appendingPathComponent("sqlclient-testing-ca-\(getpid())-\(Self.caFiles.count + 1).pem")
            try writeCACertificate(to: url)
            Self.caFiles[pem] = url.path
            return url.path
        }
    }

    private static let sharedLock = NSLock()
    nonisolated(unsafe) private static var shared: TLSServerIdentity?
    nonisolated(unsafe) private static var caFiles: [String: String] = [:]
}

/// A failure of the TLS test server side (certificate generation, a handshake, a record).
public struct TLSServerError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

#if canImport(CSQLClientOpenSSL)
/// Certificate generation through OpenSSL's C API.
enum CertificateMaker {
    static func make(names: [String], days: Int) throws -> TLSServerIdentity {
        ERR_clear_error()
        let caKey = try makeKey()
        defer { EVP_PKEY_free(caKey) }
        let ca = try certificate(commonName: "SQLClientTesting CA", key: caKey, days: days, serial: 1,
                                 issuer: nil, issuerKey: caKey, extensions: [
                                    (NID_basic_constraints, "critical,CA:TRUE"),
                                    (NID_key_usage, "critical,keyCertSign,cRLSign"),
                                    (NID_subject_key_identifier, "hash"),
                                 ])
        defer { X509_free(ca) }
        let key = try makeKey()
        defer { EVP_PKEY_free(key) }
        let alt = names.map { isAddress($0) ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ",")
        let leaf = try certificate(commonName: names[0], key: key, days: days, serial: 2, issuer: ca, issuerKey: caKey,
                                   extensions: [
                                    (NID_basic_constraints, "critical,CA:FALSE"),
                                    (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
                                    (NID_ext_key_usage, "serverAuth"),
                                    (NID_subject_alt_name, alt),
                                    (NID_authority_key_identifier, "keyid"),
                                   ])
        defer { X509_free(leaf) }
        return TLSServerIdentity(certificatePEM: try pem { PEM_write_bio_X509($0, leaf) },
                                 privateKeyPEM: try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) },
                                 caCertificatePEM: try pem { PEM_write_bio_X509($0, ca) })
    }

    /// An ECDSA P-256 key (generated in microseconds; an RSA key takes about a second on a busy machine).
    static func makeKey() throws -> OpaquePointer {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw failure("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(ctx, &key) == 1, let key else { throw failure("EC key generation") }
        return key
    }

    static func certificate(commonName: String, key: OpaquePointer, days: Int, serial: Int, issuer: OpaquePointer?,
                            issuerKey: OpaquePointer, extensions: [(Int32, String)]) throws -> OpaquePointer {
        guard let x = X509_new() else { throw failure("X509_new") }
        var ok = X509_set_version(x, 2) == 1
        ok = ok && ASN1_INTEGER_set(X509_get_serialNumber(x), serial) == 1
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(x), days * 86_400) != nil
        ok = ok && X509_set_pubkey(x, key) == 1
        if ok, let name = X509_get_subject_name(x) {
            ok = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1
            ok = ok && X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0) } ?? name) == 1
        } else {
            ok = false
        }
        var ctx = X509V3_CTX()
        X509V3_set_ctx(&ctx, issuer ?? x, x, nil, nil, 0)
        for (nid, value) in extensions where ok {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else { ok = false; break }
            ok = X509_add_ext(x, ext, -1) == 1
            X509_EXTENSION_free(ext)
        }
        ok = ok && X509_sign(x, issuerKey, EVP_sha256()) > 0
        guard ok else {
            X509_free(x)
            throw failure("the certificate for \(commonName)")
        }
        return x
    }

    /// Runs a PEM writer into a memory BIO and returns the text.
    static func pem(_ write: (OpaquePointer) -> Int32) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw failure("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw failure("PEM encoding") }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            out += buffer[0 ..< Int(n)]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// A ``TLSServerError`` with OpenSSL's queued reasons.
    static func failure(_ what: String) -> TLSServerError {
        var reasons: [String] = []
        while case let e = ERR_get_error(), e != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(e, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return TLSServerError(reasons.isEmpty ? "\(what) failed" : "\(what) failed: " + reasons.joined(separator: "; "))
    }
}
#endif
