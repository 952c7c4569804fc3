import Foundation
import SQLClient
import TDS
#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif

/// A TDS proxy that records: it accepts TDS clients, logs in to an upstream server for each of
/// them, relays every message both ways, and writes the decrypted exchanges as a replay
/// recording (`.tdssession`, one section per client connection, or one file per connection):
/// what `sqlclient record` runs.
///
/// - Towards its clients it offers TLS inside PRELOGIN with ``identity`` (a generated
///   certificate whose CA a test trusts, or one read from PEM files); towards the upstream it
///   runs TLS as the client asked (the client's PRELOGIN is forwarded unchanged, and the
///   upstream's answer too), checking the upstream's certificate as ``Configuration/upstreamTLS`` says.
///   Both legs therefore agree on the same mode: none, the login only (ENCRYPT_OFF), or the
///   whole session (ENCRYPT_ON / ENCRYPT_REQ).
/// - Packets are relayed as they arrive (the TDS module's packet framer cuts them), so a
///   streamed result or an ATTENTION crosses the proxy at once; each whole message is also
///   given to a ``ReplaySessionBuilder`` (so the password, SSPI and FEDAUTH data never reach
///   the file) and the file is brought up to date after every server message, before that
///   message's last packet is forwarded: a proxy that dies loses nothing it already relayed.
///   (One connection's file is written a piece at a time: finished exchanges are never written
///   again; about 4 ms per exchange on a busy shared disk. Several connections in one file are
///   rewritten whole each time: use `--out-dir` for long recordings of many clients.)
/// - An upstream that refuses the login sends its ERROR to the client unchanged (and it is
///   recorded as the login response). A connection the proxy cannot set up (upstream
///   unreachable, its certificate refused) is closed and reported through ``events``.
///
/// TDS 8.0 strict (TLS before PRELOGIN) is not relayed.
public final class RecordingProxy: @unchecked Sendable {
    /// Where the proxy relays to, how it checks the upstream and shows itself to clients, and where recordings go.
    public struct Configuration: Sendable {
        /// Where files go.
        public enum Output: Sendable, Hashable {
            /// One file, with a `=== connection N` section per client connection (a plain
            /// session file while there is one).
            case file(URL)
            /// One file per client connection, `connection-N.tdssession`.
            case directory(URL)
            /// Keep the recording in memory only (``RecordingProxy/recording``).
            case none
        }

        /// The upstream SQL Server's host.
        public var upstreamHost: String
        /// The upstream's TCP port.
        public var upstreamPort: Int
        /// How the upstream's certificate is checked (default: against the system's trust store, with its host name).
        public var upstreamTLS: TLSConfiguration
        /// The TLS client implementation towards the upstream (nil: the platform's default).
        package var upstreamTLSProvider: (any TLSProvider)?
        /// What clients are shown (nil: ``TLSServerIdentity/generated()``).
        public var identity: TLSServerIdentity?
        /// Where recordings are written.
        public var output: Output
        /// Seconds allowed for connecting to the upstream.
        public var connectTimeout: Double
        /// Comment lines at the top of the recording (nil: one naming the upstream).
        public var comment: String?

        /// A configuration; by default the upstream's certificate is verified and nothing is written.
        public init(upstreamHost: String, upstreamPort: Int, upstreamTLS: TLSConfiguration = TLSConfiguration(),
                    identity: TLSServerIdentity? = nil, output: Output = .none, connectTimeout: Double = 15,
                    comment: String? = nil) {
            self.init(upstreamHost: upstreamHost, upstreamPort: upstreamPort, upstreamTLS: upstreamTLS,
                      upstreamTLSProvider: nil, identity: identity, output: output,
                      connectTimeout: connectTimeout, comment: comment)
        }

        /// As ``init(upstreamHost:upstreamPort:upstreamTLS:identity:output:connectTimeout:comment:)``,
        /// with the TLS engine towards the upstream (the package's tests inject one).
        package init(upstreamHost: String, upstreamPort: Int, upstreamTLS: TLSConfiguration = TLSConfiguration(),
                     upstreamTLSProvider: (any TLSProvider)?, identity: TLSServerIdentity? = nil,
                     output: Output = .none, connectTimeout: Double = 15, comment: String? = nil) {
            self.upstreamHost = upstreamHost
            self.upstreamPort = upstreamPort
            self.upstreamTLS = upstreamTLS
            self.upstreamTLSProvider = upstreamTLSProvider
            self.identity = identity
            self.output = output
            self.connectTimeout = connectTimeout
            self.comment = comment
        }
    }

