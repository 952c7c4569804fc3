import TDS

/// The connection as a pure state machine ([MS-TDS] 3.2.5 client states): events in, actions
/// out, no I/O and no clock of its own. One driver (``SQLConnection``) performs the actions.
///
/// Modelled on PostgresNIO's `ConnectionStateMachine` with its `ExtendedQueryStateMachine`: the
/// login, the queue of waiting requests, the running request (a ``RequestStateMachine``: its
/// writing, cancellation and response), every timeout and the closing of the connection are
/// events and actions here. Time comes in as `now` (a ``ConnectionClock`` reading): timers are
/// actions (`scheduleTimeout(id, deadline)`), their firing is an event (`timeoutFired(id, now:)`),
/// and `tick(now:)` fires whatever is due, so tests drive time without sleeping.
///
/// States: `initialized` → `preloginSent` → (`tlsHandshake`) → `loginSent` → `ready` ⇄ `executing`
/// (→ `cancelling` after a cancel) → `closed`; `executing` → `recovering` → `executing` when an idle
/// connection found dropped is logged in again (``ConnectionRecoveryStateMachine``).
///
/// Nested as PostgresNIO's: the stored phase carries the sub-machine of the state it belongs to,
/// so none exists outside it: the login (``LoginStateMachine``) in the login states, the running
/// request (``RequestStateMachine``, with its cancellation) in `executing`, and in `closed` the
/// request the close interrupted (its reader or writer gets the close error from the transport).
/// ``State`` is the summary callers compare. Two sub-machines stay fields, as they outlive any
/// one state: `recovery` and `readAhead` (see their comments).
struct ConnectionStateMachine: Sendable {
    enum State: Sendable, Equatable {
        case initialized
        case preloginSent
        case tlsHandshake(fullSession: Bool)
        case loginSent
        case ready
        case executing
        case cancelling
        /// Idle connection resiliency: the connection was found dropped before a request's first
        /// byte and is logging in again (``ConnectionRecoveryStateMachine``).
        case recovering
        case closed
    }

    /// A request waiting for its turn.
    private struct Queued: Sendable {
        var id: RequestID
        var timeout: Duration?
        /// The reservation the request was made under, if any.
        var reservation: ReservationID? = nil
    }

    /// The stored state, carrying its sub-machine.
    private enum Phase: Sendable {
        case initialized(LoginStateMachine)
        case preloginSent(LoginStateMachine)
        case tlsHandshake(fullSession: Bool, LoginStateMachine)
        case loginSent(LoginStateMachine)
        case ready
        /// A request runs (``State/cancelling`` once it is cancelled, ``State/recovering`` while
        /// `recovery` reconnects before its first byte).
        case executing(RequestStateMachine)
        /// `interrupted`: the request running when the connection closed.
        case closed(interrupted: RequestStateMachine?)
        /// Only inside ``withRequest(_:)`` and ``withLogin(_:)``, while the sub-machine taken out
        /// is changed (so that the state holds no second reference to its arrays: no copy on write).
        case modifying
    }

    private var phase: Phase
    private(set) var session = SQLSessionInfo()
    let encryption: SQLEncryption
    let verifyWhenLoginOnly: Bool
    let trustServerCertificate: Bool
    /// How long a cancelled request waits for the ATTENTION acknowledgement.
    let cancelTimeout: Duration
    /// The login's FEATUREEXTACK, kept past the login: the driver checks it against what LOGIN7
    /// asked for, and a recovery login hands it over.
    private(set) var featureExtAck: FeatureExtAck?
    /// The login's time budget, named in its timeout's message.
    private var loginLimit: Duration?

