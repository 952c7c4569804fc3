#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A blocking TCP listener on a loopback address for transport tests. Each accepted connection is
/// handed to `handler` on its own thread with the connected descriptor (closed afterwards).
final class LoopbackListener: @unchecked Sendable {
    let port: Int
    let fd: Int32
    private let handler: @Sendable (Int32) -> Void
    private let accepting: Bool

    /// Listens on `address` ("127.0.0.1" or "::1") on `port` (0: an ephemeral port). `backlog` 0 and
    /// `accepting` false make a listener whose queue fills up (for connect timeouts).
    init(address: String = "127.0.0.1", port requestedPort: UInt16 = 0, backlog: Int32 = 16, accepting: Bool = true,
         handler: @escaping @Sendable (Int32) -> Void = { _ in }) throws {
        let v6 = address.contains(":")
        #if canImport(Darwin)
        let fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var rc: Int32
        if v6 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = requestedPort.bigEndian
            inet_pton(AF_INET6, address, &sin6.sin6_addr)
            rc = withUnsafePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = requestedPort.bigEndian
            inet_pton(AF_INET, address, &sin.sin_addr)
            rc = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard rc == 0, listen(fd, backlog) == 0 else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        let port: UInt16 = withUnsafePointer(to: &storage) {
            v6 ? $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
               : $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
        }
        self.port = Int(UInt16(bigEndian: port))
        self.fd = fd
        self.handler = handler
        self.accepting = accepting
        if accepting {
            let thread = Thread { [self] in self.acceptLoop() }
            thread.start()
        }
    }

    private func acceptLoop() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 { return }
            let handler = self.handler
            Thread {
                handler(client)
                close(client)
            }.start()
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    // MARK: - Blocking helpers for handlers

    /// Reads exactly `count` bytes, or fewer if the peer closes.
    static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while out.count < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - out.count), 0) }
            if n <= 0 { break }
            out += buffer[0 ..< n]
        }
        return out
    }

    /// Reads whatever arrives next (up to 64 KiB); empty at end of stream.
    static func readSome(_ fd: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[0 ..< n]) : []
    }

    /// Sends all of `bytes`; false when the peer is gone first.
    @discardableResult
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            #if canImport(Darwin)
            let flags: Int32 = 0
            #else
            let flags = Int32(MSG_NOSIGNAL)
            #endif
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, flags) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }
}
