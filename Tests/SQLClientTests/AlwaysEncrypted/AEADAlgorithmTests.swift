import XCTest
@testable import SQLClient

/// AEAD_AES_256_CBC_HMAC_SHA256: published known answers, round trips, and every way a
/// ciphertext can be wrong giving its typed error (never a plaintext).
final class AEADAlgorithmTests: XCTestCase {
    func testDerivedKeysMatchTediousPublishedValues() throws {
        let v = try AEFixtures.values("tedious-aead.txt")
        let cipher = try AEADAes256CbcHmacSha256(rootKey: try AEFixtures.hex(v["root_key"]))
        XCTAssertEqual(cipher.derivedKeys.encryption, try AEFixtures.hex(v["encryption_key"]))
        XCTAssertEqual(cipher.derivedKeys.mac, try AEFixtures.hex(v["mac_key"]))
        XCTAssertEqual(cipher.derivedKeys.iv, try AEFixtures.hex(v["iv_key"]))
    }

    func testDeterministicEncryptionMatchesTediousPublishedCiphertext() throws {
        let v = try AEFixtures.values("tedious-aead.txt")
        let cipher = try AEADAes256CbcHmacSha256(rootKey: try AEFixtures.hex(v["root_key"]))
        let plaintext = try AEFixtures.hex(v["deterministic_plaintext"])
        XCTAssertEqual(plaintext, AEFixtures.utf16LE("val_determ_1"))
        let published = try AEFixtures.hex(v["deterministic_ciphertext"])
        XCTAssertEqual(try cipher.encrypt(plaintext, type: .deterministic), published)
        XCTAssertEqual(try cipher.decrypt(published), plaintext)
    }

    func testRandomizedEncryptionWithThePublishedIVMatchesTedious() throws {
        let v = try AEFixtures.values("tedious-aead.txt")
        let cipher = try AEADAes256CbcHmacSha256(rootKey: try AEFixtures.hex(v["root_key"]))
        let plaintext = try AEFixtures.hex(v["randomized_plaintext"])
        let published = try AEFixtures.hex(v["randomized_ciphertext"])
        XCTAssertEqual(try cipher.encrypt(plaintext, iv: try AEFixtures.hex(v["randomized_iv"])), published)
        XCTAssertEqual(try cipher.decrypt(published), plaintext)
        XCTAssertEqual(String(decoding: stride(from: 0, to: plaintext.count, by: 2).map { UInt16(plaintext[$0]) | UInt16(plaintext[$0 + 1]) << 8 },
                              as: UTF16.self), "val_rand_2")
    }

    /// A cell a real SQL Server returned (swisscom's fixture) decrypts to its published plaintext.
    func testSwisscomServerCellDecryptsToItsPublishedPlaintext() throws {
        let v = try AEFixtures.values("swisscom-aead.txt")
        let cell = try AEFixtures.bytes("swisscom/column_value.enc")
        XCTAssertEqual(cell, try AEFixtures.hex(v["ciphertext"]))
        let cipher = try AEADAes256CbcHmacSha256(rootKey: try AEFixtures.hex(v["root_key"]))
        let plaintext = try cipher.decrypt(cell)
        XCTAssertEqual(plaintext, try AEFixtures.hex(v["plaintext"]))
        XCTAssertEqual(plaintext, AEFixtures.utf16LE("12345     "))
        // Its IV is not the deterministic IV of this plaintext: the cell was encrypted randomized.
        XCTAssertNotEqual(try cipher.encrypt(plaintext, type: .deterministic), cell)
    }