    /// The configuration the proxy runs with.
    public let configuration: Configuration
    /// The certificate shown to clients.
    public let identity: TLSServerIdentity
    let writer: RecordingWriter
    private let lock = NSLock()
    private var listener: BlockingSocket?
    private var connections: [Int: ProxyConnection] = [:]
    private var accepted = 0
    private var _events: [String] = []
    private var _port: UInt16 = 0
    private let group = DispatchGroup()
    /// Called (on a relay thread) with each line added to ``events``.
    public var onEvent: (@Sendable (String) -> Void)?

    /// - Throws: ``TLSServerError`` when no identity is given and one cannot be generated.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        self.identity = try configuration.identity ?? TLSServerIdentity.generated()
        let comment = configuration.comment
            ?? "recorded by sqlclient record through upstream \(configuration.upstreamHost):\(configuration.upstreamPort)"
        self.writer = RecordingWriter(output: configuration.output, comment: comment)
    }

    deinit { stop() }

    /// The port the proxy listens on (0 before ``start(host:port:)``).
    public var port: UInt16 { lock.withLock { _port } }
    /// What happened, one line each: connections opened and closed, errors (never a password).
    public var events: [String] { lock.withLock { _events } }
    /// Everything recorded so far.
    public var recording: ReplayRecording { writer.recording() }
    /// Failures to write the output so far.
    public var writeErrors: [String] { writer.errors }

    /// Starts listening on `host` (IPv4 dotted quad) and `port` (0: an ephemeral one) and returns the port.
    /// - Throws: ``BlockingSocket/Failure`` as a `CustomStringConvertible` error when it cannot listen.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: UInt16 = 0) throws -> UInt16 {
        let (socket, actual) = try BlockingSocket.listen(host: host, port: port)
        lock.withLock {
            listener = socket
            _port = actual
        }
        group.enter()
        Thread.detachNewThread { [self] in
            defer { group.leave() }
            while let client = socket.accept() {
                let number: Int? = lock.withLock {
                    guard listener != nil else { return nil }
                    accepted += 1
                    return accepted
                }
                guard let number else { client.close(); return }
                let connection = ProxyConnection(number: number, client: client, proxy: self)
                lock.withLock { connections[number] = connection }
                group.enter()
                Thread.detachNewThread { [self] in
                    connection.run()
                    lock.withLock { _ = connections.removeValue(forKey: number) }
                    group.leave()
                }
            }
        }
        return actual
    }

    /// Stops listening, closes every relayed connection, waits (up to 5 s) for the relays and
    /// writes the output a last time.
    public func stop() {
        let (socket, open): (BlockingSocket?, [ProxyConnection]) = lock.withLock {
            let r = (listener, Array(connections.values))
            listener = nil
            return r
        }
        socket?.shutdown()
        socket?.close()
        for c in open { c.abort() }
        _ = group.wait(timeout: .now() + 5)
        writer.flush()
    }

    func event(_ line: String) {
        lock.withLock { _events.append(line) }
        onEvent?(line)
    }
}

/// The recording shared by every connection: one builder per connection, written after every server message.
final class RecordingWriter: @unchecked Sendable {
    let output: RecordingProxy.Configuration.Output
    let comment: String
    private let lock = NSLock()
    private var builders: [(number: Int, builder: ReplaySessionBuilder)] = []
    private var _errors: [String] = []

    init(output: RecordingProxy.Configuration.Output, comment: String) {
        self.output = output
        self.comment = comment
    }

    var errors: [String] { lock.withLock { _errors } }

    func begin(_ number: Int) {
        lock.withLock {
            builders.append((number, ReplaySessionBuilder(name: "connection \(number)")))
        }
    }

    /// Adds a message; after a server message, rewrites the output.
    func record(_ number: Int, fromClient: Bool, _ message: TDSMessage) {
        lock.withLock {
            guard let i = builders.firstIndex(where: { $0.number == number }) else { return }
            if fromClient {
                builders[i].builder.clientMessage(type: message.type, payload: message.payload)
            } else {
                builders[i].builder.serverMessage(message.payload)
                writeLocked(only: number)
            }
        }
    }

    func note(_ number: Int, _ text: String) {
        lock.withLock {
            guard let i = builders.firstIndex(where: { $0.number == number }) else { return }
            builders[i].builder.note(text)
        }
    }

    func recording() -> ReplayRecording {
        lock.withLock { recordingLocked() }
    }

    /// The secrets (login passwords) of every connection so far.
    func secrets() -> [String] {
        lock.withLock { builders.flatMap { $0.builder.redaction.secrets } }
    }

