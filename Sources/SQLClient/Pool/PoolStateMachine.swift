/// The decisions of a ``SQLConnectionPool`` as a pure state machine: events in (a lease is
/// requested, a connection logged in or failed to, a connection came back, the clock ticked, the
/// pool is closing), actions out (lend, fail a lease, open, close). No I/O and no clock of its
/// own: time comes in as `now` (a ``ConnectionClock`` reading), and ``nextDeadline`` tells the
/// driver when to call ``tick(now:)``, so tests drive every timeout by hand.
///
/// Modelled on PostgresNIO's `PoolStateMachine` (connections and a request queue as plain
/// values) and on database/sql's pool (a failed open is handed to a waiting request).
///
/// - Leases are served in request order (FIFO): a connection coming back goes to the first
///   waiter; a new request never overtakes a waiting one.
/// - Idle connections are a stack (the most recently returned is lent first), so the rest age
///   out through the idle timeout when load drops.
/// - Every connection counts against ``SQLConnectionPool/Options/maximumConnections`` from the
///   moment it starts to open until it is closed (rollbacks and closes included).
/// - A connection that comes back is lent again with RESETCONNECTION on its next request
///   (`reset` in ``Action/lend(_:_:reset:validate:)``); a new one is not.
struct PoolStateMachine: Sendable {
    typealias ConnectionID = Int
    typealias LeaseID = UInt64

    /// Why a connection is closed.
    enum CloseReason: String, Sendable, Hashable {
        /// It failed, the server closed it, or its ATTENTION was not acknowledged.
        case broken = "the connection failed or was closed"
        /// It came back inside an open transaction (rolled back first when it still works).
        case inTransaction = "returned inside an open transaction"
        /// The check before lending it failed.
        case validationFailed = "the check before lending it failed"
        /// Its socket showed, when it was about to be lent, that the server (or the network
        /// between: a NAT or load balancer idle timeout, a server restart) closed or reset it
        /// while it sat idle: discarded at lease.
        case droppedWhileIdle = "discarded at lease: closed or reset while idle"
        /// Idle longer than the idle timeout.
        case idleTimeout = "idle longer than the idle timeout"
        /// Older than the maximum lifetime.
        case lifetime = "older than the maximum lifetime"
        /// Pooling is off: every connection is closed when it comes back.
        case poolingOff = "pooling is off"
        /// The pool is closing.
        case shutdown = "the pool is closing"

        /// Closed because something was wrong with it (counted as discarded), not because it expired.
        var isDiscard: Bool { self == .broken || self == .inTransaction || self == .validationFailed || self == .droppedWhileIdle }
    }

    /// What a returned connection looks like (the driver asks it).
    enum ReturnedHealth: Sendable, Equatable {
        /// Open, no transaction: lend it again.
        case reusable
        /// Closed or broken.
        case broken
        /// Open inside a transaction: roll back and close.
        case inTransaction
    }

    enum Action: Sendable {
        /// Hand connection `connection` to lease `lease`. `reset`: it was used before, so its next
        /// request must carry RESETCONNECTION; `validate`: it was idle past the validation threshold.
        case lend(LeaseID, ConnectionID, reset: Bool, validate: Bool)
        /// Lease `lease` fails.
        case failLease(LeaseID, SQLClientError)
        /// Open a new connection (report ``connected(_:now:)`` or ``connectFailed(_:_:now:)``).
        case connect(ConnectionID)
        /// Close a connection (rolling back first for `.inTransaction`), then report ``closed(_:now:)``.
        case close(ConnectionID, CloseReason)
        /// The pool closed: every connection is closed.
        case shutdownComplete
    }

    struct Waiter: Sendable, Equatable {
        var id: LeaseID
        var requestedAt: Duration
        var deadline: Duration
    }

    enum SlotState: Sendable, Equatable {
        case connecting
        case idle
        case leased(Waiter)
        case closing
    }

    struct Slot: Sendable, Equatable {
        var state: SlotState
        /// When it logged in (set by ``connected(_:now:)``).
        var createdAt: Duration = .zero
        /// When it last became idle.
        var idleSince: Duration = .zero
        /// It was lent and came back since its last reset was asked for.
        var needsReset = false
    }

    enum Phase: Sendable, Equatable {
        case running
        case closing(deadline: Duration)
        case closed
    }

    /// Counters for ``SQLConnectionPool/Metrics``.
    struct Counters: Sendable, Equatable {
        var created = 0
        var discarded = 0
        /// Of `discarded`: found closed or reset by the check at lease (``CloseReason/droppedWhileIdle``).
        var discardedAtLease = 0
        var expired = 0
        var connectFailures = 0
        var leases = 0
        var leaseTimeouts = 0
        var leaseWaitTotal: Duration = .zero
        var leaseWaitMaximum: Duration = .zero
    }

