import Foundation
@testable import SQLClient

/// A ``ConnectionClock`` the test moves by hand: `now()` changes only in ``advance(by:)``, which
/// wakes every sleeper whose deadline has come. A cancelled sleeper leaves at once.
final class ManualConnectionClock: ConnectionClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Duration = .zero
    private var sleepers: [UInt64: (deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = [:]
    private var nextID: UInt64 = 0

    func now() -> Duration { lock.withLock { current } }

    func sleep(until deadline: Duration) async throws {
        let id: UInt64 = lock.withLock { nextID += 1; return nextID }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let due: Bool = lock.withLock {
                    if deadline <= current || Task.isCancelled { return true }
                    sleepers[id] = (deadline, c)
                    return false
                }
                if due {
                    if Task.isCancelled { c.resume(throwing: CancellationError()) } else { c.resume() }
                }
            }
        } onCancel: {
            let c = lock.withLock { sleepers.removeValue(forKey: id)?.continuation }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward and wakes the sleepers now due.
    func advance(by duration: Duration) {
        let woken: [CheckedContinuation<Void, any Error>] = lock.withLock {
            current += duration
            let due = sleepers.filter { $0.value.deadline <= current }
            for id in due.keys { sleepers[id] = nil }
            return due.map(\.value.continuation)
        }
        for c in woken { c.resume() }
    }

    /// The number of tasks sleeping on this clock.
    var sleeperCount: Int { lock.withLock { sleepers.count } }

    /// Waits (a bounded number of scheduler turns, not a duration of time) until a task sleeps
    /// until `deadline` (a timer the connection armed at that instant of this clock).
    func waitForSleeper(until deadline: Duration) async throws {
        for _ in 0 ..< 5_000 {
            if lock.withLock({ sleepers.values.contains { $0.deadline == deadline } }) { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        let deadlines = lock.withLock { sleepers.values.map(\.deadline) }
        throw SQLClientError(.timeout, "no sleeper until \(deadline); sleepers until \(deadlines)")
    }

    /// Waits (a bounded number of scheduler turns, not a duration of time) until `count` tasks sleep.
    func waitForSleepers(_ count: Int) async throws {
        for _ in 0 ..< 5_000 {
            if sleeperCount == count { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw SQLClientError(.timeout, "\(sleeperCount) sleepers, expected \(count)")
    }
}
