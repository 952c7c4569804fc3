import Foundation
import Synchronization

/// One adapter that a package trait adds (swift-log, swift-metrics, distributed tracing): it is
/// fed the same ``SQLLogEvent``s as ``SQLConnectionConfiguration/logger`` — one source of
/// events, several receivers. Without traits none exists and the driver reports to the user's
/// logger alone, as before.
struct SQLEventObserver: Sendable {
    /// Which adapter this is (one of each per configuration).
    let name: String
    /// What the adapter was given (the `Logger`, the metrics factory, the tracing options), for
    /// the configuration's getter.
    let payload: any Sendable
    /// Makes the adapter's receiver for connections opened with a configuration (its address
    /// and database become the adapter's dimensions and attributes).
    let make: @Sendable (SQLConnectionConfiguration) -> SQLClientLogger
}

extension SQLConnectionConfiguration {
    /// What the driver reports to: ``logger`` alone when no adapter is set (no cost added), else
    /// one receiver calling ``logger`` and each adapter at their own levels.
    var eventLogger: SQLClientLogger? {
        if observers.isEmpty { return logger }
        return SQLClientLogger.combining(logger, observers.map { $0.make(self) })
    }

    /// The adapter named `name`, or nil.
    func observer(_ name: String) -> SQLEventObserver? { observers.first { $0.name == name } }

    /// Sets (or with nil removes) the adapter named `name`.
    mutating func setObserver(_ name: String, _ observer: SQLEventObserver?) {
        observers.removeAll { $0.name == name }
        if let observer { observers.append(observer) }
    }
}

extension SQLClientLogger {
    /// The metadata keys an adapter never receives, whatever the user's logger opted into:
    /// parameter values and packet payloads.
    static let sensitiveKeys: Set<String> = [SQLLogEvent.Key.parameters, SQLLogEvent.Key.payload]

    /// One receiver for `user` (may be nil) and `adapters`: events are made at the lowest of
    /// their levels; each receiver gets those at its own level and above; adapters never get
    /// ``sensitiveKeys``. The user's `includesSensitiveData` decides what is made. Adapters get
    /// every pool event (its lease events are trace level, made for them; see
    /// ``SQLConnectionPool/observedLease()``).
    static func combining(_ user: SQLClientLogger?, _ adapters: [SQLClientLogger]) -> SQLClientLogger? {
        guard !adapters.isEmpty else { return user }
        let levels = adapters.map(\.minimumLevel) + (user.map { [$0.minimumLevel] } ?? [])
        let lowest = levels.min() ?? .info
        return SQLClientLogger(minimumLevel: lowest, includesSensitiveData: user?.includesSensitiveData ?? false) { event in
            if let user, user.isEnabled(event.level) { user.handler(event) }
            var cleaned = event
            if user?.includesSensitiveData == true {
                for key in sensitiveKeys { cleaned.metadata[key] = nil }
            }
            for adapter in adapters where adapter.isEnabled(event.level) || event.kind == .pool {
                adapter.handler(cleaned)
            }
        }
    }
}

// MARK: - Pool leases, as events

extension SQLLogEvent.Key {
    /// A pool lease's number (``SQLLogEvent/Kind/pool`` events `leaseRequested`, `leased`,
    /// `leaseFailed`, `released`, at trace level), for pairing them.
    public static let poolLease = "sql.pool.lease"
    /// Idle connections in the pool after a lease event.
    public static let poolIdle = "sql.pool.idle"
    /// Lent connections in the pool after a lease event.
    public static let poolUsed = "sql.pool.used"
    /// A server error's number (`SQLServerMessage.number`) when a request failed with one.
    public static let errorNumber = "sql.error_number"
}

extension SQLConnectionPool {
    /// ``lease()`` reported as `.pool` events at trace: `leaseRequested` (in the waiting task, so
    /// a tracer sees its context), then `leased` (wait in ms, idle and used counts) or
    /// `leaseFailed` (the error's code). Made when the user's logger takes trace events or an
    /// adapter (trait) is set, and handed over whatever the adapters' levels (see
    /// ``SQLClientLogger/combining(_:_:)``): a user's logger at debug sees none.
    func observedLease() async throws -> Lease {
        guard let logger = leaseLogger else { return try await lease() }
        let number = String(Self.leaseNumbers.next())
        let started = clock.now()
        Self.report(logger, "lease \(number) requested",
                    [SQLLogEvent.Key.poolEvent: "leaseRequested", SQLLogEvent.Key.poolLease: number])
        do {
            let lease = try await lease()
            let waited = SQLClientLogger.milliseconds(clock.now() - started)
            let counts = metrics
            Self.report(logger, "lease \(number) granted pooled connection \(lease.connectionID) after \(waited) ms",
                        [SQLLogEvent.Key.poolEvent: "leased", SQLLogEvent.Key.poolLease: number,
                         SQLLogEvent.Key.poolConnection: String(lease.connectionID),
                         SQLLogEvent.Key.connection: String(lease.connection.logNumber),
                         SQLLogEvent.Key.durationMilliseconds: waited,
                         SQLLogEvent.Key.poolIdle: String(counts.idle), SQLLogEvent.Key.poolUsed: String(counts.leased)])
            return lease
        } catch {
            let failure = error as? SQLClientError ?? SQLClientError(.cancelled, "\(error)")
            let waited = SQLClientLogger.milliseconds(clock.now() - started)
            Self.report(logger, "lease \(number) failed after \(waited) ms: \(failure.message)",
                        [SQLLogEvent.Key.poolEvent: "leaseFailed", SQLLogEvent.Key.poolLease: number,
                         SQLLogEvent.Key.durationMilliseconds: waited, SQLLogEvent.Key.errorCode: failure.code.name])
            throw error
        }
    }