    /// At most this many connections are opened at once (a large minimum fills step by step).
    static let maximumConcurrentConnects = 8
    /// After a connection that nobody waited for failed to open, the next attempt to reach the
    /// minimum waits this long, doubled per failure up to ``maximumRetryDelay``.
    static let firstRetryDelay: Duration = .milliseconds(500)
    static let maximumRetryDelay: Duration = .seconds(30)

    let options: SQLConnectionPool.Options
    /// The resolved lease timeout.
    let leaseTimeout: Duration

    private(set) var phase: Phase = .running
    private(set) var slots: [ConnectionID: Slot] = [:]
    /// Idle connections, the most recently returned last.
    private(set) var idleStack: [ConnectionID] = []
    /// Leases waiting, in request order.
    private(set) var waiters: [Waiter] = []
    private(set) var counters = Counters()
    private var nextConnectionID: ConnectionID = 0
    private var connectFailuresInARow = 0
    /// No connection is opened for the minimum before this (after failures).
    private var retryAt: Duration = .zero
    /// The last error of a connection that failed to open.
    private(set) var lastConnectError: SQLClientError?

    /// `options` must be validated (``SQLConnectionPool/Options/validated()``).
    init(options: SQLConnectionPool.Options, leaseTimeout: Duration) {
        self.options = options
        self.leaseTimeout = leaseTimeout
    }

    // MARK: - Counts

    var connectingCount: Int { slots.values.filter { $0.state == .connecting }.count }
    var closingCount: Int { slots.values.filter { $0.state == .closing }.count }
    var leasedCount: Int { slots.values.filter { if case .leased = $0.state { return true } else { return false } }.count }
    var idleCount: Int { idleStack.count }
    /// Logged-in connections not being closed (idle or lent).
    var openCount: Int { idleCount + leasedCount }

    // MARK: - Events

    /// The pool starts: open connections up to the minimum.
    mutating func start(now: Duration) -> [Action] {
        serve(now: now)
    }

    /// Lease `id` wants a connection: an idle one at once when nobody waits before it, else it
    /// waits (a new connection is opened when there is room), until ``leaseTimeout``.
    mutating func leaseRequested(_ id: LeaseID, now: Duration) -> [Action] {
        guard phase == .running else { return [.failLease(id, Self.closedError)] }
        waiters.append(Waiter(id: id, requestedAt: now, deadline: now + leaseTimeout))
        var actions = serve(now: now)
        // A zero timeout: fail at once when nothing could be lent.
        if leaseTimeout == .zero, let index = waiters.firstIndex(where: { $0.id == id }) {
            actions.append(timeOut(waiters.remove(at: index)))
        }
        return actions
    }