    private var queue: [Queued] = []
    /// The reservation holding the connection, and those waiting for it in order.
    private(set) var reservation: ReservationID?
    private var reservationQueue: [ReservationID] = []
    /// Armed timers and their deadlines (time since the clock's origin).
    private(set) var timers: [TimerID: Duration] = [:]
    /// Why the connection closed; what a reader or writer of the running request then gets.
    private(set) var closeError: SQLClientError?
    /// ENVCHANGE type 18 tokens (RESETCONNECTION acknowledged, [MS-TDS] 2.2.7.9) received so far.
    private(set) var resetAcknowledgements = 0
    /// The session as the login left it: what RESETCONNECTION returns it to.
    private var loginSession: SQLSessionInfo?
    /// Idle connection resiliency (SESSIONRECOVERY): the session to restore, and the recovery.
    /// A field, not a state's: it follows the session (its initial state, each SESSIONSTATE, the
    /// recoveries made) over the connection's whole logged-in life; its own phase, while it
    /// reconnects the running request's connection, is what ``state`` reports as `recovering`.
    /// Changed only through the machine's events (the recovery ones are in
    /// `SQLConnection+Recovery.swift`, hence no `private(set)`) and ``sessionRecoveryRequested()``.
    var recovery: ConnectionRecoveryStateMachine
    /// A streamed request's rows read ahead of its cursor (waiting for rows, for demand, for a
    /// read). A field, not `executing`'s: it outlives its request, holding the batch that ended
    /// it until its cursor takes it while the next request may already run. Changed only through
    /// the machine's events (Reading ahead, below), which add whether the request still runs.
    private(set) var readAhead = ReadAheadStateMachine()

    init(encryption: SQLEncryption, trustServerCertificate: Bool, verifyWhenLoginOnly: Bool = false,
         cancelTimeout: Duration = .seconds(5), expectsSSPI: Bool = false, requestedVersion: TDSVersion = .v7_4,
         recovery: ConnectionRecoveryStateMachine = ConnectionRecoveryStateMachine()) {
        self.phase = .initialized(LoginStateMachine(requestedVersion: requestedVersion, expectsSSPI: expectsSSPI))
        self.recovery = recovery
        self.encryption = encryption
        self.trustServerCertificate = trustServerCertificate
        self.verifyWhenLoginOnly = verifyWhenLoginOnly
        self.cancelTimeout = cancelTimeout
    }

    var state: State {
        switch phase {
        case .initialized: return .initialized
        case .preloginSent: return .preloginSent
        case .tlsHandshake(let full, _): return .tlsHandshake(fullSession: full)
        case .loginSent: return .loginSent
        case .closed: return .closed
        case .ready: return recovery.phase != .idle ? .recovering : .ready
        case .executing(let request):
            if recovery.phase != .idle { return .recovering }
            return request.forwardsResults ? .executing : .cancelling
        case .modifying: return .executing   // (never seen: only inside a mutating method)
        }
    }

    /// The running request (also the one a close interrupted), if any. Read-only: it changes
    /// through the machine's events.
    var request: RequestStateMachine? {
        switch phase {
        case .executing(let request): return request
        case .closed(let interrupted): return interrupted
        default: return nil
        }
    }

    /// The login, from `init` until LOGINACK or the close (nil after). Read-only: it changes through the machine's events and
    /// ``configureLogin(maximumSSPITokens:expectsFedAuthInfo:)``.
    var login: LoginStateMachine? {
        switch phase {
        case .initialized(let login), .preloginSent(let login), .tlsHandshake(_, let login), .loginSent(let login):
            return login
        default: return nil
        }
    }

    /// Whether the connection is closed.
    private var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// What the login may receive, set by the driver before LOGIN7 goes out: the SSPI tokens
    /// (NTLM one, Kerberos a few) and whether LOGIN7 asks for the FEDAUTH MSAL workflow.
    mutating func configureLogin(maximumSSPITokens: Int? = nil, expectsFedAuthInfo: Bool? = nil) {
        withLogin { login in
            if let maximumSSPITokens { login.maximumSSPITokens = maximumSSPITokens }
            if let expectsFedAuthInfo { login.expectsFedAuthInfo = expectsFedAuthInfo }
        }
    }

