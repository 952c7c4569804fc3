#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif
import Foundation

/// `Authentication=ActiveDirectoryServicePrincipal` with a certificate: the client credentials
/// grant with a client assertion, a JWT signed RS256 by the certificate's RSA key whose header
/// names the certificate by `x5t#S256` (the SHA-256 of its DER form, base64url) and `x5t` (SHA-1),
/// with `aud` the token endpoint, `iss` and `sub` the client id, a fresh `jti`, valid 10 minutes.
///
/// The certificate and key are read from PEM files (one file holding both works) or a PKCS#12
/// file through OpenSSL (Linux). On Apple platforms this credential is not available yet (`.unsupported`).
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
    private let environment: EntraEnvironment
    private let http: EntraHTTPClient

    /// A service principal with a certificate.
    /// `certificatePath` is a PEM file (with the key in it or in `privateKeyPath`) or a PKCS#12 file
    /// (`.pfx`/`.p12`, opened with `certificatePassword`).
    public init(clientID: String, certificatePath: String, privateKeyPath: String? = nil, certificatePassword: String? = nil,
                tenantID: String? = nil, authorityHost: String? = nil, environment: EntraEnvironment = .process,
                http: EntraHTTPClient = EntraHTTPClient()) {
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
    /// - Throws: ``EntraCredentialError`` `.invalidConfiguration` when the files cannot be read or the key is not RSA.
    public func clientAssertion(audience: String, now: Date) throws(EntraCredentialError) -> String {
        #if canImport(CSQLClientOpenSSL)
        func bad(_ why: String) -> EntraCredentialError {
            EntraCredentialError(.invalidConfiguration, credential: authenticationName, endpoint: nil, why)
        }
        guard let certPEM = FileManager.default.contents(atPath: certificatePath), certPEM.count < 1 << 20 else {
            throw bad("cannot read the certificate \(certificatePath)")
        }
        let keyPEM = privateKeyPath.flatMap { FileManager.default.contents(atPath: $0) } ?? certPEM
        guard keyPEM.count < 1 << 20 else { throw bad("the private key file is too large") }
        let certBytes = [UInt8](certPEM), keyBytes = [UInt8](keyPEM)
        let x509: OpaquePointer, key: OpaquePointer
        if !certBytes.starts(with: Array("-----".utf8)), !String(decoding: certBytes.prefix(4096), as: UTF8.self).contains("-----BEGIN") {
            // PKCS#12 (.pfx/.p12): the certificate and its key, protected by `certificatePassword`.
            guard let bio = BIO_new_mem_buf(certBytes, Int32(certBytes.count)) else { throw bad("out of memory") }
            let p12 = d2i_PKCS12_bio(bio, nil)
            BIO_free(bio)
            guard let p12 else { throw bad("\(certificatePath) is neither PEM nor PKCS#12") }
            defer { PKCS12_free(p12) }
            var pkey: OpaquePointer?, cert: OpaquePointer?
            guard PKCS12_parse(p12, certificatePassword ?? "", &pkey, &cert, nil) == 1, let pkey, let cert else {
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
        let derLength = i2d_X509(x509, nil)
        guard derLength > 0 else { EVP_PKEY_free(key); throw bad("the certificate cannot be encoded") }
        var der = [UInt8](repeating: 0, count: Int(derLength))
        der.withUnsafeMutableBufferPointer { buffer in
            var p: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_X509(x509, &p)
        }
        defer { EVP_PKEY_free(key) }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else { throw bad("the private key is not RSA (RS256 needs RSA)") }
        func digest(_ bytes: [UInt8], _ md: OpaquePointer?) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            _ = EVP_Digest(bytes, bytes.count, &out, &length, md, nil)
            return Array(out.prefix(Int(length)))
        }
        let header: [String: Any] = ["alg": "RS256", "typ": "JWT",
                                     "x5t#S256": EntraJWT.base64URLEncode(digest(der, EVP_sha256())),
                                     "x5t": EntraJWT.base64URLEncode(digest(der, EVP_sha1()))]
        let issued = Int(now.timeIntervalSince1970)
        let claims: [String: Any] = ["aud": audience, "iss": clientID, "sub": clientID, "jti": UUID().uuidString,
                                     "nbf": issued, "iat": issued, "exp": issued + 600]
        func part(_ object: [String: Any]) -> String {
            EntraJWT.base64URLEncode(Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
        }
        let signingInput = part(header) + "." + part(claims)
        guard let ctx = EVP_MD_CTX_new() else { throw bad("out of memory") }
        defer { EVP_MD_CTX_free(ctx) }
        let input = Array(signingInput.utf8)
        var length = 0
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(ctx, nil, &length, input, input.count) == 1 else { throw bad("OpenSSL cannot sign with the key") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &signature, &length, input, input.count) == 1 else { throw bad("OpenSSL cannot sign with the key") }
        return signingInput + "." + EntraJWT.base64URLEncode(Array(signature.prefix(length)))
        #else
        throw EntraCredentialError(.notAvailable, credential: authenticationName,
                                   "a certificate credential needs OpenSSL (Linux); on Apple platforms use a client secret")
        #endif
    }
}
