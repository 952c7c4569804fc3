#if canImport(Security)
import Foundation
import Security

/// Column master keys in the Apple Keychain (macOS, iOS, tvOS, watchOS, visionOS): RSA private
/// keys found by their label, used through Security (`SecKeyCreateDecryptedData` with RSA-OAEP
/// SHA-1, PKCS #1 v1.5 SHA-256 signatures); the key never leaves the Keychain (a key in the
/// Secure Enclave cannot be RSA, so these are software or iCloud Keychain keys).
///
/// A master key path is the `kSecAttrLabel` of the key: an RSA private key item
/// (`kSecClassKey`), or else an identity (`kSecClassIdentity`, a certificate with its key, as a
/// PKCS #12 import leaves it) with that label. The column master key is created with this
/// provider's name, for example
/// `CREATE COLUMN MASTER KEY cmk WITH (KEY_STORE_PROVIDER_NAME = N'APPLE_KEYCHAIN', KEY_PATH = N'ae-cmk-1')`.
///
/// Encrypted column encryption keys have SqlClient's layout (``EncryptedColumnEncryptionKey``);
/// the signature is verified with the key's public part before anything is decrypted.
public struct SQLKeychainKeyStoreProvider: SQLColumnEncryptionKeyStoreProvider, CustomStringConvertible {
    /// `APPLE_KEYCHAIN`: the KeyStoreName to register this provider under and to name in
    /// CREATE COLUMN MASTER KEY.
    public static let providerName = "APPLE_KEYCHAIN"

    /// The Keychain access group searched (nil: the app's default groups).
    public let accessGroup: String?
    /// macOS: search the data protection Keychain (`kSecUseDataProtectionKeychain`), as iOS does.
    public let useDataProtectionKeychain: Bool

    /// A provider searching the app's Keychain (`accessGroup` to name a shared group).
    public init(accessGroup: String? = nil, useDataProtectionKeychain: Bool = true) {
        self.accessGroup = accessGroup
        self.useDataProtectionKeychain = useDataProtectionKeychain
    }

    public var description: String { "SQLKeychainKeyStoreProvider(accessGroup: \(accessGroup ?? "default"))" }

