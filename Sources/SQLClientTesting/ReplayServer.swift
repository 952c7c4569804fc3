import Foundation
import TDS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TDS server on loopback that plays back a ``ReplaySession``, so that a client (SQLClient,
/// FreeTDS, any other) can be tested with no SQL Server present.
///
/// It answers PRELOGIN (without ``Options/tls`` encryption not supported, so the session stays
/// plaintext; with it, TLS inside PRELOGIN as the client asks: the login only for ENCRYPT_OFF,
/// the whole session for ENCRYPT_ON), LOGIN7 (with the session's recorded login response, or a
/// generated one: LOGINACK for the TDS version the client asked, or the session's `@version`,
/// ENVCHANGEs and DONE), each SQL_BATCH by its SQL text, each RPC by procedure name and
/// parameter values and each TRANSACTION_MANAGER request by its type and fields, sending the
/// recorded response in packets of the negotiated size. A request with no recording gets an
/// empty DONE and is listed in ``unmatchedRequests``; with ``Options/strict`` each connection
/// must send its section's requests in order, and any other request is answered with an ERROR
/// naming what was expected and listed in ``mismatches``. ATTENTION stops the current response
/// at a segment boundary and is answered with DONE(DONE_ATTN) (the recorded acknowledgement
/// when the session has one), unless the session says `@attention ignore`.
/// ``unreplayedExchanges`` lists what was recorded but never asked for; ``verify(requireAllReplayed:)``
/// turns all of that into one error for a test.
///
/// Connection *n* (in the order clients connect) is served from section *n* of a
/// ``ReplayRecording`` (cycling); a request its section does not hold is looked up in the other
/// sections (not in strict mode). Each connection is served on its own thread with blocking
/// sockets. Usage:
///
/// ```swift
/// let server = ReplayServer(session: try ReplaySession(contentsOf: url),
///                           options: .init(tls: try TLSServerIdentity.generated()))
/// let port = try server.start()          // 127.0.0.1, an ephemeral port
/// defer { server.stop() }
/// // connect any TDS client to 127.0.0.1:port, trusting server.options.tls's CA;
/// // user and password are not checked
/// ```
public final class ReplayServer: @unchecked Sendable {
    /// A failure to start listening (the `errno` of the failing call).
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// The failing call, for example `bind`.
        public var call: String
        /// Its `errno`.
        public var errno: Int32
        public var description: String { "ReplayServer: \(call) failed: \(String(cString: strerror(errno)))" }
    }

    /// What the server saw on one connection, for tests.
    public struct ConnectionLog: Sendable {
        /// The TDS version in the client's LOGIN7 (nil before login).
        public var clientVersion: TDSVersion?
        /// The version acknowledged in LOGINACK.
        public var ackedVersion: TDSVersion?
        /// The packet size in effect after login.
        public var packetSize: Int = 4096
        /// The client asked for the UTF8_SUPPORT feature.
        public var utf8Requested = false
        /// The client's PRELOGIN ENCRYPTION option, if sent.
        public var clientEncryption: UInt8?
        /// The TLS protocol negotiated with the client (for example "TLSv1.2"), nil for plaintext.
        public var tlsProtocol: String?
        /// True when TLS covered only the login (the client sent ENCRYPT_OFF).
        public var tlsLoginOnly = false
        /// The recording section (0-based) this connection was served from.
        public var section = 0
        /// Every request received (LOGIN7 included), decoded as the server matches it.
        public var requests: [ReplaySession.Request] = []
        /// ATTENTION messages received.
        public var attentions = 0
        /// Bytes written to the socket for recorded responses (packet headers included).
        public var responseBytesSent = 0
        /// Wall-clock seconds spent writing recorded responses (the server's own send rate is
        /// `responseBytesSent / responseSeconds`).
        public var responseSeconds = 0.0
        /// Every SQL batch, RPC and transaction manager request as received: its packet type and
        /// its whole message payload (packets joined), in arrival order. Kept only when the
        /// server was made with `recordsRequestMessages: true`.
        public var requestMessages: [RequestMessage] = []
    }

    /// One client request message as the server received it ([MS-TDS] 2.2.3: the payloads of
    /// its packets up to EOM, headers removed).
    public struct RequestMessage: Sendable, Hashable {
        /// The packet type (SQL_BATCH, RPC, TRANSACTION_MANAGER).
        public var type: PacketType
        /// The message bytes (ALL_HEADERS first, from TDS 7.2).
        public var payload: [UInt8]
        /// The status of the message's first packet ([MS-TDS] 2.2.3.1.2: RESETCONNECTION 0x08 and
        /// RESETCONNECTIONSKIPTRAN 0x10 are set there).
        public var firstStatus: PacketStatus = []
    }

    /// The first (or only) section of ``recording``.
    public let session: ReplaySession
    /// What the server plays: one section per client connection.
    public let recording: ReplayRecording
    /// How the server serves and matches.
    public let options: Options
    /// Each section's responses flattened once, and its SQL index.
    let sections: [PreparedSection]
    let lock = NSLock()
    private var listenFD: Int32 = -1
    private var clientFDs: Set<Int32> = []
    private var _port: UInt16 = 0
    private var _unmatched: [ReplaySession.Request] = []
    private var _connections: [ConnectionLog] = []
    private var running = false
    private let group = DispatchGroup()
    private var accepted = 0
    /// Guarded by `lock`: how often each exchange was replayed ([section][exchange]), strict-mode refusals.
    var replayCounts: [[Int]]
    var _mismatches: [Mismatch] = []

    /// Serves `session` to every connection.
    public convenience init(session: ReplaySession, options: Options = Options()) {
        self.init(recording: ReplayRecording(session), options: options)
    }

    /// A server for `session`; with `recordsRequestMessages`, each connection's log keeps the
    /// bytes of every request it received (for tests that check what a client sent).
    public convenience init(session: ReplaySession, recordsRequestMessages: Bool) {
        var options = Options()
        options.recordsRequestMessages = recordsRequestMessages
        self.init(recording: ReplayRecording(session), options: options)
    }

    /// Keep each request's bytes in ``ConnectionLog/requestMessages`` (``Options/recordsRequestMessages``).
    var recordsRequestMessages: Bool { options.recordsRequestMessages }

    /// Serves connection *n* from section *n* of `recording` (cycling through its sections).
    public init(recording: ReplayRecording, options: Options = Options()) {
        let recording = recording.sections.isEmpty ? ReplayRecording(ReplaySession(name: "empty")) : recording
        self.recording = recording
        self.session = recording.sections[0]
        self.options = options
        self.sections = recording.sections.map(PreparedSection.init)
        self.replayCounts = recording.sections.map { Array(repeating: 0, count: $0.exchanges.count) }
    }

    deinit { stop() }

    /// The port the server listens on (0 before ``start(host:port:)``).
    public var port: UInt16 { lock.withLock { _port } }
    /// Requests that matched no recording (answered with an empty DONE), in arrival order.
    public var unmatchedRequests: [ReplaySession.Request] { lock.withLock { _unmatched } }
    /// One log per connection served so far.
    public var connections: [ConnectionLog] { lock.withLock { _connections } }

    /// Starts listening on `host` (IPv4 dotted quad) and `port` (0 = an ephemeral port) and
    /// returns the port. Throws ``StartError``.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw StartError(call: "socket", errno: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            close(fd); throw StartError(call: "inet_pton(\(host))", errno: EINVAL)
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { let e = errno; close(fd); throw StartError(call: "bind", errno: e) }
        guard listen(fd, 64) == 0 else { let e = errno; close(fd); throw StartError(call: "listen", errno: e) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        let actual = UInt16(bigEndian: addr.sin_port)
        lock.withLock { listenFD = fd; _port = actual; running = true }
        group.enter()
        Thread.detachNewThread { [self] in
            acceptLoop(fd)
            group.leave()
        }
        return actual
    }

    /// Stops listening, closes every connection and waits (up to 5 s) for their threads.
    public func stop() {
        let (fd, clients): (Int32, Set<Int32>) = lock.withLock {
            let r = (listenFD, clientFDs)
            listenFD = -1
            running = false
            return r
        }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
        for c in clients { shutdown(c, Int32(SHUT_RDWR)) }
        _ = group.wait(timeout: .now() + 5)
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let ok: Bool = lock.withLock {
                guard running else { return false }
                clientFDs.insert(client)
                return true
            }
            guard ok else { close(client); return }
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            #if canImport(Darwin)
            // No MSG_NOSIGNAL on Darwin: a client gone mid-send must not raise SIGPIPE.
            setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let number: Int = lock.withLock {
                accepted += 1
                return accepted
            }
            group.enter()
            Thread.detachNewThread { [self] in
                let connection = ReplayConnection(fd: client, server: self, number: number)
                let log = connection.run()
                lock.withLock {
                    _connections.append(log)
                    clientFDs.remove(client)
                }
                close(client)
                group.leave()
            }
        }
    }

    func recordUnmatched(_ r: ReplaySession.Request) {
        lock.withLock { _unmatched.append(r) }
    }
}

