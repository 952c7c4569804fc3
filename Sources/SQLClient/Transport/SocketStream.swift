#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Synchronization
import TDS

/// A TCP connection over a non-blocking POSIX socket (IPv4 or IPv6).
///
/// No call blocks a thread of the Swift cooperative pool: name resolution (`getaddrinfo`) runs on a
/// Dispatch queue, and a read or write that would block suspends the task until a one-shot
/// `DispatchSource` reports the descriptor ready. `TCP_NODELAY` is set (TDS sends whole packets);
/// `SIGPIPE` is suppressed per call (`MSG_NOSIGNAL`) or per socket (`SO_NOSIGPIPE`).
///
/// Cancelling the task that waits in `read` makes that call throw `.cancelled` without closing
/// the socket (no byte is lost: the wait is before `recv`). A `write` is not interrupted by
/// cancellation (it would leave half a packet on the wire): it ends when every byte is sent or
/// the stream is closed.
///
/// `close()` may be called from any thread at any time: waiting reads and writes fail with
/// `.connectionClosed` at once, and the descriptor itself is closed only once no `recv`, `send`
/// or readiness source uses it any more (so a descriptor number reused by another socket is
/// never read or written).
///
/// `@unchecked Sendable` only for `lastReadWasShort` and `readCapacity`, which the one `read` at a
/// time owns (outside the lock, as the read's own state); everything shared is in `state`.
package final class SocketStream: ByteStream, @unchecked Sendable {
    /// The address actually connected to, for example `127.0.0.1:1433` or `[::1]:1433`.
    package let remoteAddress: String

    private let fd: Int32
    private let queue: DispatchQueue
    private let state = Mutex(State())

    /// What `close()`, the syscalls and the readiness waits share.
    private struct State: ~Copyable {
        var isClosed = false
        var fdClosed = false
        /// Readiness sources registered, and syscalls in flight, on `fd`.
        var activeSources = 0
        var syscallsInFlight = 0
        /// Tasks waiting for readiness, by id (any number per direction: none is ever stranded).
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiterID: UInt64 = 0
        /// An array a reader gave back (``giveBack(_:)``), for the next read to receive into.
        var spare: [UInt8] = []

        /// Closes `fd` once the stream is closed and nothing uses it.
        mutating func closeDescriptorIfUnused(_ fd: Int32) {
            if isClosed && activeSources == 0 && syscallsInFlight == 0 && !fdClosed {
                fdClosed = true
                _ = systemClose(fd)
            }
        }
    }

    /// The last `read` returned fewer bytes than it asked for (reads come one at a time).
    private var lastReadWasShort = false
    /// The buffer the next `read` allocates (at most its `maxLength`): ``initialReadCapacity``,
    /// doubled after each read that filled its buffer (a long response streaming in: fewer,
    /// larger reads and batches), back to ``initialReadCapacity`` after one that did not (a short
    /// answer is not given a large buffer).
    private var readCapacity = SocketStream.initialReadCapacity
    /// The first buffer of a `read`: 64 KiB.
    static let initialReadCapacity = 65_536

    /// The buffer of the read after one that received `received` bytes into `capacity`: twice
    /// `capacity` when it was filled (at most 2 GiB), else ``initialReadCapacity``.
    static func readCapacity(after received: Int, of capacity: Int) -> Int {
        received < capacity ? initialReadCapacity : min(capacity, 1 << 30) * 2
    }

    /// `@unchecked`: its source is a Dispatch source, safe from any thread but not marked
    /// `Sendable` by every platform's Dispatch.
    private final class Waiter: @unchecked Sendable {
        let source: DispatchSourceProtocol
        let continuation: CheckedContinuation<Void, Error>
        init(source: DispatchSourceProtocol, continuation: CheckedContinuation<Void, Error>) {
            self.source = source
            self.continuation = continuation
        }
    }

    private init(fd: Int32, remoteAddress: String) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.queue = DispatchQueue(label: "SQLClient.SocketStream.\(fd)")
    }

    deinit {
        // Every source has been cancelled by now (their handlers keep the stream alive until then).
        if !state.withLock({ $0.fdClosed }) { _ = systemClose(fd) }
    }

    // MARK: - Connecting

    /// Resolves `host` and connects to the first address that accepts, trying each address
    /// `getaddrinfo` returns in order.
    ///
    /// - Parameters:
    ///   - host: a DNS name, an IPv4 literal or an IPv6 literal (without brackets).
    ///   - port: the TCP port (1–65535).
    ///   - timeout: the time allowed for resolving and connecting to all addresses; nil waits as long as the OS does.
    /// - Throws: ``SQLClientError`` `.hostNotFound`, `.connectionFailed`, `.timeout` or `.cancelled`.
    package static func connect(host: String, port: Int, timeout: Duration? = nil) async throws -> SocketStream {
        guard (1...65535).contains(port) else {
            throw SQLClientError(.invalidConfiguration, "port \(port) is out of range 1–65535")
        }
        let deadline: DispatchTime? = timeout.map { DispatchTime.now() + $0.dispatchInterval }
        let addresses = try await resolve(host: host, port: port, deadline: deadline)
        var failures: [String] = []
        for address in addresses {
            try Task.checkCancellation(orThrow: SQLClientError(.cancelled, "connecting to \(host):\(port) was cancelled"))
            do {
                return try await connect(to: address, deadline: deadline)
            } catch let error as SQLClientError where error.code == .timeout || error.code == .cancelled {
                throw error
            } catch let error as SQLClientError {
                // "127.0.0.1:1: Connection refused" once, not "127.0.0.1:1: 127.0.0.1:1: …".
                var message = Substring(error.message)
                for prefix in ["\(host):\(port): ", "[\(host)]:\(port): "] where message.hasPrefix(prefix) {
                    message = message.dropFirst(prefix.count)
                }
                failures.append(String(message))
            }
        }
        throw SQLClientError(.connectionFailed,
                             "could not connect to \(host):\(port): " + failures.joined(separator: "; "))
    }

    /// One resolved address: the family and the raw `sockaddr` bytes.
    struct ResolvedAddress: Sendable {
        var family: Int32
        var storage: [UInt8]
        var text: String
    }

    /// Resolves `host` on a Dispatch queue (`getaddrinfo` blocks), giving up at `deadline`
    /// (`.timeout`; the lookup itself finishes in the background and is dropped). `resolver`:
    /// the blocking lookup (`getaddrinfo`; tests pass a slow one).
    static func resolve(host: String, port: Int, deadline: DispatchTime? = nil,
                        resolver: @escaping @Sendable (String, Int) throws -> [ResolvedAddress] = resolveBlocking)
        async throws -> [ResolvedAddress] {
        try await BlockingWork.run(deadline: deadline,
                                   timeoutError: { SQLClientError(.timeout, "resolving host \"\(host)\" timed out") }) {
            try resolver(host, port)
        }
    }

    static func resolveBlocking(host: String, port: Int) throws -> [ResolvedAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        hints.ai_protocol = Int32(IPPROTO_TCP)
        #else
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        #endif
        hints.ai_flags = AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            let reason = rc == 0 ? "no address" : String(cString: gai_strerror(rc))
            throw SQLClientError(.hostNotFound, "cannot resolve host \"\(host)\": \(reason)")
        }
        defer { freeaddrinfo(first) }
        var addresses: [ResolvedAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            let entry = info.pointee
            if let addr = entry.ai_addr, entry.ai_addrlen > 0,
               entry.ai_family == AF_INET || entry.ai_family == AF_INET6 {
                let bytes = [UInt8](UnsafeRawBufferPointer(start: UnsafeRawPointer(addr), count: Int(entry.ai_addrlen)))
                addresses.append(ResolvedAddress(family: entry.ai_family, storage: bytes,
                                                 text: describe(addr, family: entry.ai_family, port: port)))
            }
            cursor = entry.ai_next
        }
        guard !addresses.isEmpty else {
            throw SQLClientError(.hostNotFound, "host \"\(host)\" has no IPv4 or IPv6 address")
        }
        return addresses
    }

    private static func describe(_ addr: UnsafeMutablePointer<sockaddr>, family: Int32, port: Int) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok: Bool
        if family == AF_INET6 {
            ok = addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                var a = sin6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count)) != nil
            }
            let text = ok ? stringFromCBuffer(buffer) : "?"
            return "[\(text)]:\(port)"
        }
        ok = addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
            var a = sin.pointee.sin_addr
            return inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count)) != nil
        }
        return (ok ? stringFromCBuffer(buffer) : "?") + ":\(port)"
    }

    private static func connect(to address: ResolvedAddress, deadline: DispatchTime?) async throws -> SocketStream {
        #if canImport(Darwin)
        let fd = socket(address.family, SOCK_STREAM, Int32(IPPROTO_TCP))
        #else
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue), Int32(IPPROTO_TCP))
        #endif
        guard fd >= 0 else {
            throw SQLClientError(.connectionFailed, "socket(): \(errnoText())")
        }
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) >= 0 else {
            let text = errnoText()
            _ = systemClose(fd)
            throw SQLClientError(.connectionFailed, "fcntl(O_NONBLOCK): \(text)")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        let stream = SocketStream(fd: fd, remoteAddress: address.text)
        let rc = address.storage.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return -1 }
            return systemConnect(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        if rc != 0 {
            let err = errno
            guard err == EINPROGRESS || err == EINTR else {
                stream.close()
                throw SQLClientError(.connectionFailed, "\(address.text): \(String(cString: strerror(err)))")
            }
            do {
                try await stream.wait(readable: false, deadline: deadline)
            } catch let error as SQLClientError where error.code == .timeout {
                stream.close()
                throw SQLClientError(.timeout, "connecting to \(address.text) timed out")
            } catch {
                stream.close()
                throw error
            }
            var soError: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len) == 0 else {
                let text = errnoText()
                stream.close()
                throw SQLClientError(.connectionFailed, "\(address.text): getsockopt(SO_ERROR): \(text)")
            }
            if soError != 0 {
                stream.close()
                throw SQLClientError(.connectionFailed, "\(address.text): \(String(cString: strerror(soError)))")
            }
        }
        var nodelay: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &nodelay, socklen_t(MemoryLayout<Int32>.size))
        return stream
    }

    // MARK: - Reading and writing

    /// Reads up to `maxLength` bytes (64 KiB at first, more while reads come back full: see
    /// `readCapacity`); `[]` when the peer closed the connection.
    /// - Throws: ``SQLClientError`` `.ioError`, `.connectionClosed` or `.cancelled`.
    package func read(maxLength: Int) async throws -> [UInt8] {
        let capacity = max(1, min(maxLength, readCapacity))
        // After a read that did not fill its buffer the socket is most likely empty: wait until
        // it is readable before allocating a buffer (rather than allocating one for a `recv`
        // that says EAGAIN).
        var waitFirst = false
        if lastReadWasShort { waitFirst = try !isReadableNow() }
        while true {
            if waitFirst {
                try await wait(readable: true, deadline: nil, cancellable: true)
                waitFirst = false
            }
            try beginSyscall()
            var n = 0
            var err: Int32 = 0
            var buffer = state.withLock { s -> [UInt8] in
                var taken: [UInt8] = []
                swap(&taken, &s.spare)
                return taken
            }
            if buffer.capacity >= capacity, capacity >= 64 << 10 {
                // An array given back with room for this read: its pages are already touched (a
                // fresh one's are faulted in as the kernel copies into them, about 3 µs a page on
                // the project's VM, issue 43). Its bytes are received into; when an earlier read
                // left it shorter than this read's room, it is first filled out with zeros (a
                // Swift array's room past its count can only be written so), which costs far less
                // than the faults of a fresh array: the kept array is one that held a whole read.
                if buffer.count < capacity { buffer.append(contentsOf: repeatElement(0, count: capacity &- buffer.count)) }
                n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, capacity, 0) }
                if n < 0 { err = errno }
                if n > 0 { buffer.removeLast(buffer.count &- n) }
            } else {
                // Received straight into uninitialized storage (no zero-filling of 64 KB per read).
                buffer = [UInt8](unsafeUninitializedCapacity: capacity) { raw, count in
                    n = recv(fd, raw.baseAddress, capacity, 0)
                    if n < 0 { err = errno }
                    count = max(n, 0)
                }
            }
            endSyscall()
            if n <= 0 { giveBack(buffer) }   // EAGAIN, EINTR, end or error: kept for the next read
            if n > 0 {
                lastReadWasShort = n < capacity
                readCapacity = Self.readCapacity(after: n, of: capacity)
                return buffer
            }
            if n == 0 { return [] }
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK {
                waitFirst = true
                continue
            }
            if err == ECONNRESET {
                throw SQLClientError(.connectionClosed, "the server reset the connection")
            }
            throw SQLClientError(.ioError, "recv from \(remoteAddress): \(String(cString: strerror(err)))")
        }
    }

    /// Keeps `storage` (an array ``read(maxLength:)`` returned, read to its end) for the next
    /// read to receive into, when it is at least 64 KiB; one is kept, the last given. A smaller
    /// one (`[]`: a response ended) lets go of the one kept: an idle connection keeps none.
    package func giveBack(_ storage: [UInt8]) {
        let replaced = state.withLock { s -> [UInt8] in
            var kept = storage.capacity >= 64 << 10 ? storage : []
            swap(&kept, &s.spare)
            return kept
        }
        _ = replaced   // freed here, outside the lock
    }

    /// The capacity of the array kept for the next read (0: none), for tests.
    var keptReadStorageCapacity: Int { state.withLock { $0.spare.capacity } }

    /// Whether the socket has bytes to read (or an error or end of stream to report) now,
    /// without waiting (`poll` with a zero timeout).
    private func isReadableNow() throws -> Bool {
        try beginSyscall()
        defer { endSyscall() }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) != 0
    }

    /// Writes all of `bytes` (not interrupted by task cancellation: see the type's notes).
    /// - Throws: ``SQLClientError`` `.ioError` or `.connectionClosed`.
    package func write(_ bytes: [UInt8]) async throws {
        var sent = 0
        while sent < bytes.count {
            try beginSyscall()
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                #if canImport(Darwin)
                return send(fd, base + sent, raw.count - sent, 0)
                #else
                return send(fd, base + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                #endif
            }
            let err = errno
            endSyscall()
            if n > 0 { sent += n; continue }
            if n < 0 && err == EINTR { continue }
            if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) {
                try await wait(readable: false, deadline: nil, cancellable: false)
                continue
            }
            if err == EPIPE || err == ECONNRESET {
                throw SQLClientError(.connectionClosed, "the server closed the connection")
            }
            throw SQLClientError(.ioError, "send to \(remoteAddress): \(String(cString: strerror(err)))")
        }
    }

    /// Closes the socket; waiting reads and writes throw `.connectionClosed`. Safe to call twice.
    package func close() {
        let pending = state.withLock { s -> [Waiter]? in
            if s.isClosed { return nil }
            s.isClosed = true
            let pending = Array(s.waiters.values)
            s.waiters = [:]
            s.closeDescriptorIfUnused(fd)
            return pending
        }
        guard let pending else { return }
        for waiter in pending {
            waiter.source.cancel()
            waiter.continuation.resume(throwing: SQLClientError.closed())
        }
    }

    /// Half-closes the sending side (`shutdown(SHUT_WR)`), for tests of servers that wait for EOF.
    package func shutdownWrite() {
        state.withLock { s in
            if !s.isClosed { _ = shutdown(fd, Int32(SHUT_WR)) }
        }
    }

    /// Marks a syscall on `fd` in flight; throws when the stream is closed.
    private func beginSyscall() throws {
        let closed = state.withLock { s in
            if s.isClosed { return true }
            s.syscallsInFlight += 1
            return false
        }
        if closed { throw SQLClientError.closed() }
    }

    private func endSyscall() {
        state.withLock { s in
            s.syscallsInFlight -= 1
            s.closeDescriptorIfUnused(fd)
        }
    }

    // MARK: - Waiting for readiness

    private func wait(readable: Bool, deadline: DispatchTime?, cancellable: Bool = true) async throws {
        let id: UInt64 = state.withLock { s in
            s.nextWaiterID &+= 1
            return s.nextWaiterID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                let waiter = state.withLock { s -> Waiter? in
                    if s.isClosed { return nil }
                    // Two statements, not `readable ? read : write`: on Apple platforms the two
                    // source types are distinct Objective-C protocols and the conditional does
                    // not type-check.
                    let source: any DispatchSourceProtocol
                    if readable {
                        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
                    } else {
                        source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
                    }
                    let waiter = Waiter(source: source, continuation: continuation)
                    s.waiters[id] = waiter
                    s.activeSources += 1
                    // The handlers hold the stream strongly until the source is cancelled: were
                    // it freed first, deinit would close the descriptor while the source is still
                    // registered, and a new socket reusing that number could miss its events.
                    source.setEventHandler {
                        self.finishWait(id: id, with: .success(()))
                    }
                    source.setCancelHandler {
                        self.sourceCancelled()
                    }
                    return waiter
                }
                guard let waiter else {
                    continuation.resume(throwing: SQLClientError.closed())
                    return
                }
                waiter.source.resume()
                if let deadline {
                    queue.asyncAfter(deadline: deadline) { [weak self] in
                        self?.finishWait(id: id, with: .failure(SQLClientError(.timeout, "timed out")))
                    }
                }
                // A cancellation that arrived before the waiter was registered found nothing to cancel.
                if cancellable && Task.isCancelled {
                    finishWait(id: id, with: .failure(SQLClientError(.cancelled, "the operation was cancelled")))
                }
            }
        } onCancel: {
            if cancellable {
                self.finishWait(id: id, with: .failure(SQLClientError(.cancelled, "the operation was cancelled")))
            }
        }
    }

    private func finishWait(id: UInt64, with result: Result<Void, Error>) {
        guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
        waiter.source.cancel()
        waiter.continuation.resume(with: result)
    }

    private func sourceCancelled() {
        state.withLock { s in
            s.activeSources -= 1
            s.closeDescriptorIfUnused(fd)
        }
    }
}

