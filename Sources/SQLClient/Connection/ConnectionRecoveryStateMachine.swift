import TDS

/// Idle connection resiliency as a pure state machine (a part of ``ConnectionStateMachine``, as
/// ``RequestStateMachine`` is): what the session to restore is, and what to do when a connection
/// is found dropped while idle, before a request's first byte is written. No I/O, no clock: time
/// comes in as `now`, waits go out as deadlines.
///
/// The session ([MS-TDS] 2.2.6.4 SESSIONRECOVERY, 2.2.7.11, 2.2.7.21): the first login asks for
/// SESSIONRECOVERY (no data); its ENVCHANGEs give the initial database, collation and language and
/// its FEATUREEXTACK the initial session-state list; SESSIONSTATE tokens then report each state the
/// session changes (kept by StateId, the newest SeqNo wins), and ENVCHANGEs the database, language
/// and collation. A recovery LOGIN7 carries `InitSessionRecoveryData` (the initial state) and
/// `SessionRecoveryDataToBe` (what differs now).
///
/// The recovery, as Microsoft.Data.SqlClient does it (`ConnectRetryCount`, `ConnectRetryInterval`):
/// the first attempt at once, each further one `interval` after the previous failed, at most
/// `retryCount` attempts; the server must acknowledge SESSIONRECOVERY again. Never silently:
/// inside a transaction, without the feature acknowledged at login, with a state the server marked
/// unrecoverable, or once the budget is spent, the request fails with `.connectionLost` and a
/// ``SQLSessionRecoveryError`` naming the case.
///
/// Phases: `idle` → (`connectionLost`) `reconnecting(1)` → (`attemptSucceeded`) `idle`, or
/// (`attemptFailed`) `waiting(until:)` → (`retryDue`) `reconnecting(2)` … → `failed`.
struct ConnectionRecoveryStateMachine: Sendable {
    enum Phase: Sendable, Equatable {
        /// Nothing to recover (the connection is logged in, or not yet).
        case idle
        /// Attempt `attempt` (1-based) is logging in.
        case reconnecting(attempt: Int)
        /// Attempt `attempt` failed; the next starts at `until`.
        case waiting(attempt: Int, until: Duration)
        /// Recovery was refused or ran out of attempts; the connection is closed.
        case failed
    }

    /// What the driver must do next.
    enum Action: Sendable, Equatable {
        /// Open a connection (as at the first login: routing, authentication) and log in with this
        /// SESSIONRECOVERY feature data; then `attemptSucceeded` or `attemptFailed`.
        case reconnect(attempt: Int, SessionRecoveryFeature)
        /// Wait until `deadline` (the injected clock), then `retryDue`.
        case wait(until: Duration, nextAttempt: Int)
        /// The session is back: the request goes out. `attempts` used, `duration` since the loss.
        case recovered(attempts: Int, duration: Duration)
        /// Recovery is refused or failed: close the connection, fail the request with this error.
        case fail(SQLClientError)

        static func == (a: Action, b: Action) -> Bool {
            switch (a, b) {
            case (.reconnect(let x, let f), .reconnect(let y, let g)): return x == y && f == g
            case (.wait(let x, let n), .wait(let y, let m)): return x == y && n == m
            case (.recovered(let x, let d), .recovered(let y, let e)): return x == y && d == e
            case (.fail(let x), .fail(let y)):
                return x.code == y.code && x.sessionRecoveryError?.reason == y.sessionRecoveryError?.reason
            default: return false
            }
        }
    }

    /// `ConnectRetryCount`: attempts after a loss (0: recovery off, the feature not asked for).
    let retryCount: Int
    /// `ConnectRetryInterval`: the wait between two attempts.
    let interval: Duration
    private(set) var phase: Phase = .idle

