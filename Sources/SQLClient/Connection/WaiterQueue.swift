import Foundation

/// The one queue of waiters of the client (a connection's request turns, its reader and write
/// gates, the reader ahead's watchers; a pool's leases and its close): each waiter is a slot
/// under a key, resumed once with a value or an error, in any order or oldest first.
///
/// A waiter is announced first (``expect(_:)``, synchronously, before whoever decides its turn
/// can answer), then waits for it (``wait(_:isolation:cancellingWith:onCancel:)``): a resume that
/// comes in between (an "early" turn or failure) is kept and returned at once, so the owner never
/// loses one to a suspension between deciding and parking. A slot is resumed at most once (a
/// second resume is refused); ``resumeAll(with:)`` resumes every slot (a closed connection or
/// pool: nobody is left waiting); ``resumeFirst(with:)`` the oldest still waiting (a gate handed
/// over in order).
///
/// Cancellation, per wait: with `cancellingWith`, a cancelled waiter is removed and resumed with
/// that error at once (before or after it parked; a turn already given is kept); with `onCancel`
/// only, the owner is told and decides (its state machine fails the slot, or gives it its turn).
///
/// A class with its own lock, so that a cancellation handler (which runs on any thread) resumes
/// at once, and the owner (an actor, or a lock-guarded pool) needs nothing else; the lock is
/// never held while a continuation is resumed.
final class WaiterQueue<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    private enum State {
        /// Announced, not resumed, not parked yet.
        case expected
        /// Resumed before it parked: returned at once.
        case early(Result<Value, any Error>)
        /// Parked.
        case parked(CheckedContinuation<Value, any Error>)
    }

    private struct Slot {
        /// Its place in the order of announcement (``resumeFirst(with:)``).
        var order: UInt64
        var state: State
    }

    private let lock = NSLock()
    private var slots: [Key: Slot] = [:]
    private var nextOrder: UInt64 = 0

    init() {}

    /// How many slots are announced and not yet returned.
    var count: Int { lock.withLock { slots.count } }

    /// True when no slot is waiting to be resumed (announced or parked; early ones don't count).
    var isIdle: Bool {
        lock.withLock {
            slots.values.allSatisfy { if case .early = $0.state { true } else { false } }
        }
    }

    /// True when waiter `key` is parked (tests, and a watcher's own checks).
    func isParked(_ key: Key) -> Bool {
        lock.withLock { if case .parked? = slots[key]?.state { true } else { false } }
    }

    /// Announces the waiter `key` (a key already announced keeps its slot).
    func expect(_ key: Key) {
        lock.withLock {
            guard slots[key] == nil else { return }
            nextOrder &+= 1
            slots[key] = Slot(order: nextOrder, state: .expected)
        }
    }

    /// Resumes waiter `key` with `result` (kept until it waits, when it has not parked yet).
    /// - Returns: false when there is no such waiter to resume: never announced, already
    ///   resumed, or removed by its cancellation.
    @discardableResult
    func resume(_ key: Key, with result: Result<Value, any Error>) -> Bool {
        let found: CheckedContinuation<Value, any Error>?? = lock.withLock {
            guard let slot = slots[key] else { return nil }
            switch slot.state {
            case .early: return nil
            case .expected:
                slots[key]?.state = .early(result)
                return .some(nil)
            case .parked(let continuation):
                slots[key] = nil
                return .some(continuation)
            }
        }
        guard let found else { return false }
        found?.resume(with: result)
        return true
    }

    /// Resumes the oldest waiter not resumed yet (announced or parked) with `result`.
    /// - Returns: false when none is waiting.
    @discardableResult
    func resumeFirst(with result: Result<Value, any Error>) -> Bool {
        let continuation: CheckedContinuation<Value, any Error>?? = lock.withLock {
            var first: (key: Key, slot: Slot)?
            for (key, slot) in slots {
                if case .early = slot.state { continue }
                if first.map({ slot.order < $0.slot.order }) ?? true { first = (key, slot) }
            }
            guard let first else { return nil }
            if case .parked(let continuation) = first.slot.state {
                slots[first.key] = nil
                return .some(continuation)
            }
            slots[first.key]?.state = .early(result)
            return .some(nil)
        }
        guard let found = continuation else { return false }
        found?.resume(with: result)
        return true
    }

    /// Resumes every waiter not resumed yet with `result` (a close: nobody is left waiting).
    func resumeAll(with result: Result<Value, any Error>) {
        let continuations: [CheckedContinuation<Value, any Error>] = lock.withLock {
            var parked: [(UInt64, CheckedContinuation<Value, any Error>)] = []
            for (key, slot) in slots {
                switch slot.state {
                case .early: continue
                case .expected: slots[key]?.state = .early(result)
                case .parked(let continuation):
                    slots[key] = nil
                    parked.append((slot.order, continuation))
                }
            }
            return parked.sorted { $0.0 < $1.0 }.map(\.1)
        }
        for continuation in continuations { continuation.resume(with: result) }
    }

    /// Waits for waiter `key`'s turn (announced with ``expect(_:)`` before; announced here
    /// otherwise): returns at once with a result that came early.
    /// - Parameters:
    ///   - cancellingWith: when the task is cancelled (before or while it waits), the waiter is
    ///     removed and throws this error, unless its result came first. nil: it keeps waiting.
    ///   - onCancel: called when the task is cancelled while in here (the owner's decision).
    /// - Throws: the error it is resumed with, or `cancellingWith`.
    func wait(_ key: Key, isolation: isolated (any Actor)? = #isolation, cancellingWith error: (any Error)? = nil,
              onCancel: (@Sendable () -> Void)? = nil) async throws -> Value {
        if let early = takeEarly(key) { return try early.get() }
        if error == nil, onCancel == nil {
            return try await withCheckedThrowingContinuation(isolation: isolation) { park(key, $0) }
        }
        return try await withTaskCancellationHandler(operation: {
            try await withCheckedThrowingContinuation(isolation: isolation) { park(key, $0) }
        }, onCancel: {
            if let error { self.cancel(key, error) }
            onCancel?()
        }, isolation: isolation)
    }

    private func takeEarly(_ key: Key) -> Result<Value, any Error>? {
        lock.withLock {
            if case .early(let result)? = slots[key]?.state {
                slots[key] = nil
                return result
            }
            return nil
        }
    }

    private func park(_ key: Key, _ continuation: CheckedContinuation<Value, any Error>) {
        let early: Result<Value, any Error>? = lock.withLock {
            guard let slot = slots[key] else {
                nextOrder &+= 1
                slots[key] = Slot(order: nextOrder, state: .parked(continuation))
                return nil
            }
            switch slot.state {
            case .expected:
                slots[key]?.state = .parked(continuation)
                return nil
            case .early(let result):   // resumed (or cancelled) between the first look and here
                slots[key] = nil
                return result
            case .parked:   // a second wait for one key: refused (the first keeps the slot)
                return .failure(WaiterQueueMisuse())
            }
        }
        if let early { continuation.resume(with: early) }
    }

    /// Cancels waiter `key`: parked, it is removed and resumed with `error`; announced, `error`
    /// is what it returns when it waits; resumed already, nothing changes.
    private func cancel(_ key: Key, _ error: any Error) {
        let continuation: CheckedContinuation<Value, any Error>? = lock.withLock {
            guard let slot = slots[key] else { return nil }
            switch slot.state {
            case .early: return nil
            case .expected:
                slots[key]?.state = .early(.failure(error))
                return nil
            case .parked(let continuation):
                slots[key] = nil
                return continuation
            }
        }
        continuation?.resume(throwing: error)
    }
}

/// A second wait for one key of a ``WaiterQueue`` (a bug of its owner, never of the input).
struct WaiterQueueMisuse: Error {}

extension WaiterQueue where Key == UInt64 {
    /// Announces a waiter of a queue served in order (a gate) under a fresh key, and returns it
    /// for ``wait(_:isolation:cancellingWith:onCancel:)``.
    func expectNext() -> UInt64 {
        lock.withLock {
            nextOrder &+= 1
            slots[nextOrder] = Slot(order: nextOrder, state: .expected)
            return nextOrder
        }
    }
}
