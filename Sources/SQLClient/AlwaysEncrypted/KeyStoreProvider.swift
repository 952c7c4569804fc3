import Foundation
import Synchronization
import TDS

/// A column master key store: unwraps (and wraps) column encryption keys with the column master
/// key found at a path, as Microsoft.Data.SqlClient's `SqlColumnEncryptionKeyStoreProvider`.
///
/// The server names the store of each column master key (EncryptionKeyValue KeyStoreName in the
/// COLMETADATA CEK table, [MS-TDS] 2.2.7.4); the provider registered under that name
/// (``SQLColumnEncryption/registerKeyStoreProviders(_:)`` globally, or
/// ``SQLConnectionConfiguration/columnEncryptionKeyStoreProviders`` per connection) is asked.
/// Apps may implement their own (an HSM, a cloud key service). Implementations never log keys.
public protocol SQLColumnEncryptionKeyStoreProvider: Sendable {
    /// Unwraps a column encryption key.
    /// - Parameters:
    ///   - masterKeyPath: the column master key's path in this store (KeyPath).
    ///   - algorithm: the key encryption algorithm the server names (`RSA_OAEP`).
    ///   - encryptedKey: the encrypted column encryption key (EncryptedKey), in the provider's layout.
    /// - Returns: the column encryption key (32 bytes for AEAD_AES_256_CBC_HMAC_SHA256).
    /// - Throws: any error; the caller reports it as ``ColumnEncryptionError`` naming the column and the path.
    func decryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) async throws -> [UInt8]

    /// Wraps a column encryption key with the column master key at `masterKeyPath` (to provision
    /// keys, or for a test server). The default implementation throws `.unsupported`.
    func encryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, columnEncryptionKey: [UInt8]) async throws -> [UInt8]

    /// Signs the column master key's metadata (its path and whether enclave computations are
    /// allowed). The default implementation throws `.unsupported`.
    func signColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool) async throws -> [UInt8]

    /// Checks a signature made by ``signColumnMasterKeyMetadata(masterKeyPath:allowEnclaveComputations:)``.
    /// The default implementation throws `.unsupported`.
    func verifyColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool, signature: [UInt8]) async throws -> Bool
}

extension SQLColumnEncryptionKeyStoreProvider {
    /// Throws ``ColumnEncryptionError`` `.unsupported`.
    public func encryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, columnEncryptionKey: [UInt8]) async throws -> [UInt8] {
        throw ColumnEncryptionError(.unsupported, "this key store provider does not wrap column encryption keys", keyPath: masterKeyPath)
    }

    /// Throws ``ColumnEncryptionError`` `.unsupported`.
    public func signColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool) async throws -> [UInt8] {
        throw ColumnEncryptionError(.unsupported, "this key store provider does not sign column master key metadata", keyPath: masterKeyPath)
    }

    /// Throws ``ColumnEncryptionError`` `.unsupported`.
    public func verifyColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool, signature: [UInt8]) async throws -> Bool {
        throw ColumnEncryptionError(.unsupported, "this key store provider does not verify column master key metadata", keyPath: masterKeyPath)
    }
}

/// The process-wide parts of Always Encrypted: the key store providers registered for every
/// connection, and the column encryption key cache.
public enum SQLColumnEncryption {
    private static let providers = Mutex<[String: any SQLColumnEncryptionKeyStoreProvider]>([:])

    /// The cache of unwrapped column encryption keys shared by all connections (entries live
    /// 2 hours by default, as SqlClient's; see ``ColumnEncryptionKeyCache/timeToLive``).
    public static let keyCache = ColumnEncryptionKeyCache()

    /// Registers key store providers for every connection, by the store name the server sends
    /// (KeyStoreName: `MSSQL_CERTIFICATE_STORE` for certificates, or an app's own name). A name
    /// registered again is replaced. Connections that set
    /// ``SQLConnectionConfiguration/columnEncryptionKeyStoreProviders`` use theirs instead.
    /// - Throws: ``ColumnEncryptionError`` `.invalidConfiguration` for an empty or over-long name
    ///   (names are 1 to 255 characters, a B_VARCHAR on the wire); nothing is registered then.
    public static func registerKeyStoreProviders(_ providers: [String: any SQLColumnEncryptionKeyStoreProvider]) throws(ColumnEncryptionError) {
        for name in providers.keys { try checkName(name) }
        Self.providers.withLock { registered in
            for (name, provider) in providers { registered[name] = provider }
        }
    }

    /// Removes every globally registered provider (tests, or an app switching key stores).
    public static func removeAllKeyStoreProviders() {
        providers.withLock { $0 = [:] }
    }

    /// The globally registered providers, by name.
    public static var registeredKeyStoreProviders: [String: any SQLColumnEncryptionKeyStoreProvider] {
        providers.withLock { $0 }
    }

    static func checkName(_ name: String) throws(ColumnEncryptionError) {
        guard !name.isEmpty, name.utf16.count <= 255 else {
            throw ColumnEncryptionError(.invalidConfiguration, "a key store provider name is 1 to 255 characters, not \(name.utf16.count)")
        }
    }
}

/// The key store providers one connection uses: its own when it has any, else the global ones
/// (SqlClient's rule: a connection's providers replace the global list, they are not merged).
public struct SQLColumnEncryptionKeyStores: Sendable {
    /// The providers by store name.
    public let providers: [String: any SQLColumnEncryptionKeyStoreProvider]

    /// `connection`'s providers when not empty, else those registered globally at this moment.
    public init(connection: [String: any SQLColumnEncryptionKeyStoreProvider] = [:]) {
        providers = connection.isEmpty ? SQLColumnEncryption.registeredKeyStoreProviders : connection
    }

    /// Exactly `providers` (tests, tools).
    public init(only providers: [String: any SQLColumnEncryptionKeyStoreProvider]) {
        self.providers = providers
    }

    /// The provider for a KeyStoreName: an exact match, else one whose name differs only in case.
    public func provider(named name: String) -> (any SQLColumnEncryptionKeyStoreProvider)? {
        if let p = providers[name] { return p }
        let lower = name.lowercased()
        return providers.first { $0.key.lowercased() == lower }?.value
    }
}
