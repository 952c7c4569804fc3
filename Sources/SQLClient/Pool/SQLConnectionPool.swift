import Foundation
import Synchronization

/// A pool of ``SQLConnection``s to one server, for a program that serves many requests at once
/// (a Vapor or Hummingbird service): connections are opened as needed up to a maximum, lent to
/// one task at a time, reset and reused.
///
/// ```swift
/// let pool = try SQLConnectionPool(configuration: configuration, maximumConnections: 8)
/// let rows = try await pool.execute("SELECT id, name FROM people WHERE id = \(id)").rows   // one request
/// try await pool.withConnection { connection in                                           // several
///     try await connection.withTransaction { tx in … }
/// }
/// await pool.close()
/// ```
///
/// - **Leases.** ``withConnection(isolation:_:)`` lends a connection to its closure and takes it
///   back when the closure returns, throws or its task is cancelled. Leases are served in the
///   order they were requested, each bounded by ``Options/leaseTimeout`` (`.timeout`); a task
///   cancelled while waiting leaves the queue (`.cancelled`).
/// - **Session reset.** A connection lent again sends RESETCONNECTION (packet status 0x08,
///   [MS-TDS] 2.2.3.1.2) on the first packet of its next request, and only that one: the server
///   drops temporary tables, resets SET options and returns to the login's database before
///   running it. [MS-TDS] does not promise that isolation levels or distributed transactions
///   are reset. ENVCHANGE type 18 (the acknowledgement) is counted when it comes
///   (``Metrics/resetsAcknowledged``) and never waited for.
/// - **Health.** A connection that comes back closed (it failed, the server closed it, its
///   ATTENTION went unacknowledged) is discarded; one that comes back inside an open transaction
///   is rolled back (bounded by ``Options/validationTimeout``) and discarded, never lent as it
///   is. New connections replace them as leases need them and to keep ``Options/minimumConnections``.
///   Idle connections past ``Options/idleTimeout`` or ``Options/maximumLifetime`` are closed;
///   with ``Options/validationThreshold``, one idle that long is checked before it is lent.
/// - **The check at lease.** Before an idle connection is lent, its socket is checked without
///   waiting (one `poll` with a zero timeout; the check session recovery makes before a request):
///   one the server or the network closed (FIN) or reset (RST) while it sat idle (a NAT or load
///   balancer idle timeout, a server restart) is closed, counted (``Metrics/discardedAtLease``)
///   and logged ("discarded at lease"), and the lease takes another idle connection or a new one,
///   within its ``Options/leaseTimeout``. Bytes waiting on an idle connection do not make it dead:
///   the check only peeks, and they are left for its next read (a TLS record, such as a TLS 1.3
///   session ticket, is taken by the TLS layer then; a server sends no TDS message unasked).
///   A lone ``SQLConnection`` never reconnects by itself (only through session recovery): its
///   next request fails with `.connectionLost`.
/// - **Connections** are opened with ``SQLConnection/connect(_:)`` and the pool's configuration,
///   so every option (TLS, authentication, token providers, routing, retries) applies to each.
///   A connection that cannot be opened fails the lease waiting for it with that error.
/// - **Shutdown.** ``close()`` fails new and waiting leases (`.connectionClosed`), waits for lent
///   connections up to ``Options/closeTimeout``, then closes everything.
/// - **Observing.** ``metrics`` is a snapshot of the counts; the configuration's
///   ``SQLConnectionConfiguration/logger`` receives the pool's events (kind ``SQLLogEvent/Kind/pool``).
///
/// The pool is `Sendable`; its decisions are `PoolStateMachine`'s, this type performs them.
public final class SQLConnectionPool: Sendable {
    /// The configuration every connection is opened with (validated).
    public let configuration: SQLConnectionConfiguration
    /// The pool's options (validated).
    public let options: Options

    typealias Connector = @Sendable (SQLConnectionConfiguration) async throws -> SQLConnection
    typealias ConnectionID = PoolStateMachine.ConnectionID
    typealias LeaseID = PoolStateMachine.LeaseID

    /// A connection lent to one lease.
    struct Lease: Sendable {
        let id: LeaseID
        let connectionID: ConnectionID
        let connection: SQLConnection
        let reset: Bool
        let validate: Bool
    }

