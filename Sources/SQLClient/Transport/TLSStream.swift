import Foundation
import TDS

/// A ``ByteStream`` that carries its bytes as TLS records over another stream, after a
/// handshake that has already completed (in TDS, inside PRELOGIN packets).
///
/// Used for the whole session when PRELOGIN agreed ENCRYPT_ON or ENCRYPT_REQ; in ENCRYPT_OFF
/// (login-only) mode the driver encrypts only LOGIN7 through the session directly.
public final class TLSStream: ByteStream, @unchecked Sendable {
    private let base: any ByteStream
    private let session: any TLSSession
    private let lock = NSLock()
    private var pending: [UInt8] = []

    /// Wraps `base` with `session`, whose handshake must be complete. `leftover` is ciphertext
    /// already read from `base` after the handshake (it is decrypted first).
    public init(base: any ByteStream, session: any TLSSession, leftover: [UInt8] = []) throws {
        self.base = base
        self.session = session
        if !leftover.isEmpty {
            pending = try session.decrypt(leftover)
        }
    }

    public func read(maxLength: Int) async throws -> [UInt8] {
        let limit = max(1, maxLength)
        while true {
            let ready: [UInt8]? = lock.withLock {
                guard !pending.isEmpty else { return nil }
                let n = min(limit, pending.count)
                let out = Array(pending[0 ..< n])
                pending.removeFirst(n)
                return out
            }
            if let ready { return ready }
            let ciphertext = try await base.read(maxLength: 16_384 + 512)
            if ciphertext.isEmpty { return [] }
            let plain = try lock.withLock { try session.decrypt(ciphertext) }
            lock.withLock { pending.append(contentsOf: plain) }
        }
    }

    public func write(_ bytes: [UInt8]) async throws {
        let records = try lock.withLock { try session.encrypt(bytes) }
        try await base.write(records)
    }

    public func close() {
        base.close()
    }
}
