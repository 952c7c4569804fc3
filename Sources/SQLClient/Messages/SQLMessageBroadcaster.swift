import Foundation
import Synchronization
import TDS

/// Server messages (PRINT, RAISERROR, INFO and ERROR tokens: [MS-TDS] 2.2.7.13 INFO, 2.2.7.10
/// ERROR) for every listener: each subscriber receives every message published from the moment
/// it subscribed, in order, independently of the others.
///
/// ```swift
/// let messages = connection.messages.subscribe()     // subscribed now: nothing after this is missed
/// Task { for await m in messages { print(m) } }
/// _ = try await connection.execute("PRINT 'one'; PRINT 'two'")
/// ```
///
/// `for await message in connection.messages` subscribes when the loop starts (each loop, each
/// task, is a subscriber of its own; iterating twice is two subscriptions, never a trap).
/// Subscribe with ``subscribe()`` before starting the work whose messages you want.
///
/// **Buffer policy.** The publisher (the connection) never waits for a subscriber. Each
/// subscriber has a buffer of at most ``bufferLimit`` unread messages; when a message arrives
/// for a subscriber whose buffer is full, that subscriber's *oldest* unread message is dropped
/// (the newest are kept) and its ``SQLMessageSubscription/droppedCount`` grows by one; other
/// subscribers are not affected. ``droppedCount`` totals the drops of all subscribers.
/// After the connection closes, subscribers read what is buffered, then their loops end.
public final class SQLMessageBroadcaster: AsyncSequence, Sendable {
    public typealias Element = SQLServerMessage

    /// The most unread messages one subscriber may hold before its oldest are dropped (at least 1).
    public let bufferLimit: Int
    private let state: Mutex<State>

    /// A broadcaster whose subscribers each buffer at most `bufferLimit` unread messages (clamped to at least 1).
    init(bufferLimit: Int = 1024) {
        self.bufferLimit = Swift.max(1, bufferLimit)
        self.state = Mutex(State())
    }

    /// Subscribes now: the subscription receives every message published from this call on.
    public func subscribe() -> SQLMessageSubscription {
        let id = state.withLock { s -> UInt64 in
            s.nextID &+= 1
            s.subscribers[s.nextID] = Subscriber(finished: s.finished)
            return s.nextID
        }
        return SQLMessageSubscription(broadcaster: self, id: id)
    }

    /// Subscribes (see ``subscribe()``) and iterates the new subscription.
    public func makeAsyncIterator() -> SQLMessageSubscription.AsyncIterator {
        subscribe().makeAsyncIterator()
    }

    /// The number of live subscriptions.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Messages dropped so far across all subscribers because a buffer was full (see the buffer policy).
    public var droppedCount: Int { state.withLock { $0.dropped } }

    /// Delivers `message` to every current subscriber: resumes a waiting one, else buffers it
    /// (dropping that subscriber's oldest unread message when its buffer is full). Never waits.
    func publish(_ message: SQLServerMessage) {
        var resume: [CheckedContinuation<SQLServerMessage?, Never>] = []
        state.withLock { s in
            guard !s.finished else { return }
            for i in s.subscribers.indices {
                if s.subscribers.values[i].finished { continue }
                if let waiter = s.subscribers.values[i].waiter {
                    s.subscribers.values[i].waiter = nil
                    resume.append(waiter)
                } else if s.subscribers.values[i].push(message, limit: bufferLimit) {
                    s.dropped += 1
                }
            }
        }
        for waiter in resume { waiter.resume(returning: message) }
    }

    /// Ends every subscription once its buffer is read; later subscriptions end at once.
    func finish() {
        var resume: [CheckedContinuation<SQLServerMessage?, Never>] = []
        state.withLock { s in
            s.finished = true
            for i in s.subscribers.indices {
                s.subscribers.values[i].finished = true
                if let waiter = s.subscribers.values[i].waiter {
                    s.subscribers.values[i].waiter = nil
                    resume.append(waiter)
                }
            }
        }
        for waiter in resume { waiter.resume(returning: nil) }
    }

    // MARK: - Subscriber side

