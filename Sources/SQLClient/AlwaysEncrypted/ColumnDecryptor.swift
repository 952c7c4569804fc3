import TDS

/// Decrypts the cells of one result set's encrypted columns: the entry point of the read path.
///
/// Made once per COLMETADATA (``make(for:keyStores:cache:)``, asynchronous: key store providers
/// may do I/O) — it checks each encrypted column's CryptoMetaData against the CEK table and
/// unwraps the column encryption keys the columns use (through the cache); then
/// ``decrypt(_:column:)`` turns a cell's ciphertext into the plaintext bytes of the column's base
/// TYPE_INFO (`CryptoMetadata.baseType`, a TDS type) synchronously. An encrypted NULL arrives as a NULL
/// varbinary and is never decrypted.
public struct SQLColumnDecryptor: Sendable {
    /// The result set's columns.
    public let columns: [ColumnMetadata]
    /// The algorithm keyed by each CEK table entry the columns use, by ordinal.
    private let ciphers: [UInt16: AEADAes256CbcHmacSha256]
    /// The key path each used entry was unwrapped with (for errors).
    private let keyPaths: [UInt16: String]

    /// True when column `index` is encrypted (fEncrypted with CryptoMetaData).
    public func isEncrypted(column index: Int) -> Bool {
        columns.indices.contains(index) && columns[index].cryptoMetadata != nil && columns[index].flags.contains(.encrypted)
    }

    /// Checks the metadata and unwraps the keys its encrypted columns use.
    /// - Throws: ``ColumnEncryptionError`` naming the column: `.invalidMetadata` (an encrypted
    ///   column without CryptoMetaData, an ordinal outside the CEK table, an entry with no
    ///   value), `.unknownAlgorithm`, `.unknownEncryptionType`, `.unsupportedNormalization`,
    ///   `.unknownKeyStoreProvider`, a provider's failure (`.keyNotFound`, `.signatureMismatch`,
    ///   … or `.keyStoreFailed` wrapping another error), `.invalidKey` (not 32 bytes).
    public static func make(for metadata: ColMetadata, keyStores: SQLColumnEncryptionKeyStores,
                            cache: ColumnEncryptionKeyCache = SQLColumnEncryption.keyCache) async throws(ColumnEncryptionError) -> SQLColumnDecryptor {
        let table = metadata.cekTable ?? []
        var ciphers: [UInt16: AEADAes256CbcHmacSha256] = [:]
        var paths: [UInt16: String] = [:]
        for column in metadata.columns where column.flags.contains(.encrypted) {
            guard let crypto = column.cryptoMetadata else {
                throw ColumnEncryptionError(.invalidMetadata, "the column is encrypted but has no CryptoMetaData"
                                            + " (column encryption not negotiated?)", column: column.name)
            }
            try check(crypto, column: column.name)
            guard let ordinal = crypto.ordinal, Int(ordinal) < table.count else {
                throw ColumnEncryptionError(.invalidMetadata, "CryptoMetaData ordinal \(crypto.ordinal.map(String.init) ?? "none")"
                                            + " is outside the CEK table of \(table.count) entr\(table.count == 1 ? "y" : "ies")", column: column.name)
            }
            if ciphers[ordinal] != nil { continue }
            let (cipher, path) = try await unwrap(table[Int(ordinal)], column: column.name, keyStores: keyStores, cache: cache)
            ciphers[ordinal] = cipher
            paths[ordinal] = path
        }
        return SQLColumnDecryptor(columns: metadata.columns, ciphers: ciphers, keyPaths: paths)
    }