    /// LOGIN7 asks for SESSIONRECOVERY ([MS-TDS] 2.2.6.4; the first login, when ConnectRetryCount > 0).
    mutating func sessionRecoveryRequested() { recovery.featureRequested() }

    /// Changes the running request in place; nil (and nothing done) when none runs.
    private mutating func withRequest<R>(_ body: (inout RequestStateMachine) -> R) -> R? {
        guard case .executing(var running) = phase else { return nil }
        phase = .modifying
        defer { phase = .executing(running) }
        return body(&running)
    }

    /// Changes the login in place, in whichever login state; nil (and nothing done) outside them.
    private mutating func withLogin<R>(_ body: (inout LoginStateMachine) -> R) -> R? {
        switch phase {
        case .initialized(var login):
            phase = .modifying
            defer { phase = .initialized(login) }
            return body(&login)
        case .preloginSent(var login):
            phase = .modifying
            defer { phase = .preloginSent(login) }
            return body(&login)
        case .tlsHandshake(let full, var login):
            phase = .modifying
            defer { phase = .tlsHandshake(fullSession: full, login) }
            return body(&login)
        case .loginSent(var login):
            phase = .modifying
            defer { phase = .loginSent(login) }
            return body(&login)
        default:
            return nil
        }
    }

    /// Requests waiting for their turn, in order.
    var queuedRequests: [RequestID] { queue.map(\.id) }

    /// Whether `id` is the running request.
    func isRunning(_ id: RequestID) -> Bool { request?.id == id }

    // MARK: - Reading ahead (``ReadAheadStateMachine``: who reads the socket, what is read ahead)

    /// Request `id`'s cursor asks for its next batch (it may read the socket if its request runs, not abandoned).
    mutating func nextBatchAsked(_ id: RequestID) -> ReadAheadStateMachine.NextAction {
        readAhead.next(id, mayRead: isRunning(id) && request?.isAbandoned != true)
    }
    /// Request `id`'s cursor read `batch` itself; `caller`: where its caller runs.
    mutating func cursorRead(_ id: RequestID, _ batch: ReadAheadStateMachine.Batch, caller: ReadAheadStateMachine.Caller) -> ReadAheadStateMachine.ReadEnd {
        readAhead.cursorRead(id, batch, caller: caller, isRunning: isRunning(id))
    }
    /// Reader ahead `serial` (of request `id`) read `batch`.
    mutating func batchReadAhead(_ serial: UInt64, of id: RequestID, _ batch: ReadAheadStateMachine.Batch) -> ReadAheadStateMachine.ReadAction {
        readAhead.batchRead(serial, batch, isRunning: isRunning(id))
    }
    /// Whether a cursor waits for reader ahead `serial`'s batch.
    func isReadAheadAwaited(_ serial: UInt64) -> Bool { readAhead.isAwaited(serial) }
    /// Reader ahead `serial` waits for bytes: its cursor may take `batch` meanwhile.
    mutating func readerAheadWaits(_ serial: UInt64, holding batch: inout ReadAheadStateMachine.Batch) { readAhead.readWaits(serial, holding: &batch) }
    /// Reader ahead `serial`'s bytes came: what its cursor left of the batch it held.
    mutating func readerAheadResumes(_ serial: UInt64) -> ReadAheadStateMachine.Batch { readAhead.readResumes(serial) }
    /// Request `id`'s cursor is gone: what was read ahead for it is let go of; it is drained if it runs, the connection open.
    mutating func drainAsked(_ id: RequestID) -> ReadAheadStateMachine.DrainAction {
        readAhead.drain(id, isRunning: isRunning(id) && !isClosed)
    }
    /// The drain read its request to the end: the socket is free.
    mutating func drainEnded() { readAhead.drainEnded() }

    // MARK: - Connecting

