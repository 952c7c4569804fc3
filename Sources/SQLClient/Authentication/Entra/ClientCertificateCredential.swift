#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif
import Foundation

/// `Authentication=ActiveDirectoryServicePrincipal` with a certificate: the client credentials
/// grant with a client assertion, a JWT signed RS256 or PS256 by the certificate's RSA key whose header
/// names the certificate by `x5t#S256` (the SHA-256 of its DER form, base64url) and `x5t` (SHA-1),
/// with `aud` the token endpoint, `iss` and `sub` the client id, a fresh `jti`, valid 10 minutes.
///
/// The certificate and key are read from PEM files (one file holding both works) or a PKCS#12
/// file, through OpenSSL on Linux and Security.framework on Apple platforms (PKCS#12, or PEM with
/// an unencrypted PKCS#1 or PKCS#8 RSA key).
public struct ClientCertificateCredential: EntraTokenCredential, CustomStringConvertible {
    /// The application (client) id.
    public var clientID: String
    /// The PEM certificate file.
    public var certificatePath: String
    /// The PEM private key file (nil: the certificate file holds it; unused for PKCS#12).
    public var privateKeyPath: String?
    /// The PKCS#12 file's password (nil: none).
    private let certificatePassword: String?
    /// The tenant (nil: the STSURL's).
    public var tenantID: String?
    /// The authority host (nil: `AZURE_AUTHORITY_HOST`, else the STSURL's when it is Entra's).
    public var authorityHost: String?
    /// How the client assertion is signed (RS256 by default; PS256 as newer MSAL versions do).
    public var signatureAlgorithm: SignatureAlgorithm
    private let environment: EntraEnvironment
    private let http: EntraHTTPClient

    /// The JWS algorithms of a client assertion (RFC 7518 3.3 and 3.5), both RSA with SHA-256.
    public enum SignatureAlgorithm: String, Sendable, Hashable, CaseIterable {
        /// RSASSA-PKCS1-v1_5 with SHA-256.
        case rs256 = "RS256"
        /// RSASSA-PSS with SHA-256 (MGF1-SHA-256, 32-byte salt).
        case ps256 = "PS256"
    }

    /// A service principal with a certificate.
    /// `certificatePath` is a PEM file (with the key in it or in `privateKeyPath`) or a PKCS#12 file
    /// (`.pfx`/`.p12`, opened with `certificatePassword`).
    public init(clientID: String, certificatePath: String, privateKeyPath: String? = nil, certificatePassword: String? = nil,
                tenantID: String? = nil, authorityHost: String? = nil, signatureAlgorithm: SignatureAlgorithm = .rs256,
                environment: EntraEnvironment = .process, http: EntraHTTPClient = EntraHTTPClient()) {
        self.signatureAlgorithm = signatureAlgorithm
        self.certificatePassword = certificatePassword
        self.clientID = clientID
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
        self.tenantID = tenantID
        self.authorityHost = authorityHost
        self.environment = environment
        self.http = http
    }

    public var authenticationName: String { "ActiveDirectoryServicePrincipal" }
    public var cacheIdentity: String { "\(clientID)@\(tenantID ?? "")#cert" }
    public var workflow: UInt8 { EntraWorkflow.password }
    public var description: String { "ClientCertificateCredential(clientID: \(clientID), certificate: \(certificatePath))" }

    public func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        let authority = try EntraAuthority.resolve(request, authorityHost: authorityHost, tenant: tenantID,
                                                   environment: environment, credential: authenticationName)
        let endpoint = authority.appendingPathComponent("oauth2/v2.0/token")
        let assertion = try clientAssertion(audience: endpoint.absoluteString, now: http.clock.now())
        return try await http.postForToken(endpoint, form: [
            ("grant_type", "client_credentials"), ("client_id", clientID), ("scope", request.scope),
            ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"), ("client_assertion", assertion),
        ], credential: authenticationName, request: request, timeout: timeout, secrets: [assertion])
    }

    /// The signed client assertion (a JWT) for `audience`.
    /// - Throws: ``EntraCredentialError`` `.invalidConfiguration` when the files cannot be read or
    ///   the key is not RSA; `.notAvailable` on a platform with neither OpenSSL nor Security.framework.
    public func clientAssertion(audience: String, now: Date) throws(EntraCredentialError) -> String {
        let certificate = try ClientCertificate.load(certificatePath: certificatePath, privateKeyPath: privateKeyPath,
                                                     password: certificatePassword, credential: authenticationName)
        let header: [String: Any] = ["alg": signatureAlgorithm.rawValue, "typ": "JWT",
                                     "x5t#S256": EntraJWT.base64URLEncode(certificate.sha256),
                                     "x5t": EntraJWT.base64URLEncode(certificate.sha1)]
        let issued = Int(now.timeIntervalSince1970)
        let claims: [String: Any] = ["aud": audience, "iss": clientID, "sub": clientID, "jti": UUID().uuidString,
                                     "nbf": issued, "iat": issued, "exp": issued + 600]
        func part(_ object: [String: Any]) -> String {
            EntraJWT.base64URLEncode(Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
        }
        let signingInput = part(header) + "." + part(claims)
        let signature = try certificate.sign(Array(signingInput.utf8), signatureAlgorithm)
        return signingInput + "." + EntraJWT.base64URLEncode(signature)
    }
}

