import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP proxy on loopback that relays bytes unchanged between its clients and one upstream
/// server, and drops a relayed connection on demand the way a network does to a connection that
/// sits idle: a reset (RST, as a NAT table or a load balancer that forgot it; `SO_LINGER` 0
/// then close) or a close (FIN, as a server restart or a gateway's idle timeout). The upstream
/// side of a dropped connection is closed too, so the server ends its session.
///
/// It does not read TDS (a TLS session crosses it as it is): "idle" is the caller's word (the
/// pool has no lease out, the connection has no request running). ``idleConnections`` helps:
/// the connections whose last relayed bytes came from the server, with nothing from the client
/// since (a request/response protocol at rest). Loopback only: it listens on 127.0.0.1 and
/// relays only to a loopback upstream (127.0.0.0/8, ::1, `localhost`).
///
/// ```swift
/// let proxy = try FaultInjectingProxy(upstreamPort: 1433)
/// let port = try proxy.start()                     // connect the client to 127.0.0.1:port
/// … requests …
/// proxy.inject(.reset, into: proxy.idleConnections)
/// ```
///
/// One thread per direction per connection (``BlockingSocket``), as ``RecordingProxy``.
public final class FaultInjectingProxy: @unchecked Sendable {
    /// How a connection is dropped.
    public enum Fault: String, Sendable, Hashable, CaseIterable {
        /// A RST to the client (`SO_LINGER` with a zero timeout, then close): `ECONNRESET` on its side.
        case reset
        /// A FIN to the client (an orderly close): end of stream on its side.
        case close
    }

    /// Thrown when the proxy is asked to reach a server that is not on this machine's loopback.
    public struct NotLoopback: Error, CustomStringConvertible {
        /// The host refused.
        public var host: String
        /// `the fault-injecting proxy relays to loopback only, not <host>`.
        public var description: String { "the fault-injecting proxy relays to loopback only, not \(host)" }
    }

    /// The upstream server's host (loopback).
    public let upstreamHost: String
    /// The upstream server's TCP port.
    public let upstreamPort: Int

    private let lock = NSLock()
    private var listener: BlockingSocket?
    private var relays: [Int: Relay] = [:]
    private var accepted = 0
    private var _port: UInt16 = 0
    private var _injected: [Fault: Int] = [:]
    private let group = DispatchGroup()

    /// A proxy to `upstreamHost`:`upstreamPort`.
    /// - Throws: ``NotLoopback`` when `upstreamHost` is not a loopback address or `localhost`.
    public init(upstreamHost: String = "127.0.0.1", upstreamPort: Int) throws {
        guard Self.isLoopback(upstreamHost) else { throw NotLoopback(host: upstreamHost) }
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
    }

    deinit { stop() }

    /// 127.0.0.0/8, ::1 and `localhost`.
    static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased()
        if h == "localhost" || h == "::1" || h == "[::1]" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The port the proxy listens on (0 before ``start(port:)``).
    public var port: UInt16 { lock.withLock { _port } }

    /// Starts listening on 127.0.0.1:`port` (0: an ephemeral port) and returns the port.
    /// - Throws: a `CustomStringConvertible` socket error when it cannot listen.
    @discardableResult
    public func start(port: UInt16 = 0) throws -> UInt16 {
        let (socket, actual) = try BlockingSocket.listen(host: "127.0.0.1", port: port)
        lock.withLock {
            listener = socket
            _port = actual
        }
        group.enter()
        Thread.detachNewThread { [self] in
            defer { group.leave() }
            while let client = socket.accept() {
                let relay: Relay? = lock.withLock {
                    guard listener != nil else { return nil }
                    accepted += 1
                    let relay = Relay(number: accepted, client: client)
                    relays[accepted] = relay
                    return relay
                }
                guard let relay else { client.close(); return }
                group.enter()
                Thread.detachNewThread { [self] in
                    relay.run(upstreamHost: upstreamHost, upstreamPort: upstreamPort)
                    lock.withLock { _ = relays.removeValue(forKey: relay.number) }
                    group.leave()
                }
            }
        }
        return actual
    }

    /// Client connections accepted so far.
    public var acceptedConnections: Int { lock.withLock { accepted } }

    /// The relayed connections open now (1, 2, … in the order they were accepted).
    public var openConnections: [Int] { lock.withLock { relays.keys.sorted() } }

    /// The open connections at rest: each relayed the server's bytes last and has had nothing
    /// from its client since (nothing at all relayed yet counts as busy).
    public var idleConnections: [Int] {
        lock.withLock { relays.filter { $0.value.isAtRest }.map(\.key).sorted() }
    }