    /// The transport is connected: send PRELOGIN, and bound the login by `deadline` (nil: no
    /// bound); `budget`: the configured limit, named in the timeout's message.
    mutating func connected(now: Duration = .zero, deadline: Duration? = nil, budget: Duration? = nil) -> [Action] {
        guard case .initialized(let login) = phase else { return [invalid("connected")] }
        phase = .preloginSent(login)
        var actions: [Action] = [.sendPrelogin(encryption.preloginValue)]
        if let deadline {
            loginLimit = budget ?? (deadline - now)
            actions.append(arm(.login, deadline))
        }
        return actions
    }

    /// The server's PRELOGIN response arrived ([MS-TDS] 2.2.6.5; answered in a TABULAR_RESULT packet).
    mutating func preloginReceived(_ response: Prelogin) -> Action {
        guard case .preloginSent(let login) = phase else { return invalid("PRELOGIN response") }
        let server = response.encryption?.mode ?? .notSupported
        let verify = !trustServerCertificate
        switch encryption {
        case .on, .required:
            if server == .on || server == .required {
                phase = .tlsHandshake(fullSession: true, login)
                session.encryption = .full
                return .startTLSHandshake(fullSession: true, verify: verify)
            }
            return fail(SQLClientError(.encryptionNotAvailable,
                                       "the server answered PRELOGIN encryption \(server) but encryption is required;"
                                       + " connect with encrypt=off or notSupported to allow it"))
        case .off:
            if server == .on || server == .required {
                phase = .tlsHandshake(fullSession: true, login)
                session.encryption = .full
                return .startTLSHandshake(fullSession: true, verify: verify && verifyWhenLoginOnly)
            }
            if server == .off {
                phase = .tlsHandshake(fullSession: false, login)
                session.encryption = .loginOnly
                return .startTLSHandshake(fullSession: false, verify: verify && verifyWhenLoginOnly)
            }
            phase = .loginSent(login)
            session.encryption = .unencrypted
            return .sendLogin7(throughTLS: false)
        case .strict:
            // TDS 8.0: the TLS session came first and covers everything; the server's ENCRYPTION
            // answer does not apply (Microsoft.Data.SqlClient ignores it too).
            phase = .loginSent(login)
            session.encryption = .strict
            return .sendLogin7(throughTLS: false)
        case .notSupported:
            // [MS-TDS] 2.2.6.5: a client that cannot encrypt, facing a server that requires it,
            // ends the connection; ENCRYPT_ON is not a valid answer to ENCRYPT_NOT_SUP and is
            // treated the same. LOGIN7 is never sent in the clear to such a server.
            if server == .required || server == .on {
                return fail(SQLClientError(.encryptionNotAvailable,
                                           "the server requires encryption (PRELOGIN \(server == .on ? "ENCRYPT_ON" : "ENCRYPT_REQ")) "
                                           + "but this client was configured with encryption not supported"))
            }
            phase = .loginSent(login)
            session.encryption = .unencrypted
            return .sendLogin7(throughTLS: false)
        }
    }

    /// The TLS handshake inside PRELOGIN completed.
    mutating func tlsEstablished() -> Action {
        guard case .tlsHandshake(_, let login) = phase else { return invalid("TLS established") }
        phase = .loginSent(login)
        return .sendLogin7(throughTLS: true)
    }

    // MARK: - Requests

