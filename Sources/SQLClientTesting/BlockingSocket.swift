import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP socket with blocking calls, for the test servers' one-thread-per-direction relays
/// (``RecordingProxy``). Reads and writes report errors as ``BlockingSocket/Failure``.
final class BlockingSocket: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var errno: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
    }

    let fd: Int32
    private let lock = NSLock()
    private var closed = false

    init(fd: Int32) {
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))   // no MSG_NOSIGNAL
        #endif
    }

    deinit { close() }

    /// A socket listening on `host` (an IPv4 dotted quad) and `port` (0: an ephemeral port), and the port.
    static func listen(host: String, port: UInt16) throws -> (BlockingSocket, UInt16) {
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { throw Failure(call: "socket", errno: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            sys_close(fd)
            throw Failure(call: "inet_pton(\(host))", errno: EINVAL)
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { let e = errno; sys_close(fd); throw Failure(call: "bind(\(host):\(port))", errno: e) }
        guard sys_listen(fd, 64) == 0 else { let e = errno; sys_close(fd); throw Failure(call: "listen", errno: e) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return (BlockingSocket(fd: fd), UInt16(bigEndian: addr.sin_port))
    }

    /// Connects to `host` (a name or an address) and `port`, trying each address in turn,
    /// each attempt bounded by `timeout` seconds.
    static func connect(host: String, port: Int, timeout: Double) throws -> BlockingSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocketType
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw Failure(call: "getaddrinfo(\(host)): \(String(cString: gai_strerror(rc)))", errno: 0)
        }
        defer { freeaddrinfo(list) }
        var lastError = Failure(call: "connect(\(host):\(port))", errno: ECONNREFUSED)
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let ai = node {
            node = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype, ai.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var ok = sys_connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0
            if !ok, errno == EINPROGRESS {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                if poll(&p, 1, Int32(max(1, min(timeout, 3600)) * 1000)) == 1 {
                    var err: Int32 = 0
                    var len = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
                    ok = err == 0
                    if !ok { lastError = Failure(call: "connect(\(host):\(port))", errno: err) }
                } else {
                    lastError = Failure(call: "connect(\(host):\(port))", errno: ETIMEDOUT)
                }
            } else if !ok {
                lastError = Failure(call: "connect(\(host):\(port))", errno: errno)
            }
            if ok {
                _ = fcntl(fd, F_SETFL, flags)
                return BlockingSocket(fd: fd)
            }
            sys_close(fd)
        }
        throw lastError
    }

    /// Accepts a connection; nil when the socket was closed.
    func accept() -> BlockingSocket? {
        while true {
            let client = sys_accept(fd, nil, nil)
            if client >= 0 { return BlockingSocket(fd: client) }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// The peer's address as `host:port`.
    var peerName: String {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &len) }
        }
        guard rc == 0 else { return "?" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST)), serv = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let ok = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, len, &host, socklen_t(host.count), &serv, socklen_t(serv.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard ok == 0 else { return "?" }
        func text(_ b: [CChar]) -> String { String(decoding: b.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return "\(text(host)):\(text(serv))"
    }

    /// Reads what is available (up to `maxLength` bytes), blocking until something is; empty at end of stream.
    func read(maxLength: Int = 65_536) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maxLength)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return Array(buffer[0 ..< n]) }
            if n == 0 { return [] }
            if errno == EINTR { continue }
            if errno == ECONNRESET || errno == EBADF || errno == ENOTCONN { return [] }
            throw Failure(call: "recv", errno: errno)
        }
    }

    /// Writes all of `bytes`.
    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                #if canImport(Glibc)
                return send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                #else
                return send(fd, raw.baseAddress! + sent, raw.count - sent, 0)
                #endif
            }
            if n > 0 { sent += n; continue }
            if n < 0, errno == EINTR { continue }
            throw Failure(call: "send", errno: errno)
        }
    }

    /// Ends both directions (blocked reads return end of stream); the descriptor stays open until ``close()``.
    func shutdown() {
        lock.withLock {
            if !closed { _ = sys_shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Ends writing: the peer reads end of stream.
    func shutdownWrite() {
        lock.withLock {
            if !closed { _ = sys_shutdown(fd, Int32(SHUT_WR)) }
        }
    }

    func close() {
        lock.withLock {
            if !closed {
                closed = true
                sys_close(fd)
            }
        }
    }
}

// The C calls under names the methods above do not shadow.
private func sys_close(_ fd: Int32) { _ = close(fd) }
private func sys_listen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }
private func sys_connect(_ fd: Int32, _ addr: UnsafePointer<sockaddr>!, _ len: socklen_t) -> Int32 { connect(fd, addr, len) }
private func sys_accept(_ fd: Int32, _ addr: UnsafeMutablePointer<sockaddr>!, _ len: UnsafeMutablePointer<socklen_t>!) -> Int32 {
    accept(fd, addr, len)
}
private func sys_shutdown(_ fd: Int32, _ how: Int32) -> Int32 { shutdown(fd, how) }

/// SOCK_STREAM as an Int32 (Glibc imports it as an enum, Darwin as a constant).
#if canImport(Darwin)
private let streamSocketType = SOCK_STREAM
#else
private let streamSocketType = Int32(SOCK_STREAM.rawValue)
#endif