    /// LOGIN7 asked for SESSIONRECOVERY.
    private(set) var requested = false
    /// The login's FEATUREEXTACK acknowledged SESSIONRECOVERY.
    private(set) var acknowledged = false
    /// The session as the first login left it.
    private(set) var initial = SessionRecoveryData()
    /// States changed since (SESSIONSTATE), by StateId: the SeqNo and value of the newest.
    private(set) var changedStates: [UInt8: (sequence: UInt32, value: [UInt8])] = [:]
    /// StateIds whose newest SESSIONSTATE was not recoverable (fRecoverable clear).
    private(set) var unrecoverableStates: Set<UInt8> = []
    /// A SESSIONSTATE without states had fRecoverable clear (the whole session).
    private(set) var unrecoverableSession = false
    /// Recoveries completed over the connection's life.
    private(set) var recoveries = 0
    private var lostAt: Duration = .zero
    private var cause = ""

    init(retryCount: Int = 0, interval: Duration = .seconds(10)) {
        self.retryCount = max(0, retryCount)
        self.interval = interval
    }

    /// Whether the session may be recovered now (before any loss).
    var isRecoverable: Bool { unrecoverableStates.isEmpty && !unrecoverableSession }

    // MARK: - Following the session

    /// LOGIN7 (the first one) asks for SESSIONRECOVERY.
    mutating func featureRequested() { requested = true }

    /// The first login succeeded: `session` holds its ENVCHANGEs' database, collation and
    /// language; `ack` its FEATUREEXTACK, whose SESSIONRECOVERY data is the initial state list.
    /// A SESSIONRECOVERY acknowledgement whose data is malformed counts as not acknowledged.
    mutating func loggedIn(session: SQLSessionInfo, ack: FeatureExtAck?) {
        guard phase == .idle else { return }
        initial = SessionRecoveryData(database: session.database, collation: Self.collationBytes(session.collation),
                                      language: session.language)
        acknowledged = false
        guard requested, let data = ack?.data(for: .sessionRecovery) else { return }
        var reader = ByteReader(data)
        guard let states = try? SessionRecoveryData.decodeStates(from: &reader) else { return }
        initial.states = states
        acknowledged = true
    }

    /// A SESSIONSTATE token ([MS-TDS] 2.2.7.21): each state's newest value (by SeqNo, which wraps)
    /// is kept; fRecoverable clear marks its states (or, with none, the session) unrecoverable
    /// until a recoverable SESSIONSTATE replaces them.
    mutating func sessionStateReceived(_ token: SessionState) {
        if token.states.isEmpty { unrecoverableSession = !token.isRecoverable }
        for state in token.states {
            if let kept = changedStates[state.id], Int32(bitPattern: token.sequenceNumber &- kept.sequence) < 0 { continue }
            changedStates[state.id] = (token.sequenceNumber, state.value)
            if token.isRecoverable { unrecoverableStates.remove(state.id) } else { unrecoverableStates.insert(state.id) }
        }
    }

    /// RESETCONNECTION went out: the server's session returns to the login's, so no change is left.
    mutating func sessionReset() {
        changedStates = [:]
        unrecoverableStates = []
        unrecoverableSession = false
    }

    /// The SESSIONRECOVERY data that restores `current`: the initial record, and a "to be"
    /// record with the database, collation and language where they differ and the changed states.
    func feature(current: SQLSessionInfo) -> SessionRecoveryFeature {
        var toBe = SessionRecoveryData()
        if current.database != initial.database { toBe.database = current.database }
        let collation = Self.collationBytes(current.collation)
        if collation != initial.collation { toBe.collation = collation }
        if current.language != initial.language { toBe.language = current.language }
        toBe.states = changedStates.keys.sorted().compactMap { id in
            changedStates[id].map { SessionState.State(id: id, value: $0.value) }
        }
        return SessionRecoveryFeature(initial: initial, toBe: toBe)
    }

    static func collationBytes(_ collation: Collation?) -> [UInt8] {
        guard let collation else { return [] }
        var w = ByteWriter(capacity: 5)
        collation.encode(into: &w)
        return w.bytes
    }

    // MARK: - Recovering