    /// `released` at trace once `lease` was taken back (idle and used counts after it).
    func observeReleased(_ lease: Lease) {
        guard let logger = leaseLogger else { return }
        let counts = metrics
        Self.report(logger, "pooled connection \(lease.connectionID) returned",
                    [SQLLogEvent.Key.poolEvent: "released", SQLLogEvent.Key.poolConnection: String(lease.connectionID),
                     SQLLogEvent.Key.poolIdle: String(counts.idle), SQLLogEvent.Key.poolUsed: String(counts.leased)])
    }

    /// The receiver of lease events: when the user's logger takes trace events or an adapter is set.
    private var leaseLogger: SQLClientLogger? {
        guard let logger = configuration.eventLogger,
              logger.isEnabled(.trace) || !configuration.observers.isEmpty else { return nil }
        return logger
    }

    private static func report(_ logger: SQLClientLogger, _ message: String, _ metadata: [String: String]) {
        logger.handler(SQLLogEvent(level: .trace, kind: .pool, message: message, metadata: metadata))
    }

    private static let leaseNumbers = LeaseNumberCounter()
}

/// Numbers leases for their events.
private final class LeaseNumberCounter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.wrappingAdd(1, ordering: .relaxed).newValue }
}

// MARK: - What adapters read from a request's events

extension SQLLogEvent {
    /// OpenTelemetry's `db.operation.name` for a `requestStarted` event: the statement's first
    /// keyword when it is a common one (`SELECT`, `INSERT`, …; else `BATCH`), `EXECUTE` for a
    /// stored procedure, `BEGIN TRANSACTION`/`COMMIT TRANSACTION`/… for a transaction manager
    /// request, `BULK INSERT` for a bulk load. Low cardinality: never the text itself.
    var operationName: String {
        let kind = metadata[Key.requestKind] ?? ""
        let text = metadata[Key.sql] ?? ""
        switch kind {
        case "transaction":
            let verb = text.prefix { $0.isLetter }.uppercased()
            switch verb {
            case "BEGIN", "COMMIT", "ROLLBACK", "SAVE": return verb + " TRANSACTION"
            case "": return "TRANSACTION"
            default: return verb
            }
        case "message":
            return text == "BULK_LOAD" ? "BULK INSERT" : text
        case "rpc" where metadata[Key.procedure] != nil:
            return "EXECUTE"
        default:
            let word = text.drop { $0.isWhitespace || $0 == "(" || $0 == ";" }.prefix { $0.isLetter }.uppercased()
            return Self.knownVerbs.contains(word) ? (word == "EXEC" ? "EXECUTE" : word) : "BATCH"
        }
    }

    /// The parameterized statement of a batch or an `sp_executesql` RPC (`db.query.text`), nil
    /// for a stored procedure, a transaction manager request or a bulk load.
    var queryText: String? {
        let kind = metadata[Key.requestKind] ?? ""
        guard kind == "batch" || (kind == "rpc" && metadata[Key.procedure] == nil) else { return nil }
        return metadata[Key.sql]
    }

    private static let knownVerbs: Set<String> = [
        "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "EXEC", "EXECUTE", "WITH", "CREATE", "ALTER", "DROP",
        "TRUNCATE", "DECLARE", "SET", "BEGIN", "COMMIT", "ROLLBACK", "SAVE", "USE", "IF", "WHILE", "GRANT", "REVOKE",
    ]

    /// The `sql.duration_ms` metadata as nanoseconds (nil when absent or malformed).
    var durationNanoseconds: Int64? {
        guard let text = metadata[Key.durationMilliseconds] else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = Int64(parts[0]), whole >= 0, whole < 1_000_000_000_000 else { return nil }
        var micros: Int64 = 0
        if parts.count == 2 {
            let fraction = parts[1].prefix(3)
            guard let f = Int64(fraction) else { return nil }
            micros = f * Int64([1, 100, 10, 1][fraction.count])
        }
        return whole * 1_000_000 + micros * 1_000
    }
}