    /// A request wants to run: it starts at once when the connection is idle, else it waits for
    /// its turn, behind the running request (also one whose stream is still held: it ends when
    /// its stream is read to its end, cancelled, or abandoned when its iterator is released).
    /// Who asks does not matter: no request is cancelled for another. `timeout`: the query
    /// timeout, armed when it starts. While a reservation holds the connection (``reserve(_:)``),
    /// a request not made under it (`reservation`) waits even when the connection is idle; a
    /// request made under a reservation that has ended fails with `.invalidState`.
    mutating func enqueue(_ id: RequestID, timeout: Duration?, now: Duration,
                          reservation key: ReservationID? = nil) -> [Action] {
        switch phase {
        case .closed:
            return [.failRequest(id, SQLClientError(.connectionClosed,
                                                    "the connection is closed" + (closeError.map { ": \($0.message)" } ?? ""),
                                                    underlying: closeError))]
        case .ready, .executing:
            break
        default:
            return [.failRequest(id, SQLClientError(.invalidState, "the connection is not logged in"))]
        }
        if let key, key != reservation, !reservationQueue.contains(key) {
            // Neither held nor waiting: released (a transaction handle kept past its closure, or
            // a task it started that outlived it).
            return [.failRequest(id, Self.endedReservationError)]
        }
        let queued = Queued(id: id, timeout: timeout, reservation: key)
        if case .ready = phase, mayStart(queued) { return start(queued, now: now) }
        queue.append(queued)
        return []
    }

    /// What a request made under a reservation that has ended fails with.
    static let endedReservationError = SQLClientError(
        .invalidState, "the transaction this request belongs to has ended (its withTransaction closure returned); "
            + "make the request on the connection")

    /// Whether `queued` may run under the current reservation.
    private func mayStart(_ queued: Queued) -> Bool {
        reservation == nil || queued.reservation == reservation
    }

    /// Starts the first queued request the reservation lets run, if the connection is idle.
    private mutating func startNext(now: Duration) -> [Action] {
        guard case .ready = phase, let index = queue.firstIndex(where: mayStart) else { return [] }
        return start(queue.remove(at: index), now: now)
    }

    // MARK: - Reservations

    /// A caller wants the connection to itself between requests (a transaction): granted at
    /// once when no other reservation holds it, else after those before it. Requests already
    /// running or queued when it is granted and not made under it wait until ``release(_:now:)``
    /// (the running one finishes first).
    mutating func reserve(_ key: ReservationID) -> [Action] {
        if isClosed {
            return [.failReservation(key, SQLClientError(.connectionClosed, "the connection is closed"))]
        }
        if reservation == nil {
            reservation = key
            return [.reservationGranted(key)]
        }
        reservationQueue.append(key)
        return []
    }

    /// The reservation ends (its holder committed or rolled back, or gave up waiting): the next
    /// reservation is granted, or the queued requests start in order.
    mutating func release(_ key: ReservationID, now: Duration) -> [Action] {
        if let index = reservationQueue.firstIndex(of: key) {
            reservationQueue.remove(at: index)
            return []
        }
        guard reservation == key else { return [] }
        reservation = nil
        var actions: [Action] = []
        // Requests made under it that still wait (by a task the closure started) fail: they
        // must not run outside the transaction unnoticed.
        for stale in queue where stale.reservation == key {
            actions.append(.failRequest(stale.id, Self.endedReservationError))
        }
        queue.removeAll { $0.reservation == key }
        if !reservationQueue.isEmpty {
            let next = reservationQueue.removeFirst()
            reservation = next
            actions.append(.reservationGranted(next))
        }
        return actions + startNext(now: now)
    }

    private mutating func start(_ next: Queued, now: Duration) -> [Action] {
        phase = .executing(RequestStateMachine(id: next.id, timeout: next.timeout))
        return [.startRequest(next.id)]
    }

    /// The writer is about to write the first packet of request `id` (encoded, the write path
    /// held): its query timeout starts now, so that it counts the request's time on the wire,
    /// not the time it waited for its turn or took to encode.
    mutating func writingStarted(_ id: RequestID, now: Duration) -> [Action] {
        guard let running = request, running.id == id, running.phase == .writing,
              let limit = running.timeout, timers[.query(id)] == nil else { return [] }
        return [arm(.query(id), now + limit)]
    }