    /// The connection was found dropped while idle (`cause`: FIN, RST…), before the first byte of
    /// a request. `inTransaction`: a transaction descriptor is held; `reconnectable`: the
    /// connection knows where to reconnect (it was not opened over a caller's stream).
    mutating func connectionLost(cause: String, current: SQLSessionInfo, inTransaction: Bool,
                                 reconnectable: Bool, now: Duration) -> Action {
        guard phase == .idle else { return refuse(.notIdle, "the connection was lost (\(cause)) while recovering") }
        self.cause = cause
        lostAt = now
        if retryCount == 0 || !requested {
            return refuse(.disabled, "the connection was lost while idle (\(cause)); idle connection recovery is off (ConnectRetryCount=0)")
        }
        if inTransaction {
            return refuse(.insideTransaction, "the connection was lost while idle (\(cause)) inside a transaction;"
                          + " the transaction is gone and is not recovered")
        }
        if !acknowledged {
            return refuse(.notAcknowledged, "the connection was lost while idle (\(cause)); the server did not acknowledge"
                          + " SESSIONRECOVERY at login, so the session cannot be recovered")
        }
        if !isRecoverable {
            let ids = unrecoverableStates.sorted().map { String($0) }.joined(separator: ", ")
            return refuse(.unrecoverableState, "the connection was lost while idle (\(cause)); the server marked the session"
                          + " state unrecoverable (SESSIONSTATE fRecoverable clear" + (ids.isEmpty ? ")" : ", StateId \(ids))"))
        }
        if !reconnectable {
            return refuse(.notReconnectable, "the connection was lost while idle (\(cause)); it was opened over a given"
                          + " stream and cannot reconnect")
        }
        phase = .reconnecting(attempt: 1)
        return .reconnect(attempt: 1, feature(current: current))
    }

    /// The attempt being made failed with `error`.
    mutating func attemptFailed(_ error: SQLClientError, now: Duration) -> Action {
        guard case .reconnecting(let attempt) = phase else { return refuse(.notIdle, "a recovery attempt failed out of turn") }
        if attempt >= retryCount {
            return refuse(.retryBudgetExhausted, "the connection was lost while idle (\(cause)) and \(attempt) recovery"
                          + " attempt(s) (ConnectRetryCount=\(retryCount)) failed; the last: \(error.message)",
                          attempts: attempt, underlying: error)
        }
        let until = now + interval
        phase = .waiting(attempt: attempt, until: until)
        return .wait(until: until, nextAttempt: attempt + 1)
    }

    /// The wait after a failed attempt is over (`now` at or past its deadline): the next attempt.
    mutating func retryDue(now: Duration, current: SQLSessionInfo) -> Action? {
        guard case .waiting(let attempt, let until) = phase, now >= until else { return nil }
        phase = .reconnecting(attempt: attempt + 1)
        return .reconnect(attempt: attempt + 1, feature(current: current))
    }

    /// The attempt logged in; `ack` is its FEATUREEXTACK, which must acknowledge SESSIONRECOVERY.
    mutating func attemptSucceeded(ack: FeatureExtAck?, now: Duration) -> Action {
        guard case .reconnecting(let attempt) = phase else { return refuse(.notIdle, "a recovery login finished out of turn") }
        guard let data = ack?.data(for: .sessionRecovery) else {
            return refuse(.notAcknowledged, "the connection was lost while idle (\(cause)); the server accepted the recovery"
                          + " login but did not acknowledge SESSIONRECOVERY, so the session was not restored", attempts: attempt)
        }
        var reader = ByteReader(data)
        if let states = try? SessionRecoveryData.decodeStates(from: &reader) {
            // The restored session's states: kept as changes, so a later recovery restores them too.
            for state in states where initial.states.first(where: { $0.id == state.id })?.value != state.value {
                let sequence = changedStates[state.id]?.sequence ?? 0
                changedStates[state.id] = (sequence, state.value)
            }
        }
        phase = .idle
        recoveries += 1
        return .recovered(attempts: attempt, duration: now - lostAt)
    }

    /// The connection was lost while not idle (a request being read): no recovery, the
    /// request's rules (cancel, timeout, close) stay as they are.
    mutating func lostOutsideIdle(cause: String) -> Action {
        refuse(.notIdle, "the connection was lost (\(cause)) while a request was running; only an idle connection is recovered")
    }

    /// The driver gave up (its task was cancelled while waiting or reconnecting).
    mutating func abandoned(_ error: SQLClientError) -> Action {
        phase = .failed
        return .fail(error)
    }

