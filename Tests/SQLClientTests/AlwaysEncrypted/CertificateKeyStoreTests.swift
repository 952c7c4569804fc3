import Foundation
import XCTest
@testable import SQLClient

/// The certificate-file key store: the published SQL Server CEK (swisscom's fixture) unwrapped
/// to its published key, its signature checked, and every malformed or tampered blob refused.
final class CertificateKeyStoreTests: XCTestCase {
    private var folders: [URL] = []

    override func tearDown() {
        for f in folders { try? FileManager.default.removeItem(at: f) }
        folders = []
    }

    private func provider(password: String? = nil) throws -> SQLCertificateFileKeyStoreProvider {
        let dir = try AEFixtures.keyFolder()
        folders.append(dir)
        return SQLCertificateFileKeyStoreProvider(folder: dir.path, password: password.map { RedactedPassword($0) })
    }

    func testPublishedEncryptedCEKUnwrapsToThePublishedKeyAndItsCellDecrypts() async throws {
        let v = try AEFixtures.values("swisscom-aead.txt")
        let blob = try AEFixtures.bytes("swisscom/cekv.key")
        let provider = try provider()
        let cek = try await provider.decryptColumnEncryptionKey(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP", encryptedKey: blob)
        XCTAssertEqual(cek, try AEFixtures.hex(v["root_key"]))
        // The path as the blob spells it (lower case) names the same file.
        XCTAssertEqual(try provider.unwrap(masterKeyPath: try XCTUnwrap(v["master_key_path"]), algorithm: "rsa_oaep", encryptedKey: blob), cek)
        let plaintext = try AEADAes256CbcHmacSha256(rootKey: cek).decrypt(try AEFixtures.bytes("swisscom/column_value.enc"))
        XCTAssertEqual(plaintext, AEFixtures.utf16LE("12345     "))
    }

    /// The blob's layout as published: version 1, the key path (UTF-16LE, lower case), a
    /// 256-byte ciphertext and a signature the published certificate verifies.
    func testPublishedBlobLayoutAndSignatureVerifyWithThePublishedCertificate() throws {
        let blob = try AEFixtures.bytes("swisscom/cekv.key")
        let parts = try EncryptedColumnEncryptionKey(blob, keySize: 256, keyPath: nil)
        XCTAssertEqual(blob[0], 1)
        XCTAssertEqual(Array(blob[5 ..< 115]), AEFixtures.utf16LE("currentuser/my/\(AEFixtures.thumbprint)"))
        XCTAssertEqual(parts.ciphertext.count, 256)
        XCTAssertEqual(parts.signature.count, 256)
        let certificate = try XCTUnwrap(AERSAKey.publicKey(certificatePEM: try AEFixtures.bytes("swisscom/always-encrypted_pub.pem")))
        XCTAssertEqual(certificate.size, 256)
        XCTAssertTrue(certificate.verifySHA256(parts.signed, signature: parts.signature))
        var bad = blob
        bad[200] ^= 1
        let badParts = try EncryptedColumnEncryptionKey(bad, keySize: 256, keyPath: nil)
        XCTAssertFalse(certificate.verifySHA256(badParts.signed, signature: badParts.signature))
    }

    /// A changed byte in the key path, the ciphertext or the signature fails the signature
    /// check; a changed header is malformed. Never a key.
    func testTamperedEncryptedKeysAreRefused() throws {
        let blob = try AEFixtures.bytes("swisscom/cekv.key")
        let provider = try provider()
        for i in Swift.stride(from: 0, to: blob.count, by: 7) + [1, 2, 3, 4, 114, 115, 370, 371, 626] {
            var bad = blob
            bad[i] ^= 0x20
            XCTAssertThrowsError(try provider.unwrap(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP", encryptedKey: bad)) { error in
                let e = error as? ColumnEncryptionError
                XCTAssertEqual(e?.code, i < 5 ? .invalidEncryptedKey : .signatureMismatch, "byte \(i)")
                XCTAssertEqual(e?.keyPath, AEFixtures.masterKeyPath)
            }
        }
    }

    func testEveryTruncationAndHostileLengthIsMalformed() throws {
        let blob = try AEFixtures.bytes("swisscom/cekv.key")
        let provider = try provider()
        for n in 0 ..< blob.count {
            XCTAssertThrowsError(try provider.unwrap(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP", encryptedKey: Array(blob.prefix(n)))) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidEncryptedKey, "\(n) bytes")
            }
        }
        for (at, value) in [(1, 0xFF), (2, 0xFF), (3, 0xFF), (4, 0xFF), (4, 0x00), (1, 0x00), (2, 0x01), (3, 0x01)] {
            var bad = blob
            bad[at] = UInt8(value)
            XCTAssertThrowsError(try EncryptedColumnEncryptionKey(bad, keySize: 256, keyPath: "p")) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidEncryptedKey, "byte \(at) = \(value)")
            }
        }
        XCTAssertThrowsError(try provider.unwrap(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP", encryptedKey: blob + [0])) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidEncryptedKey)
        }
        // 0xFFFF-long path and ciphertext claimed by a 5-byte blob.
        XCTAssertThrowsError(try EncryptedColumnEncryptionKey([1, 0xFF, 0xFF, 0xFF, 0xFF], keySize: 0xFFFF, keyPath: nil)) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidEncryptedKey)
        }
    }

