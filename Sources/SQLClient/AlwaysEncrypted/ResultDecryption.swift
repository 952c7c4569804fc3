import TDS

/// The read path's Always Encrypted step, between the token decoder and every API: a result set
/// whose COLMETADATA has encrypted columns ([MS-TDS] 2.2.7.4: fEncrypted with CryptoMetaData)
/// is handed on with those columns described by their base TYPE_INFO, and each row's encrypted
/// cells (varbinary ciphertext on the wire) replaced by their plaintext value, decoded by the
/// same codec as an unencrypted value after normalization (``TypeInfo/decodeNormalized(_:)``).
/// An encrypted NULL is a NULL. Rows, blocks, typed and Decodable rows, streamed values and the
/// CLI all see only the plaintext.
struct ResultDecryption: Sendable {
    let decryptor: SQLColumnDecryptor
    /// The base TYPE_INFO of each encrypted column; nil for the others.
    let baseTypes: [TypeInfo?]
    /// Ciphertext chunks of the encrypted large values of the current row of a response read in
    /// parts, by column, until their end (a value is decrypted whole).
    var pendingChunks: [Int: [UInt8]] = [:]

    /// Whether `metadata` needs this step: column encryption is on for the request and some
    /// column is encrypted (with or without CryptoMetaData: one without is an error at ``make``).
    static func needed(for metadata: ColMetadata) -> Bool {
        metadata.columns.contains { $0.flags.contains(.encrypted) }
    }

    /// The columns as the APIs see them: each encrypted column with its base TYPE_INFO and
    /// UserType (CryptoMetaData and fEncrypted kept, so an app can tell it was encrypted).
    static func plaintextColumns(_ columns: [ColumnMetadata]) -> [ColumnMetadata] {
        columns.map { column in
            guard column.flags.contains(.encrypted), let crypto = column.cryptoMetadata else { return column }
            var plain = column
            plain.typeInfo = crypto.baseType
            plain.userType = crypto.userType
            return plain
        }
    }

    /// Checks the metadata and unwraps the column encryption keys (once per key, cached).
    /// - Throws: ``ColumnEncryptionError`` as ``SQLColumnDecryptor/make(for:keyStores:cache:)``;
    ///   `.unsupported` naming the column when its base type cannot be encrypted.
    static func make(for metadata: ColMetadata, keyStores: SQLColumnEncryptionKeyStores,
                     cache: ColumnEncryptionKeyCache) async throws(ColumnEncryptionError) -> ResultDecryption {
        let decryptor = try await SQLColumnDecryptor.make(for: metadata, keyStores: keyStores, cache: cache)
        var types: [TypeInfo?] = []
        for column in metadata.columns {
            guard column.flags.contains(.encrypted), let base = column.cryptoMetadata?.baseType else { types.append(nil); continue }
            guard base.isEncryptable else {
                throw ColumnEncryptionError(.unsupported, "base type \(base.sqlTypeName) cannot be encrypted", column: column.name)
            }
            types.append(base)
        }
        return ResultDecryption(decryptor: decryptor, baseTypes: types)
    }

    /// Whether column `index` is decrypted here.
    func isEncrypted(_ index: Int) -> Bool { baseTypes.indices.contains(index) && baseTypes[index] != nil }

    /// The plaintext value of column `index`'s cell `value` (the ciphertext as varbinary, or NULL).
    /// - Throws: ``ColumnEncryptionError`` naming the column: the decryptor's errors
    ///   (`.authenticationFailed` for a MAC that does not verify…), `.invalidPlaintext` when the
    ///   decrypted bytes are not a value of the base type.
    func decrypt(_ value: SQLValue, column index: Int) throws(ColumnEncryptionError) -> SQLValue {
        guard baseTypes.indices.contains(index), let base = baseTypes[index] else { return value }
        switch value {
        case .null:
            return .null
        case .binary(let ciphertext), .udt(let ciphertext):
            return try decrypt(ciphertext: ciphertext, column: index, base: base)
        default:
            throw ColumnEncryptionError(.invalidCiphertext, "an encrypted cell arrived as \(value.kindName), not varbinary",
                                        column: decryptor.columns[index].name)
        }
    }

    /// The plaintext value of column `index`'s whole ciphertext.
    func decrypt(ciphertext: [UInt8], column index: Int) throws(ColumnEncryptionError) -> SQLValue {
        guard baseTypes.indices.contains(index), let base = baseTypes[index] else { return .binary(ciphertext) }
        return try decrypt(ciphertext: ciphertext, column: index, base: base)
    }

    private func decrypt(ciphertext: [UInt8], column index: Int, base: TypeInfo) throws(ColumnEncryptionError) -> SQLValue {
        let plaintext = try decryptor.decrypt(ciphertext, column: index)
        do {
            return try base.decodeNormalized(plaintext)
        } catch {
            throw ColumnEncryptionError(.invalidPlaintext, "the decrypted value is not a \(base.sqlTypeName): \(error.code)"
                                        + " (\(error.context))", column: decryptor.columns[index].name)
        }
    }

    /// Replaces each encrypted cell of `row` by its plaintext value.
    /// - Throws: as ``decrypt(_:column:)``.
    func decrypt(row: inout [SQLValue]) throws(ColumnEncryptionError) {
        for index in row.indices where isEncrypted(index) {
            row[index] = try decrypt(row[index], column: index)
        }
    }
}
