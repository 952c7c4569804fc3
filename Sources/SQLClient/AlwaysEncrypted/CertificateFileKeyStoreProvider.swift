import Foundation
import TDS

/// The column master keys of the Windows certificate store (`MSSQL_CERTIFICATE_STORE`), read
/// from files: a master key path `CurrentUser/My/<thumbprint>` (or `LocalMachine/…`) names the
/// file `<thumbprint>.pfx`, `<thumbprint>.p12` (PKCS #12) or `<thumbprint>.pem` (a PEM private
/// key, PKCS #8 or PKCS #1) in the folder the app gives. The thumbprint is hexadecimal (any
/// case), so a path cannot leave the folder.
///
/// An encrypted column encryption key has SqlClient's layout: version 0x01, the key path's
/// length and the ciphertext's length (2 bytes each, little-endian), the key path (UTF-16LE),
/// the RSA-OAEP (SHA-1) ciphertext of the key, then an RSA PKCS #1 v1.5 SHA-256 signature over
/// all the bytes before it. The signature is checked before the key is decrypted.
///
/// Register it under ``providerName`` (the name the server sends):
/// `try SQLColumnEncryption.registerKeyStoreProviders([SQLCertificateFileKeyStoreProvider.providerName: provider])`.
public struct SQLCertificateFileKeyStoreProvider: SQLColumnEncryptionKeyStoreProvider, CustomStringConvertible {
    /// `MSSQL_CERTIFICATE_STORE`: the KeyStoreName of certificate column master keys.
    public static let providerName = "MSSQL_CERTIFICATE_STORE"
    /// The key encryption algorithm: `RSA_OAEP`.
    public static let keyEncryptionAlgorithm = "RSA_OAEP"
    /// The largest key file read (1 MiB).
    public static let maximumFileSize = 1 << 20

    /// The folder holding the key files.
    public let folder: String
    private let password: RedactedPassword?

    /// Keys read from `folder`; `password` opens PKCS #12 archives and encrypted PEM keys (never shown).
    public init(folder: String, password: RedactedPassword? = nil) {
        self.folder = folder
        self.password = password
    }

    public var description: String { "SQLCertificateFileKeyStoreProvider(folder: \(folder))" }