    /// Bytes relayed over connection `number` so far, from the client and from the server (nil
    /// when it is not open).
    public func bytesRelayed(_ number: Int) -> (fromClient: Int, fromServer: Int)? {
        lock.withLock { relays[number]?.counts }
    }

    /// The faults injected so far, by kind.
    public var injected: [Fault: Int] { lock.withLock { _injected } }

    /// Drops connection `number` with `fault` at once (whatever it is doing); false when it is
    /// not open. Returns once the client's side has been sent the RST or FIN.
    @discardableResult
    public func inject(_ fault: Fault, into number: Int) -> Bool {
        let relay: Relay? = lock.withLock {
            guard let relay = relays.removeValue(forKey: number) else { return nil }
            _injected[fault, default: 0] += 1
            return relay
        }
        guard let relay else { return false }
        relay.drop(fault)
        return true
    }

    /// Drops each of `numbers` with `fault`; the number dropped.
    @discardableResult
    public func inject(_ fault: Fault, into numbers: [Int]) -> Int {
        numbers.reduce(0) { $0 + (inject(fault, into: $1) ? 1 : 0) }
    }

    /// Writes `bytes` to the client of connection `number` as if its server had sent them
    /// unasked (a message on an idle connection); false when it is not open or the write failed.
    @discardableResult
    public func send(_ bytes: [UInt8], toClientOf number: Int) -> Bool {
        guard let relay = lock.withLock({ relays[number] }) else { return false }
        return (try? relay.client.write(bytes)) != nil
    }

    /// Stops listening, closes every relayed connection (FIN both ways) and waits (up to 5 s)
    /// for the relay threads.
    public func stop() {
        let (socket, open): (BlockingSocket?, [Relay]) = lock.withLock {
            let r = (listener, Array(relays.values))
            listener = nil
            relays = [:]
            return r
        }
        socket?.shutdown()
        socket?.close()
        for relay in open { relay.drop(.close) }
        _ = group.wait(timeout: .now() + 5)
    }
}

/// One relayed connection: the client's socket, the upstream's, a thread per direction.
private final class Relay: @unchecked Sendable {
    let number: Int
    let client: BlockingSocket
    private let lock = NSLock()
    private var upstream: BlockingSocket?
    private var dropped: FaultInjectingProxy.Fault?
    private var fromClient = 0
    private var fromServer = 0
    /// The last bytes relayed came from the server.
    private var serverSpokeLast = false
    private let finished = DispatchSemaphore(value: 0)

    init(number: Int, client: BlockingSocket) {
        self.number = number
        self.client = client
    }

    var isAtRest: Bool { lock.withLock { dropped == nil && serverSpokeLast } }
    var counts: (fromClient: Int, fromServer: Int) { lock.withLock { (fromClient, fromServer) } }

    func run(upstreamHost: String, upstreamPort: Int) {
        defer {
            client.close()   // with SO_LINGER 0 after a reset: the RST
            lock.withLock { upstream }?.close()
            finished.signal()
        }
        guard let up = try? BlockingSocket.connect(host: upstreamHost, port: upstreamPort, timeout: 10) else { return }
        let stop: Bool = lock.withLock {
            upstream = up
            return dropped != nil
        }
        if stop { return }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            pump(from: up, to: client, fromClient: false)
            done.signal()
        }
        pump(from: client, to: up, fromClient: true)
        done.wait()
    }

    /// Relays until end of stream or error; then ends the other side as an orderly close
    /// would, unless the connection was dropped (a dropped client side gets only its fault).
    private func pump(from source: BlockingSocket, to target: BlockingSocket, fromClient isClient: Bool) {
        while let bytes = try? source.read(), !bytes.isEmpty {
            let stop: Bool = lock.withLock {
                guard dropped == nil else { return true }
                if isClient { fromClient += bytes.count } else { fromServer += bytes.count }
                serverSpokeLast = !isClient
                return false
            }
            if stop { break }
            do { try target.write(bytes) } catch { break }
        }
        let wasDropped = lock.withLock { dropped != nil }
        if wasDropped { return }
        target.shutdownWrite()
    }

    /// Drops the connection: the upstream side is shut (FIN) and the client gets `fault`. Waits
    /// (up to 5 s) for both relay threads, so that the client side is closed on return.
    func drop(_ fault: FaultInjectingProxy.Fault) {
        let up: BlockingSocket? = lock.withLock {
            dropped = fault
            return upstream
        }
        switch fault {
        case .reset:
            // SO_LINGER on, 0 s: close() sends a RST. Reading is shut first (nothing goes on
            // the wire for that) so that the relay thread blocked in recv wakes up and closes.
            var linger = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(client.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            _ = shutdown(client.fd, Int32(SHUT_RD))
        case .close:
            client.shutdown()
        }
        up?.shutdown()
        _ = finished.wait(timeout: .now() + 5)
    }
}