    private let connector: Connector
    let clock: any ConnectionClock
    private let logger: SQLClientLogger?

    private let state: Mutex<State>
    /// Leases waiting for a connection (a grant or failure that comes first is kept). Its own lock.
    private let leaseWaiters = WaiterQueue<LeaseID, Lease>()
    /// Callers of ``close()`` waiting for the last connection to close. Its own lock.
    private let closeWaiters = WaiterQueue<UInt64, Void>()

    /// The pool's state, under its lock.
    private struct State: ~Copyable {
        var machine: PoolStateMachine
        var connections: [ConnectionID: SQLConnection] = [:]
        var nextLeaseID: LeaseID = 0
        var timer: (generation: UInt64, deadline: Duration, task: Task<Void, Never>)?
        var timerGeneration: UInt64 = 0
        var acknowledgedResets: [ConnectionID: Int] = [:]
        var resetsAcknowledged = 0
        /// Session recoveries seen on each connection, and their sum (``Metrics/sessionRecoveries``).
        var recoveriesSeen: [ConnectionID: Int] = [:]
        var sessionRecoveries = 0
    }

    // MARK: - Making a pool

    /// A pool opening connections with `configuration`, sized and timed by `options` (nil: the
    /// configuration's ``SQLConnectionConfiguration/pool``, which the connection string sets).
    /// Opens ``Options/minimumConnections`` in the background at once.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` for an invalid configuration or
    ///   options (see ``Options/validated()``); nothing is opened then.
    public convenience init(configuration: SQLConnectionConfiguration, options: Options? = nil) throws {
        try self.init(configuration: configuration, options: options ?? configuration.pool,
                      clock: SystemConnectionClock(), connector: { try await SQLConnection.connect($0) })
    }

    /// A pool of at most `maximumConnections` connections opened with `configuration`.
    /// - Parameters:
    ///   - configuration: what every connection is opened with (address, login, TLS, timeouts).
    ///   - maximumConnections: the most connections open at once, counting those being opened
    ///     and closed (``Options/maximumConnections``).
    ///   - minimumConnections: kept open even when idle (``Options/minimumConnections``).
    ///   - leaseTimeout: how long a lease waits; nil: the configuration's connect timeout.
    ///   - idleTimeout: idle connections above the minimum are closed after this; nil: never.
    ///   - maximumLifetime: connections older than this are closed when returned; nil: no limit.
    ///   - validationThreshold: check connections idle this long before lending them; nil: never.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` (see ``Options/validated()``).
    public convenience init(configuration: SQLConnectionConfiguration, maximumConnections: Int,
                            minimumConnections: Int = 0, leaseTimeout: Duration? = nil,
                            idleTimeout: Duration? = .seconds(300), maximumLifetime: Duration? = nil,
                            validationThreshold: Duration? = nil) throws {
        var options = configuration.pool
        options.maximumConnections = maximumConnections
        options.minimumConnections = minimumConnections
        options.leaseTimeout = leaseTimeout
        options.idleTimeout = idleTimeout
        options.maximumLifetime = maximumLifetime
        options.validationThreshold = validationThreshold
        try self.init(configuration: configuration, options: options)
    }

    /// A pool for a connection string: the connection keys (see
    /// ``SQLConnectionConfiguration/init(connectionString:)``) and the pool keys `Pooling`,
    /// `Min Pool Size`, `Max Pool Size`, `Connection Lifetime`/`Load Balance Timeout`.
    /// - Throws: as ``SQLConnectionConfiguration/init(connectionString:)``, and `.invalidConfiguration`.
    public convenience init(connectionString: String) throws {
        try self.init(configuration: SQLConnectionConfiguration(connectionString: connectionString))
    }

    /// The designated initializer: time from `clock`, connections from `connector` (tests).
    init(configuration: SQLConnectionConfiguration, options: Options, clock: any ConnectionClock,
         connector: @escaping Connector) throws {
        let configuration = try configuration.validated()
        let options = try options.validated()
        self.configuration = configuration
        self.options = options
        self.clock = clock
        self.connector = connector
        self.logger = configuration.eventLogger
        self.state = Mutex(State(machine: PoolStateMachine(options: options,
                                                           leaseTimeout: options.leaseTimeout ?? configuration.connectTimeout)))
        handle { machine, now in machine.start(now: now) }
    }

