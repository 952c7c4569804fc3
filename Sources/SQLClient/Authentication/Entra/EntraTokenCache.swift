import Foundation

/// Tokens shared by every connection (and pool) of the process, one per (authority, resource,
/// credential identity): a login takes the cached token while it is fresh, and the first login
/// after the refresh point asks the credential again while the others wait for that one request
/// (single flight). A token is refreshed five minutes before it expires (half its lifetime when
/// shorter); when a refresh fails and the old token is still valid, the old one is used.
///
/// Tokens are never logged; `description` shows counts only.
public actor EntraTokenCache: CustomStringConvertible {
    /// The cache every ``SQLAuthentication/entra(_:cache:)`` uses unless told otherwise.
    public static let shared = EntraTokenCache()

    struct Key: Hashable {
        var authority: String
        var resource: String
        var identity: String
    }

    private struct Entry {
        var token: EntraAccessToken?
        var refreshAt: Date = .distantPast
        var inFlight: Task<EntraAccessToken, any Error>?
    }

    private let clock: any EntraClock
    private var entries: [Key: Entry] = [:]
    /// How many times a credential was asked for a token (all keys).
    public private(set) var requests = 0

    /// A cache reading time from `clock` (inject one in tests).
    public init(clock: any EntraClock = SystemEntraClock()) {
        self.clock = clock
    }

    /// How long before expiry a token is refreshed: five minutes, or half its lifetime when shorter.
    static func refreshPoint(acquired: Date, expiresOn: Date) -> Date {
        let lifetime = expiresOn.timeIntervalSince(acquired)
        return expiresOn.addingTimeInterval(-min(300, max(0, lifetime / 2)))
    }

    /// A token for `request` from `credential`: the cached one while fresh, else a new one (one
    /// request however many logins ask at once).
    /// - Throws: what the credential throws (``EntraCredentialError``), unless an older token is still valid.
    public func token(for request: EntraTokenRequest, from credential: any EntraTokenCredential,
                      timeout: Duration) async throws -> EntraAccessToken {
        let key = Key(authority: request.authority.lowercased(), resource: request.resource, identity:
                      credential.authenticationName + "|" + credential.cacheIdentity)
        var entry = entries[key] ?? Entry()
        let now = clock.now()
        if let token = entry.token, now < entry.refreshAt { return token }
        let task: Task<EntraAccessToken, any Error>
        if let running = entry.inFlight {
            task = running
        } else {
            requests += 1
            // Unstructured on purpose: one request shared by every caller (single flight), so that no
            // caller's cancellation cancels the others' token.
            task = Task { try await credential.token(for: request, timeout: timeout) }
            entry.inFlight = task
            entries[key] = entry
        }
        do {
            let fresh = try await task.value
            if var current = entries[key], current.inFlight == task {
                current.inFlight = nil
                current.token = fresh
                current.refreshAt = Self.refreshPoint(acquired: clock.now(), expiresOn: fresh.expiresOn)
                entries[key] = current
            }
            return fresh
        } catch {
            if var current = entries[key], current.inFlight == task {
                current.inFlight = nil
                entries[key] = current
            }
            if let old = entries[key]?.token, clock.now() < old.expiresOn { return old }
            throw error
        }
    }

    /// Forgets every token (for example after the credential's permissions changed).
    public func removeAll() {
        for entry in entries.values { entry.inFlight?.cancel() }
        entries = [:]
    }

    /// How many tokens are held.
    public var count: Int { entries.values.filter { $0.token != nil }.count }

    public nonisolated var description: String { "EntraTokenCache" }
}