    /// Unwraps `encryptedKey` with the Keychain key labelled `masterKeyPath`.
    /// - Throws: ``ColumnEncryptionError`` naming the path: `.invalidKeyPath`, `.unknownAlgorithm`
    ///   (not RSA_OAEP), `.keyNotFound`, `.invalidEncryptedKey` (malformed, or not the key's size),
    ///   `.signatureMismatch` (tampered, or wrapped by another key), `.keyStoreFailed` (the
    ///   Keychain or OAEP failed).
    public func decryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) async throws -> [UInt8] {
        try Self.checkAlgorithm(algorithm, masterKeyPath)
        let key = try privateKey(masterKeyPath)
        let parts = try EncryptedColumnEncryptionKey(encryptedKey, keySize: SecKeyGetBlockSize(key), keyPath: masterKeyPath)
        guard verify(key, Data(parts.signed), signature: Data(parts.signature)) else {
            throw ColumnEncryptionError(.signatureMismatch, "the encrypted column encryption key's signature does not verify with"
                                        + " this Keychain key (tampered, or wrapped by another key)", keyPath: masterKeyPath)
        }
        var error: Unmanaged<CFError>?
        guard let cek = SecKeyCreateDecryptedData(key, .rsaEncryptionOAEPSHA1, Data(parts.ciphertext) as CFData, &error) as Data? else {
            throw ColumnEncryptionError(.keyStoreFailed, "RSA-OAEP decryption in the Keychain failed (\(Self.text(error)))", keyPath: masterKeyPath)
        }
        return [UInt8](cek)
    }

    /// Wraps `columnEncryptionKey` with the key's public part and signs the blob with the key.
    /// - Throws: ``ColumnEncryptionError`` as for decryption, `.cryptoFailure` when Security fails.
    public func encryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, columnEncryptionKey: [UInt8]) async throws -> [UInt8] {
        try Self.checkAlgorithm(algorithm, masterKeyPath)
        let key = try privateKey(masterKeyPath)
        var error: Unmanaged<CFError>?
        guard let publicKey = SecKeyCopyPublicKey(key),
              let ciphertext = SecKeyCreateEncryptedData(publicKey, .rsaEncryptionOAEPSHA1, Data(columnEncryptionKey) as CFData, &error) as Data? else {
            throw ColumnEncryptionError(.cryptoFailure, "RSA-OAEP encryption failed (\(Self.text(error)))", keyPath: masterKeyPath)
        }
        let unsigned = try EncryptedColumnEncryptionKey.unsigned(masterKeyPath: masterKeyPath, ciphertext: [UInt8](ciphertext))
        let signature = try sign(key, unsigned, masterKeyPath)
        return unsigned + signature
    }

    /// RSA-SHA256 signature over the UTF-16LE of (provider name, path, "true"/"false") lower-cased.
    public func signColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool) async throws -> [UInt8] {
        try sign(try privateKey(masterKeyPath), Self.metadata(masterKeyPath, allowEnclaveComputations), masterKeyPath)
    }

    /// Checks a signature made by ``signColumnMasterKeyMetadata(masterKeyPath:allowEnclaveComputations:)``.
    public func verifyColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool, signature: [UInt8]) async throws -> Bool {
        verify(try privateKey(masterKeyPath), Data(Self.metadata(masterKeyPath, allowEnclaveComputations)), signature: Data(signature))
    }

    private static func metadata(_ path: String, _ allow: Bool) -> [UInt8] {
        EncryptedColumnEncryptionKey.utf16LE((providerName + path + (allow ? "true" : "false")).lowercased())
    }

    private static func checkAlgorithm(_ algorithm: String, _ path: String) throws(ColumnEncryptionError) {
        guard algorithm.uppercased() == "RSA_OAEP" else {
            throw ColumnEncryptionError(.unknownAlgorithm, "key encryption algorithm '\(algorithm.prefix(64))' is not RSA_OAEP", keyPath: path)
        }
    }

    private func sign(_ key: SecKey, _ message: [UInt8], _ path: String) throws(ColumnEncryptionError) -> [UInt8] {
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, Data(message) as CFData, &error) as Data? else {
            throw ColumnEncryptionError(.cryptoFailure, "the Keychain key could not sign (\(Self.text(error)))", keyPath: path)
        }
        return [UInt8](signature)
    }

    private func verify(_ key: SecKey, _ message: Data, signature: Data) -> Bool {
        guard let publicKey = SecKeyCopyPublicKey(key) else { return false }
        return SecKeyVerifySignature(publicKey, .rsaSignatureMessagePKCS1v15SHA256, message as CFData, signature as CFData, nil)
    }

    /// The RSA private key labelled `path`: a key item, else an identity's key.
    func privateKey(_ path: String) throws(ColumnEncryptionError) -> SecKey {
        guard (1 ... 255).contains(path.utf16.count), path.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw ColumnEncryptionError(.invalidKeyPath, "a Keychain key path is the key's label: 1 to 255 characters, no controls", keyPath: path)
        }
        var query: [String: Any] = [
            kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrLabel as String: path,
            kSecReturnRef as String: true, kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        #if os(macOS)
        if useDataProtectionKeychain { query[kSecUseDataProtectionKeychain as String] = true }
        #endif
        var item: CFTypeRef?
        var status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecSuccess, let item, CFGetTypeID(item) == SecKeyGetTypeID() {
            return unsafeDowncast(item, to: SecKey.self)
        }
        if status == errSecItemNotFound {
            query[kSecClass as String] = kSecClassIdentity
            query[kSecAttrKeyClass as String] = nil
            query[kSecAttrKeyType as String] = nil
            item = nil
            status = SecItemCopyMatching(query as CFDictionary, &item)
            if status == errSecSuccess, let item, CFGetTypeID(item) == SecIdentityGetTypeID() {
                var key: SecKey?
                let identity = unsafeDowncast(item, to: SecIdentity.self)
                if SecIdentityCopyPrivateKey(identity, &key) == errSecSuccess, let key { return key }
                throw ColumnEncryptionError(.keyNotFound, "the Keychain identity with this label has no private key", keyPath: path)
            }
        }
        if status == errSecItemNotFound {
            throw ColumnEncryptionError(.keyNotFound, "no RSA private key or identity with this label in the Keychain", keyPath: path)
        }
        guard status == errSecSuccess else {
            let message = SecCopyErrorMessageString(status, nil) as String? ?? "OSStatus \(status)"
            throw ColumnEncryptionError(.keyStoreFailed, "the Keychain search failed: \(message)", keyPath: path)
        }
        throw ColumnEncryptionError(.keyNotFound, "the Keychain item with this label is not a key", keyPath: path)
    }

    private static func text(_ error: Unmanaged<CFError>?) -> String {
        guard let error = error?.takeRetainedValue() else { return "no reason given" }
        return (error as Error).localizedDescription
    }
}
#endif