    /// The task of waiting lease `id` was cancelled: it leaves the queue. Nothing when it was
    /// already lent or failed.
    mutating func leaseCancelled(_ id: LeaseID, now: Duration) -> [Action] {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return [] }
        waiters.remove(at: index)
        return [.failLease(id, SQLClientError(.cancelled, "cancelled while waiting for a pooled connection"))]
    }

    /// Connection `id` logged in.
    mutating func connected(_ id: ConnectionID, now: Duration) -> [Action] {
        guard var slot = slots[id], slot.state == .connecting else { return [] }
        counters.created += 1
        connectFailuresInARow = 0
        retryAt = .zero
        slot.createdAt = now
        slot.idleSince = now
        guard phase == .running else {
            slot.state = .closing
            slots[id] = slot
            return [.close(id, .shutdown)]
        }
        slot.state = .idle
        slots[id] = slot
        idleStack.append(id)
        return serve(now: now)
    }

    /// Connection `id` could not be opened: the first waiter not covered by another opening
    /// connection fails with `error` (a server that refuses logins is reported at once, not as
    /// a timeout); with nobody waiting, the minimum is retried after a growing delay.
    mutating func connectFailed(_ id: ConnectionID, _ error: SQLClientError, now: Duration) -> [Action] {
        guard slots[id]?.state == .connecting else { return [] }
        slots[id] = nil
        counters.connectFailures += 1
        connectFailuresInARow += 1
        lastConnectError = error
        var actions: [Action] = []
        if phase == .running, waiters.count > connectingCount {
            actions.append(.failLease(waiters.removeFirst().id, error))
        } else {
            let delay = Self.firstRetryDelay * (1 << min(connectFailuresInARow - 1, 6))
            retryAt = now + min(delay, Self.maximumRetryDelay)
        }
        return actions + serve(now: now) + finishShutdownIfDone()
    }

    /// The user of lease `lease` on connection `id` is done with it; `health` is what the driver found.
    mutating func released(_ id: ConnectionID, health: ReturnedHealth, now: Duration) -> [Action] {
        guard var slot = slots[id], case .leased = slot.state else { return [] }
        let reason: CloseReason?
        switch health {
        case .broken: reason = .broken
        case .inTransaction: reason = .inTransaction
        case .reusable:
            if phase != .running {
                reason = .shutdown
            } else if !options.pooling {
                reason = .poolingOff
            } else if let lifetime = options.maximumLifetime, now - slot.createdAt >= lifetime {
                reason = .lifetime
            } else {
                reason = nil
            }
        }
        if let reason {
            return close(id, reason) + serve(now: now)
        }
        slot.state = .idle
        slot.idleSince = now
        slot.needsReset = true
        slots[id] = slot
        idleStack.append(id)
        return serve(now: now)
    }

    /// What the lease's own check of a lent connection found wrong.
    enum LendFailure: Sendable, Equatable {
        /// The connection was closed when lent.
        case closed
        /// Its socket showed a FIN or a RST: it died while idle.
        case droppedWhileIdle
        /// Its validation round trip failed.
        case validationFailed

        var reason: CloseReason {
            switch self {
            case .closed: return .broken
            case .droppedWhileIdle: return .droppedWhileIdle
            case .validationFailed: return .validationFailed
            }
        }
    }

    /// The lease's own check of connection `id` failed (`failure`): the connection is discarded
    /// and the lease waits again at the head of the queue, with its original deadline, for
    /// another idle connection or a new one (opened now when there is room).
    mutating func lendFailed(_ lease: LeaseID, _ id: ConnectionID, _ failure: LendFailure, now: Duration) -> [Action] {
        guard let slot = slots[id], case .leased(let waiter) = slot.state, waiter.id == lease else { return [] }
        var actions = close(id, failure.reason)
        if phase != .running {
            actions.append(.failLease(lease, Self.closedError))
        } else if waiter.deadline <= now {
            actions.append(timeOut(waiter))
        } else {
            waiters.insert(waiter, at: 0)
        }
        return actions + serve(now: now)
    }

    /// Connection `id` is closed (its close action finished).
    mutating func closed(_ id: ConnectionID, now: Duration) -> [Action] {
        guard slots[id]?.state == .closing else { return [] }
        slots[id] = nil
        return serve(now: now) + finishShutdownIfDone()
    }

    /// The clock reads `now`: leases past their deadline fail with `.timeout`; idle connections
    /// past the idle timeout (above the minimum) or the lifetime close; the minimum is refilled;
    /// a close past its bound closes the connections still lent.
    mutating func tick(now: Duration) -> [Action] {
        var actions: [Action] = []
        var kept: [Waiter] = []
        for waiter in waiters {
            if waiter.deadline <= now { actions.append(timeOut(waiter)) } else { kept.append(waiter) }
        }
        waiters = kept
        // Oldest idle first (the bottom of the stack).
        for id in idleStack {
            guard let slot = slots[id] else { continue }
            if let lifetime = options.maximumLifetime, now - slot.createdAt >= lifetime {
                actions += close(id, .lifetime)
            } else if let idle = options.idleTimeout, now - slot.idleSince >= idle, openCount > options.minimumConnections {
                actions += close(id, .idleTimeout)
            }
        }
        if case .closing(let deadline) = phase, now >= deadline {
            for (id, slot) in slots.sorted(by: { $0.key < $1.key }) {
                if case .leased = slot.state { actions += close(id, .shutdown) }
            }
        }
        return actions + serve(now: now)
    }

    /// The pool is closing: no new leases, waiting leases fail, idle connections close, lent
    /// ones are waited for until ``SQLConnectionPool/Options/closeTimeout`` (then ``tick(now:)``
    /// closes them). ``Action/shutdownComplete`` comes once every connection is closed.
    /// `timeout` replaces the close timeout (the Service's drain); asked again while closing, a
    /// shorter one moves the deadline closer (`.zero`: lent connections close now).
    mutating func closeRequested(now: Duration, timeout: Duration? = nil) -> [Action] {
        let timeout = max(timeout ?? options.closeTimeout, .zero)
        if case .closing(let deadline) = phase {
            guard now + timeout < deadline else { return [] }
            phase = .closing(deadline: now + timeout)
            return timeout == .zero ? tick(now: now) : []
        }
        guard phase == .running else { return [] }
        phase = .closing(deadline: now + timeout)
        var actions = waiters.map { Action.failLease($0.id, Self.closedError) }
        waiters = []
        for id in idleStack { actions += close(id, .shutdown) }
        if timeout == .zero { actions += tick(now: now) }
        return actions + finishShutdownIfDone()
    }

    /// When ``tick(now:)`` has something to do next; nil: nothing is timed.
    var nextDeadline: Duration? {
        var next: Duration?
        func consider(_ d: Duration) { if next.map({ d < $0 }) ?? true { next = d } }
        // FIFO with one timeout: the first waiter's deadline is the earliest (one put back at
        // the head keeps its earlier deadline).
        if let first = waiters.first { consider(first.deadline) }
        if options.idleTimeout != nil || options.maximumLifetime != nil {
            let aboveMinimum = openCount > options.minimumConnections
            for id in idleStack {
                guard let slot = slots[id] else { continue }
                if let lifetime = options.maximumLifetime { consider(slot.createdAt + lifetime) }
                if aboveMinimum, let idle = options.idleTimeout { consider(slot.idleSince + idle) }
            }
        }
        if phase == .running, retryAt > .zero, slots.count - closingCount < options.minimumConnections {
            consider(retryAt)
        }
        if case .closing(let deadline) = phase, leasedCount > 0 { consider(deadline) }
        return next
    }

    // MARK: - Serving

    static let closedError = SQLClientError(.connectionClosed, "the connection pool is closed")

    /// Lends idle connections to waiters in order, then opens connections for the waiters left
    /// and for the minimum, within the maximum.
    private mutating func serve(now: Duration) -> [Action] {
        var actions: [Action] = []
        while !waiters.isEmpty, let id = popIdle(now: now, closing: &actions) {
            let waiter = waiters.removeFirst()
            actions.append(lend(id, to: waiter, now: now, fromIdle: true))
        }
        guard phase == .running else { return actions }
        var room = options.maximumConnections - slots.count
        var connecting = connectingCount
        // Demand: one opening connection per waiter not yet covered.
        while room > 0, connecting < Self.maximumConcurrentConnects, waiters.count > connecting {
            actions.append(startConnect())
            room -= 1
            connecting += 1
        }
        // The minimum (paused after failures until retryAt).
        if now >= retryAt {
            var open = slots.count - closingCount
            while open < options.minimumConnections, room > 0, connecting < Self.maximumConcurrentConnects {
                actions.append(startConnect())
                open += 1
                room -= 1
                connecting += 1
            }
        }
        return actions
    }

    /// The most recently returned idle connection that is not past its lifetime (those found
    /// past it are closed on the way).
    private mutating func popIdle(now: Duration, closing actions: inout [Action]) -> ConnectionID? {
        while let id = idleStack.popLast() {
            guard let slot = slots[id] else { continue }
            if let lifetime = options.maximumLifetime, now - slot.createdAt >= lifetime {
                actions += close(id, .lifetime)
                continue
            }
            return id
        }
        return nil
    }

    private mutating func lend(_ id: ConnectionID, to waiter: Waiter, now: Duration, fromIdle: Bool) -> Action {
        var slot = slots[id]!
        let validate = fromIdle && options.validationThreshold.map { now - slot.idleSince >= $0 } == true
        let reset = slot.needsReset
        slot.needsReset = false
        slot.state = .leased(waiter)
        slots[id] = slot
        let waited = now - waiter.requestedAt
        counters.leases += 1
        counters.leaseWaitTotal += waited
        if waited > counters.leaseWaitMaximum { counters.leaseWaitMaximum = waited }
        return .lend(waiter.id, id, reset: reset, validate: validate)
    }

    private mutating func startConnect() -> Action {
        nextConnectionID += 1
        slots[nextConnectionID] = Slot(state: .connecting)
        return .connect(nextConnectionID)
    }

    private mutating func close(_ id: ConnectionID, _ reason: CloseReason) -> [Action] {
        guard var slot = slots[id], slot.state != .closing, slot.state != .connecting else { return [] }
        if slot.state == .idle { idleStack.removeAll { $0 == id } }
        slot.state = .closing
        slots[id] = slot
        if reason == .droppedWhileIdle { counters.discardedAtLease += 1 }
        if reason.isDiscard { counters.discarded += 1 } else if reason != .shutdown && reason != .poolingOff { counters.expired += 1 }
        return [.close(id, reason)]
    }

    private mutating func timeOut(_ waiter: Waiter) -> Action {
        counters.leaseTimeouts += 1
        let busy = leasedCount
        let detail = waiters.isEmpty ? "" : ", \(waiters.count) more leases waiting"
        return .failLease(waiter.id, SQLClientError(
            .timeout, "no pooled connection became free within \(leaseTimeout) "
                + "(\(busy) of at most \(options.maximumConnections) connections lent\(detail))"))
    }

    private mutating func finishShutdownIfDone() -> [Action] {
        guard case .closing = phase, slots.isEmpty else { return [] }
        phase = .closed
        return [.shutdownComplete]
    }
}