    func flush() {
        lock.withLock { writeLocked(only: nil) }
    }

    private func recordingLocked() -> ReplayRecording {
        var sections: [ReplaySession] = []
        for i in builders.indices {
            let s = builders[i].builder.build()
            if !s.exchanges.isEmpty { sections.append(s) }
        }
        return ReplayRecording(comment: comment, sections: sections)
    }

    private func writeLocked(only number: Int?) {
        do {
            switch output {
            case .none:
                return
            case .file(let url):
                let live = builders.indices.filter { builders[$0].builder.exchangeCount > 0 }
                guard !live.isEmpty else { return }
                if live.count == 1 {
                    try writeSection(live[0], to: url)
                    return
                }
                // Several connections in one file: rewritten whole (sections interleave in time).
                var sections: [ReplaySession] = []
                var texts: [[String]] = []
                for i in live {
                    sections.append(builders[i].builder.build())
                    texts.append(builders[i].builder.exchangeTexts())
                }
                files[url] = nil
                let text = ReplayRecording(comment: comment, sections: sections).text(exchangeTexts: texts)
                try Data(text.utf8).write(to: url, options: .atomic)
            case .directory(let dir):
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                for i in builders.indices where (number == nil || builders[i].number == number) && builders[i].builder.exchangeCount > 0 {
                    try writeSection(i, to: dir.appendingPathComponent("connection-\(builders[i].number).tdssession"))
                }
            }
        } catch {
            if _errors.count < 20 { _errors.append("cannot write the recording: \(error.localizedDescription)") }
        }
    }

    /// What a file written one section at a time holds for sure: its header and how many
    /// finished exchanges follow it, in how many bytes.
    private struct Written {
        var header: String
        var closed: Int
        var bytes: Int
    }
    private var files: [URL: Written] = [:]

    /// Writes one connection's session as a plain session file. Finished exchanges never change,
    /// so after the first write only what is new is written: the file is cut back to its last
    /// finished exchange and the rest appended (a long recording costs the same per exchange as
    /// a short one). A changed header (the login response's version) rewrites the file whole.
    private func writeSection(_ index: Int, to url: URL) throws {
        let closed = builders[index].builder.closedExchangeCount
        let header = ReplayRecording(comment: comment, sections: [builders[index].builder.settings]).text
        if let written = files[url], written.header == header, written.closed <= closed,
           let handle = try? FileHandle(forWritingTo: url) {
            defer { try? handle.close() }
            try handle.truncate(atOffset: UInt64(written.bytes))
            try handle.seekToEnd()
            let texts = builders[index].builder.exchangeTexts(from: written.closed)
            let newlyClosed = texts[..<(closed - written.closed)].joined()
            try handle.write(contentsOf: Data((newlyClosed + texts[(closed - written.closed)...].joined()).utf8))
            files[url] = Written(header: header, closed: closed, bytes: written.bytes + newlyClosed.utf8.count)
            return
        }
        let texts = builders[index].builder.exchangeTexts()
        let prefix = header + texts[..<closed].joined()
        try Data((prefix + texts[closed...].joined()).utf8).write(to: url, options: .atomic)
        files[url] = Written(header: header, closed: closed, bytes: prefix.utf8.count)
    }
}

/// One side of a relayed connection: its socket, the TDS module's packet framer over the
/// plaintext, and the TLS that covers it.
final class ProxyLeg: @unchecked Sendable {
    enum Crypto {
        case none
        #if canImport(CSQLClientOpenSSL)
        case server(OpenSSLTLSServerSession)
        #endif
        case client(any TLSSession)
    }

    let socket: BlockingSocket
    fileprivate var framer = PacketAssembler()
    private let cryptoLock = NSLock()
    var crypto: Crypto = .none
    /// Bytes read are TLS records (set before the relays start).
    var decrypting = false
    /// Bytes written become TLS records (set before the relays start).
    var encrypting = false

    init(_ socket: BlockingSocket) { self.socket = socket }

    /// The next whole packet (and, at EOM, the message); nil at end of stream.
    /// - Throws: the framer's `TDSDecodingError`, a TLS error, a socket error.
    func nextPacket() throws -> PacketAssembler.Output? {
        while true {
            if let out = try framer.next() { return out }
            let bytes = try socket.read()
            if bytes.isEmpty { return nil }
            framer.append(try decrypting ? decrypt(bytes) : bytes)
        }
    }