/// One section of the recording, prepared for sending.
struct PreparedSection: Sendable {
    var session: ReplaySession
    /// Each exchange's response bytes flattened once, with its segment ends (token boundaries).
    var prepared: [PreparedResponse]
    /// Exchange indices by exact SQL text, in session order.
    var batchIndex: [String: [Int]]

    init(_ session: ReplaySession) {
        self.session = session
        self.prepared = session.exchanges.map(PreparedResponse.init)
        var index: [String: [Int]] = [:]
        for (i, e) in session.exchanges.enumerated() {
            if case .sqlBatch(let sql) = e.request { index[sql, default: []].append(i) }
        }
        self.batchIndex = index
    }
}

/// A response flattened for sending.
struct PreparedResponse: Sendable {
    var bytes: [UInt8]
    /// Cumulative segment ends: token boundaries where an ATTENTION may cut the response.
    var boundaries: [Int]
    var faults: ReplaySession.Faults

    init(_ exchange: ReplaySession.Exchange) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(exchange.response.reduce(0) { $0 + $1.bytes.count })
        var ends: [Int] = []
        for s in exchange.response {
            bytes += s.bytes
            ends.append(bytes.count)
        }
        self.bytes = bytes
        self.boundaries = ends
        self.faults = exchange.faults
    }

    /// The first segment end at or after `offset` (0 stays 0).
    func boundary(atOrAfter offset: Int) -> Int {
        guard offset > 0 else { return 0 }
        var lo = 0, hi = boundaries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if boundaries[mid] >= offset { hi = mid } else { lo = mid + 1 }
        }
        return lo < boundaries.count ? boundaries[lo] : bytes.count
    }
}