// MARK: - Helpers

func errnoText() -> String { String(cString: strerror(errno)) }

/// The text of a NUL-terminated C buffer.
func stringFromCBuffer(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

@inline(__always) func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Darwin)
    return Darwin.close(fd)
    #elseif canImport(Musl)
    return Musl.close(fd)
    #else
    return Glibc.close(fd)
    #endif
}

@inline(__always) func systemConnect(_ fd: Int32, _ addr: UnsafePointer<sockaddr>, _ len: socklen_t) -> Int32 {
    #if canImport(Darwin)
    return Darwin.connect(fd, addr, len)
    #elseif canImport(Musl)
    return Musl.connect(fd, addr, len)
    #else
    return Glibc.connect(fd, addr, len)
    #endif
}

extension Task where Success == Never, Failure == Never {
    /// Throws `error` when the current task is cancelled.
    static func checkCancellation(orThrow error: @autoclosure () -> SQLClientError) throws {
        if Task.isCancelled { throw error() }
    }
}

extension Duration {
    /// This duration as a Dispatch interval (negative durations become zero).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        if seconds < 0 { return .nanoseconds(0) }
        let nanos = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if nanos.overflow { return .never }
        let total = nanos.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
        if total.overflow || total.partialValue > Int64(Int.max) { return .never }
        return .nanoseconds(Int(total.partialValue))
    }
}

