extension SQLConnectionPool {
    /// How a ``SQLConnectionPool`` sizes itself, waits, and retires connections.
    ///
    /// Set it by parts, or through the connection string (``SQLConnectionConfiguration/pool``,
    /// from `Pooling`, `Min Pool Size`, `Max Pool Size`, `Connection Lifetime`/`Load Balance Timeout`).
    /// Durations are validated when the pool is made: a negative one is `.invalidConfiguration`,
    /// one longer than ``SQLConnectionConfiguration/maximumTimeout`` is clamped to it.
    public struct Options: Sendable, Hashable {
        /// Reuse connections (connection string `Pooling`, default true). False: every lease
        /// opens a new connection and returning it closes it (ADO.NET's `Pooling=false`);
        /// ``maximumConnections`` still bounds how many are open at once.
        public var pooling: Bool
        /// Connections kept open even when idle (`Min Pool Size`, default 0): opened when the
        /// pool starts and again after connections are discarded; the idle timeout never closes
        /// below it. At most ``maximumConnections``.
        public var minimumConnections: Int
        /// Connections open at most, idle, lent, being opened or being closed together: the
        /// server never sees more from this pool (`Max Pool Size`, default 100; at least 1).
        public var maximumConnections: Int
        /// How long a lease waits for a connection, counted from the request (also while a new
        /// connection logs in); nil: the configuration's ``SQLConnectionConfiguration/connectTimeout``,
        /// as ADO.NET does. Zero fails at once when no connection is free. Passing it fails the
        /// lease with `.timeout`.
        public var leaseTimeout: Duration?
        /// An idle connection unused this long is closed, unless that would leave fewer than
        /// ``minimumConnections`` open (default 5 minutes); nil: never.
        public var idleTimeout: Duration?
        /// A connection older than this (since it logged in) is closed when it is returned or
        /// found idle, never while lent (`Connection Lifetime`/`Load Balance Timeout` in seconds,
        /// 0 = none); nil: no limit (the default).
        public var maximumLifetime: Duration?
        /// A connection idle for at least this long is checked with a round trip (`SELECT 1`)
        /// before it is lent; one that fails is discarded and the lease served by another. nil:
        /// never (the default; a closed connection is still noticed without a round trip).
        public var validationThreshold: Duration?
        /// The bound on that check's round trip, and on the rollback of a connection returned
        /// inside a transaction (default 5 s).
        public var validationTimeout: Duration
        /// How long ``SQLConnectionPool/close()`` waits for lent connections to come back before
        /// closing them under their users (default 30 s).
        public var closeTimeout: Duration

        /// The defaults: pooling on, 0…100 connections, the lease bounded by the connect
        /// timeout, idle connections closed after 5 minutes, no lifetime limit, no validation.
        public init(pooling: Bool = true, minimumConnections: Int = 0, maximumConnections: Int = 100,
                    leaseTimeout: Duration? = nil, idleTimeout: Duration? = .seconds(300),
                    maximumLifetime: Duration? = nil, validationThreshold: Duration? = nil,
                    validationTimeout: Duration = .seconds(5), closeTimeout: Duration = .seconds(30)) {
            self.pooling = pooling
            self.minimumConnections = minimumConnections
            self.maximumConnections = maximumConnections
            self.leaseTimeout = leaseTimeout
            self.idleTimeout = idleTimeout
            self.maximumLifetime = maximumLifetime
            self.validationThreshold = validationThreshold
            self.validationTimeout = validationTimeout
            self.closeTimeout = closeTimeout
        }

        /// These options checked, with durations clamped to ``SQLConnectionConfiguration/maximumTimeout``.
        /// - Throws: ``SQLClientError`` `.invalidConfiguration` naming the setting: a maximum under
        ///   1, a minimum under 0 or above the maximum, a negative duration.
        public func validated() throws(SQLClientError) -> Options {
            guard maximumConnections >= 1 else {
                throw SQLClientError(.invalidConfiguration, "maximumConnections (Max Pool Size) must be at least 1, got \(maximumConnections)")
            }
            guard minimumConnections >= 0, minimumConnections <= maximumConnections else {
                throw SQLClientError(.invalidConfiguration, "minimumConnections (Min Pool Size) must be 0–\(maximumConnections) "
                                     + "(at most maximumConnections), got \(minimumConnections)")
            }
            func clamped(_ d: Duration?, _ setting: String) throws(SQLClientError) -> Duration? {
                guard let d else { return nil }
                return try SQLConnectionConfiguration.validatedTimeout(d, setting)
            }
            var o = self
            o.leaseTimeout = try clamped(leaseTimeout, "leaseTimeout")
            o.idleTimeout = try clamped(idleTimeout, "idleTimeout")
            o.maximumLifetime = try clamped(maximumLifetime, "maximumLifetime (Connection Lifetime)")
            o.validationThreshold = try clamped(validationThreshold, "validationThreshold")
            o.validationTimeout = try SQLConnectionConfiguration.validatedTimeout(validationTimeout, "validationTimeout")
            o.closeTimeout = try SQLConnectionConfiguration.validatedTimeout(closeTimeout, "closeTimeout")
            return o
        }
    }
}

/// The pool keys of a connection string (`Pooling`, `Min Pool Size`, `Max Pool Size`,
/// `Connection Lifetime`/`Load Balance Timeout`), as ADO.NET spells and bounds them.
struct PoolKeys {
    var options = SQLConnectionPool.Options()

    /// Takes `key` (normalised: lower case, single spaces) when it is a pool key; false otherwise.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` for a bad value (named by key only).
    mutating func take(_ key: String, value: String, rawKey: String) throws(SQLClientError) -> Bool {
        func integer(_ range: ClosedRange<Int>, _ what: String) throws(SQLClientError) -> Int {
            try ConnectionStringParser.integer(value.trimmingCharacters(in: .whitespaces), key: rawKey, range, what)
        }
        switch key {
        case "pooling":
            options.pooling = try ConnectionStringParser.bool(value, key: rawKey)
        case "min pool size", "minpoolsize":
            options.minimumConnections = try integer(0 ... Int(Int32.max), "0 or more connections")
        case "max pool size", "maxpoolsize":
            options.maximumConnections = try integer(1 ... Int(Int32.max), "1 or more connections")
        case "connection lifetime", "load balance timeout", "connectionlifetime", "loadbalancetimeout":
            // Seconds; 0 = no limit; beyond maximumTimeout (up to Int.max) clamped, never trapping.
            let seconds = try integer(0 ... Int.max, "whole seconds, 0 = no limit")
            options.maximumLifetime = seconds == 0 ? nil
                : min(Duration.seconds(Int64(clamping: seconds)), SQLConnectionConfiguration.maximumTimeout)
        default:
            return false
        }
        return true
    }

    /// The options once every key is read.
    /// - Throws: `.invalidConfiguration` when `Min Pool Size` exceeds `Max Pool Size`.
    func resolved() throws(SQLClientError) -> SQLConnectionPool.Options {
        guard options.minimumConnections <= options.maximumConnections else {
            throw SQLClientError(.invalidConfiguration, "Min Pool Size (\(options.minimumConnections)) must not exceed "
                                 + "Max Pool Size (\(options.maximumConnections))")
        }
        return options
    }
}