    func testRoundTripsDeterministicStableRandomizedDiffering() throws {
        let cipher = try AEADAes256CbcHmacSha256(rootKey: (0 ..< 32).map { UInt8($0 * 7 + 3) })
        for size in [0, 1, 15, 16, 17, 31, 32, 33, 100, 8000] {
            let plaintext = (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) }
            let d1 = try cipher.encrypt(plaintext, type: .deterministic)
            let d2 = try cipher.encrypt(plaintext, type: .deterministic)
            XCTAssertEqual(d1, d2, "deterministic, \(size) bytes")
            XCTAssertEqual(d1.count, 1 + 32 + 16 + (size / 16 + 1) * 16)
            XCTAssertEqual(try cipher.decrypt(d1), plaintext)
            let r1 = try cipher.encrypt(plaintext, type: .randomized)
            let r2 = try cipher.encrypt(plaintext, type: .randomized)
            XCTAssertNotEqual(r1, r2, "randomized, \(size) bytes")
            XCTAssertNotEqual(Array(r1[33 ..< 49]), Array(r2[33 ..< 49]), "a fresh IV each time")
            XCTAssertEqual(try cipher.decrypt(r1), plaintext)
            XCTAssertEqual(try cipher.decrypt(r2), plaintext)
        }
        // Different plaintexts give different deterministic ciphertexts.
        XCTAssertNotEqual(try cipher.encrypt([1], type: .deterministic), try cipher.encrypt([2], type: .deterministic))
    }

    /// Every single-byte change anywhere in a ciphertext is an error: the version byte is
    /// `.invalidCiphertext`, any other byte (MAC, IV, body) `.authenticationFailed`.
    func testEveryAlteredByteIsATypedError() throws {
        let v = try AEFixtures.values("swisscom-aead.txt")
        let cipher = try AEADAes256CbcHmacSha256(rootKey: try AEFixtures.hex(v["root_key"]))
        let cell = try AEFixtures.hex(v["ciphertext"])
        for i in cell.indices {
            for flip: UInt8 in [0x01, 0x80] {
                var bad = cell
                bad[i] ^= flip
                XCTAssertThrowsError(try cipher.decrypt(bad)) { error in
                    XCTAssertEqual((error as? ColumnEncryptionError)?.code, i == 0 ? .invalidCiphertext : .authenticationFailed, "byte \(i)")
                }
            }
        }
    }

    func testEveryTruncationAndBadLengthIsATypedError() throws {
        let cipher = try AEADAes256CbcHmacSha256(rootKey: [UInt8](repeating: 9, count: 32))
        let cell = try cipher.encrypt(Array("a value of some length".utf8), type: .randomized)
        for n in 0 ..< cell.count {
            XCTAssertThrowsError(try cipher.decrypt(Array(cell.prefix(n)))) { error in
                let code = (error as? ColumnEncryptionError)?.code
                // Shorter than 65 bytes or not whole blocks: malformed; else a MAC over fewer bytes.
                XCTAssertEqual(code, n < 65 || (n - 49) % 16 != 0 ? .invalidCiphertext : .authenticationFailed, "\(n) bytes")
            }
        }
        XCTAssertThrowsError(try cipher.decrypt(cell + [0])) { XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidCiphertext) }
        XCTAssertThrowsError(try cipher.decrypt(cell + [UInt8](repeating: 0, count: 16))) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .authenticationFailed)
        }
        var version2 = cell
        version2[0] = 0x02
        XCTAssertThrowsError(try cipher.decrypt(version2)) { error in
            XCTAssertEqual((error as? ColumnEncryptionError)?.code, .invalidCiphertext)
            XCTAssertTrue("\(error)".contains("version byte 0x2"), "\(error)")
        }
    }

    func testAWrongKeyFailsTheMAC() throws {
        let right = try AEADAes256CbcHmacSha256(rootKey: [UInt8](repeating: 1, count: 32))
        let wrong = try AEADAes256CbcHmacSha256(rootKey: [UInt8](repeating: 1, count: 31) + [2])
        let cell = try right.encrypt(Array("secret".utf8), type: .deterministic)
        XCTAssertThrowsError(try wrong.decrypt(cell)) { XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .authenticationFailed) }
    }

    /// A good MAC over a body whose padding is wrong (made here with the right MAC key) is
    /// `.decryptionFailed`, not a plaintext.
    func testBadPaddingUnderAGoodMACIsDecryptionFailed() throws {
        let cipher = try AEADAes256CbcHmacSha256(rootKey: [UInt8](repeating: 5, count: 32))
        let keys = cipher.derivedKeys
        let iv = [UInt8](repeating: 0x11, count: 16)
        // One block whose last byte decrypts to 0 (invalid PKCS #7): encrypt a full block with
        // padding, keep the first block only.
        let block = Array(AECryptoTestAccess.aes(key: keys.encryption, iv: iv, [UInt8](repeating: 0, count: 16)).prefix(16))
        let mac = try AECryptoTestAccess.hmac(key: keys.mac, [1] + iv + block + [1])
        XCTAssertThrowsError(try cipher.decrypt([1] + mac + iv + block)) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .decryptionFailed)
        }
    }

    func testRootKeyMustBe32Bytes() {
        for n in [0, 16, 31, 33, 64] {
            XCTAssertThrowsError(try AEADAes256CbcHmacSha256(rootKey: [UInt8](repeating: 0, count: n))) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidKey)
            }
        }
    }

    func testDescriptionAndMirrorShowNoKey() throws {
        let cipher = try AEADAes256CbcHmacSha256(rootKey: [UInt8](repeating: 0xAB, count: 32))
        var dumped = ""
        dump(cipher, to: &dumped)
        XCTAssertEqual("\(cipher)", "AEAD_AES_256_CBC_HMAC_SHA256")
        XCTAssertFalse(dumped.contains("171"), dumped)   // 0xAB
        for key in [cipher.derivedKeys.encryption, cipher.derivedKeys.mac] {
            XCTAssertFalse(dumped.contains("\(key[0]), \(key[1])"), dumped)
        }
    }
}

/// The primitives the tests use to build hostile inputs.
enum AECryptoTestAccess {
    static func aes(key: [UInt8], iv: [UInt8], _ data: [UInt8]) -> [UInt8] {
        AECrypto.aes256CBC(encrypt: true, key: key, iv: iv, data[...]) ?? []
    }
    static func hmac(key: [UInt8], _ data: [UInt8]) throws -> [UInt8] {
        try AECrypto.hmacSHA256(key: key, data)
    }
}