    /// The writer wrote some packets of request `id`; `complete`: the last one (EOM) among them.
    /// Answers `endRequestWithIgnore` + `sendAttention` when a cancel came while writing and
    /// packets remain, `sendAttention` when it came during the last packets, else nothing.
    mutating func packetsWritten(_ id: RequestID, complete: Bool) -> [Action] {
        guard request?.id == id, let step = withRequest({ $0.packetsWritten(complete: complete) }) else { return [] }
        switch step {
        case .proceed: return []
        case .endWithIgnore: return [.endRequestWithIgnore(id), .sendAttention(id)]
        case .sendAttention: return [.sendAttention(id)]
        }
    }

    /// Cancel request `id` (nil: the running one): a queued request fails at once; the running
    /// one sends ATTENTION (after its last packet) and its reader gets `reason`'s error once
    /// the server acknowledges, within ``cancelTimeout`` or the connection is closed. Nothing
    /// for a request that already finished.
    mutating func cancelRequested(_ id: RequestID? = nil, reason: CancelReason = .cancelled, now: Duration) -> [Action] {
        if let id, let index = queue.firstIndex(where: { $0.id == id }) {
            queue.remove(at: index)
            return [.failRequest(id, reason.error)]
        }
        guard let runningID = request?.id, id == nil || runningID == id,
              let (sendNow, running) = withRequest({ ($0.cancel(reason), $0) }) else { return [] }
        guard running.cancellation.reason == reason else { return [] }   // cancelled already
        var actions: [Action] = []
        if sendNow { actions.append(.sendAttention(running.id)) }
        if timers[.cancel(running.id)] == nil { actions.append(arm(.cancel(running.id), now + cancelTimeout)) }
        return actions
    }

    /// The reader of request `id` is gone (its stream was dropped, or its task cancelled):
    /// a queued request is removed; the running one is cancelled (unless it is already) and
    /// drained by the driver.
    mutating func requestAbandoned(_ id: RequestID, now: Duration) -> [Action] {
        if queue.contains(where: { $0.id == id }) { return cancelRequested(id, reason: .abandoned, now: now) }
        guard let running = request, running.id == id, !running.isAbandoned else { return [] }
        withRequest { $0.isAbandoned = true }
        var actions = running.forwardsResults ? cancelRequested(id, reason: .abandoned, now: now) : []
        actions.append(.drainRequest(id))
        return actions
    }

    /// Request `id` (whose turn came) was not written at all (it could not be encoded): it is
    /// over, and the next request starts.
    mutating func requestNotSent(_ id: RequestID, now: Duration) -> [Action] {
        guard let running = request, running.id == id, running.phase == .writing else { return [] }
        return Array(finish(id, .none, now: now).dropFirst())
    }

    // MARK: - Time

    /// Timer `id` fired at `now`. A timer that is no longer armed, or not due yet (a stale
    /// firing), does nothing.
    mutating func timeoutFired(_ id: TimerID, now: Duration) -> [Action] {
        guard let deadline = timers[id], deadline <= now else { return [] }
        timers[id] = nil
        switch id {
        case .login:
            switch phase {
            case .preloginSent, .tlsHandshake, .loginSent: break
            default: return []
            }
            let limit = loginLimit.map { " within \($0)" } ?? ""
            return [closeAll(SQLClientError(.timeout, "the login did not finish\(limit)"))]
        case .query(let rid):
            guard let running = request, running.id == rid, let limit = running.timeout else { return [] }
            return cancelRequested(rid, reason: .timedOut(limit), now: now)
        case .cancel(let rid):
            guard let running = request, running.id == rid, !running.forwardsResults else { return [] }
            let because = running.cancellation.reason.map { reason -> String in
                if case .timedOut(let limit) = reason { return "the request did not finish within \(limit); " }
                return ""
            } ?? ""
            return [closeAll(SQLClientError(.timeout, because + "the server did not acknowledge the cancellation "
                                            + "(ATTENTION) within \(cancelTimeout); the connection was closed"))]
        }
    }

    /// The clock reads `now`: fires every armed timer that is due, earliest first.
    mutating func tick(now: Duration) -> [Action] {
        var actions: [Action] = []
        for (id, _) in timers.filter({ $0.value <= now }).sorted(by: { $0.value < $1.value }) {
            actions += timeoutFired(id, now: now)
        }
        return actions
    }