    deinit {
        state.withLock { $0.timer?.task }?.cancel()
    }

    // MARK: - Leasing

    /// Lends a connection to `body` and takes it back when `body` returns, throws, or its task
    /// is cancelled (the connection's requests then end as for any cancelled task). Don't keep
    /// the connection past `body`.
    ///
    /// Waits for a free connection, in request order, up to ``Options/leaseTimeout``.
    /// - Throws: `body`'s error; ``SQLClientError`` `.timeout` when no connection became free in
    ///   time; `.cancelled` when the task was cancelled while waiting; `.connectionClosed` once the
    ///   pool is closed; the connect error (`.connectionFailed`, `.loginFailed`, `.timeout`, …)
    ///   when the connection opened for this lease could not be.
    public func withConnection<T>(isolation: isolated (any Actor)? = #isolation,
                                  _ body: (SQLConnection) async throws -> T) async throws -> T {
        let lease = try await observedLease()
        let value: T
        do {
            value = try await body(lease.connection)
        } catch {
            await release(lease)
            throw error
        }
        await release(lease)
        return value
    }

    /// Waits for a connection (see ``withConnection(isolation:_:)``), readies it (RESETCONNECTION
    /// for a reused one; the validation round trip when due) and returns it.
    func lease() async throws -> Lease {
        let id: LeaseID = state.withLock { s in
            s.nextLeaseID += 1
            return s.nextLeaseID
        }
        var enqueue = true
        while true {
            let lease = try await waitForGrant(id, enqueue: enqueue)
            enqueue = false
            var failure: PoolStateMachine.LendFailure?
            switch await lease.connection.prepareForLease(reset: lease.reset) {
            case .usable:
                if lease.validate, await !validate(lease.connection) {
                    if Task.isCancelled {
                        // The check failed because the task was cancelled, not because the connection is bad.
                        await release(lease)
                        throw SQLClientError(.cancelled, "cancelled while checking a pooled connection")
                    }
                    failure = .validationFailed
                }
            case .closed:
                failure = .closed
            case .dropped(let status):
                failure = .droppedWhileIdle
                logger?.log(.warning, .pool, "pooled connection \(lease.connectionID) discarded at lease: \(status) while idle",
                            metadata: [SQLLogEvent.Key.poolEvent: "discardedAtLease",
                                       SQLLogEvent.Key.poolConnection: String(lease.connectionID),
                                       SQLLogEvent.Key.poolReason: "\(PoolStateMachine.CloseReason.droppedWhileIdle)"])
            }
            guard let failure else { return lease }
            leaseWaiters.expect(id)   // waits again, first in line (before the machine can answer)
            handle { machine, now in machine.lendFailed(id, lease.connectionID, failure, now: now) }
        }
    }

    /// Takes `lease`'s connection back: asks it whether it is still open and outside a transaction.
    func release(_ lease: Lease) async {
        let state = await lease.connection.poolReturnState()
        let health: PoolStateMachine.ReturnedHealth = !state.isOpen ? .broken : state.isInTransaction ? .inTransaction : .reusable
        handleState { s, now in
            let seen = s.acknowledgedResets[lease.connectionID] ?? 0
            if state.resetAcknowledgements > seen {
                s.resetsAcknowledged += state.resetAcknowledgements - seen
                s.acknowledgedResets[lease.connectionID] = state.resetAcknowledgements
            }
            let recovered = s.recoveriesSeen[lease.connectionID] ?? 0
            if state.sessionRecoveries > recovered {
                s.sessionRecoveries += state.sessionRecoveries - recovered
                s.recoveriesSeen[lease.connectionID] = state.sessionRecoveries
            }
            return s.machine.released(lease.connectionID, health: health, now: now)
        }
        observeReleased(lease)
    }

    /// Waits for lease `id`'s grant (announced in `leaseWaiters` before; `enqueue`: asks the
    /// machine first). Cancelled, the machine takes it out of its queue and fails it (a grant
    /// that came first is kept: the connection is used and returned).
    private func waitForGrant(_ id: LeaseID, enqueue: Bool) async throws -> Lease {
        if enqueue {
            leaseWaiters.expect(id)
            handle { machine, now in
                Task.isCancelled ? [.failLease(id, Self.cancelledError)] : machine.leaseRequested(id, now: now)
            }
        }
        return try await leaseWaiters.wait(id, onCancel: {
            self.handle { machine, now in machine.leaseCancelled(id, now: now) }
        })
    }

