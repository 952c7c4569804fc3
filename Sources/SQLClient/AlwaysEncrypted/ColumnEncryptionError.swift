/// A typed error of Always Encrypted: a column encryption key that cannot be had, a cell that
/// cannot be decrypted, metadata the client cannot use.
///
/// It names the column (``column``) and the column master key's path (``keyPath``) when known;
/// it never holds a key, a plaintext or a ciphertext, so it is safe to log.
public struct ColumnEncryptionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An extensible error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, for example `authenticationFailed`.
        public let name: String
        /// A code named `name`.
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A cell's ciphertext is malformed: shorter than the 65-byte minimum (version, MAC, IV,
        /// one AES block), an unknown version byte, or a body that is not whole AES blocks.
        public static let invalidCiphertext = Code("invalidCiphertext")
        /// A cell's MAC does not verify: the ciphertext was altered or the key is wrong.
        public static let authenticationFailed = Code("authenticationFailed")
        /// The MAC verified but AES-CBC decryption failed (bad padding).
        public static let decryptionFailed = Code("decryptionFailed")
        /// A decrypted value is not a value of its column's base type (a wrong width after
        /// normalization, an integer out of range): the server's metadata and the cell disagree.
        public static let invalidPlaintext = Code("invalidPlaintext")
        /// A parameter bound for an encrypted column would be sent unencrypted (SqlClient's rule:
        /// never send a value in clear to an encrypted column), or cannot be encrypted as asked.
        public static let unencryptedParameter = Code("unencryptedParameter")
        /// A column encryption key (the AEAD root key) is not 32 bytes.
        public static let invalidKey = Code("invalidKey")
        /// The server names an encryption algorithm other than AEAD_AES_256_CBC_HMAC_SHA256.
        public static let unknownAlgorithm = Code("unknownAlgorithm")
        /// EncryptionAlgoType other than 1 (deterministic) or 2 (randomized).
        public static let unknownEncryptionType = Code("unknownEncryptionType")
        /// NormVersion other than 1.
        public static let unsupportedNormalization = Code("unsupportedNormalization")
        /// A CryptoMetaData ordinal outside the CEK table, or a CEK entry with no value.
        public static let invalidMetadata = Code("invalidMetadata")
        /// No key store provider is registered under the name the server gave.
        public static let unknownKeyStoreProvider = Code("unknownKeyStoreProvider")
        /// The column master key is not where its path says (no such file, no such key).
        public static let keyNotFound = Code("keyNotFound")
        /// The column master key path is not valid for its provider.
        public static let invalidKeyPath = Code("invalidKeyPath")
        /// An encrypted column encryption key is malformed (version, lengths, key size).
        public static let invalidEncryptedKey = Code("invalidEncryptedKey")
        /// The signature of an encrypted column encryption key does not verify with the column
        /// master key (a tampered CEK, or the wrong certificate).
        public static let signatureMismatch = Code("signatureMismatch")
        /// A key store provider failed (its error is in ``ColumnEncryptionError/message``).
        public static let keyStoreFailed = Code("keyStoreFailed")
        /// The server asks for secure enclave computations, which this client does not support.
        public static let enclaveNotSupported = Code("enclaveNotSupported")
        /// The platform's cryptography failed or is missing something needed.
        public static let cryptoFailure = Code("cryptoFailure")
        /// What the application configured cannot be used (a provider name, a cache lifetime).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The operation is not supported by this provider or on this platform.
        public static let unsupported = Code("unsupported")
    }

    /// What went wrong.
    public var code: Code
    /// What happened, in words; never a key or a value.
    public var message: String
    /// The column (COLMETADATA ColName) being decrypted, when known.
    public var column: String?
    /// The column master key's path, when known.
    public var keyPath: String?
    /// The byte offset of the malformed field in the structure parsed (an encrypted column
    /// encryption key, a cell's ciphertext), when the error is about one.
    public var offset: Int?

    /// An error of `code`, naming `column` and `keyPath` when known.
    public init(_ code: Code, _ message: String, column: String? = nil, keyPath: String? = nil) {
        self.code = code
        self.message = message
        self.column = column
        self.keyPath = keyPath
    }

    /// A copy naming `column` (and `keyPath`) unless already named.
    public func naming(column: String?, keyPath: String? = nil) -> ColumnEncryptionError {
        var copy = self
        if copy.column == nil { copy.column = column }
        if copy.keyPath == nil { copy.keyPath = keyPath }
        return copy
    }

    public var description: String {
        var text = "Always Encrypted error \(code)"
        if let column { text += " in column '\(column)'" }
        if let keyPath { text += " (column master key '\(keyPath)')" }
        return text + ": " + message
    }

    /// The same failure as a ``SQLClientError`` (`.decodingFailed` for cells and metadata,
    /// `.unsupported` for enclaves and unsupported operations, `.invalidConfiguration` for
    /// configuration), with this error as its `underlying`.
    public var sqlClientError: SQLClientError {
        let kind: SQLClientError.Code
        switch code {
        case .enclaveNotSupported, .unsupported: kind = .unsupported
        case .invalidConfiguration: kind = .invalidConfiguration
        default: kind = .decodingFailed
        }
        return SQLClientError(kind, description, underlying: self)
    }
}
