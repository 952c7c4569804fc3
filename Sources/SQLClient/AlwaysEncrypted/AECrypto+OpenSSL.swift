#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL

/// The primitives of Always Encrypted through the system's OpenSSL (Linux): HMAC-SHA256, SHA-256,
/// AES-256-CBC with PKCS #7 padding, random bytes, and RSA (OAEP with SHA-1 as SQL Server's
/// RSA_OAEP; PKCS #1 v1.5 signatures with SHA-256). Nothing here is hand-written cryptography;
/// the Apple counterpart is in Apple/AECrypto+Apple.swift.
enum AECrypto {
    /// HMAC-SHA256 of `data` with `key` (32 bytes).
    static func hmacSHA256(key: [UInt8], _ data: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    csqlclient_hmac_sha256(k.baseAddress, k.count, d.baseAddress, d.count, o.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw failure("HMAC-SHA256") }
        return out
    }

    /// SHA-256 of `data` (32 bytes).
    static func sha256(_ data: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { o in csqlclient_sha256(d.baseAddress, d.count, o.baseAddress) }
        }
        guard ok == 1 else { throw failure("SHA-256") }
        return out
    }

    /// AES-256-CBC with PKCS #7 padding; nil when decryption finds bad padding or a partial block.
    static func aes256CBC(encrypt: Bool, key: [UInt8], iv: [UInt8], _ data: ArraySlice<UInt8>) -> [UInt8]? {
        guard key.count == 32, iv.count == 16 else { return nil }
        var out = [UInt8](repeating: 0, count: data.count + 16)
        let written = key.withUnsafeBufferPointer { k in
            iv.withUnsafeBufferPointer { v in
                data.withUnsafeBufferPointer { d in
                    out.withUnsafeMutableBufferPointer { o in
                        csqlclient_aes256cbc(aes256CBCCipher, encrypt ? 1 : 0, k.baseAddress, v.baseAddress, d.baseAddress, d.count, o.baseAddress)
                    }
                }
            }
        }
        guard written >= 0, written <= out.count else { ERR_clear_error(); return nil }
        out.removeSubrange(Int(written)...)
        return out
    }

    /// AES-256-CBC fetched once for the process (nil: OpenSSL's built-in one is used).
    nonisolated(unsafe) private static let aes256CBCCipher: UnsafeRawPointer? = csqlclient_aes256cbc_fetch()

    /// `count` cryptographically random bytes.
    static func randomBytes(_ count: Int) throws(ColumnEncryptionError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { csqlclient_random_bytes($0.baseAddress, Int32(count)) }
        guard ok == 1 else { throw failure("random bytes") }
        return out
    }

    /// True when `a` and `b` are equal, compared in time independent of where they differ.
    static func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBufferPointer { x in
            b.withUnsafeBufferPointer { y in csqlclient_memeq(x.baseAddress, y.baseAddress, x.count) == 1 }
        }
    }

    static func failure(_ what: String) -> ColumnEncryptionError {
        ERR_clear_error()
        return ColumnEncryptionError(.cryptoFailure, "OpenSSL could not compute \(what)")
    }
}

/// An HMAC-SHA256 key set up once in OpenSSL (a keyed MAC context), for the MACs of many cells.
final class AEHMACKey: @unchecked Sendable {
    // Only read (copied) after creation: OpenSSL's dup of a keyed context does not change it.
    private let context: UnsafeMutableRawPointer

    init(_ key: [UInt8]) throws(ColumnEncryptionError) {
        guard let context = key.withUnsafeBufferPointer({ csqlclient_hmac_sha256_key_new($0.baseAddress, $0.count) }) else {
            throw AECrypto.failure("an HMAC-SHA256 key")
        }
        self.context = context
    }

    deinit { csqlclient_hmac_sha256_key_free(context) }

    /// HMAC-SHA256 of `a`, `b` and `c` one after another.
    func mac(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>, _ c: ArraySlice<UInt8>) throws(ColumnEncryptionError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = a.withUnsafeBufferPointer { x in
            b.withUnsafeBufferPointer { y in
                c.withUnsafeBufferPointer { z in
                    out.withUnsafeMutableBufferPointer { o in
                        csqlclient_hmac_sha256_parts(context, x.baseAddress, x.count, y.baseAddress, y.count,
                                                     z.baseAddress, z.count, o.baseAddress)
                    }
                }
            }
        }
        guard ok == 1 else { throw AECrypto.failure("HMAC-SHA256") }
        return out
    }
}