    static let cancelledError = SQLClientError(.cancelled, "cancelled while waiting for a pooled connection")

    /// The validation round trip: `SELECT 1` within ``Options/validationTimeout``.
    private func validate(_ connection: SQLConnection) async -> Bool {
        do {
            let result = try await connection.execute("SELECT 1", timeout: options.validationTimeout)
            return result.resultSets.first?.rows.first?[0].intValue == 1
        } catch {
            return false
        }
    }

    // MARK: - Closing

    /// Closes the pool: new and waiting leases fail with `.connectionClosed`, idle connections
    /// close at once, lent ones when they come back or, after ``Options/closeTimeout``, under
    /// their users. Returns once every connection is closed. Calling it again waits the same.
    public func close() async {
        await close(drainTimeout: nil)
    }

    /// ``close()`` with `drainTimeout` in place of ``Options/closeTimeout`` (nil: that); called
    /// again while closing, a shorter one closes lent connections sooner (the Service's cancellation).
    func close(drainTimeout: Duration?) async {
        let key = closeWaiters.expectNext()
        handle { machine, now in
            if machine.phase == .closed {
                closeWaiters.resume(key, with: .success(()))
                return []
            }
            return machine.closeRequested(now: now, timeout: drainTimeout)
        }
        _ = try? await closeWaiters.wait(key)
    }

    // MARK: - Metrics

    /// A snapshot of the pool's counts.
    public var metrics: Metrics {
        state.withLock { s in
            let machine = s.machine
            let c = machine.counters
            return Metrics(open: machine.openCount, idle: machine.idleCount, leased: machine.leasedCount,
                           opening: machine.connectingCount, closing: machine.closingCount,
                           waiting: machine.waiters.count, created: c.created, discarded: c.discarded,
                           discardedAtLease: c.discardedAtLease,
                           expired: c.expired, connectFailures: c.connectFailures, leases: c.leases,
                           leaseTimeouts: c.leaseTimeouts, leaseWaitTotal: c.leaseWaitTotal,
                           leaseWaitMaximum: c.leaseWaitMaximum, resetsAcknowledged: s.resetsAcknowledged,
                           sessionRecoveries: s.sessionRecoveries,
                           isClosed: machine.phase != .running)
        }
    }

    // MARK: - Performing the machine's actions

    private enum Effect {
        case resume(LeaseID, Result<Lease, SQLClientError>)
        case connect(ConnectionID)
        case close(ConnectionID, SQLConnection?, PoolStateMachine.CloseReason)
        case closed(Task<Void, Never>?)
        case leaseTimedOut(SQLClientError)
    }

    /// Runs `event` on the machine under the lock (with the clock's `now`), turns its actions
    /// into effects there, re-arms the timer, and performs the effects after the lock.
    private func handle(_ event: (inout PoolStateMachine, Duration) -> [PoolStateMachine.Action]) {
        handleState { s, now in event(&s.machine, now) }
    }

    /// ``handle(_:)`` for an event that also reads or updates the pool's own bookkeeping.
    private func handleState(_ event: (inout State, Duration) -> [PoolStateMachine.Action]) {
        let effects: [Effect] = state.withLock { s in
            let actions = event(&s, clock.now())
            var effects: [Effect] = []
            for action in actions {
                switch action {
                case .lend(let lease, let connectionID, let reset, let validate):
                    guard let connection = s.connections[connectionID] else { continue }   // never: lent ones are stored
                    let granted = Lease(id: lease, connectionID: connectionID, connection: connection,
                                        reset: reset, validate: validate)
                    effects.append(.resume(lease, .success(granted)))
                case .failLease(let lease, let error):
                    if error.code == .timeout { effects.append(.leaseTimedOut(error)) }
                    effects.append(.resume(lease, .failure(error)))
                case .connect(let id):
                    effects.append(.connect(id))
                case .close(let id, let reason):
                    effects.append(.close(id, s.connections[id], reason))
                case .shutdownComplete:
                    effects.append(.closed(s.timer?.task))
                    s.timer = nil
                }
            }
            if s.machine.phase != .closed { armTimer(&s) }
            return effects
        }
        for effect in effects { perform(effect) }
    }