// MARK: - TCP keep-alive

extension SocketStream {
    /// Turns TCP keep-alive on (`SO_KEEPALIVE`): the first probe after `idleSeconds` without
    /// traffic (`TCP_KEEPIDLE`; `TCP_KEEPALIVE` on Apple platforms), then one every
    /// `intervalSeconds` (`TCP_KEEPINTVL`). NAT devices and cloud load balancers drop idle
    /// connections without it. Both values must be 1–32767.
    /// - Throws: ``SQLClientError`` `.ioError` when the system refuses an option, `.connectionClosed` after ``close()``.
    package func enableKeepAlive(idleSeconds: Int32, intervalSeconds: Int32) throws {
        try state.withLock { s in
            guard !s.fdClosed else { throw SQLClientError(.connectionClosed, "the connection is closed") }
            var one: Int32 = 1
            var idle = idleSeconds
            var interval = intervalSeconds
            let size = socklen_t(MemoryLayout<Int32>.size)
            guard setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, size) == 0,
                  setsockopt(fd, Int32(IPPROTO_TCP), Self.keepAliveIdleOption, &idle, size) == 0,
                  setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &interval, size) == 0 else {
                throw SQLClientError(.ioError, "cannot turn TCP keep-alive on: \(errnoText())")
            }
        }
    }

    /// The option of the idle time before the first keep-alive probe.
    #if canImport(Darwin)
    private static let keepAliveIdleOption = TCP_KEEPALIVE
    #else
    private static let keepAliveIdleOption = TCP_KEEPIDLE
    #endif

    /// The socket's keep-alive settings as the system reports them (nil after ``close()``):
    /// whether `SO_KEEPALIVE` is on, the idle time and the probe interval in seconds.
    package var keepAliveSettings: (enabled: Bool, idleSeconds: Int32, intervalSeconds: Int32)? {
        state.withLock { s in
            guard !s.fdClosed else { return nil }
            func read(_ level: Int32, _ option: Int32) -> Int32 {
                var value: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                return getsockopt(fd, level, option, &value, &size) == 0 ? value : -1
            }
            return (read(SOL_SOCKET, SO_KEEPALIVE) != 0, read(Int32(IPPROTO_TCP), Self.keepAliveIdleOption),
                    read(Int32(IPPROTO_TCP), TCP_KEEPINTVL))
        }
    }
}

