#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#elseif canImport(CommonCrypto)
import CommonCrypto
import TDS
#endif

/// The hash functions NTLM needs ([MS-NLMP] 6): MD4 (the NT hash), MD5 and HMAC-MD5, plus random
/// bytes for the client challenge. On Linux they come from OpenSSL (MD4 through its legacy provider,
/// loaded into a private library context); on Apple platforms from CommonCrypto. Nothing here is
/// written by hand.
enum NTLMCrypto {
    /// MD4 of `data` (16 bytes).
    /// - Throws: ``SQLClientError`` `.unsupported` when the platform offers no MD4 (OpenSSL 3 without
    ///   its legacy provider).
    static func md4(_ data: [UInt8]) throws(SQLClientError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        #if canImport(CSQLClientOpenSSL)
        let ok = data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { csqlclient_md4(d.baseAddress, d.count, $0.baseAddress) }
        }
        guard ok == 1 else {
            throw SQLClientError(.unsupported, "NTLM needs MD4, which this OpenSSL does not offer"
                                 + " (on OpenSSL 3 install its legacy provider, legacy.so)")
        }
        #elseif canImport(CommonCrypto)
        data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { _ = CC_MD4(d.baseAddress, CC_LONG(d.count), $0.baseAddress) }
        }
        #else
        throw SQLClientError(.unsupported, "NTLM needs MD4, which this platform does not offer")
        #endif
        return out
    }

    /// HMAC-MD5 of `data` under `key` (16 bytes).
    static func hmacMD5(key: [UInt8], _ data: [UInt8]) throws(SQLClientError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        #if canImport(CSQLClientOpenSSL)
        let ok = key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer {
                    csqlclient_hmac_md5(k.baseAddress, k.count, d.baseAddress, d.count, $0.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw SQLClientError(.unsupported, "HMAC-MD5 is not available") }
        #elseif canImport(CommonCrypto)
        key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer {
                    CCHmac(CCHmacAlgorithm(kCCHmacAlgMD5), k.baseAddress, k.count, d.baseAddress, d.count, $0.baseAddress)
                }
            }
        }
        #else
        throw SQLClientError(.unsupported, "HMAC-MD5 is not available on this platform")
        #endif
        return out
    }

    /// `count` random bytes from the platform's cryptographic generator.
    static func randomBytes(_ count: Int) throws(SQLClientError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        #if canImport(CSQLClientOpenSSL)
        let ok = out.withUnsafeMutableBufferPointer { csqlclient_random_bytes($0.baseAddress, Int32($0.count)) }
        guard ok == 1 else { throw SQLClientError(.unsupported, "no random bytes from OpenSSL") }
        #else
        var generator = SystemRandomNumberGenerator()
        for i in out.indices { out[i] = UInt8.random(in: 0 ... 255, using: &generator) }
        #endif
        return out
    }
}
