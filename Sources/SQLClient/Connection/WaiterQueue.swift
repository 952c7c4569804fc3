import Foundation

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
        var key: Key
        var state: State
    }

    private let lock = NSLock()
    /// In the order they were announced (few: a linear search beats hashing).
    private var slots: [Slot] = []
    /// The last key ``expectNext()`` gave out.
    private var lastKey: UInt64 = 0

    init() {}

    // The lock is taken with lock()/unlock(), not the generic `withLock`, which would look up
    // the generic metadata of its result on every call.

    private func index(_ key: Key) -> Int? {
        var i = 0
        while i < slots.count {
            if slots[i].key == key { return i }
            i += 1
        }
        return nil
    }

    /// How many slots are announced and not yet returned.
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return slots.count
    }

    /// True when no slot is waiting to be resumed (announced or parked; early ones don't count).
    var isIdle: Bool {
        lock.lock()
        defer { lock.unlock() }
        return slots.allSatisfy { if case .early = $0.state { true } else { false } }
    }

    /// True when waiter `key` is parked (tests, and a watcher's own checks).
    func isParked(_ key: Key) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let i = index(key), case .parked = slots[i].state else { return false }
        return true
    }

    /// Announces the waiter `key` (a key already announced keeps its slot).
    func expect(_ key: Key) {
        lock.lock()
        defer { lock.unlock() }
        if index(key) == nil { slots.append(Slot(key: key, state: .expected)) }
    }

    /// Resumes waiter `key` with `result` (kept until it waits, when it has not parked yet).
    /// - Returns: false when there is no such waiter to resume: never announced, already
    ///   resumed, or removed by its cancellation.
    @discardableResult
    func resume(_ key: Key, with result: Result<Value, any Error>) -> Bool {
        lock.lock()
        guard let i = index(key) else {
            lock.unlock()
            return false
        }
        return resume(at: i, with: result)
    }

    /// Resumes the slot at `i` (the lock held; released here).
    private func resume(at i: Int, with result: Result<Value, any Error>) -> Bool {
        switch slots[i].state {
        case .early:
            lock.unlock()
            return false
        case .expected:
            slots[i].state = .early(result)
            lock.unlock()
            return true
        case .parked(let continuation):
            slots.remove(at: i)
            lock.unlock()
            continuation.resume(with: result)
            return true
        }
    }

    /// Resumes the oldest waiter not resumed yet (announced or parked) with `result`.
    /// - Returns: false when none is waiting.
    @discardableResult
    func resumeFirst(with result: Result<Value, any Error>) -> Bool {
        lock.lock()
        var i = 0
        while i < slots.count {
            if case .early = slots[i].state {
                i += 1
                continue
            }
            return resume(at: i, with: result)
        }
        lock.unlock()
        return false
    }

    /// Resumes every waiter not resumed yet with `result` (a close: nobody is left waiting).
    func resumeAll(with result: Result<Value, any Error>) {
        lock.lock()
        guard !slots.isEmpty else {
            lock.unlock()
            return
        }
        var parked: [CheckedContinuation<Value, any Error>] = []
        var kept: [Slot] = []
        for var slot in slots {
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
        slots = kept
        lock.unlock()
        for continuation in parked { continuation.resume(with: result) }
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
        // Announced now if it was not: a cancellation that comes before it parks then finds
        // its slot (and is what it returns), instead of missing it and leaving it parked.
        expect(key)
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
        lock.lock()
        defer { lock.unlock() }
        guard let i = index(key), case .early(let result) = slots[i].state else { return nil }
        slots.remove(at: i)
        return result
    }

    private func park(_ key: Key, _ continuation: CheckedContinuation<Value, any Error>) {
        lock.lock()
        guard let i = index(key) else {
            slots.append(Slot(key: key, state: .parked(continuation)))
            lock.unlock()
            return
        }
        switch slots[i].state {
        case .expected:
            slots[i].state = .parked(continuation)
            lock.unlock()
        case .early(let result):   // resumed (or cancelled) between the first look and here
            slots.remove(at: i)
            lock.unlock()
            continuation.resume(with: result)
        case .parked:   // a second wait for one key: refused (the first keeps the slot)
            lock.unlock()
            continuation.resume(throwing: WaiterQueueMisuse())
        }
    }

    /// Cancels waiter `key`: parked, it is removed and resumed with `error`; announced, `error`
    /// is what it returns when it waits; resumed already, nothing changes.
    private func cancel(_ key: Key, _ error: any Error) {
        lock.lock()
        guard let i = index(key) else {
            lock.unlock()
            return
        }
        switch slots[i].state {
        case .early:
            lock.unlock()
        case .expected:
            slots[i].state = .early(.failure(error))
            lock.unlock()
        case .parked(let continuation):
            slots.remove(at: i)
            lock.unlock()
            continuation.resume(throwing: error)
        }
    }
}

/// A second wait for one key of a ``WaiterQueue`` (a bug of its owner, never of the input).
struct WaiterQueueMisuse: Error {}

extension WaiterQueue where Key == UInt64 {
    /// Announces a waiter of a queue served in order (a gate) under a fresh key, and returns it
    /// for ``wait(_:isolation:cancellingWith:onCancel:)``.
    func expectNext() -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        lastKey &+= 1
        slots.append(Slot(key: lastKey, state: .expected))
        return lastKey
    }
}
