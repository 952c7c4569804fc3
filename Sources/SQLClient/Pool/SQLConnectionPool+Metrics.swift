extension SQLConnectionPool {
    /// A snapshot of a pool's counts (``SQLConnectionPool/metrics``). The connections the server
    /// sees from the pool are `open + opening + closing`, never more than
    /// ``Options/maximumConnections``.
    public struct Metrics: Sendable, Hashable, CustomStringConvertible {
        /// Logged-in connections, idle or lent.
        public var open: Int
        /// Open connections waiting to be lent.
        public var idle: Int
        /// Open connections lent to a task now.
        public var leased: Int
        /// Connections being opened (connecting, logging in).
        public var opening: Int
        /// Connections being closed (a rollback, a close in progress).
        public var closing: Int
        /// Leases waiting for a connection.
        public var waiting: Int
        /// Connections opened since the pool started.
        public var created: Int
        /// Connections closed because something was wrong with them: they came back closed
        /// or broken or inside a transaction, or failed a check before lending (those of
        /// ``discardedAtLease`` included).
        public var discarded: Int
        /// Of ``discarded``: idle connections whose socket showed, when they were about to be
        /// lent, that the server or the network closed (FIN) or reset (RST) them while idle.
        /// Each was replaced within the lease's timeout, unseen by the lease.
        public var discardedAtLease: Int = 0
        /// Connections closed because they were idle past the idle timeout or older than the lifetime.
        public var expired: Int
        /// Attempts to open a connection that failed.
        public var connectFailures: Int
        /// Leases granted (a lease whose connection failed its check and was served again counts twice).
        public var leases: Int
        /// Leases that failed with `.timeout`.
        public var leaseTimeouts: Int
        /// Time leases waited for their connection, summed (divide by ``leases`` for the mean).
        public var leaseWaitTotal: Duration
        /// The longest a lease waited.
        public var leaseWaitMaximum: Duration
        /// ENVCHANGE type 18 (RESETCONNECTION acknowledged) seen on returned connections.
        public var resetsAcknowledged: Int
        /// Idle connections found dropped and recovered with SESSIONRECOVERY before a request
        /// (seen on returned connections; see ``SQLConnectRetryPolicy``). A drop found at lease
        /// is not recovered but replaced (``discardedAtLease``); this counts those that came later.
        public var sessionRecoveries: Int = 0
        /// ``SQLConnectionPool/close()`` was called.
        public var isClosed: Bool

        /// `open 8 (idle 2, leased 6), opening 0, closing 0, waiting 3, created 9, discarded 1 (at lease 1), …`.
        public var description: String {
            "open \(open) (idle \(idle), leased \(leased)), opening \(opening), closing \(closing), waiting \(waiting), "
                + "created \(created), discarded \(discarded) (at lease \(discardedAtLease)), expired \(expired), connect failures \(connectFailures), "
                + "leases \(leases), lease timeouts \(leaseTimeouts), lease wait total \(leaseWaitTotal), "
                + "max \(leaseWaitMaximum), resets acknowledged \(resetsAcknowledged), session recoveries \(sessionRecoveries)"
                + (isClosed ? ", closed" : "")
        }
    }
}

extension SQLLogEvent.Kind {
    /// A connection pool's event (``SQLConnectionPool``): a connection opened, failed to open,
    /// closed or discarded (with the reason), a lease timed out, the pool closed. The event's
    /// ``SQLLogEvent/Key/poolEvent`` metadata says which.
    public static let pool = SQLLogEvent.Kind("pool")
}

extension SQLLogEvent.Key {
    /// What happened in a pool: `opened`, `connectFailed`, `closed`, `discarded`, `discardedAtLease`
    /// (an idle connection found closed or reset by the server when it was about to be lent),
    /// `leaseTimeout`, `poolClosed`.
    public static let poolEvent = "sql.pool.event"
    /// The pool's number for the connection (1, 2, … in the order the pool opened them).
    public static let poolConnection = "sql.pool.connection"
    /// Why a pooled connection was closed (`broken`, `inTransaction`, `validationFailed`,
    /// `droppedWhileIdle`, `idleTimeout`, `lifetime`, `poolingOff`, `shutdown`).
    public static let poolReason = "sql.pool.reason"
}