/// One served connection (blocking I/O on its own thread).
final class ReplayConnection {
    let fd: Int32
    let server: ReplayServer
    let section: Int
    var session: ReplaySession { server.sections[section].session }
    var log = ReplayServer.ConnectionLog()
    /// What the client sent, cut into messages by the one TDS framer.
    var inbox = PacketAssembler(maximumPacketSize: Int(UInt16.max))
    var pendingMessages: [(type: UInt8, payload: [UInt8], status: PacketStatus)] = []
    var version: TDSVersion = .v7_4
    var packetSize = 4096
    var packetID: UInt8 = 1
    var matcher: ReplayMatcher
    /// TLS inside PRELOGIN (ReplayServer+TLS.swift).
    var tls = ReplayTLSState()
    var closed = false

    /// `number`: the connection's place in accept order (1-based); it is served from section
    /// `(number - 1) % sections`.
    init(fd: Int32, server: ReplayServer, number: Int) {
        self.fd = fd
        self.server = server
        self.section = (number - 1) % server.sections.count
        self.matcher = ReplayMatcher(section: section, connection: number)
        self.log.section = section
    }

    func run() -> ReplayServer.ConnectionLog {
        while !closed, let message = nextMessage() {
            handle(type: message.type, payload: message.payload, firstStatus: message.status)
        }
        return log
    }

    // MARK: Receiving

