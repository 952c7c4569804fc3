import XCTest
@testable import SQLClient

/// The one parser of encrypted column encryption keys: every field's fault with its offset, and
/// hostile bytes (random, truncated, lengths at their maximum) never trap.
final class EncryptedColumnEncryptionKeyTests: XCTestCase {
    private func blob(path: String = "currentuser/my/ab12", keySize: Int = 64, signatureSize: Int? = nil) -> [UInt8] {
        let p = EncryptedColumnEncryptionKey.utf16LE(path)
        return [1, UInt8(p.count & 0xFF), UInt8(p.count >> 8), UInt8(keySize & 0xFF), UInt8(keySize >> 8)] + p
            + [UInt8](repeating: 0xC1, count: keySize) + [UInt8](repeating: 0x51, count: signatureSize ?? keySize)
    }

    func testTheFieldsOfAWellFormedBlob() throws {
        let bytes = blob()
        let parts = try EncryptedColumnEncryptionKey(bytes, keySize: 64, keyPath: "p")
        XCTAssertEqual(Array(parts.keyPath), EncryptedColumnEncryptionKey.utf16LE("currentuser/my/ab12"))
        XCTAssertEqual(Array(parts.ciphertext), [UInt8](repeating: 0xC1, count: 64))
        XCTAssertEqual(Array(parts.signature), [UInt8](repeating: 0x51, count: 64))
        XCTAssertEqual(parts.signed.count, 5 + 38 + 64)
        XCTAssertEqual(try EncryptedColumnEncryptionKey.unsigned(masterKeyPath: "CurrentUser/My/AB12", ciphertext: [UInt8](repeating: 0xC1, count: 64)),
                       Array(bytes[..<(5 + 38 + 64)]))
    }

    func testEachFaultNamesItsOffset() {
        func offset(_ bytes: [UInt8], keySize: Int = 64) -> Int? {
            do { _ = try EncryptedColumnEncryptionKey(bytes, keySize: keySize, keyPath: "k"); return nil } catch {
                XCTAssertEqual(error.code, .invalidEncryptedKey)
                XCTAssertEqual(error.keyPath, "k")
                XCTAssertTrue(error.message.contains("at offset \(error.offset ?? -1)"), error.message)
                return error.offset
            }
        }
        var bad = blob()
        bad[0] = 2
        XCTAssertEqual(offset(bad), 0)
        bad = blob()
        bad[1] = 37   // odd path length
        XCTAssertEqual(offset(bad), 1)
        XCTAssertEqual(offset(blob(), keySize: 128), 3, "ciphertext length is not the key's size")
        XCTAssertEqual(offset(blob(signatureSize: 63)), 5 + 38 + 64, "short signature, where it starts")
        XCTAssertEqual(offset(Array(blob().prefix(4))), 4, "shorter than the header")
        XCTAssertEqual(offset([1, 0xFE, 0xFF, 64, 0] + [UInt8](repeating: 0, count: 100)), 1, "path past the end")
        XCTAssertEqual(offset([1, 0, 0, 64, 0] + [UInt8](repeating: 0, count: 30)), 3, "ciphertext past the end")
        XCTAssertNil(offset(blob()))
    }

    func testHostileBytesNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        let good = blob()
        for n in 0 ..< 2000 {
            var bytes: [UInt8]
            switch n % 3 {
            case 0: bytes = (0 ..< Int.random(in: 0 ... 300, using: &generator)).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
            case 1: bytes = Array(good.prefix(Int.random(in: 0 ... good.count, using: &generator)))
            default:
                bytes = good
                bytes[Int.random(in: 0 ..< 5, using: &generator)] = UInt8.random(in: 0 ... 255, using: &generator)
            }
            if let parts = try? EncryptedColumnEncryptionKey(bytes, keySize: 64, keyPath: nil) {
                XCTAssertEqual(parts.ciphertext.count, 64)
                XCTAssertEqual(parts.signature.count, 64)
                XCTAssertEqual(parts.signed.count + 64, bytes.count)
            }
        }
        XCTAssertThrowsError(try EncryptedColumnEncryptionKey([1, 0xFF, 0xFF, 0xFF, 0xFF], keySize: 0xFFFF, keyPath: nil))
        XCTAssertThrowsError(try EncryptedColumnEncryptionKey.unsigned(masterKeyPath: String(repeating: "x", count: 40_000), ciphertext: [1])) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidKeyPath)
        }
    }
}