/// An RSA key held by OpenSSL (an `EVP_PKEY`): a column master key, its private part when loaded
/// from a private key file, or only its public part when loaded from a certificate.
package final class AERSAKey: @unchecked Sendable {
    // The EVP_PKEY is never mutated after creation; OpenSSL allows concurrent use of a const key.
    private let key: OpaquePointer

    private init?(_ key: OpaquePointer?) {
        guard let key, csqlclient_pkey_is_rsa(key) == 1 else {
            if let key { EVP_PKEY_free(key) }
            ERR_clear_error()
            return nil
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// A private key from PEM text (PKCS #8 or PKCS #1; `password` for an encrypted one); nil
    /// when the text holds no RSA private key.
    static func privateKey(pem: [UInt8], password: String?) -> AERSAKey? {
        guard pem.count < Int(Int32.max) else { return nil }
        let pointer = pem.withUnsafeBufferPointer { p in
            csqlclient_pkey_from_pem(p.baseAddress, Int32(p.count), password ?? "")
        }
        return AERSAKey(pointer)
    }

    /// The private key of a PKCS #12 archive (.pfx, .p12); nil when it cannot be read.
    static func privateKey(pkcs12: [UInt8], password: String?) -> AERSAKey? {
        let pointer = pkcs12.withUnsafeBufferPointer { p in
            csqlclient_pkey_from_pkcs12(p.baseAddress, p.count, password ?? "")
        }
        return AERSAKey(pointer)
    }

    /// The public key of a certificate in PEM text; nil when there is none.
    static func publicKey(certificatePEM pem: [UInt8]) -> AERSAKey? {
        guard pem.count < Int(Int32.max) else { return nil }
        let pointer = pem.withUnsafeBufferPointer { p in csqlclient_pkey_from_certificate_pem(p.baseAddress, Int32(p.count)) }
        return AERSAKey(pointer)
    }

    /// A public key from its PKCS #1 RSAPublicKey DER; nil when the bytes are not one.
    package static func publicKey(pkcs1 der: [UInt8]) -> AERSAKey? {
        let pointer = der.withUnsafeBufferPointer { csqlclient_pkey_from_rsa_public_der($0.baseAddress, $0.count) }
        return AERSAKey(pointer)
    }

    /// The public part as PKCS #1 RSAPublicKey DER.
    package func publicPKCS1() -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 4096)
        let n = out.withUnsafeMutableBufferPointer { csqlclient_pkey_rsa_public_der(key, $0.baseAddress, $0.count) }
        guard n > 0, n <= out.count else { ERR_clear_error(); return nil }
        return Array(out[..<Int(n)])
    }

    /// A new RSA key of `bits` bits (tests and test servers make column master keys with it).
    package static func generate(bits: Int) -> AERSAKey? {
        AERSAKey(csqlclient_rsa_generate(Int32(clamping: bits)))
    }

    /// The private key as unencrypted PKCS #8 PEM text.
    package func pkcs8PEM() -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 16_384)
        let n = out.withUnsafeMutableBufferPointer { csqlclient_pkey_to_pem(key, $0.baseAddress, $0.count) }
        guard n > 0, n <= out.count else { ERR_clear_error(); return nil }
        return Array(out[..<Int(n)])
    }

    /// The modulus size in bytes: the length of OAEP ciphertexts and of signatures.
    package var size: Int { Int(csqlclient_pkey_size(key)) }

    /// RSA-OAEP (SHA-1) decryption; nil when it fails (wrong key, altered ciphertext).
    package func decryptOAEP(_ data: ArraySlice<UInt8>) -> [UInt8]? {
        oaep(encrypt: false, data)
    }

    /// RSA-OAEP (SHA-1) encryption.
    package func encryptOAEP(_ data: [UInt8]) -> [UInt8]? {
        oaep(encrypt: true, data[...])
    }

    private func oaep(encrypt: Bool, _ data: ArraySlice<UInt8>) -> [UInt8]? {
        data.withUnsafeBufferPointer { d in
            output(minimum: 0) { csqlclient_rsa_oaep(encrypt ? 1 : 0, key, d.baseAddress, d.count, $0.baseAddress, $0.count) }
        }
    }

    /// An RSA PKCS #1 v1.5 signature with SHA-256 over `data`.
    package func signSHA256(_ data: ArraySlice<UInt8>) -> [UInt8]? {
        data.withUnsafeBufferPointer { d in
            output(minimum: 1) { csqlclient_rsa_sign_sha256(key, d.baseAddress, d.count, $0.baseAddress, $0.count) }
        }
    }

    /// An RSA PKCS #1 v1.5 signature of a SHA-256 digest computed elsewhere (32 bytes).
    package func signDigestSHA256(_ digest: [UInt8]) -> [UInt8]? {
        digest.withUnsafeBufferPointer { d in
            output(minimum: 1) { csqlclient_rsa_sign_digest_sha256(key, d.baseAddress, d.count, $0.baseAddress, $0.count) }
        }
    }

    /// The bytes an OpenSSL call writes into a buffer of the key's size: `call` returns how many
    /// (negative on failure); nil when that is below `minimum` or over the buffer (the error queue
    /// is cleared).
    private func output(minimum: Int, _ call: (UnsafeMutableBufferPointer<UInt8>) -> Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: max(size, 1))
        let n = out.withUnsafeMutableBufferPointer { call($0) }
        guard n >= minimum, n <= out.count else { ERR_clear_error(); return nil }
        out.removeSubrange(n...)
        return out
    }

    /// True when `signature` is this key's RSA PKCS #1 v1.5 SHA-256 signature over `data`.
    package func verifySHA256(_ data: ArraySlice<UInt8>, signature: ArraySlice<UInt8>) -> Bool {
        data.withUnsafeBufferPointer { d in
            signature.withUnsafeBufferPointer { s in
                csqlclient_rsa_verify_sha256(key, d.baseAddress, d.count, s.baseAddress, s.count) == 1
            }
        }
    }
}
#endif