    private mutating func arm(_ id: TimerID, _ deadline: Duration) -> Action {
        timers[id] = deadline
        return .scheduleTimeout(id, deadline: deadline)
    }

    private mutating func disarm(_ id: TimerID) -> Action? {
        guard timers.removeValue(forKey: id) != nil else { return nil }
        return .cancelTimeout(id)
    }

    // MARK: - Closing

    /// The caller closes the connection: every queued request fails with `.connectionClosed`;
    /// the running request's reader or writer gets it when the transport closes under it.
    mutating func closeRequested() -> [Action] {
        guard !isClosed else { return [] }
        return [closeAll(SQLClientError(.connectionClosed, "the connection was closed"))]
    }

    /// The transport failed or the peer closed it.
    mutating func transportFailed(_ error: SQLClientError) -> Action {
        guard !isClosed else { return .none }
        return closeAll(error)
    }

    private mutating func closeAll(_ error: SQLClientError) -> Action {
        guard !isClosed else { return .none }   // the first reason stays
        phase = .closed(interrupted: request)
        closeError = error
        let context = CloseContext(error: error, failedRequests: queue.map(\.id), failedReservations: reservationQueue)
        queue = []
        reservationQueue = []
        reservation = nil
        timers = [:]
        return .closeConnection(context)
    }

    // MARK: - Tokens

    /// Whether a ROW or NBCROW received now would be forwarded to the reader, i.e. whether
    /// ``tokenReceived(_:)`` answers `.forwardRow` for it. The driver's batch reader relies on
    /// this to hand rows over without passing each one through ``tokenReceived(_:)``: rows
    /// change no state here.
    var forwardsRows: Bool {
        if case .executing(let request) = phase { return request.forwardsResults }
        return false
    }

    /// One token of the server's response.
    mutating func tokenReceived(_ token: Token) -> Action {
        switch phase {
        case .loginSent:
            if case .sessionState(let state) = token { recovery.sessionStateReceived(state) }
            return loginToken(token)
        case .ready:
            return fail(SQLClientError(.protocolError, "the server sent \(token.name) with no request running"))
        case .executing:
            switch token {
            case .sessionState(let state): recovery.sessionStateReceived(state)
            case .envChange(let change): return applyEnvChange(change)
            default: break
            }
            let action = withRequest { $0.token(token) } ?? .none
            if case .closeConnection(let context) = action { return closeAll(context.error) }
            return action
        case .closed:
            return .none
        default:
            return fail(SQLClientError(.protocolError, "unexpected \(token.name) token before login"))
        }
    }

    /// The server's response message ended (the packet with EOM was decoded).
    mutating func messageEnded(now: Duration = .zero) -> [Action] {
        switch phase {
        case .loginSent:
            let ack: LoginAck, routing: EnvChange.Routing?
            switch withLogin({ $0.messageEnded() }) {
            case .keepReading?, nil: return []
            case .failed(let error)?: return [fail(error)]
            case .loggedIn(let a, let r)?: (ack, routing) = (a, r)
            }
            featureExtAck = login?.featureExtAck
            phase = .ready
            session.tdsVersion = ack.tdsVersion
            session.serverProgramName = ack.trimmedProgramName
            session.serverVersion = ack.serverVersion.description
            if let routing {
                // [MS-TDS] 2.2.7.9 type 20: this server hands the client to another one.
                phase = .closed(interrupted: nil)
                closeError = SQLClientError(.connectionClosed, "the server redirected the login to \(routing.server):\(routing.port)")
                var actions: [Action] = [.loginRouted(routing)]
                for id in timers.keys { actions.append(.cancelTimeout(id)) }
                timers = [:]
                return actions
            }
            loginSession = session
            recovery.loggedIn(session: session, ack: featureExtAck)
            var actions: [Action] = [.loginSucceeded(session)]
            if let stop = disarm(.login) { actions.append(stop) }
            return actions
        case .ready:
            return [fail(SQLClientError(.protocolError, "the server sent a response with no request running"))]
        case .executing:
            guard let (end, running) = withRequest({ ($0.messageEnded(), $0) }) else { return [] }
            switch end {
            case .keepReading:
                return []
            case .fatal(let error):
                return [closeAll(error)]
            case .completed(let error):
                return finish(running.id, .requestCompleted(running.id, error: error, returnValues: running.returnValues), now: now)
            case .cancelled(let error):
                return finish(running.id, .requestCancelled(running.id, error), now: now)
            }
        default:
            return []
        }
    }