    /// The next message for subscription `id`: a buffered one at once, else waits for one; nil
    /// once finished (or cancelled) and drained.
    fileprivate func next(_ id: UInt64) async -> SQLServerMessage? {
        if let ready = state.withLock({ s in s.subscribers[id]?.take() }) { return ready }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<SQLServerMessage?, Never>) in
                let immediate: SQLServerMessage?? = state.withLock { s in
                    guard var sub = s.subscribers[id] else { return .some(nil) }
                    if let m = sub.take() { s.subscribers[id] = sub; return .some(m) }
                    if sub.finished || Task.isCancelled { return .some(nil) }
                    sub.waiter = continuation
                    s.subscribers[id] = sub
                    return .none
                }
                if case .some(let m) = immediate { continuation.resume(returning: m) }
            }
        } onCancel: {
            self.end(id, remove: false)
        }
    }

    /// Ends subscription `id` (resuming its waiter with nil); `remove` also forgets it.
    fileprivate func end(_ id: UInt64, remove: Bool) {
        let waiter = state.withLock { s -> CheckedContinuation<SQLServerMessage?, Never>? in
            let w = s.subscribers[id]?.waiter
            if remove {
                s.subscribers[id] = nil
            } else {
                s.subscribers[id]?.waiter = nil
                s.subscribers[id]?.finished = true
                s.subscribers[id]?.clear()
            }
            return w
        }
        waiter?.resume(returning: nil)
    }

    fileprivate func dropped(_ id: UInt64) -> Int { state.withLock { $0.subscribers[id]?.dropped ?? 0 } }
    fileprivate func buffered(_ id: UInt64) -> Int { state.withLock { $0.subscribers[id]?.count ?? 0 } }

    // MARK: - State

    private struct Subscriber {
        var buffer: [SQLServerMessage] = []
        var head = 0
        var waiter: CheckedContinuation<SQLServerMessage?, Never>?
        var finished: Bool
        var dropped = 0

        init(finished: Bool) { self.finished = finished }

        var count: Int { buffer.count - head }

        /// Buffers `message`; returns true when the oldest unread one was dropped to make room.
        mutating func push(_ message: SQLServerMessage, limit: Int) -> Bool {
            var droppedOne = false
            if count >= limit {
                head += 1
                dropped += 1
                droppedOne = true
            }
            buffer.append(message)
            compact()
            return droppedOne
        }

        mutating func take() -> SQLServerMessage? {
            guard head < buffer.count else { return nil }
            let m = buffer[head]
            head += 1
            compact()
            return m
        }

        mutating func clear() {
            buffer = []
            head = 0
        }

        private mutating func compact() {
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64, head * 2 >= buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
        }
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        var finished = false
        var dropped = 0
    }
}

/// One subscriber of an ``SQLMessageBroadcaster``: the server messages published since it was
/// made, in order. Iterate it once (one loop, one task); dropping it (or cancelling the
/// iterating task) ends the subscription.
public final class SQLMessageSubscription: AsyncSequence, Sendable {
    public typealias Element = SQLServerMessage
    private let broadcaster: SQLMessageBroadcaster
    private let id: UInt64

    fileprivate init(broadcaster: SQLMessageBroadcaster, id: UInt64) {
        self.broadcaster = broadcaster
        self.id = id
    }

    deinit { broadcaster.end(id, remove: true) }

    /// Messages this subscriber lost because its buffer was full (its oldest unread ones).
    public var droppedCount: Int { broadcaster.dropped(id) }

    /// Messages received and not read yet (at most ``SQLMessageBroadcaster/bufferLimit``).
    public var bufferedCount: Int { broadcaster.buffered(id) }

    /// Ends the subscription: a waiting `next()` returns nil, buffered messages are discarded.
    public func cancel() { broadcaster.end(id, remove: false) }

    /// Iterates this subscription (the iterator keeps it alive).
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: self) }

    /// Reads the subscription's messages in order; nil after the connection closed (and the buffer
    /// is read) or after ``SQLMessageSubscription/cancel()``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: SQLMessageSubscription

        /// The next message, waiting for one when none is buffered; nil at the end.
        public mutating func next() async -> SQLServerMessage? {
            await subscription.broadcaster.next(subscription.id)
        }
    }
}