    /// The plaintext of column `index`'s cell `ciphertext`: the bytes of its base TYPE_INFO's value.
    /// - Throws: ``ColumnEncryptionError`` naming the column and key path: `.invalidMetadata` for
    ///   a column that is not encrypted, `.invalidCiphertext`, `.authenticationFailed` (the MAC
    ///   does not verify: never a wrong plaintext), `.decryptionFailed`.
    public func decrypt(_ ciphertext: [UInt8], column index: Int) throws(ColumnEncryptionError) -> [UInt8] {
        guard columns.indices.contains(index), let crypto = columns[index].cryptoMetadata,
              let ordinal = crypto.ordinal, let cipher = ciphers[ordinal] else {
            throw ColumnEncryptionError(.invalidMetadata, "column \(index) is not an encrypted column of this result",
                                        column: columns.indices.contains(index) ? columns[index].name : nil)
        }
        do {
            return try cipher.decrypt(ciphertext)
        } catch {
            throw error.naming(column: columns[index].name, keyPath: keyPaths[ordinal])
        }
    }

    /// Checks what the client can decrypt: AEAD_AES_256_CBC_HMAC_SHA256 (EncryptionAlgo 2, or 0
    /// naming it), deterministic or randomized, normalization version 1.
    static func check(_ crypto: CryptoMetadata, column: String) throws(ColumnEncryptionError) {
        let known = crypto.algorithm == AEADAes256CbcHmacSha256.algorithmID
            || (crypto.algorithm == 0 && crypto.algorithmName?.uppercased() == AEADAes256CbcHmacSha256.name)
        guard known else {
            let name = crypto.algorithm == 0 ? "'\(crypto.algorithmName?.prefix(64) ?? "")'" : "\(crypto.algorithm)"
            throw ColumnEncryptionError(.unknownAlgorithm, "encryption algorithm \(name) is not \(AEADAes256CbcHmacSha256.name)", column: column)
        }
        guard AEADAes256CbcHmacSha256.EncryptionType(rawValue: crypto.encryptionType) != nil else {
            throw ColumnEncryptionError(.unknownEncryptionType, "encryption type \(crypto.encryptionType) is neither"
                                        + " deterministic (1) nor randomized (2)", column: column)
        }
        guard crypto.normalizationVersion == 1 else {
            throw ColumnEncryptionError(.unsupportedNormalization, "normalization version \(crypto.normalizationVersion) is not 1", column: column)
        }
    }

    /// The CEK of `entry` through the first of its values whose provider is registered and
    /// succeeds (a CEK may be encrypted under several master keys during key rotation).
    static func unwrap(_ entry: CEKEntry, column: String, keyStores: SQLColumnEncryptionKeyStores,
                               cache: ColumnEncryptionKeyCache) async throws(ColumnEncryptionError) -> (AEADAes256CbcHmacSha256, String) {
        guard !entry.values.isEmpty else {
            throw ColumnEncryptionError(.invalidMetadata, "the CEK table entry has no encrypted key", column: column)
        }
        var firstError: ColumnEncryptionError?
        for value in entry.values {
            if let cipher = cache.cipher(store: value.keyStoreName, path: value.keyPath, encryptedKey: value.encryptedKey) {
                return (cipher, value.keyPath)
            }
            guard let provider = keyStores.provider(named: value.keyStoreName) else {
                firstError = firstError ?? ColumnEncryptionError(.unknownKeyStoreProvider, "no key store provider is registered as"
                                                                 + " '\(value.keyStoreName)'", column: column, keyPath: value.keyPath)
                continue
            }
            do {
                let key = try await provider.decryptColumnEncryptionKey(masterKeyPath: value.keyPath, algorithm: value.algorithm,
                                                                        encryptedKey: value.encryptedKey)
                let cipher = try AEADAes256CbcHmacSha256(rootKey: key)
                cache.store(cipher, store: value.keyStoreName, path: value.keyPath, encryptedKey: value.encryptedKey)
                return (cipher, value.keyPath)
            } catch let error as ColumnEncryptionError {
                firstError = firstError ?? error.naming(column: column, keyPath: value.keyPath)
            } catch {
                firstError = firstError ?? ColumnEncryptionError(.keyStoreFailed, "key store provider '\(value.keyStoreName)' failed (\(type(of: error)))",
                                                                 column: column, keyPath: value.keyPath)
            }
        }
        throw firstError ?? ColumnEncryptionError(.invalidMetadata, "the CEK table entry has no encrypted key", column: column)
    }
}