    /// Reads more bytes into `inbox`; false at EOF or error.
    func fill(wait: Bool) -> Bool {
        if !wait {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 0) <= 0 { return false }
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return receivedFromWire(buffer[0..<n]) }   // TLS: ReplayServer+TLS.swift
            if n < 0, errno == EINTR { continue }
            return false
        }
    }

    /// Cuts one whole message (all packets to EOM) from `inbox`, if complete ([MS-TDS] 2.2.3).
    /// A message the client ended with IGNORE ([MS-TDS] 2.2.3.1.2, a request cancelled while it
    /// was being sent) is answered with a DONE with DONE_ERROR ([MS-TDS] 2.2.1.7) and not passed on. Malformed framing drops the connection.
    func cutMessage() -> (type: UInt8, payload: [UInt8], status: PacketStatus)? {
        while true {
            let message: TDSMessage?
            do {
                message = try inbox.nextMessage()
            } catch {
                closed = true
                return nil
            }
            guard let message else { return nil }
            if message.isIgnored {
                sendMessage(ServerTokens.done(status: [.error], version: version))
                continue
            }
            return (message.type.rawValue, message.payload, message.firstStatus)
        }
    }

    func nextMessage() -> (type: UInt8, payload: [UInt8], status: PacketStatus)? {
        if !pendingMessages.isEmpty { return pendingMessages.removeFirst() }
        while true {
            if let m = cutMessage() { return m }
            if closed || !fill(wait: true) { return nil }
        }
    }

    // MARK: Sending

    func sendAll(_ plaintext: [UInt8]) -> Bool {
        guard let bytes = wireBytes(plaintext) else { closed = true; return false }   // TLS: ReplayServer+TLS.swift
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
            closed = true
            return false
        }
        return true
    }

    func packet(_ payload: ArraySlice<UInt8>, type: UInt8 = 0x04, last: Bool) -> [UInt8] {
        var p: [UInt8] = [type, last ? 0x01 : 0x00, 0, 0, 0x00, 0x34, packetID, 0]
        let length = payload.count + 8
        p[2] = UInt8(truncatingIfNeeded: length >> 8); p[3] = UInt8(truncatingIfNeeded: length)
        packetID &+= 1
        p.append(contentsOf: payload)
        return p
    }

    /// Sends a whole message in packets of the negotiated size.
    func sendMessage(_ bytes: [UInt8], type: UInt8 = 0x04) {
        let chunk = max(packetSize - 8, 1)
        var i = 0
        repeat {
            let end = min(i + chunk, bytes.count)
            guard sendAll(packet(bytes[i..<end], type: type, last: end == bytes.count)) else { return }
            i = end
        } while i < bytes.count
    }

    /// Writes packets of `bytes[start..<end]` into `out` (EOM on the packet that ends at `total`).
    func appendPackets(_ bytes: [UInt8], from start: Int, to end: Int, total: Int, into out: inout [UInt8]) {
        let chunk = max(packetSize - 8, 1)
        var i = start
        repeat {
            let e = min(i + chunk, end)
            let length = e - i + 8
            out.append(0x04)
            out.append(e == total ? 0x01 : 0x00)
            out.append(UInt8(truncatingIfNeeded: length >> 8)); out.append(UInt8(truncatingIfNeeded: length))
            out.append(0x00); out.append(0x34); out.append(packetID); out.append(0)
            packetID &+= 1
            out.append(contentsOf: bytes[i..<e])
            i = e
        } while i < end
    }

    /// Sends a recorded response in packets of the negotiated size, about 64 KB per write,
    /// checking for ATTENTION between writes, and applies the exchange's faults.
    func sendResponse(_ response: PreparedResponse) {
        let started = DispatchTime.now().uptimeNanoseconds
        defer { log.responseSeconds += Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
        let bytes = response.bytes
        var limit = bytes.count
        if let n = response.faults.stallAfter { limit = min(limit, n) }
        if let n = response.faults.closeAfter { limit = min(limit, n) }
        if bytes.isEmpty, response.faults.isEmpty {
            let p = packet([], last: true)
            log.responseBytesSent += p.count
            _ = sendAll(p)
            return
        }
        let chunk = max(packetSize - 8, 1)
        let perWrite = max(1, 65536 / chunk) * chunk
        var out: [UInt8] = []
        out.reserveCapacity(min(limit, perWrite) + (perWrite / chunk + 1) * 8)
        var i = 0
        while i < limit {
            if session.attention == .acknowledge, attentionArrived() {
                log.attentions += 1
                // Finish the segment in progress so the stream stays on a token boundary.
                let boundary = max(response.boundary(atOrAfter: i), i)
                var rest = Array(bytes[i..<min(boundary, bytes.count)])
                rest += attentionAcknowledgement()
                sendMessage(rest)
                return
            }
            let end = min(i + perWrite, limit)
            out.removeAll(keepingCapacity: true)
            appendPackets(bytes, from: i, to: end, total: bytes.count, into: &out)
            log.responseBytesSent += out.count
            guard sendAll(out) else { return }
            i = end
        }
        // Everything was sent: done, unless the response is empty and a fault is all there is
        // to it (an exchange that stalls or closes without answering at all).
        if limit == bytes.count, !bytes.isEmpty { return }
        if response.faults.closeAfter != nil {
            shutdown(fd, Int32(SHUT_RDWR)); closed = true; return
        }
        if response.faults.stallAfter != nil {
            // Say nothing more; keep reading (and ignoring) until the client goes away.
            while fill(wait: true) { _ = inbox.takeRemaining() }
            closed = true
        }
    }

    /// True when an ATTENTION message has arrived (other messages that arrive are kept).
    func attentionArrived() -> Bool {
        guard fill(wait: false) else { return false }
        while let m = cutMessage() {
            if m.type == PacketType.attention.rawValue { return true }
            pendingMessages.append(m)
        }
        return false
    }

    // MARK: Handling

    func handle(type: UInt8, payload: [UInt8], firstStatus: PacketStatus = []) {
        if server.options.recordsRequestMessages, type == PacketType.sqlBatch.rawValue || type == PacketType.rpc.rawValue
            || type == PacketType.transactionManager.rawValue {
            log.requestMessages.append(ReplayServer.RequestMessage(type: PacketType(rawValue: type), payload: payload,
                                                                   firstStatus: firstStatus))
        }
        switch type {
        case PacketType.prelogin.rawValue:
            handlePrelogin(payload)   // ReplayServer+TLS.swift
        case PacketType.login7.rawValue:
            handleLogin(payload)
        case PacketType.sqlBatch.rawValue:
            let text = RequestDecoding.sqlBatchText(payload, version: version) ?? ""
            respond(to: .sqlBatch(text))
        case PacketType.rpc.rawValue:
            if let request = RequestDecoding.rpcRequest(payload, version: version) {
                respond(to: request)
            } else {
                respond(to: .rpc(procedure: "?", parameters: []))
            }
        case PacketType.transactionManager.rawValue:
            respond(to: RequestDecoding.transactionManagerRequest(payload, version: version)
                    ?? .transactionManager(type: "?", parameters: []))
        case PacketType.attention.rawValue:
            log.attentions += 1
            if session.attention == .acknowledge {
                sendMessage(attentionAcknowledgement())
            }
        default:
            sendMessage(ServerTokens.done(version: version))
        }
    }

    func handleLogin(_ payload: [UInt8]) {
        endLoginOnlyTLS()   // ReplayServer+TLS.swift: after an ENCRYPT_OFF login, plaintext
        let login = RequestDecoding.login7Summary(payload)
        let clientVersion = login?.version ?? .v7_4
        log.clientVersion = clientVersion
        log.utf8Requested = login?.utf8Requested ?? false
        let acked = session.version ?? ServerTokens.ackVersion(forClient: clientVersion)
        version = acked
        log.ackedVersion = acked
        let requested = login?.packetSize ?? 4096
        let size = session.packetSize ?? (requested >= 512 && requested <= 32767 ? requested : 4096)
        log.packetSize = size
        let response: [UInt8]
        if let recorded = session.loginResponse {
            // A recording's FEATUREEXTACK answers what the recorded client asked for: acknowledge
            // only what this client asked for ([MS-TDS] 2.2.7.11: nothing unrequested).
            let features = login?.features ?? []
            response = recorded.response.flatMap { ReplayServer.acknowledgingOnly(features, $0.bytes) }
            if let i = session.exchanges.firstIndex(where: { $0.request == .login7 }) { server.noteReplayed(section: section, index: i) }
        } else {
            let requested = login?.features ?? []
            var types: [(UInt8, [UInt8])] = []   // JSONSUPPORT, VECTORSUPPORT, as the session says
            if let v = session.jsonSupport, requested.contains(FeatureID.jsonSupport.rawValue) { types.append((0x0D, [v])) }
            if let v = session.vectorSupport, requested.contains(FeatureID.vectorSupport.rawValue) { types.append((0x0E, [v])) }
            response = ServerTokens.loginResponse(clientVersion: acked, packetSize: size,
                                                  utf8: session.utf8Support && log.utf8Requested, features: types).flatMap(\.bytes)
        }
        sendMessage(response)   // in the pre-login packet size
        packetSize = size
        log.requests.append(.login7)
    }

    func respond(to request: ReplaySession.Request) {
        log.requests.append(request)
        switch matcher.match(request, server: server) {
        case .exchange(let s, let i):
            server.noteReplayed(section: s, index: i)
            sendResponse(server.sections[s].prepared[i])
        case .unmatched:
            server.recordUnmatched(request)
            sendMessage(ServerTokens.done(version: version))
        case .unexpected(let mismatch):
            server.recordMismatch(mismatch)
            sendMessage(ServerTokens.message(token: 0xAA, number: 50_000, state: 1, severity: 16,
                                             text: String(mismatch.description.prefix(4000)), version: version)
                        + ServerTokens.done(status: .error, version: version))
        }
    }
}

extension ReplayServer {
    /// `segment` with a FEATUREEXTACK token ([MS-TDS] 2.2.7.11) reduced to the features in
    /// `requested`; any other segment (or one that is not exactly that token) unchanged.
    static func acknowledgingOnly(_ requested: Set<UInt8>, _ segment: [UInt8]) -> [UInt8] {
        guard segment.first == TokenType.featureExtAck.rawValue else { return segment }
        var reader = ByteReader(segment, start: 1)
        guard let ack = try? FeatureExtAck.decode(from: &reader), reader.isAtEnd else { return segment }
        let kept = ack.features.filter { requested.contains($0.id.rawValue) }
        guard kept.count != ack.features.count else { return segment }
        var w = ByteWriter()
        FeatureExtAck(features: kept).encode(into: &w)
        return w.bytes
    }
}