    /// Unwraps `encryptedKey` (see the type's layout) with the private key of `masterKeyPath`.
    /// - Throws: ``ColumnEncryptionError``: `.invalidKeyPath`, `.keyNotFound`, `.unknownAlgorithm`
    ///   (not RSA_OAEP), `.invalidEncryptedKey` (malformed or of the wrong key size),
    ///   `.signatureMismatch` (tampered, or another master key), `.keyStoreFailed` (OAEP failed).
    public func decryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) async throws -> [UInt8] {
        try unwrap(masterKeyPath: masterKeyPath, algorithm: algorithm, encryptedKey: encryptedKey)
    }

    /// Wraps `columnEncryptionKey` in the layout above (the key path lower-cased, as SqlClient writes it).
    /// - Throws: ``ColumnEncryptionError`` as for decryption, `.cryptoFailure` when OpenSSL/Security fails.
    public func encryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, columnEncryptionKey: [UInt8]) async throws -> [UInt8] {
        try wrap(masterKeyPath: masterKeyPath, algorithm: algorithm, columnEncryptionKey: columnEncryptionKey)
    }

    /// RSA-SHA256 signature over the UTF-16LE of (provider name, path, "true"/"false") lower-cased.
    public func signColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool) async throws -> [UInt8] {
        let key = try loadKey(masterKeyPath)
        guard let signature = key.signSHA256(Self.metadata(masterKeyPath, allowEnclaveComputations)[...]) else {
            throw ColumnEncryptionError(.cryptoFailure, "could not sign the column master key metadata", keyPath: masterKeyPath)
        }
        return signature
    }

    /// Checks a signature made by ``signColumnMasterKeyMetadata(masterKeyPath:allowEnclaveComputations:)``.
    public func verifyColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool, signature: [UInt8]) async throws -> Bool {
        let key = try loadKey(masterKeyPath)
        return key.verifySHA256(Self.metadata(masterKeyPath, allowEnclaveComputations)[...], signature: signature[...])
    }

    private static func metadata(_ path: String, _ allow: Bool) -> [UInt8] {
        utf16LE((providerName + path + (allow ? "true" : "false")).lowercased())
    }

    /// The synchronous body of ``decryptColumnEncryptionKey(masterKeyPath:algorithm:encryptedKey:)``.
    func unwrap(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        try Self.checkAlgorithm(algorithm, masterKeyPath)
        let key = try loadKey(masterKeyPath)
        let parts = try EncryptedColumnEncryptionKey(encryptedKey, keySize: key.size, keyPath: masterKeyPath)
        guard parts.verifies(with: key) else {
            throw ColumnEncryptionError(.signatureMismatch, "the encrypted column encryption key's signature does not verify"
                                        + " with this column master key (tampered, or encrypted with another key)", keyPath: masterKeyPath)
        }
        guard let cek = key.decryptOAEP(parts.ciphertext) else {
            throw ColumnEncryptionError(.keyStoreFailed, "RSA-OAEP decryption of the column encryption key failed", keyPath: masterKeyPath)
        }
        return cek
    }

    func wrap(masterKeyPath: String, algorithm: String, columnEncryptionKey: [UInt8]) throws(ColumnEncryptionError) -> [UInt8] {
        try Self.checkAlgorithm(algorithm, masterKeyPath)
        let key = try loadKey(masterKeyPath)
        guard let ciphertext = key.encryptOAEP(columnEncryptionKey) else {
            throw ColumnEncryptionError(.cryptoFailure, "RSA-OAEP encryption of the column encryption key failed", keyPath: masterKeyPath)
        }
        let out = try EncryptedColumnEncryptionKey.unsigned(masterKeyPath: masterKeyPath, ciphertext: ciphertext)
        guard let signature = key.signSHA256(out[...]) else {
            throw ColumnEncryptionError(.cryptoFailure, "could not sign the encrypted column encryption key", keyPath: masterKeyPath)
        }
        return out + signature
    }

    private static func checkAlgorithm(_ algorithm: String, _ path: String) throws(ColumnEncryptionError) {
        guard algorithm.uppercased() == keyEncryptionAlgorithm else {
            throw ColumnEncryptionError(.unknownAlgorithm, "key encryption algorithm '\(algorithm.prefix(64))' is not RSA_OAEP", keyPath: path)
        }
    }

    /// The file names a master key path maps to, in the order tried.
    /// - Throws: ``ColumnEncryptionError`` `.invalidKeyPath` unless the path is
    ///   `CurrentUser|LocalMachine/<store>/<hex thumbprint>`.
    public static func fileNames(for masterKeyPath: String) throws(ColumnEncryptionError) -> [String] {
        let parts = masterKeyPath.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw ColumnEncryptionError(.invalidKeyPath, "a certificate key path is <location>/<store>/<thumbprint>", keyPath: masterKeyPath)
        }
        let location = parts[0].lowercased()
        guard location == "currentuser" || location == "localmachine" else {
            throw ColumnEncryptionError(.invalidKeyPath, "the certificate location is CurrentUser or LocalMachine", keyPath: masterKeyPath)
        }
        guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x2F && $0 != 0x5C && $0 < 0x7F }) else {
            throw ColumnEncryptionError(.invalidKeyPath, "the certificate store name is empty or not plain text", keyPath: masterKeyPath)
        }
        let thumbprint = parts[2]
        guard (1 ... 128).contains(thumbprint.utf8.count), thumbprint.utf8.allSatisfy({ $0.isHexDigit }) else {
            throw ColumnEncryptionError(.invalidKeyPath, "the certificate thumbprint is not hexadecimal", keyPath: masterKeyPath)
        }
        var names: [String] = []
        for case let t in [String(thumbprint), thumbprint.lowercased(), thumbprint.uppercased()] {
            for ext in ["pfx", "p12", "pem"] where !names.contains("\(t).\(ext)") { names.append("\(t).\(ext)") }
        }
        return names
    }

    func loadKey(_ masterKeyPath: String) throws(ColumnEncryptionError) -> AERSAKey {
        let names = try Self.fileNames(for: masterKeyPath)
        let base = URL(fileURLWithPath: folder, isDirectory: true)
        for name in names {
            let url = base.appendingPathComponent(name)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { continue }
            let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            guard size <= Self.maximumFileSize, let data = FileManager.default.contents(atPath: url.path) else {
                throw ColumnEncryptionError(.keyNotFound, "the key file \(name) is unreadable or larger than 1 MiB", keyPath: masterKeyPath)
            }
            let bytes = [UInt8](data.prefix(Self.maximumFileSize))
            let key = name.hasSuffix(".pem") ? AERSAKey.privateKey(pem: bytes, password: password?.reveal())
                                             : AERSAKey.privateKey(pkcs12: bytes, password: password?.reveal())
            guard let key else {
                throw ColumnEncryptionError(.keyNotFound, "the key file \(name) holds no RSA private key this password opens", keyPath: masterKeyPath)
            }
            return key
        }
        throw ColumnEncryptionError(.keyNotFound, "no key file for this path in the key folder (tried \(names.prefix(3).joined(separator: ", ")))",
                                    keyPath: masterKeyPath)
    }

    static func utf16LE(_ text: String) -> [UInt8] { EncryptedColumnEncryptionKey.utf16LE(text) }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool { (0x30 ... 0x39).contains(self) || (0x41 ... 0x46).contains(self) || (0x61 ... 0x66).contains(self) }
}
