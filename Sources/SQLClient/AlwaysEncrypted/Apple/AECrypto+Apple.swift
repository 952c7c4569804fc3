#if !canImport(CSQLClientOpenSSL) && canImport(CommonCrypto) && canImport(Security)
import CommonCrypto
import Foundation
import Security

/// The primitives of Always Encrypted on Apple platforms: CommonCrypto (HMAC-SHA256, SHA-256,
/// AES-256-CBC with PKCS #7 padding) and Security (random bytes, RSA-OAEP SHA-1, RSA PKCS #1 v1.5
/// SHA-256 signatures). The same interface as the OpenSSL one (AECrypto+OpenSSL.swift).
enum AECrypto {
    static func hmacSHA256(key: [UInt8], _ data: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(CC_SHA256_DIGEST_LENGTH))
        CCHmac(CCHmacAlgorithm(kCCHmacAlgSHA256), key, key.count, data, data.count, &out)
        return out
    }

    static func sha256(_ data: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(CC_SHA256_DIGEST_LENGTH))
        guard data.count <= Int(CC_LONG.max) else { throw ColumnEncryptionError(.cryptoFailure, "SHA-256 input too long") }
        _ = CC_SHA256(data, CC_LONG(data.count), &out)
        return out
    }

    static func aes256CBC(encrypt: Bool, key: [UInt8], iv: [UInt8], _ data: ArraySlice<UInt8>) -> [UInt8]? {
        guard key.count == 32, iv.count == 16 else { return nil }
        var out = [UInt8](repeating: 0, count: data.count + kCCBlockSizeAES128)
        var moved = 0
        let outCount = out.count
        let status = data.withUnsafeBufferPointer { d in
            CCCrypt(CCOperation(encrypt ? kCCEncrypt : kCCDecrypt), CCAlgorithm(kCCAlgorithmAES),
                    CCOptions(kCCOptionPKCS7Padding), key, key.count, iv, d.baseAddress, d.count, &out, outCount, &moved)
        }
        guard status == CCCryptorStatus(kCCSuccess), moved <= out.count else { return nil }
        out.removeSubrange(moved...)
        return out
    }

    static func randomBytes(_ count: Int) throws(ColumnEncryptionError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard SecRandomCopyBytes(kSecRandomDefault, count, &out) == errSecSuccess else {
            throw ColumnEncryptionError(.cryptoFailure, "no random bytes")
        }
        return out
    }

    static func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in timingsafe_bcmp(x.baseAddress, y.baseAddress, x.count) == 0 } }
    }
}

/// An HMAC-SHA256 key for the MACs of many cells (CommonCrypto keys each MAC itself).
final class AEHMACKey: @unchecked Sendable {
    private let key: [UInt8]

    init(_ key: [UInt8]) throws(ColumnEncryptionError) { self.key = key }

    func mac(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>, _ c: ArraySlice<UInt8>) throws(ColumnEncryptionError) -> [UInt8] {
        var context = CCHmacContext()
        CCHmacInit(&context, CCHmacAlgorithm(kCCHmacAlgSHA256), key, key.count)
        for part in [a, b, c] { part.withUnsafeBufferPointer { CCHmacUpdate(&context, $0.baseAddress, $0.count) } }
        var out = [UInt8](repeating: 0, count: Int(CC_SHA256_DIGEST_LENGTH))
        CCHmacFinal(&context, &out)
        return out
    }
}

