import Foundation
@testable import SQLClient

/// A ``ByteStream`` over a socket that hands the client at most a budget of bytes once
/// ``limit(to:)`` set one: a read past it waits (announced on ``blockedReads``) until
/// ``release()``, throws `.cancelled` when its task is cancelled (as `SocketStream`'s wait does)
/// and `.connectionClosed` when the stream is closed. It counts the bytes handed over and the
/// most reads in progress at once (the connection must never have two readers).
final class MeteredByteStream: ByteStream, @unchecked Sendable {
    let base: any ByteStream
    private let lock = NSLock()
    private var pending: [UInt8] = []
    private var start = 0
    private var budget: Int?
    private var waiter: CheckedContinuation<Void, any Error>?
    private var closed = false
    private var _delivered = 0
    private var readers = 0
    private var _mostReaders = 0
    /// One element each time a read starts waiting for budget.
    let blockedReads: AsyncStream<Void>
    private let blockedContinuation: AsyncStream<Void>.Continuation

    init(base: any ByteStream) {
        self.base = base
        (blockedReads, blockedContinuation) = AsyncStream<Void>.makeStream()
    }

    /// A stream over a new TCP connection to `127.0.0.1:port`.
    static func connect(port: UInt16) async throws -> MeteredByteStream {
        MeteredByteStream(base: try await SocketStream.connect(host: "127.0.0.1", port: Int(port), timeout: .seconds(10)))
    }

    /// Bytes handed to the client so far.
    var delivered: Int { lock.withLock { _delivered } }
    /// The most reads that were in progress at once.
    var mostReaders: Int { lock.withLock { _mostReaders } }

    /// The most bytes one read hands over (nil: what the socket read brought, up to `maxLength`).
    var piece: Int? {
        get { lock.withLock { _piece } }
        set { lock.withLock { _piece = newValue } }
    }
    private var _piece: Int?

    /// From now on hands over at most `bytes` more bytes (until ``release()``).
    func limit(to bytes: Int) {
        lock.withLock { budget = bytes }
    }

    /// Lifts the budget; a waiting read goes on.
    func release() {
        let w: CheckedContinuation<Void, any Error>? = lock.withLock {
            budget = nil
            defer { waiter = nil }
            return waiter
        }
        w?.resume()
    }

    func read(maxLength: Int) async throws -> [UInt8] {
        lock.withLock {
            readers += 1
            _mostReaders = max(_mostReaders, readers)
        }
        defer { lock.withLock { readers -= 1 } }
        while true {
            if lock.withLock({ budget == 0 }) {
                try await waitForBudget()
                continue
            }
            if lock.withLock({ start >= pending.count }) {
                let more = try await base.read(maxLength: 65_536)
                if more.isEmpty { return [] }
                lock.withLock { pending = more; start = 0 }
            }
            return lock.withLock {
                var n = min(max(1, maxLength), pending.count - start)
                if let p = _piece { n = min(n, max(1, p)) }
                if let b = budget { n = min(n, b); budget = b - n }
                defer { start += n; _delivered += n }
                return Array(pending[start ..< start + n])
            }
        }
    }

    private func waitForBudget() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Bool, SQLClientError> = lock.withLock {
                    if closed { return .failure(SQLClientError(.connectionClosed, "the stream was closed")) }
                    if Task.isCancelled { return .failure(SQLClientError(.cancelled, "the read was cancelled")) }
                    if budget != 0 { return .success(false) }
                    waiter = c
                    return .success(true)
                }
                switch outcome {
                case .failure(let error): c.resume(throwing: error)
                case .success(false): c.resume()   // the budget was lifted meanwhile
                case .success(true): blockedContinuation.yield()
                }
            }
        } onCancel: {
            let w: CheckedContinuation<Void, any Error>? = lock.withLock {
                defer { waiter = nil }
                return waiter
            }
            w?.resume(throwing: SQLClientError(.cancelled, "the read was cancelled"))
        }
    }

    func write(_ bytes: [UInt8]) async throws { try await base.write(bytes) }

    func close() {
        let w: CheckedContinuation<Void, any Error>? = lock.withLock {
            closed = true
            defer { waiter = nil }
            return waiter
        }
        w?.resume(throwing: SQLClientError(.connectionClosed, "the stream was closed"))
        base.close()
    }
}
