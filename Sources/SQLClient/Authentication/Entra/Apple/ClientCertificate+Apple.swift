#if !canImport(CSQLClientOpenSSL) && canImport(Security) && canImport(CommonCrypto)
import CommonCrypto
import Foundation
import Security

// Apple platforms: the certificate credential's key through Security.framework (compiled and
// linked against Apple's SDKs by scripts/check-apple-sdk.sh; not run here).
extension ClientCertificate {
    /// Reads the certificate and key: a PKCS#12 file (`SecPKCS12Import`), or PEM files with an
    /// unencrypted RSA key in PKCS#1 (`RSA PRIVATE KEY`) or PKCS#8 (`PRIVATE KEY`) form.
    static func load(certificatePath: String, privateKeyPath: String?, password: String?,
                     credential: String) throws(EntraCredentialError) -> ClientCertificate {
        func bad(_ why: String) -> EntraCredentialError {
            EntraCredentialError(.invalidConfiguration, credential: credential, endpoint: nil, why)
        }
        guard let file = FileManager.default.contents(atPath: certificatePath), file.count < 1 << 20 else {
            throw bad("cannot read the certificate \(certificatePath)")
        }
        let der: Data
        let key: SecKey
        let text = String(decoding: file.prefix(1 << 20), as: UTF8.self)
        if !text.contains("-----BEGIN") {
            var items: CFArray?
            let options = [kSecImportExportPassphrase as String: password ?? ""] as CFDictionary
            guard SecPKCS12Import(file as CFData, options, &items) == errSecSuccess,
                  let first = (items as? [[String: Any]])?.first,
                  let identityValue = first[kSecImportItemIdentity as String],
                  CFGetTypeID(identityValue as CFTypeRef) == SecIdentityGetTypeID() else {
                throw bad("cannot open the PKCS#12 file \(certificatePath) (wrong password?)")
            }
            let identity = identityValue as! SecIdentity   // the type ID was checked above
            var certificate: SecCertificate?
            var privateKey: SecKey?
            guard SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess, let certificate,
                  SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess, let privateKey else {
                throw bad("the PKCS#12 file \(certificatePath) holds no certificate with its key")
            }
            der = SecCertificateCopyData(certificate) as Data
            key = privateKey
        } else {
            guard let certificateDER = Self.pem(text, label: "CERTIFICATE"),
                  SecCertificateCreateWithData(nil, certificateDER as CFData) != nil else {
                throw bad("\(certificatePath) holds no PEM certificate")
            }
            der = certificateDER
            let keyText: String
            if let privateKeyPath {
                guard let keyFile = FileManager.default.contents(atPath: privateKeyPath), keyFile.count < 1 << 20 else {
                    throw bad("cannot read the private key \(privateKeyPath)")
                }
                keyText = String(decoding: keyFile, as: UTF8.self)
            } else {
                keyText = text
            }
            let pkcs1: Data
            if let rsa = Self.pem(keyText, label: "RSA PRIVATE KEY") {
                pkcs1 = rsa
            } else if let pkcs8 = Self.pem(keyText, label: "PRIVATE KEY"), let inner = Self.pkcs8PrivateKey(pkcs8) {
                pkcs1 = inner
            } else {
                throw bad("\(privateKeyPath ?? certificatePath) holds no unencrypted PEM RSA private key")
            }
            let attributes = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                              kSecAttrKeyClass as String: kSecAttrKeyClassPrivate] as CFDictionary
            guard let created = SecKeyCreateWithData(pkcs1 as CFData, attributes, nil) else {
                throw bad("the private key is not an RSA key Security.framework accepts")
            }
            key = created
        }
        let sendableKey = SendableKey(key: key)
        var sha1 = [UInt8](repeating: 0, count: Int(CC_SHA1_DIGEST_LENGTH))
        var sha256 = [UInt8](repeating: 0, count: Int(CC_SHA256_DIGEST_LENGTH))
        der.withUnsafeBytes { raw in
            _ = CC_SHA1(raw.baseAddress, CC_LONG(raw.count), &sha1)
            _ = CC_SHA256(raw.baseAddress, CC_LONG(raw.count), &sha256)
        }
        return ClientCertificate(sha1: sha1, sha256: sha256) {
            (input, algorithm) throws(EntraCredentialError) in
            let secAlgorithm: SecKeyAlgorithm = algorithm == .ps256 ? .rsaSignatureMessagePSSSHA256 : .rsaSignatureMessagePKCS1v15SHA256
            guard SecKeyIsAlgorithmSupported(sendableKey.key, .sign, secAlgorithm),
                  let signature = SecKeyCreateSignature(sendableKey.key, secAlgorithm, Data(input) as CFData, nil) else {
                throw bad("Security.framework cannot sign \(algorithm.rawValue) with the key")
            }
            return [UInt8](signature as Data)
        }
    }

    /// The DER bytes of the first PEM block labelled `label`, nil when there is none.
    private static func pem(_ text: String, label: String) -> Data? {
        guard let begin = text.range(of: "-----BEGIN \(label)-----"),
              let end = text.range(of: "-----END \(label)-----", range: begin.upperBound..<text.endIndex) else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body))
    }

    /// The PKCS#1 key inside a PKCS#8 PrivateKeyInfo (RFC 5208: SEQUENCE { INTEGER version,
    /// SEQUENCE algorithm, OCTET STRING privateKey }), every length checked; nil when malformed.
    private static func pkcs8PrivateKey(_ der: Data) -> Data? {
        let bytes = [UInt8](der)
        var i = 0
        // One DER element at i: its tag, and the range of its content.
        func element() -> (tag: UInt8, content: Range<Int>)? {
            guard i + 2 <= bytes.count else { return nil }
            let tag = bytes[i]
            var length = Int(bytes[i + 1])
            var start = i + 2
            if length & 0x80 != 0 {
                let count = length & 0x7F
                guard count >= 1, count <= 4, start + count <= bytes.count else { return nil }
                length = 0
                for k in 0..<count { length = length << 8 | Int(bytes[start + k]) }
                start += count
            }
            guard length <= bytes.count - start else { return nil }
            return (tag, start..<(start + length))
        }
        guard let info = element(), info.tag == 0x30 else { return nil }
        i = info.content.lowerBound
        guard let version = element(), version.tag == 0x02 else { return nil }
        i = version.content.upperBound
        guard let algorithm = element(), algorithm.tag == 0x30 else { return nil }
        i = algorithm.content.upperBound
        guard let key = element(), key.tag == 0x04 else { return nil }
        return Data(bytes[key.content])
    }

    /// A SecKey is immutable and thread-safe (Security.framework's documentation).
    private struct SendableKey: @unchecked Sendable { let key: SecKey }
}
#endif