    private func perform(_ effect: Effect) {
        switch effect {
        case .resume(let lease, let result):
            leaseWaiters.resume(lease, with: result.mapError { $0 })
        case .connect(let id):
            // Unstructured: the state machine's effect runs beside the caller (a lease must not wait on
            // another connection's login); the pool tracks it by `id` and close waits for it.
            Task { await self.open(id) }
        case .close(let id, let connection, let reason):
            // Unstructured: closing a connection (rollback, close) must not hold up the caller's release.
            Task { await self.retire(id, connection, reason) }
        case .closed(let task):
            task?.cancel()
            logger?.log(.info, .pool, "connection pool closed", metadata: [SQLLogEvent.Key.poolEvent: "poolClosed"])
            closeWaiters.resumeAll(with: .success(()))
        case .leaseTimedOut(let error):
            logger?.log(.warning, .pool, error.message, metadata: [SQLLogEvent.Key.poolEvent: "leaseTimeout"])
        }
    }

    private func open(_ id: ConnectionID) async {
        do {
            let connection = try await connector(configuration)
            state.withLock { $0.connections[id] = connection }
            logger?.log(.debug, .pool, "pooled connection \(id) opened",
                        metadata: [SQLLogEvent.Key.poolEvent: "opened", SQLLogEvent.Key.poolConnection: String(id)])
            handle { machine, now in machine.connected(id, now: now) }
        } catch {
            let failure = error as? SQLClientError ?? SQLClientError(.connectionFailed, "connecting failed: \(error)")
            logger?.log(.error, .pool, "pooled connection \(id) could not be opened: \(failure.errorDescription ?? failure.message)",
                        metadata: [SQLLogEvent.Key.poolEvent: "connectFailed", SQLLogEvent.Key.poolConnection: String(id),
                                   SQLLogEvent.Key.errorCode: failure.code.name])
            handle { machine, now in machine.connectFailed(id, failure, now: now) }
        }
    }

    /// Closes connection `id` (rolling its transaction back first, bounded, when it came back in one).
    private func retire(_ id: ConnectionID, _ connection: SQLConnection?, _ reason: PoolStateMachine.CloseReason) async {
        if let connection {
            if reason == .inTransaction {
                let clock = self.clock
                let bound = options.validationTimeout
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { try? await connection.rollbackTransaction() }
                    group.addTask {
                        // Past the bound the connection is closed under the rollback, which then fails at once.
                        do { try await clock.sleep(until: clock.now() + bound) } catch { return }
                        await connection.close()
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
            await connection.close()
        }
        // A connection discarded at lease was reported (a warning, with what its socket showed) by the lease.
        let level: SQLLogLevel = reason.isDiscard && reason != .droppedWhileIdle ? .warning : .debug
        logger?.log(level, .pool, "pooled connection \(id) closed: \(reason.rawValue)",
                    metadata: [SQLLogEvent.Key.poolEvent: reason.isDiscard ? "discarded" : "closed",
                               SQLLogEvent.Key.poolConnection: String(id), SQLLogEvent.Key.poolReason: "\(reason)"])
        handleState { s, now in
            s.connections[id] = nil
            s.acknowledgedResets[id] = nil
            s.recoveriesSeen[id] = nil
            return s.machine.closed(id, now: now)
        }
    }

    // MARK: - The timer

    /// One timer, for the machine's next deadline (called under the lock). A later deadline
    /// leaves the armed timer alone: when it fires early, ``PoolStateMachine/tick(now:)`` does
    /// nothing and the timer is armed again.
    private func armTimer(_ s: inout State) {
        guard let next = s.machine.nextDeadline else { return }
        if let armed = s.timer, armed.deadline <= next { return }
        s.timer?.task.cancel()
        s.timerGeneration &+= 1
        let generation = s.timerGeneration
        let clock = self.clock
        // Unstructured: the pool's one timer (idle and lifetime ends); cancelled when rearmed or closed.
        s.timer = (generation, next, Task { [weak self] in
            do { try await clock.sleep(until: next) } catch { return }
            self?.timerFired(generation)
        })
    }

    private func timerFired(_ generation: UInt64) {
        handleState { s, now in
            guard s.timer?.generation == generation else { return [] }
            s.timer = nil
            return s.machine.tick(now: now)
        }
    }
}