    /// The next whole message and its packets; nil at end of stream.
    func nextMessage() throws -> (message: TDSMessage, packets: [Packet])? {
        var packets: [Packet] = []
        while let out = try nextPacket() {
            packets.append(out.packet)
            if let m = out.message { return (m, packets) }
        }
        return nil
    }

    /// The client side of the TLS handshake inside PRELOGIN, through SQLClient's own
    /// (``PreloginTLSHandshake``, async), over this leg's socket and framer; the calling relay
    /// thread waits for it (the socket's blocking calls run on Dispatch threads, never on the
    /// concurrency pool).
    func clientHandshake(_ session: any TLSSession) throws {
        let stream = BlockingByteStream(socket)
        let box = ResultBox<Void>()
        let done = DispatchSemaphore(value: 0)
        let tls = session
        // Unstructured: the relay thread (blocking sockets) waits for the async handshake on a semaphore.
        Task { [self] in
            do {
                try await PreloginTLSHandshake.perform(tls, over: stream, framer: &framer)
                box.result = .success(())
            } catch {
                box.result = .failure(error)
            }
            done.signal()
        }
        done.wait()
        try box.result?.get()
    }

    /// True when bytes were received past the last whole packet.
    var hasBufferedBytes: Bool { framer.bufferedByteCount > 0 }

    /// Writes plaintext, as TLS records when ``encrypting`` (or `forceEncryption`).
    func write(_ bytes: [UInt8], forceEncryption: Bool = false) throws {
        try socket.write(encrypting || forceEncryption ? encrypt(bytes) : bytes)
    }

    private func decrypt(_ bytes: [UInt8]) throws -> [UInt8] {
        try cryptoLock.withLock {
            switch crypto {
            case .none: return bytes
            #if canImport(CSQLClientOpenSSL)
            case .server(let s): return try s.decrypt(bytes)
            #endif
            case .client(let s): return try waitForTLSStep { try await s.decrypt(bytes) }
            }
        }
    }

    private func encrypt(_ bytes: [UInt8]) throws -> [UInt8] {
        try cryptoLock.withLock {
            switch crypto {
            case .none: return bytes
            #if canImport(CSQLClientOpenSSL)
            case .server(let s): return try s.encrypt(bytes)
            #endif
            case .client(let s): return try waitForTLSStep { try await s.encrypt(bytes) }
            }
        }
    }
}

/// A ``BlockingSocket`` as a ``ByteStream``: each call runs the blocking one on a Dispatch thread.
final class BlockingByteStream: ByteStream, @unchecked Sendable {
    let socket: BlockingSocket
    init(_ socket: BlockingSocket) { self.socket = socket }

    func read(maxLength: Int) async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { [socket] in continuation.resume(with: Result { try socket.read(maxLength: maxLength) }) }
        }
    }

    func write(_ bytes: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            DispatchQueue.global().async { [socket] in continuation.resume(with: Result { try socket.write(bytes) }) }
        }
    }

    func close() { socket.shutdown() }
}

/// One relayed client connection: the set-up (PRELOGIN, both TLS handshakes, LOGIN7), then a
/// relay thread per direction.
final class ProxyConnection: @unchecked Sendable {
    enum Mode: String { case none, loginOnly = "login only", full = "whole session" }

    let number: Int
    let client: ProxyLeg
    var upstream: ProxyLeg?
    unowned let proxy: RecordingProxy
    private let lock = NSLock()
    private var aborted = false

    init(number: Int, client: BlockingSocket, proxy: RecordingProxy) {
        self.number = number
        self.client = ProxyLeg(client)
        self.proxy = proxy
    }

    /// Closes both sockets (``RecordingProxy/stop()``): the relays see end of stream.
    func abort() {
        let up: ProxyLeg? = lock.withLock {
            aborted = true
            return upstream
        }
        client.socket.shutdown()
        up?.socket.shutdown()
    }

