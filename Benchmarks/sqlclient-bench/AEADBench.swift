import Foundation
import SQLClient

/// `sqlclient-bench aead [--cells N]`: the cost of Always Encrypted's cell decryption alone
/// (AEAD_AES_256_CBC_HMAC_SHA256: MAC check then AES-256-CBC), per cell, for the plaintexts of an
/// `int` (4 bytes) and an `nvarchar(100)` (200 bytes) value, deterministic ciphertexts. The read
/// path's rows/s with and without encryption are measured once the lead wires decryption into it.
enum AEADBench {
    static func main(_ args: ArraySlice<String>) throws {
        var cells = 200_000
        var it = args.makeIterator()
        while let a = it.next() {
            if a == "--cells", let v = it.next(), let n = Int(v), n > 0 { cells = n } else { note("usage: sqlclient-bench aead [--cells N]"); exit(2) }
        }
        let cipher = try AEADAes256CbcHmacSha256(rootKey: (0 ..< 32).map { UInt8($0) })
        for (name, plaintext) in [("int", [UInt8](repeating: 7, count: 4)),
                                  ("nvarchar(100)", Array(String(repeating: "é", count: 100).utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))] {
            let cell = try cipher.encrypt(plaintext, type: .deterministic)
            var checksum = 0
            let clock = ContinuousClock()
            let start = clock.now
            for _ in 0 ..< cells { checksum &+= try cipher.decrypt(cell).count }
            let elapsed = clock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            guard checksum == cells * plaintext.count else { note("aead: wrong plaintext length"); exit(1) }
            let rate = Double(cells) / seconds
            print("aead decrypt \(name): ciphertext \(cell.count) B, \(cells) cells in \(String(format: "%.3f", seconds)) s"
                  + " = \(String(format: "%.0f", rate)) cells/s (\(String(format: "%.2f", 1e6 / rate)) µs/cell)")
        }
    }
}
