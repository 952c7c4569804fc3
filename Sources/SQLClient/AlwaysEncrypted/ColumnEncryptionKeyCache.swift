import Foundation
import Synchronization

/// Unwrapped column encryption keys, kept so a key store provider is asked once per key and
/// lifetime (SqlClient's default: 2 hours). Entries are keyed by the store name, the column master
/// key path and the encrypted key's bytes; they hold the algorithm keyed by the CEK (the derived
/// keys), never printed. Time comes from an injected clock, so tests move it by hand.
public final class ColumnEncryptionKeyCache: Sendable {
    private struct Key: Hashable {
        var store: String
        var path: String
        var encryptedKey: [UInt8]
    }
    private struct Entry {
        var cipher: AEADAes256CbcHmacSha256
        var expires: Duration
    }

    /// SqlClient's default lifetime: 2 hours.
    public static let defaultTimeToLive: Duration = .seconds(7200)
    /// The most entries kept; the oldest are dropped beyond it (a server cannot grow the cache
    /// without bound by naming many keys).
    public static let maximumEntries = 4096

    private let now: @Sendable () -> Duration
    /// The entries and the lifetime of those stored next.
    private let state: Mutex<(entries: [Key: Entry], ttl: Duration)>

    /// A cache whose entries live `timeToLive` (zero or less: nothing is kept) by `now`, a
    /// monotonic clock's reading (by default `ContinuousClock` from the cache's creation).
    public init(timeToLive: Duration = ColumnEncryptionKeyCache.defaultTimeToLive, now: (@Sendable () -> Duration)? = nil) {
        if let now {
            self.now = now
        } else {
            let origin = ContinuousClock.now
            self.now = { ContinuousClock.now - origin }
        }
        state = Mutex(([:], max(timeToLive, .zero)))
    }

    /// How long an entry lives; zero turns caching off. Changing it applies to entries stored later.
    public var timeToLive: Duration {
        get { state.withLock { $0.ttl } }
        set { state.withLock { $0.ttl = max(newValue, .zero) } }
    }

    // The clock (the caller's `now`) is read before the lock is taken, never under it.

    /// The number of entries not yet expired.
    public var count: Int {
        let t = now()
        return state.withLock { $0.entries.values.filter { $0.expires > t }.count }
    }

    /// Drops every entry.
    public func removeAll() {
        state.withLock { $0.entries = [:] }
    }

    func cipher(store: String, path: String, encryptedKey: [UInt8]) -> AEADAes256CbcHmacSha256? {
        let key = Key(store: store.lowercased(), path: path.lowercased(), encryptedKey: encryptedKey)
        let t = now()
        return state.withLock { s in
            guard let entry = s.entries[key] else { return nil }
            guard entry.expires > t else { s.entries[key] = nil; return nil }
            return entry.cipher
        }
    }

    func store(_ cipher: AEADAes256CbcHmacSha256, store: String, path: String, encryptedKey: [UInt8]) {
        let key = Key(store: store.lowercased(), path: path.lowercased(), encryptedKey: encryptedKey)
        let t = now()
        state.withLock { s in
            guard s.ttl > .zero else { return }
            if s.entries.count >= Self.maximumEntries {
                s.entries = s.entries.filter { $0.value.expires > t }
                while s.entries.count >= Self.maximumEntries,
                      let oldest = s.entries.min(by: { $0.value.expires < $1.value.expires }) {
                    s.entries[oldest.key] = nil
                }
            }
            s.entries[key] = Entry(cipher: cipher, expires: t + s.ttl)
        }
    }
}