    func run() {
        let peer = client.socket.peerName
        proxy.writer.begin(number)
        proxy.event("connection \(number): client \(peer)")
        defer {
            client.socket.close()
            upstream?.socket.close()
            proxy.event("connection \(number): closed")
        }
        let mode: Mode
        do {
            mode = try setUp()
        } catch {
            proxy.event("connection \(number): \(error)")
            return
        }
        proxy.event("connection \(number): TLS \(mode.rawValue)")
        guard let upstream else { return }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            relay(from: upstream, to: client, fromClient: false)
            done.signal()
        }
        relay(from: client, to: upstream, fromClient: true)
        done.wait()
    }

    /// PRELOGIN both ways, the TLS handshakes, LOGIN7 (the login response is relayed like any message).
    private func setUp() throws -> Mode {
        guard let (prelogin, preloginPackets) = try client.nextMessage() else {
            throw TLSServerError("the client closed the connection before PRELOGIN")
        }
        guard prelogin.type == .prelogin, let request = try? Prelogin.decode(from: prelogin.payload) else {
            throw TLSServerError("the client's first message is \(prelogin.type), not a PRELOGIN (TDS 8.0 strict is not relayed)")
        }
        proxy.writer.record(number, fromClient: true, prelogin)
        let config = proxy.configuration
        let socket = try BlockingSocket.connect(host: config.upstreamHost, port: config.upstreamPort, timeout: config.connectTimeout)
        let up = ProxyLeg(socket)
        let stop: Bool = lock.withLock {
            upstream = up
            return aborted
        }
        if stop { throw TLSServerError("stopped") }
        try up.socket.write(preloginPackets.flatMap(\.bytes))
        guard let (answer, answerPackets) = try up.nextMessage() else {
            throw TLSServerError("the upstream server closed the connection after PRELOGIN")
        }
        let reply = try Prelogin.decode(from: answer.payload)
        let mode = Self.mode(client: request.encryption?.mode, server: reply.encryption?.mode)
        if mode != .none {
            // The upstream first: if its certificate is refused the client is simply closed.
            guard let provider = config.upstreamTLSProvider ?? DefaultTLSProvider.provider else {
                throw TLSServerError("no TLS provider on this platform for the upstream leg")
            }
            let session = try provider.makeClientSession(serverName: config.upstreamHost, configuration: config.upstreamTLS)
            try up.clientHandshake(session)
            up.crypto = .client(session)
            up.decrypting = mode == .full
            up.encrypting = mode == .full
        }
        proxy.writer.record(number, fromClient: false, answer)
        try client.write(answerPackets.flatMap(\.bytes))
        if mode != .none { try clientHandshake() }
        client.decrypting = mode != .none
        client.encrypting = mode == .full
        // LOGIN7 (through TLS unless the session is plaintext).
        guard let (login, loginPackets) = try client.nextMessage() else {
            throw TLSServerError("the client closed the connection before LOGIN7")
        }
        proxy.writer.record(number, fromClient: true, login)
        try up.write(loginPackets.flatMap(\.bytes), forceEncryption: mode == .loginOnly)
        if mode == .loginOnly { client.decrypting = false }
        return mode
    }

    /// The server side of the handshake with the client, in PRELOGIN packets.
    private func clientHandshake() throws {
        #if canImport(CSQLClientOpenSSL)
        let session = try OpenSSLTLSServerSession(identity: proxy.identity)
        for _ in 0 ..< 64 {
            guard let (message, _) = try client.nextMessage() else {
                throw TLSServerError("the client closed the connection during the TLS handshake")
            }
            guard message.type == .prelogin else {
                throw TLSServerError("the client sent \(message.type) during the TLS handshake")
            }
            let step = try session.handshake(message.payload)
            if !step.output.isEmpty {
                try client.socket.write(Packet.encode(message: step.output, type: .prelogin, packetSize: Packet.defaultSize))
            }
            if step.isComplete {
                guard !client.hasBufferedBytes else { throw TLSServerError("the client sent data before the handshake ended") }
                client.crypto = .server(session)
                return
            }
        }
        throw TLSServerError("the TLS handshake with the client did not finish")
        #else
        throw TLSServerError("TLS towards clients needs OpenSSL (Linux)")
        #endif
    }

    /// Relays packets until end of stream; each whole message is recorded before its last
    /// packet is forwarded (so the answer to it cannot be recorded first).
    private func relay(from source: ProxyLeg, to target: ProxyLeg, fromClient: Bool) {
        do {
            while let out = try source.nextPacket() {
                if let m = out.message { proxy.writer.record(number, fromClient: fromClient, m) }
                try target.write(out.packet.bytes)
            }
            target.socket.shutdownWrite()
        } catch {
            proxy.event("connection \(number): \(fromClient ? "client" : "upstream") side: \(error)")
            source.socket.shutdown()
            target.socket.shutdown()
        }
    }

    /// What both legs run, from the client's ENCRYPTION and the server's answer ([MS-TDS] 2.2.6.5).
    static func mode(client: Prelogin.Encryption?, server: Prelogin.Encryption?) -> Mode {
        let c = client ?? .notSupported, s = server ?? .notSupported
        if s == .notSupported { return .none }
        if c == .notSupported && s != .required { return .none }
        if c == .off && s == .off { return .loginOnly }
        return .full
    }
}
