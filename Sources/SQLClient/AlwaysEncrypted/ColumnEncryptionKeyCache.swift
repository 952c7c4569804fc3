import Foundation

/// Unwrapped column encryption keys, kept so a key store provider is asked once per key and
/// lifetime (SqlClient's default: 2 hours). Entries are keyed by the store name, the column master
/// key path and the encrypted key's bytes; they hold the algorithm keyed by the CEK (the derived
/// keys), never printed. Time comes from an injected clock, so tests move it by hand.
public final class ColumnEncryptionKeyCache: @unchecked Sendable {
    // Every stored property is read and written under `lock`.
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

    private let lock = NSLock()
    private let now: @Sendable () -> Duration
    private var entries: [Key: Entry] = [:]
    private var ttl: Duration

    /// A cache whose entries live `timeToLive` (zero or less: nothing is kept) by `now`, a
    /// monotonic clock's reading (by default `ContinuousClock` from the cache's creation).
    public init(timeToLive: Duration = ColumnEncryptionKeyCache.defaultTimeToLive, now: (@Sendable () -> Duration)? = nil) {
        if let now {
            self.now = now
        } else {
            let origin = ContinuousClock.now
            self.now = { ContinuousClock.now - origin }
        }
        ttl = max(timeToLive, .zero)
    }

    /// How long an entry lives; zero turns caching off. Changing it applies to entries stored later.
    public var timeToLive: Duration {
        get { lock.lock(); defer { lock.unlock() }; return ttl }
        set { lock.lock(); defer { lock.unlock() }; ttl = max(newValue, .zero) }
    }

    /// The number of entries not yet expired.
    public var count: Int {
        lock.lock(); defer { lock.unlock() }
        let t = now()
        return entries.values.filter { $0.expires > t }.count
    }

    /// Drops every entry.
    public func removeAll() {
        lock.lock(); defer { lock.unlock() }
        entries = [:]
    }

    func cipher(store: String, path: String, encryptedKey: [UInt8]) -> AEADAes256CbcHmacSha256? {
        lock.lock(); defer { lock.unlock() }
        let key = Key(store: store.lowercased(), path: path.lowercased(), encryptedKey: encryptedKey)
        guard let entry = entries[key] else { return nil }
        guard entry.expires > now() else { entries[key] = nil; return nil }
        return entry.cipher
    }

    func store(_ cipher: AEADAes256CbcHmacSha256, store: String, path: String, encryptedKey: [UInt8]) {
        lock.lock(); defer { lock.unlock() }
        guard ttl > .zero else { return }
        let t = now()
        if entries.count >= Self.maximumEntries {
            entries = entries.filter { $0.value.expires > t }
            while entries.count >= Self.maximumEntries, let oldest = entries.min(by: { $0.value.expires < $1.value.expires }) {
                entries[oldest.key] = nil
            }
        }
        entries[Key(store: store.lowercased(), path: path.lowercased(), encryptedKey: encryptedKey)] = Entry(cipher: cipher, expires: t + ttl)
    }
}
