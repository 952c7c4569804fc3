import TDS

/// Where a connection's time comes from: the state machine reads `now()` for its deadlines and
/// the driver sleeps until them. Times are durations since the clock's own origin, so a test
/// clock can start at zero and be moved by hand (``ManualConnectionClock``).
protocol ConnectionClock: Sendable {
    /// Time since the clock's origin.
    func now() -> Duration
    /// Suspends until `now() >= deadline`; throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Duration) async throws
}

/// The monotonic system clock (`ContinuousClock`), from the moment it was made.
struct SystemConnectionClock: ConnectionClock {
    private let origin = ContinuousClock.now

    func now() -> Duration { ContinuousClock.now - origin }

    func sleep(until deadline: Duration) async throws {
        // Deadlines come from validated durations (at most SQLConnectionConfiguration.maximumTimeout
        // from now), so the instant stays far inside what Task.sleep can represent.
        try await Task.sleep(until: origin + deadline, clock: .continuous)
    }
}

/// A timer the state machine asks the driver to run (``ConnectionStateMachine/Action/scheduleTimeout(_:deadline:)``).
enum TimerID: Hashable, Sendable, CustomStringConvertible {
    /// The login: one budget for PRELOGIN, TLS and LOGIN7 (the driver counts DNS and TCP in it).
    case login
    /// A request's query timeout, counted from when its first packet is written.
    case query(RequestID)
    /// The bound on a cancelled request's ATTENTION acknowledgement (``SQLConnectionConfiguration/cancelTimeout``).
    case cancel(RequestID)

    var description: String {
        switch self {
        case .login: return "login"
        case .query(let id): return "query\(id)"
        case .cancel(let id): return "cancel\(id)"
        }
    }
}