    /// The running request is over: stop its timers, end it, start the next one.
    private mutating func finish(_ id: RequestID, _ end: Action, now: Duration) -> [Action] {
        var actions: [Action] = [end]
        if let a = disarm(.query(id)) { actions.append(a) }
        if let a = disarm(.cancel(id)) { actions.append(a) }
        phase = .ready
        actions += startNext(now: now)
        return actions
    }

    private mutating func loginToken(_ token: Token) -> Action {
        switch withLogin({ $0.token(token) }) {
        case .none?, nil: return .none
        case .forwardMessage(let m)?: return .forwardMessage(m)
        case .envChange(let change)?: return applyEnvChange(change)
        case .sspiChallenge(let bytes)?: return .sspiChallenge(bytes)
        case .fedAuthInfo(let info)?: return .fedAuthInfoReceived(info)
        case .fail(let error)?: return fail(error)
        }
    }

    private mutating func applyEnvChange(_ change: EnvChange) -> Action {
        if change.type == .routing {
            // Routing belongs to the login response (``LoginStateMachine`` takes it there); after
            // it, it is no valid answer to a request.
            return fail(SQLClientError(.protocolError, "the server sent a routing ENVCHANGE (type 20) after the login"))
        }
        if change.type == .resetConnectionAck { resetAcknowledgements &+= 1 }
        let (packetSize, changed) = session.apply(change)
        if let packetSize { return .packetSizeChanged(packetSize) }
        if case .loginSent = phase { return .none }
        return changed ? .sessionChanged(session) : .none
    }

    /// RESETCONNECTION goes out on the next request ([MS-TDS] 2.2.3.1.2): the session returns to
    /// the login's database, language and collation (the server sends no ENVCHANGE for them, as
    /// Microsoft.Data.SqlClient assumes too); `keepingTransaction` keeps the transaction descriptor.
    mutating func sessionReset(keepingTransaction: Bool) -> SQLSessionInfo {
        if let login = loginSession {
            session.database = login.database
            session.language = login.language
            session.collation = login.collation
        }
        if !keepingTransaction { session.transactionDescriptor = nil }
        recovery.sessionReset()
        return session
    }

    /// A recovery login restored the session ([MS-TDS] 2.2.6.4 SESSIONRECOVERY): the new
    /// connection's packet size, version and server, and the database, language and collation its
    /// ENVCHANGEs reported; no transaction. Host, port and encryption are the recovered connection's.
    mutating func adoptRecoveredSession(_ restored: SQLSessionInfo) -> SQLSessionInfo {
        session.database = restored.database
        session.language = restored.language
        session.collation = restored.collation ?? session.collation
        session.packetSize = restored.packetSize
        session.tdsVersion = restored.tdsVersion
        session.serverProgramName = restored.serverProgramName
        session.serverVersion = restored.serverVersion
        session.encryption = restored.encryption
        session.transactionDescriptor = nil
        return session
    }

    private mutating func fail(_ error: SQLClientError) -> Action {
        closeAll(error)
    }

    private mutating func invalid(_ event: String) -> Action {
        fail(SQLClientError(.invalidState, "\(event) is not expected in state \(state)"))
    }
}