    private mutating func refuse(_ reason: SQLSessionRecoveryError.Reason, _ message: String, attempts: Int = 0,
                                 underlying: SQLClientError? = nil) -> Action {
        phase = .failed
        let detail = SQLSessionRecoveryError(reason: reason, attempts: attempts, lastAttemptError: underlying)
        return .fail(SQLClientError(.connectionLost, message + ". " + Self.howToReconnect(reason), underlying: detail))
    }

    /// What the user of a connection lost while idle can do, ending every `.connectionLost`
    /// message: this connection does not reconnect by itself (session state it cannot see, such
    /// as temporary tables or SET options sent as SQL text, would be lost silently).
    static func howToReconnect(_ reason: SQLSessionRecoveryError.Reason) -> String {
        var text = "This connection is closed and does not reconnect by itself: open a new one (SQLConnection.connect)"
        text += reason == .insideTransaction ? " and run the transaction again from its start" : " and run the request again"
        text += ", or take connections from an SQLConnectionPool, which checks an idle connection before lending it"
            + " and replaces one found dropped"
        if reason == .disabled {
            text += ", or set ConnectRetryCount (SQLConnectRetryPolicy.count) to 1 or more so that an idle connection's"
                + " session is recovered on a server that acknowledges SESSIONRECOVERY (TDS 7.4)"
        }
        return text
    }
}

/// Why a connection found dropped while idle was not recovered (the `underlying` error of a
/// ``SQLClientError`` whose code is ``SQLClientError/Code/connectionLost``; see
/// ``SQLClientError/sessionRecoveryError``). [MS-TDS] 2.2.6.4 SESSIONRECOVERY.
public struct SQLSessionRecoveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The case that stopped the recovery.
    public enum Reason: String, Sendable, Hashable {
        /// A transaction was open: its work is gone with the session, so nothing is recovered.
        case insideTransaction
        /// The server did not acknowledge SESSIONRECOVERY (at the first login, or in the recovery login).
        case notAcknowledged
        /// A SESSIONSTATE token marked the session state unrecoverable (fRecoverable clear).
        case unrecoverableState
        /// Every attempt (``SQLConnectRetryPolicy/count``, ``SQLConnectRetryPolicy/interval`` apart) failed.
        case retryBudgetExhausted
        /// Recovery is off (`ConnectRetryCount=0`, or a TDS version before 7.4).
        case disabled
        /// The connection was opened over a caller's stream: there is nowhere to reconnect to.
        case notReconnectable
        /// The connection was lost again while it was being recovered.
        case notIdle
    }

    /// The case.
    public var reason: Reason
    /// Recovery attempts made (0 when none was started).
    public var attempts: Int
    /// The last attempt's error, for ``Reason/retryBudgetExhausted``.
    public var lastAttemptError: SQLClientError?

    /// An error for `reason` after `attempts` attempts.
    public init(reason: Reason, attempts: Int = 0, lastAttemptError: SQLClientError? = nil) {
        self.reason = reason
        self.attempts = attempts
        self.lastAttemptError = lastAttemptError
    }

    /// Equal when the reason and the attempts are (the last attempt's error is not compared).
    public static func == (a: Self, b: Self) -> Bool { a.reason == b.reason && a.attempts == b.attempts }
    /// Hashes the reason and the attempts.
    public func hash(into hasher: inout Hasher) { hasher.combine(reason); hasher.combine(attempts) }

    /// `session recovery refused: <reason> (attempts N)`.
    public var description: String {
        "session recovery refused: \(reason.rawValue)" + (attempts > 0 ? " (attempts \(attempts))" : "")
    }
}

extension SQLClientError.Code {
    /// The connection was found dropped while idle and was not recovered: the underlying
    /// ``SQLSessionRecoveryError`` says why (a transaction was open, the server did not
    /// acknowledge SESSIONRECOVERY, the state was unrecoverable, every retry failed).
    public static let connectionLost = SQLClientError.Code("connectionLost")
}

extension SQLClientError {
    /// Why an idle connection was not recovered, for an error with code ``Code/connectionLost``.
    public var sessionRecoveryError: SQLSessionRecoveryError? { underlying as? SQLSessionRecoveryError }
}