/// A certificate's fingerprints and a signer over its RSA private key: OpenSSL on Linux,
/// Security.framework on Apple platforms (`Apple/ClientCertificate+Apple.swift`).
struct ClientCertificate {
    /// SHA-1 and SHA-256 of the certificate's DER form (`x5t`, `x5t#S256`).
    var sha1: [UInt8]
    var sha256: [UInt8]
    /// Signs the bytes (SHA-256, then RSA with the algorithm's padding).
    var sign: ([UInt8], ClientCertificateCredential.SignatureAlgorithm) throws(EntraCredentialError) -> [UInt8]
}

#if canImport(CSQLClientOpenSSL)
extension ClientCertificate {
    /// Reads the certificate and key: PEM files (one file holding both works) or PKCS#12.
    static func load(certificatePath: String, privateKeyPath: String?, password: String?,
                     credential: String) throws(EntraCredentialError) -> ClientCertificate {
        func bad(_ why: String) -> EntraCredentialError {
            EntraCredentialError(.invalidConfiguration, credential: credential, endpoint: nil, why)
        }
        guard let certPEM = FileManager.default.contents(atPath: certificatePath), certPEM.count < 1 << 20 else {
            throw bad("cannot read the certificate \(certificatePath)")
        }
        let keyPEM = privateKeyPath.flatMap { FileManager.default.contents(atPath: $0) } ?? certPEM
        guard keyPEM.count < 1 << 20 else { throw bad("the private key file is too large") }
        let certBytes = [UInt8](certPEM), keyBytes = [UInt8](keyPEM)
        let x509: OpaquePointer, key: OpaquePointer
        if !String(decoding: certBytes.prefix(4096), as: UTF8.self).contains("-----BEGIN") {
            // PKCS#12 (.pfx/.p12): the certificate and its key, protected by `password`.
            guard let bio = BIO_new_mem_buf(certBytes, Int32(certBytes.count)) else { throw bad("out of memory") }
            let p12 = d2i_PKCS12_bio(bio, nil)
            BIO_free(bio)
            guard let p12 else { throw bad("\(certificatePath) is neither PEM nor PKCS#12") }
            defer { PKCS12_free(p12) }
            var pkey: OpaquePointer?, cert: OpaquePointer?
            guard PKCS12_parse(p12, password ?? "", &pkey, &cert, nil) == 1, let pkey, let cert else {
                if let pkey { EVP_PKEY_free(pkey) }
                if let cert { X509_free(cert) }
                throw bad("cannot open the PKCS#12 file \(certificatePath) (wrong password?)")
            }
            x509 = cert
            key = pkey
        } else {
            guard let bio = BIO_new_mem_buf(certBytes, Int32(certBytes.count)) else { throw bad("out of memory") }
            let read = PEM_read_bio_X509(bio, nil, nil, nil)
            BIO_free(bio)
            guard let read else { throw bad("\(certificatePath) holds no PEM certificate") }
            guard let keyBIO = BIO_new_mem_buf(keyBytes, Int32(keyBytes.count)) else { X509_free(read); throw bad("out of memory") }
            let privateKey = PEM_read_bio_PrivateKey(keyBIO, nil, nil, nil)
            BIO_free(keyBIO)
            guard let privateKey else {
                X509_free(read)
                throw bad("\(privateKeyPath ?? certificatePath) holds no unencrypted PEM private key")
            }
            x509 = read
            key = privateKey
        }
        defer { X509_free(x509) }
        let owned = OwnedKey(key)
        let derLength = i2d_X509(x509, nil)
        guard derLength > 0 else { throw bad("the certificate cannot be encoded") }
        var der = [UInt8](repeating: 0, count: Int(derLength))
        der.withUnsafeMutableBufferPointer { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_X509(x509, &p)
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else { throw bad("the private key is not RSA (RS256 and PS256 need RSA)") }
        func digest(_ bytes: [UInt8], _ md: OpaquePointer?) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            _ = EVP_Digest(bytes, bytes.count, &out, &length, md, nil)
            return Array(out.prefix(Int(length)))
        }
        return ClientCertificate(sha1: digest(der, EVP_sha1()), sha256: digest(der, EVP_sha256())) { (input, algorithm) throws(EntraCredentialError) in
            guard let ctx = EVP_MD_CTX_new() else { throw bad("out of memory") }
            defer { EVP_MD_CTX_free(ctx) }
            var pctx: OpaquePointer?
            guard EVP_DigestSignInit(ctx, &pctx, EVP_sha256(), nil, owned.key) == 1 else { throw bad("OpenSSL cannot sign with the key") }
            if algorithm == .ps256 {
                // RSASSA-PSS with SHA-256, MGF1-SHA-256, a salt as long as the digest (RFC 7518 3.5).
                guard EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
                      EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1 else {
                    throw bad("OpenSSL cannot sign PS256 with the key")
                }
            }
            var length = 0
            guard EVP_DigestSign(ctx, nil, &length, input, input.count) == 1 else { throw bad("OpenSSL cannot sign with the key") }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(ctx, &signature, &length, input, input.count) == 1 else { throw bad("OpenSSL cannot sign with the key") }
            return Array(signature.prefix(length))
        }
    }

    /// The private key, freed with the last signer that holds it.
    private final class OwnedKey: @unchecked Sendable {   // immutable after init; OpenSSL keys sign from any thread
        let key: OpaquePointer
        init(_ key: OpaquePointer) { self.key = key }
        deinit { EVP_PKEY_free(key) }
    }
}
#elseif !canImport(Security)
extension ClientCertificate {
    static func load(certificatePath: String, privateKeyPath: String?, password: String?,
                     credential: String) throws(EntraCredentialError) -> ClientCertificate {
        throw EntraCredentialError(.notAvailable, credential: credential,
                                   "a certificate credential needs OpenSSL or Security.framework; use a client secret")
    }
}
#endif
