/// AEAD_AES_256_CBC_HMAC_SHA256, the cell encryption of Always Encrypted (Microsoft's published
/// description of the algorithm; [MS-TDS] 2.2.7.4 EncryptionAlgo 2).
///
/// From the 32-byte column encryption key (the root key) three keys are derived, each the
/// HMAC-SHA256 of a UTF-16LE label with the root key: the encryption key ("Microsoft SQL Server
/// cell encryption key with encryption algorithm:AEAD_AES_256_CBC_HMAC_SHA256 and key
/// length:256"), the MAC key ("… cell MAC key …") and the IV key ("… cell IV key …").
///
/// A ciphertext is: version byte 0x01, the 32-byte MAC, the 16-byte IV, then the AES-256-CBC
/// (PKCS #7) encryption of the plaintext. The MAC is HMAC-SHA256 with the MAC key over the
/// version byte, the IV, the AES ciphertext and the version's length (one byte, 1). Randomized
/// encryption draws the IV at random; deterministic encryption takes the first 16 bytes of
/// HMAC-SHA256 of the plaintext with the IV key, so equal plaintexts give equal ciphertexts.
///
/// The keys are never shown: `description` and `dump` say only the algorithm's name.
public struct AEADAes256CbcHmacSha256: Sendable, CustomStringConvertible, CustomReflectable {
    /// The algorithm's name as SQL Server spells it in metadata.
    public static let name = "AEAD_AES_256_CBC_HMAC_SHA256"
    /// Its EncryptionAlgo byte in CryptoMetaData.
    public static let algorithmID: UInt8 = 2
    /// The version byte that begins each ciphertext.
    public static let version: UInt8 = 0x01
    /// The smallest ciphertext: version, MAC, IV and one AES block (65 bytes).
    public static let minimumCiphertextLength = 1 + 32 + 16 + 16
    /// The version's length, the last input of the MAC.
    private static let versionLength: [UInt8] = [1]

    /// EncryptionAlgoType ([MS-TDS] 2.2.7.4).
    public enum EncryptionType: UInt8, Sendable, Hashable, CaseIterable {
        /// The IV is derived from the plaintext: equal values give equal ciphertexts.
        case deterministic = 1
        /// The IV is random.
        case randomized = 2
    }

    private let encryptionKey: [UInt8]
    private let macKey: [UInt8]
    private let ivKey: [UInt8]
    /// The MAC key set up once in the platform's HMAC (each cell's MAC starts from a copy).
    private let mac: AEHMACKey

    /// The algorithm keyed by a column encryption key.
    /// - Throws: ``ColumnEncryptionError`` `.invalidKey` unless `rootKey` is 32 bytes;
    ///   `.cryptoFailure` when the platform's HMAC fails.
    public init(rootKey: [UInt8]) throws(ColumnEncryptionError) {
        guard rootKey.count == 32 else {
            throw ColumnEncryptionError(.invalidKey, "a column encryption key is 32 bytes, not \(rootKey.count)")
        }
        func derive(_ purpose: String) throws(ColumnEncryptionError) -> [UInt8] {
            let label = "Microsoft SQL Server cell \(purpose) with encryption algorithm:\(Self.name) and key length:256"
            var bytes: [UInt8] = []
            bytes.reserveCapacity(label.utf16.count * 2)
            for unit in label.utf16 { bytes.append(UInt8(unit & 0xFF)); bytes.append(UInt8(unit >> 8)) }
            return try AECrypto.hmacSHA256(key: rootKey, bytes)
        }
        encryptionKey = try derive("encryption key")
        macKey = try derive("MAC key")
        ivKey = try derive("IV key")
        mac = try AEHMACKey(macKey)
    }

    /// The derived keys (encryption, MAC, IV), for known-answer tests.
    var derivedKeys: (encryption: [UInt8], mac: [UInt8], iv: [UInt8]) { (encryptionKey, macKey, ivKey) }

    /// Encrypts `plaintext` (the normalized value bytes).
    /// - Throws: ``ColumnEncryptionError`` `.cryptoFailure` when the platform's cryptography fails.
    public func encrypt(_ plaintext: [UInt8], type: EncryptionType) throws(ColumnEncryptionError) -> [UInt8] {
        let iv: [UInt8]
        switch type {
        case .deterministic: iv = Array(try AECrypto.hmacSHA256(key: ivKey, plaintext).prefix(16))
        case .randomized: iv = try AECrypto.randomBytes(16)
        }
        return try encrypt(plaintext, iv: iv)
    }

    /// Encrypts with a given 16-byte IV (known-answer tests of the randomized form).
    func encrypt(_ plaintext: [UInt8], iv: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        guard let body = AECrypto.aes256CBC(encrypt: true, key: encryptionKey, iv: iv, plaintext[...]) else {
            throw ColumnEncryptionError(.cryptoFailure, "AES-256-CBC encryption failed")
        }
        var out: [UInt8] = []
        out.reserveCapacity(1 + 32 + 16 + body.count)
        out.append(Self.version)
        out += [UInt8](repeating: 0, count: 32)
        out += iv
        out += body
        let tag = try mac.mac(out[..<1], out[33...], [1][...])
        out.replaceSubrange(1 ..< 33, with: tag)
        return out
    }

    /// Checks and decrypts a ciphertext. The MAC is checked (in constant time) before any
    /// decryption: altered bytes are an error, never a wrong plaintext.
    /// - Throws: ``ColumnEncryptionError`` `.invalidCiphertext` (too short, version byte not 0x01,
    ///   not whole AES blocks), `.authenticationFailed` (the MAC does not verify: altered bytes
    ///   or the wrong key), `.decryptionFailed` (bad padding after a good MAC).
    public func decrypt(_ ciphertext: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        guard ciphertext.count >= Self.minimumCiphertextLength else {
            throw ColumnEncryptionError(.invalidCiphertext, "a ciphertext of \(ciphertext.count) byte(s) is shorter than"
                                        + " the \(Self.minimumCiphertextLength)-byte minimum")
        }
        guard ciphertext[0] == Self.version else {
            throw ColumnEncryptionError(.invalidCiphertext, "ciphertext version byte 0x\(String(ciphertext[0], radix: 16)), expected 0x01")
        }
        guard (ciphertext.count - 49) % 16 == 0 else {
            throw ColumnEncryptionError(.invalidCiphertext, "the encrypted value (\(ciphertext.count - 49) byte(s)) is not whole AES blocks")
        }
        // The MAC covers the version byte, the IV and the AES ciphertext (contiguous in the
        // cell), then the version's length, 1.
        let tag = try mac.mac(ciphertext[..<1], ciphertext[33...], Self.versionLength[...])
        guard AECrypto.constantTimeEqual(ciphertext[1 ..< 33], tag) else {
            throw ColumnEncryptionError(.authenticationFailed, "the ciphertext's MAC does not verify (altered value or wrong key)")
        }
        let iv = Array(ciphertext[33 ..< 49])
        guard let plaintext = AECrypto.aes256CBC(encrypt: false, key: encryptionKey, iv: iv, ciphertext[49...]) else {
            throw ColumnEncryptionError(.decryptionFailed, "AES-256-CBC decryption failed (padding)")
        }
        return plaintext
    }

    public var description: String { Self.name }
    public var customMirror: Mirror { Mirror(self, children: ["algorithm": Self.name], displayStyle: .struct) }
}
