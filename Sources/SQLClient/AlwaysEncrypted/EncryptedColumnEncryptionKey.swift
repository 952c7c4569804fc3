/// An encrypted column encryption key in the layout every RSA key store provider of
/// Microsoft.Data.SqlClient writes (certificates, CNG, CSP, Azure Key Vault), and the one parser
/// of it in this client:
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | version, 0x01 |
/// | 1 | 2 | key path length in bytes (little-endian) |
/// | 3 | 2 | ciphertext length in bytes (little-endian) |
/// | 5 | key path length | the column master key path, UTF-16LE (lower case when SqlClient writes it) |
/// | … | ciphertext length | the RSA-OAEP (SHA-1) ciphertext of the column encryption key |
/// | … | the rest | RSA PKCS #1 v1.5 SHA-256 signature over every byte before it |
///
/// Both the ciphertext and the signature are exactly the column master key's modulus size, so a
/// blob is checked against that size before anything is decrypted.
struct EncryptedColumnEncryptionKey {
    /// The only version byte written.
    static let version: UInt8 = 0x01
    /// The fixed header: version and the two lengths.
    static let headerSize = 5

    /// The bytes the signature covers (version through ciphertext).
    var signed: ArraySlice<UInt8>
    /// The key path as written (UTF-16LE).
    var keyPath: ArraySlice<UInt8>
    /// The RSA-OAEP ciphertext of the key.
    var ciphertext: ArraySlice<UInt8>
    /// The signature.
    var signature: ArraySlice<UInt8>

    /// Parses `bytes`, checking every length against the bytes present and `keySize` (the column
    /// master key's modulus size in bytes).
    /// - Throws: ``ColumnEncryptionError`` `.invalidEncryptedKey` naming `keyPath` and the offset
    ///   of the field at fault: a wrong version, lengths beyond the bytes, or a ciphertext or a
    ///   signature that is not `keySize` bytes.
    init(_ bytes: [UInt8], keySize: Int, keyPath path: String?) throws(ColumnEncryptionError) {
        func bad(_ offset: Int, _ why: String) -> ColumnEncryptionError {
            var error = ColumnEncryptionError(.invalidEncryptedKey, "malformed encrypted column encryption key (\(bytes.count) bytes)"
                                              + " at offset \(offset): \(why)", keyPath: path)
            error.offset = offset
            return error
        }
        guard bytes.count >= Self.headerSize else { throw bad(bytes.count, "shorter than its 5-byte header") }
        guard bytes[0] == Self.version else { throw bad(0, "version 0x\(String(bytes[0], radix: 16)), expected 0x01") }
        let pathLength = Int(bytes[1]) | Int(bytes[2]) << 8
        let cipherLength = Int(bytes[3]) | Int(bytes[4]) << 8
        guard pathLength % 2 == 0 else { throw bad(1, "key path length \(pathLength) is not a whole number of UTF-16 units") }
        guard cipherLength == keySize else { throw bad(3, "ciphertext length \(cipherLength), the master key's size is \(keySize)") }
        let cipherStart = Self.headerSize + pathLength
        guard cipherStart <= bytes.count else { throw bad(1, "key path of \(pathLength) bytes runs past the end") }
        let signatureStart = cipherStart + cipherLength
        guard signatureStart <= bytes.count else { throw bad(3, "ciphertext of \(cipherLength) bytes at \(cipherStart) runs past the end") }
        guard bytes.count - signatureStart == keySize else {
            throw bad(signatureStart, "signature of \(bytes.count - signatureStart) byte(s), the master key's size is \(keySize)")
        }
        signed = bytes[..<signatureStart]
        keyPath = bytes[Self.headerSize ..< cipherStart]
        ciphertext = bytes[cipherStart ..< signatureStart]
        signature = bytes[signatureStart...]
    }

    /// True when `key` (the column master key, or its public part) verifies the signature.
    func verifies(with key: AERSAKey) -> Bool {
        key.verifySHA256(signed, signature: signature)
    }

    /// The bytes to sign for `ciphertext` under `masterKeyPath`: the header, the path lower-cased
    /// (UTF-16LE, as SqlClient writes it) and the ciphertext. Append the signature to finish.
    /// - Throws: ``ColumnEncryptionError`` `.invalidKeyPath` when the path or the ciphertext
    ///   does not fit its 2-byte length.
    static func unsigned(masterKeyPath: String, ciphertext: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        let path = utf16LE(masterKeyPath.lowercased())
        guard path.count <= 0xFFFF, ciphertext.count <= 0xFFFF else {
            throw ColumnEncryptionError(.invalidKeyPath, "the key path or the wrapped key is longer than 65,535 bytes", keyPath: masterKeyPath)
        }
        var out: [UInt8] = [version, UInt8(path.count & 0xFF), UInt8(path.count >> 8),
                            UInt8(ciphertext.count & 0xFF), UInt8(ciphertext.count >> 8)]
        out.reserveCapacity(out.count + path.count + 2 * ciphertext.count)
        out += path
        out += ciphertext
        return out
    }

    /// `text` as UTF-16LE bytes.
    static func utf16LE(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf16.count * 2)
        for unit in text.utf16 { out.append(UInt8(unit & 0xFF)); out.append(UInt8(unit >> 8)) }
        return out
    }
}