/// An RSA key held by Security (a `SecKey`), private or public.
package final class AERSAKey: @unchecked Sendable {
    // SecKey is immutable and thread-safe.
    private let key: SecKey

    private init(_ key: SecKey) { self.key = key }

    /// PKCS #1 (`RSA PRIVATE KEY`) or unencrypted PKCS #8 (`PRIVATE KEY`) PEM text; an encrypted
    /// PEM is not read here (use PKCS #12).
    static func privateKey(pem: [UInt8], password: String?) -> AERSAKey? {
        guard let text = String(bytes: pem, encoding: .utf8) else { return nil }
        if let der = pemBody(text, label: "RSA PRIVATE KEY") { return rsaPrivate(der) }
        if let der = pemBody(text, label: "PRIVATE KEY"), let inner = pkcs8Inner(der) { return rsaPrivate(inner) }
        return nil
    }

    static func privateKey(pkcs12: [UInt8], password: String?) -> AERSAKey? {
        var items: CFArray?
        let options = [kSecImportExportPassphrase as String: password ?? ""] as CFDictionary
        guard SecPKCS12Import(Data(pkcs12) as CFData, options, &items) == errSecSuccess,
              let list = items as? [[String: Any]], let first = list.first,
              let value = first[kSecImportItemIdentity as String] else { return nil }
        let identity = value as! SecIdentity   // the documented type of kSecImportItemIdentity
        var key: SecKey?
        guard SecIdentityCopyPrivateKey(identity, &key) == errSecSuccess, let key else { return nil }
        return AERSAKey(key)
    }

    static func publicKey(certificatePEM pem: [UInt8]) -> AERSAKey? {
        guard let text = String(bytes: pem, encoding: .utf8), let der = pemBody(text, label: "CERTIFICATE"),
              let certificate = SecCertificateCreateWithData(nil, Data(der) as CFData),
              let key = SecCertificateCopyKey(certificate) else { return nil }
        return AERSAKey(key)
    }

    /// A public key from its PKCS #1 RSAPublicKey DER (what Security reads for an RSA public key).
    package static func publicKey(pkcs1 der: [UInt8]) -> AERSAKey? {
        let attributes = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                          kSecAttrKeyClass as String: kSecAttrKeyClassPublic] as CFDictionary
        return SecKeyCreateWithData(Data(der) as CFData, attributes, nil).map(AERSAKey.init)
    }

    /// The public part as PKCS #1 RSAPublicKey DER.
    package func publicPKCS1() -> [UInt8]? {
        (SecKeyCopyExternalRepresentation(publicKey, nil) as Data?).map { [UInt8]($0) }
    }

    package static func generate(bits: Int) -> AERSAKey? {
        let attributes = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: bits] as CFDictionary
        return SecKeyCreateRandomKey(attributes, nil).map(AERSAKey.init)
    }

    /// The private key as PKCS #1 PEM text (what ``privateKey(pem:password:)`` reads back).
    package func pkcs8PEM() -> [UInt8]? {
        guard let data = SecKeyCopyExternalRepresentation(key, nil) as Data? else { return nil }
        let body = data.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return Array("-----BEGIN RSA PRIVATE KEY-----\n\(body)\n-----END RSA PRIVATE KEY-----\n".utf8)
    }

    package var size: Int { SecKeyGetBlockSize(key) }

    private var publicKey: SecKey { SecKeyCopyPublicKey(key) ?? key }

    package func decryptOAEP(_ data: ArraySlice<UInt8>) -> [UInt8]? {
        SecKeyCreateDecryptedData(key, .rsaEncryptionOAEPSHA1, Data(data) as CFData, nil).map { [UInt8]($0 as Data) }
    }

    package func encryptOAEP(_ data: [UInt8]) -> [UInt8]? {
        SecKeyCreateEncryptedData(publicKey, .rsaEncryptionOAEPSHA1, Data(data) as CFData, nil).map { [UInt8]($0 as Data) }
    }

    package func signSHA256(_ data: ArraySlice<UInt8>) -> [UInt8]? {
        SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, Data(data) as CFData, nil).map { [UInt8]($0 as Data) }
    }

    /// An RSA PKCS #1 v1.5 signature of a SHA-256 digest computed elsewhere (32 bytes).
    package func signDigestSHA256(_ digest: [UInt8]) -> [UInt8]? {
        SecKeyCreateSignature(key, .rsaSignatureDigestPKCS1v15SHA256, Data(digest) as CFData, nil).map { [UInt8]($0 as Data) }
    }

    package func verifySHA256(_ data: ArraySlice<UInt8>, signature: ArraySlice<UInt8>) -> Bool {
        SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA256, Data(data) as CFData, Data(signature) as CFData, nil)
    }

    private static func rsaPrivate(_ der: [UInt8]) -> AERSAKey? {
        let attributes = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                          kSecAttrKeyClass as String: kSecAttrKeyClassPrivate] as CFDictionary
        return SecKeyCreateWithData(Data(der) as CFData, attributes, nil).map(AERSAKey.init)
    }

    /// The base64 body between `-----BEGIN label-----` and `-----END label-----`, decoded.
    private static func pemBody(_ text: String, label: String) -> [UInt8]? {
        guard let begin = text.range(of: "-----BEGIN \(label)-----"),
              let end = text.range(of: "-----END \(label)-----", range: begin.upperBound ..< text.endIndex) else { return nil }
        let body = text[begin.upperBound ..< end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map { [UInt8]($0) }
    }

    /// The privateKey OCTET STRING of a PKCS #8 PrivateKeyInfo (SEQUENCE { INTEGER, SEQUENCE,
    /// OCTET STRING }): the PKCS #1 key Security reads. Lengths are checked against the input.
    private static func pkcs8Inner(_ der: [UInt8]) -> [UInt8]? {
        var reader = RSAPublicKeyDER.Reader(der)
        guard reader.header(0x30) != nil, let v = reader.header(0x02) else { return nil }
        _ = reader.take(v)
        guard let a = reader.header(0x30) else { return nil }
        _ = reader.take(a)
        guard let k = reader.header(0x04) else { return nil }
        return Array(reader.take(k))
    }
}
#endif
