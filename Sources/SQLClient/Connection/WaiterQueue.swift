import Foundation
import Synchronization

/// The one queue of waiters of the client (a connection's request turns, its write gate, the
/// cursors waiting for the batch read ahead; a pool's leases and its close): each waiter is a slot
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
/// A class with its own lock (a `Mutex`), so that a cancellation handler (which runs on any
/// thread) resumes at once, and the owner (an actor, or a lock-guarded pool) needs nothing else;
/// the lock is never held while a continuation is resumed.
final class WaiterQueue<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private enum State {
        /// Announced, not resumed, not parked yet.
        case expected
        /// Resumed before it parked: returned at once.
        case early(Result<Value, any Error>)
        /// Parked.
        case parked(CheckedContinuation<Value, any Error>)
    }

    private struct Slot {
        var key: Key
        var state: State
    }

    /// The slots, in the order they were announced, and the last key ``expectNext()`` gave out.
    private struct Slots {
        /// Few: a linear search beats hashing.
        var slots: [Slot] = []
        var lastKey: UInt64 = 0

        func index(_ key: Key) -> Int? {
            var i = 0
            while i < slots.count {
                if slots[i].key == key { return i }
                i += 1
            }
            return nil
        }

        /// Resumes the slot at `i`: whether it was, and the continuation to resume (once the
        /// lock is released) when it was parked.
        mutating func resume(at i: Int, with result: Result<Value, any Error>) -> Resumed {
            switch slots[i].state {
            case .early:
                return (false, nil)
            case .expected:
                slots[i].state = .early(result)
                return (true, nil)
            case .parked(let continuation):
                slots.remove(at: i)
                return (true, continuation)
            }
        }
    }

    /// Whether a slot was resumed, and the continuation to resume once the lock is released.
    private typealias Resumed = (resumed: Bool, parked: CheckedContinuation<Value, any Error>?)

    /// What ``park(_:_:)`` does once the lock is released.
    private enum ParkOutcome {
        case parked
        case resume(Result<Value, any Error>)
        case refuse
    }

    private let state = Mutex(Slots())

    init() {}

    /// How many slots are announced and not yet returned.
    var count: Int {
        state.withLock { $0.slots.count }
    }

    /// True when no slot is waiting to be resumed (announced or parked; early ones don't count).
    var isIdle: Bool {
        state.withLock { s in s.slots.allSatisfy { if case .early = $0.state { true } else { false } } }
    }

    /// True when waiter `key` is parked (tests, and a watcher's own checks).
    func isParked(_ key: Key) -> Bool {
        state.withLock { s in
            guard let i = s.index(key), case .parked = s.slots[i].state else { return false }
            return true
        }
    }

    /// Announces the waiter `key` (a key already announced keeps its slot).
    func expect(_ key: Key) {
        state.withLock { s in
            if s.index(key) == nil { s.slots.append(Slot(key: key, state: .expected)) }
        }
    }

    /// Resumes waiter `key` with `result` (kept until it waits, when it has not parked yet).
    /// - Returns: false when there is no such waiter to resume: never announced, already
    ///   resumed, or removed by its cancellation.
    @discardableResult
    func resume(_ key: Key, with result: Result<Value, any Error>) -> Bool {
        let (resumed, parked) = state.withLock { s -> Resumed in
            guard let i = s.index(key) else { return (false, nil) }
            return s.resume(at: i, with: result)
        }
        parked?.resume(with: result)
        return resumed
    }

    /// Resumes the oldest waiter not resumed yet (announced or parked) with `result`.
    /// - Returns: false when none is waiting.
    @discardableResult
    func resumeFirst(with result: Result<Value, any Error>) -> Bool {
        let (resumed, parked) = state.withLock { s -> Resumed in
            var i = 0
            while i < s.slots.count {
                if case .early = s.slots[i].state {
                    i += 1
                    continue
                }
                return s.resume(at: i, with: result)
            }
            return (false, nil)
        }
        parked?.resume(with: result)
        return resumed
    }

    /// Resumes every waiter not resumed yet with `result` (a close: nobody is left waiting).
    func resumeAll(with result: Result<Value, any Error>) {
        let parked = state.withLock { s -> [CheckedContinuation<Value, any Error>] in
            guard !s.slots.isEmpty else { return [] }
            var parked: [CheckedContinuation<Value, any Error>] = []
            var kept: [Slot] = []
            for var slot in s.slots {
                switch slot.state {
                case .early:
                    kept.append(slot)
                case .expected:
                    slot.state = .early(result)
                    kept.append(slot)
                case .parked(let continuation):
                    parked.append(continuation)
                }
            }
            s.slots = kept
            return parked
        }
        for continuation in parked { continuation.resume(with: result) }
    }

    /// Waits for waiter `key`'s turn (announced with ``expect(_:)`` before; announced here
    /// otherwise): returns at once with a result that came early.
    /// - Parameters:
    ///   - cancellingWith: when the task is cancelled (before or while it waits), the waiter is
    ///     removed and throws the error this makes (made only then: no error is allocated per
    ///     wait), unless its result came first. nil: it keeps waiting.
    ///   - onCancel: called when the task is cancelled while in here (the owner's decision).
    /// - Throws: the error it is resumed with, or `cancellingWith`.
    func wait(_ key: Key, isolation: isolated (any Actor)? = #isolation, cancellingWith error: (@Sendable () -> any Error)? = nil,
              onCancel: (@Sendable () -> Void)? = nil) async throws -> Value {
        if let early = takeEarly(key) { return try early.get() }
        // Announced now if it was not: a cancellation that comes before it parks then finds
        // its slot (and is what it returns), instead of missing it and leaving it parked.
        expect(key)
        if error == nil, onCancel == nil {
            return try await withCheckedThrowingContinuation(isolation: isolation) { park(key, $0) }
        }
        return try await withTaskCancellationHandler(operation: {
            try await withCheckedThrowingContinuation(isolation: isolation) { park(key, $0) }
        }, onCancel: {
            if let error { self.cancel(key, error()) }
            onCancel?()
        }, isolation: isolation)
    }

    private func takeEarly(_ key: Key) -> Result<Value, any Error>? {
        state.withLock { s in
            guard let i = s.index(key), case .early(let result) = s.slots[i].state else { return nil }
            s.slots.remove(at: i)
            return result
        }
    }

    private func park(_ key: Key, _ continuation: CheckedContinuation<Value, any Error>) {
        let outcome = state.withLock { s -> ParkOutcome in
            guard let i = s.index(key) else {
                s.slots.append(Slot(key: key, state: .parked(continuation)))
                return .parked
            }
            switch s.slots[i].state {
            case .expected:
                s.slots[i].state = .parked(continuation)
                return .parked
            case .early(let result):   // resumed (or cancelled) between the first look and here
                s.slots.remove(at: i)
                return .resume(result)
            case .parked:   // a second wait for one key: refused (the first keeps the slot)
                return .refuse
            }
        }
        switch outcome {
        case .parked: break
        case .resume(let result): continuation.resume(with: result)
        case .refuse: continuation.resume(throwing: WaiterQueueMisuse())
        }
    }

    /// Cancels waiter `key`: parked, it is removed and resumed with `error`; announced, `error`
    /// is what it returns when it waits; resumed already, nothing changes.
    private func cancel(_ key: Key, _ error: any Error) {
        let parked = state.withLock { s -> CheckedContinuation<Value, any Error>? in
            guard let i = s.index(key) else { return nil }
            switch s.slots[i].state {
            case .early:
                return nil
            case .expected:
                s.slots[i].state = .early(.failure(error))
                return nil
            case .parked(let continuation):
                s.slots.remove(at: i)
                return continuation
            }
        }
        parked?.resume(throwing: error)
    }
}

/// A second wait for one key of a ``WaiterQueue`` (a bug of its owner, never of the input).
struct WaiterQueueMisuse: Error {}

extension WaiterQueue where Key == UInt64 {
    /// Announces a waiter of a queue served in order (a gate) under a fresh key, and returns it
    /// for ``wait(_:isolation:cancellingWith:onCancel:)``.
    func expectNext() -> UInt64 {
        state.withLock { s in
            s.lastKey &+= 1
            s.slots.append(Slot(key: s.lastKey, state: .expected))
            return s.lastKey
        }
    }
}
