import Foundation
import Synchronization
import TDS

/// A `ByteStream` that carries its bytes as TLS records over another stream, after a
/// handshake that has already completed (in TDS, inside PRELOGIN packets).
///
/// Used for the whole session when PRELOGIN agreed ENCRYPT_ON or ENCRYPT_REQ; in ENCRYPT_OFF
/// (login-only) mode the driver encrypts only LOGIN7 through the session directly. One read and
/// one write may run at the same time (the session allows one decrypt beside one encrypt).
package final class TLSStream: ByteStream, Sendable {
    private let base: any ByteStream
    private let session: any TLSSession
    /// Plaintext decrypted and not read yet, and the ciphertext read from `base` before this
    /// stream existed (decrypted by the first read).
    private let buffers: Mutex<(pending: [UInt8], leftover: [UInt8])>

    /// Wraps `base` with `session`, whose handshake must be complete. `leftover` is ciphertext
    /// already read from `base` after the handshake (the first read decrypts it first).
    package init(base: any ByteStream, session: any TLSSession, leftover: [UInt8] = []) throws {
        self.base = base
        self.session = session
        self.buffers = Mutex(([], leftover))
    }

    package func read(maxLength: Int) async throws -> [UInt8] {
        let limit = max(1, maxLength)
        while true {
            let (ready, earlier): ([UInt8]?, [UInt8]) = buffers.withLock { b in
                if !b.pending.isEmpty {
                    let n = min(limit, b.pending.count)
                    let out = Array(b.pending[0 ..< n])
                    b.pending.removeFirst(n)
                    return (out, [])
                }
                let earlier = b.leftover
                b.leftover = []
                return (nil, earlier)
            }
            if let ready { return ready }
            let ciphertext: [UInt8]
            if !earlier.isEmpty {
                ciphertext = earlier
            } else {
                // As much as the caller takes (the records' plaintext is shorter), at least a record.
                ciphertext = try await base.read(maxLength: max(limit, 16_384 + 512))
                if ciphertext.isEmpty { return [] }
            }
            let plain = try await session.decrypt(ciphertext)
            if plain.isEmpty { continue }
            // Handed over as it came when nothing is pending and it fits: no copy.
            let whole = buffers.withLock { b -> Bool in
                if b.pending.isEmpty && plain.count <= limit { return true }
                b.pending.append(contentsOf: plain)
                return false
            }
            if whole { return plain }
        }
    }

    package func write(_ bytes: [UInt8]) async throws {
        let records = try await session.encrypt(bytes)
        try await base.write(records)
    }

    package func close() {
        base.close()
    }
}