// MARK: - Idle connection check (connection resiliency)

/// What a socket idle between requests shows, without waiting and without consuming a byte.
enum IdleSocketStatus: Sendable, Equatable, CustomStringConvertible {
    /// Nothing to read: the connection looks alive.
    case open
    /// The server closed its side (a FIN: `recv` with MSG_PEEK answers 0).
    case closedByPeer
    /// The server reset the connection (RST: ECONNRESET), or another socket error.
    case reset(String)
    /// This side closed the stream already.
    case closedLocally
    /// Bytes wait unread on a connection whose session is plaintext after login: a server sends
    /// nothing unasked, so they are not ours to read as the next answer (only when asked for:
    /// ``SocketStream/idleStatus(unreadBytesAreForeign:)``).
    case unsolicitedBytes

    var description: String {
        switch self {
        case .open: return "open"
        case .closedByPeer: return "closed by the server (FIN)"
        case .reset(let why): return "reset by the server (\(why))"
        case .closedLocally: return "closed locally"
        case .unsolicitedBytes: return "bytes the client did not ask for, on a plaintext session"
        }
    }
}

extension SocketStream {
    /// Checks the idle socket (`poll` with a zero timeout, then `recv` with MSG_PEEK and
    /// MSG_DONTWAIT of one byte), as Microsoft.Data.SqlClient checks a connection before a request.
    /// Bytes waiting count as open, as in SqlClient: a TLS 1.3 server's NewSessionTicket may sit
    /// unread on an idle connection. On Linux `POLLRDHUP` still sees a FIN behind them (a TLS
    /// close_notify then a FIN); elsewhere such a close is found by the request, as before.
    /// `POLLHUP` (a RST) is seen behind them everywhere. Used by the session recovery before a
    /// request's first byte and by ``SQLConnectionPool`` when it lends a connection.
    ///
    /// `unreadBytesAreForeign`: the session is plaintext after login (no TLS record can be
    /// waiting), so bytes waiting are `.unsolicitedBytes`, not `.open`: a complete TDS message
    /// sent unasked would otherwise be read as the next request's answer (the pool discards it).
    func idleStatus(unreadBytesAreForeign: Bool = false) -> IdleSocketStatus {
        do {
            try beginSyscall()
        } catch {
            return .closedLocally
        }
        defer { endSyscall() }
        #if os(Linux)
        // POLLRDHUP: the peer shut its sending side (a FIN), even behind bytes still unread
        // (a TLS close_notify before the FIN).
        // (Linux's value, 0x2000: Glibc's module does not export it without _GNU_SOURCE.)
        let pollRDHUP: Int16 = 0x2000
        let events = Int16(POLLIN) | pollRDHUP
        #else
        let events = Int16(POLLIN)
        #endif
        var p = pollfd(fd: fd, events: events, revents: 0)
        guard poll(&p, 1, 0) > 0 else { return .open }
        #if os(Linux)
        if p.revents & pollRDHUP != 0, p.revents & Int16(POLLERR) == 0, p.revents & Int16(POLLHUP) == 0 { return .closedByPeer }
        #endif
        if p.revents & Int16(POLLHUP) != 0 {
            // Both directions are gone (a RST), even behind bytes still unread, which MSG_PEEK
            // would return first.
            var err: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length)
            if err == 0 { return .closedByPeer }
            return err == ECONNRESET ? .reset("RST") : .reset(String(cString: strerror(err)))
        }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        let err = errno
        if n == 0 { return .closedByPeer }
        if n > 0 { return unreadBytesAreForeign ? .unsolicitedBytes : .open }
        if err == EAGAIN || err == EWOULDBLOCK || err == EINTR { return .open }
        if err == ECONNRESET { return .reset("RST") }
        return .reset(String(cString: strerror(err)))
    }
}
