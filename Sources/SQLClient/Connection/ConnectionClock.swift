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