    /// Another private key filed under the same thumbprint: the signature does not verify.
    func testTheWrongMasterKeyIsASignatureMismatch() throws {
        let other = try XCTUnwrap(AERSAKey.generate(bits: 2048)?.pkcs8PEM())
        let dir = try AEFixtures.keyFolder()
        folders.append(dir)
        try Data(other).write(to: dir.appendingPathComponent("\(AEFixtures.thumbprint).pem"))
        let provider = SQLCertificateFileKeyStoreProvider(folder: dir.path)
        XCTAssertThrowsError(try provider.unwrap(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP",
                                                 encryptedKey: try AEFixtures.bytes("swisscom/cekv.key"))) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .signatureMismatch)
        }
    }

    func testWrapThenUnwrapWithAGeneratedKey() async throws {
        let pem = try XCTUnwrap(AERSAKey.generate(bits: 2048)?.pkcs8PEM())
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ae-gen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        folders.append(dir)
        try Data(pem).write(to: dir.appendingPathComponent("ABCDEF0123.pem"))
        let provider = SQLCertificateFileKeyStoreProvider(folder: dir.path)
        let path = "LocalMachine/My/ABCDEF0123"
        let cek = (0 ..< 32).map { UInt8($0 * 5) }
        let blob = try await provider.encryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", columnEncryptionKey: cek)
        XCTAssertEqual(blob.count, 5 + 2 * path.utf16.count + 256 + 256)
        XCTAssertEqual(Array(blob[5 ..< 5 + 2 * path.utf16.count]), AEFixtures.utf16LE(path.lowercased()))
        let back = try await provider.decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: blob)
        XCTAssertEqual(back, cek)
        // Randomized OAEP: wrapping again gives other bytes, the same key.
        let again = try await provider.encryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", columnEncryptionKey: cek)
        XCTAssertNotEqual(again, blob)
        // CMK metadata signatures.
        let signature = try await provider.signColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: false)
        let verified = try await provider.verifyColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: false, signature: signature)
        XCTAssertTrue(verified)
        let otherFlag = try await provider.verifyColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: true, signature: signature)
        XCTAssertFalse(otherFlag)
    }

    func testKeyPathsThatCannotNameAFileAreRefused() throws {
        let provider = try provider()
        let blob = try AEFixtures.bytes("swisscom/cekv.key")
        for path in ["CurrentUser/My/../../etc/passwd", "CurrentUser/My", "Elsewhere/My/0BE9", "CurrentUser//0BE9",
                     "CurrentUser/My/0BE9/extra", "CurrentUser/My/xyz", "CurrentUser/My/", "", "CurrentUser/M\\y/0BE9"] {
            XCTAssertThrowsError(try provider.unwrap(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: blob), path) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidKeyPath, path)
            }
        }
        XCTAssertThrowsError(try provider.unwrap(masterKeyPath: "CurrentUser/My/ABCD", algorithm: "RSA_OAEP", encryptedKey: blob)) { error in
            XCTAssertEqual((error as? ColumnEncryptionError)?.code, .keyNotFound)
            XCTAssertEqual((error as? ColumnEncryptionError)?.keyPath, "CurrentUser/My/ABCD")
        }
        XCTAssertThrowsError(try provider.unwrap(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_PKCS1", encryptedKey: blob)) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .unknownAlgorithm)
        }
        XCTAssertEqual(try SQLCertificateFileKeyStoreProvider.fileNames(for: "CurrentUser/My/AbC1").prefix(3), ["AbC1.pfx", "AbC1.p12", "AbC1.pem"])
    }

    /// A PKCS #12 archive (made from the published key and certificate with the `openssl`
    /// command when it is installed) opens with its password and not without.
    func testPKCS12ArchiveOpensWithItsPassword() throws {
        guard let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("no openssl command")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ae-p12-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        folders.append(dir)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["pkcs12", "-export", "-inkey", AEFixtures.folder.appendingPathComponent("swisscom/always-encrypted.pem").path,
                             "-in", AEFixtures.folder.appendingPathComponent("swisscom/always-encrypted_pub.pem").path,
                             "-out", dir.appendingPathComponent("\(AEFixtures.thumbprint.uppercased()).pfx").path, "-passout", "pass:s3cret"]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let blob = try AEFixtures.bytes("swisscom/cekv.key")
        let good = SQLCertificateFileKeyStoreProvider(folder: dir.path, password: "s3cret")
        XCTAssertEqual(try good.unwrap(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP", encryptedKey: blob),
                       try AEFixtures.hex(AEFixtures.values("swisscom-aead.txt")["root_key"]))
        XCTAssertFalse("\(good)".contains("s3cret"))
        let bad = SQLCertificateFileKeyStoreProvider(folder: dir.path, password: "wrong")
        XCTAssertThrowsError(try bad.unwrap(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP", encryptedKey: blob)) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .keyNotFound)
            XCTAssertFalse("\($0)".contains("wrong"))
        }
    }
}
