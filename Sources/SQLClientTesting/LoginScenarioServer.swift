#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif
import Foundation
import TDS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TDS server on loopback for login scenarios, written from [MS-TDS] (not from any client): how
/// Azure SQL, SQL Server 2022 with strict encryption, an availability group listener or an old
/// server answer a login, so that a client can be tested without them.
///
/// Each connection: an optional TLS handshake first (TDS 8.0 strict, 3.2.5.1: ALPN `tds/8.0`,
/// SNI recorded), PRELOGIN answered with the configured ENCRYPTION and FEDAUTHREQUIRED (no TLS
/// inside PRELOGIN: a client must ask for `notSupported` unless TLS came first), LOGIN7 answered as
/// ``Behaviour/login`` decides (accept, route, fail with an ERROR, close), an SSPI leg when the
/// LOGIN7 carries SSPI data and ``Behaviour/ntlmChallenge`` is set (the client's SSPI message,
/// packet type 0x11, is recorded), then every SQL batch answered with one row naming the server
/// (column `server`, nvarchar) and every other request with DONE. Everything received is kept in
/// ``records`` (PRELOGIN, LOGIN7, SSPI, requests, the ALPN protocol and SNI name seen).
///
/// ```swift
/// let server = try LoginScenarioServer(name: "replica", behaviour: .init(login: { _ in .accept }))
/// defer { server.stop() }
/// // connect to 127.0.0.1:server.port with encryption .notSupported
/// ```
public final class LoginScenarioServer: @unchecked Sendable {
    /// A PEM certificate (chain) and key file, for TLS-first (strict) connections.
    public struct Certificate: Sendable, Hashable {
        /// The PEM certificate (chain) file.
        public var certificatePath: String
        /// The PEM private key file.
        public var keyPath: String
        /// A certificate from its certificate and key files.
        public init(certificatePath: String, keyPath: String) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }
    }

    /// How LOGIN7 (or the SSPI message that completes it) is answered.
    public enum LoginReply: Sendable {
        /// LOGINACK for the version the client asked (7.1 → 7.1 rev 1 … 7.4), ENVCHANGEs for database,
        /// collation (``Behaviour/collation``), language and packet size, FEATUREEXTACK for the features
        /// requested (UTF8_SUPPORT, FEDAUTH) plus ``Behaviour/extraAcknowledgements``, DONE.
        case accept
        /// As `.accept` but with an ENVCHANGE type 20 (routing) after LOGINACK: the client must
        /// reconnect to `server`, `port`.
        case route(server: String, port: UInt16)
        /// ERROR `number` (class `severity`) and DONE with DONE_ERROR, no LOGINACK, encoded for
        /// `version` (nil: the version the client asked; `.v7_1` gives SQL Server 2000's 9-byte DONE
        /// and 2-byte line number whatever the client asked).
        case fail(number: Int32, message: String, state: UInt8 = 1, severity: UInt8 = 14, version: TDSVersion? = nil)
        /// These token bytes, as one TABULAR_RESULT message.
        case tokens([UInt8])
        /// Close the connection without answering.
        case close
    }

    /// What the server is told about a login, to choose its reply.
    public struct LoginContext: Sendable {
        /// 0 for the first connection this server accepted, 1 for the second, …
        public var connectionIndex: Int
        /// The client's PRELOGIN.
        public var prelogin: Prelogin
        /// The client's LOGIN7 (its password redacted when printed).
        public var login: Login7
        /// The client's SSPI message (packet type 0x11), when there was an SSPI leg.
        public var sspi: [UInt8]?
        /// The access token of the client's FEDAUTH token message (packet type 0x08), when the server
        /// sent FEDAUTHINFO (``Behaviour/fedAuthInfo``).
        public var fedAuthToken: String?
    }

    /// How the server answers: TLS, PRELOGIN options, the login collation, and the reply to each login.
    public struct Behaviour: Sendable {
        /// Run TLS before anything else (TDS 8.0 strict) with this certificate.
        public var tlsFirst: Certificate?
        /// With `tlsFirst`: refuse a client that does not offer ALPN `tds/8.0` (default true).
        public var requireALPN: Bool = true
        /// The PRELOGIN ENCRYPTION answer (default ENCRYPT_NOT_SUP).
        public var encryption: Prelogin.Encryption = .notSupported
        /// The PRELOGIN FEDAUTHREQUIRED answer; nil sends none.
        public var fedAuthRequired: UInt8?
        /// The collation announced at login (5 bytes; default SQL_Latin1_General_CP1_CI_AS).
        public var collation: [UInt8] = ServerTokens.latin1GeneralCP1CIAS
        /// Acknowledged in FEATUREEXTACK whether requested or not (to test a client's checks).
        public var extraAcknowledgements: [FeatureExtAck.Feature] = []
        /// Do not acknowledge FEDAUTH even when it is requested.
        public var omitFedAuthAcknowledgement = false
        /// Answer a LOGIN7 with SSPI data with this NTLM CHALLENGE_MESSAGE in an SSPI token, then read
        /// the client's SSPI message before replying.
        public var ntlmChallenge: [UInt8]?
        /// The FEDAUTH MSAL workflow: a LOGIN7 whose FEDAUTH feature names the ADAL/MSAL library
        /// (0x02) is answered with a FEDAUTHINFO token ([MS-TDS] 2.2.7.12) naming this STSURL and SPN;
        /// the client's FEDAUTH token message (packet type 0x08) is read and its token handed to
        /// ``login`` (``LoginContext/fedAuthToken``) before the reply.
        public var fedAuthInfo: (stsURL: String, spn: String)?
        /// Answer the first request after login with a routing ENVCHANGE (which a client must treat as
        /// a protocol error).
        public var routeAfterLogin: (server: String, port: UInt16)?
        /// Decides the reply to each login.
        public var login: @Sendable (LoginContext) -> LoginReply
        /// Keep a session per connection (database, language, SET options, transaction) that SQL
        /// batches change, acknowledge SESSIONRECOVERY and restore a session from a recovery LOGIN7
        /// (see ``SessionRecoveryScenario``); nil: the plain replies described above.
        public var sessionRecovery: SessionRecoveryScenario?
        /// Acknowledge COLUMNENCRYPTION (Always Encrypted, version 1) when LOGIN7 asks for it.
        public var acknowledgesColumnEncryption = false
        /// Answers a request after login with the tokens it returns (nil: the replies described
        /// above), given the session's TDS version and LOGIN7 (see ``AlwaysEncryptedTestServer``).
        public var respond: (@Sendable (Request, TDSVersion, Login7) -> [UInt8]?)?

        /// A behaviour from its most used parts; the rest are set on the value.
        public init(tlsFirst: Certificate? = nil, encryption: Prelogin.Encryption = .notSupported,
                    fedAuthRequired: UInt8? = nil, collation: [UInt8] = ServerTokens.latin1GeneralCP1CIAS,
                    login: @escaping @Sendable (LoginContext) -> LoginReply = { _ in .accept }) {
            self.tlsFirst = tlsFirst
            self.encryption = encryption
            self.fedAuthRequired = fedAuthRequired
            self.collation = collation
            self.login = login
        }
    }

    /// One request after login.
    public struct Request: Sendable, Hashable {
        /// The packet type (SQL batch 0x01, RPC 0x03, transaction manager 0x0E…).
        public var type: PacketType
        /// The message body (every packet's payload, concatenated).
        public var payload: [UInt8]
    }

    /// What one connection showed the server.
    public struct Record: Sendable {
        /// 0 for the first connection this server accepted, 1 for the second, …
        public var connectionIndex: Int
        /// The ALPN protocol agreed in a TLS-first handshake.
        public var alpn: String?
        /// The SNI host name the client sent in a TLS-first handshake.
        public var serverNameIndication: String?
        /// Why a TLS-first handshake failed (OpenSSL's reason).
        public var tlsFailure: String?
        /// The client's PRELOGIN, once read.
        public var prelogin: Prelogin?
        /// The client's LOGIN7, once read.
        public var login: Login7?
        /// The client's SSPI message (packet type 0x11).
        public var sspi: [UInt8]?
        /// The FEDAUTH option of LOGIN7 (library, echo, workflow), when there was one.
        public var fedAuth: FedAuth?
        /// The access token of the client's FEDAUTH token message (packet type 0x08).
        public var fedAuthToken: String?
        /// The requests sent after the login, in order.
        public var requests: [Request] = []
        /// The reply chosen for the login.
        public var reply: String?
    }

    /// The scenario's name (for messages).
    public let name: String
    /// How the server answers.
    public let behaviour: Behaviour
    private let lock = NSLock()
    private var listenFD: Int32 = -1
    private var clients: Set<Int32> = []
    /// Connections being dropped with an RST (SO_LINGER 0): no FIN before their close.
    private var aborting: Set<Int32> = []
    private var closedConnections = 0
    private var _records: [Record] = []
    private var _port: UInt16 = 0
    private let group = DispatchGroup()
    #if canImport(CSQLClientOpenSSL)
    private var tlsContext: OpaquePointer?
    #endif

    /// Starts listening on 127.0.0.1, an ephemeral port. `name` is what SQL batches return.
    /// - Throws: ``ReplayServer/StartError`` when it cannot listen, or when the certificate cannot be loaded.
    public init(name: String = "server", behaviour: Behaviour) throws {
        self.name = name
        self.behaviour = behaviour
        #if canImport(CSQLClientOpenSSL)
        if let cert = behaviour.tlsFirst {
            guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw ReplayServer.StartError(call: "SSL_CTX_new", errno: EINVAL) }
            guard SSL_CTX_use_certificate_chain_file(ctx, cert.certificatePath) == 1,
                  SSL_CTX_use_PrivateKey_file(ctx, cert.keyPath, SSL_FILETYPE_PEM) == 1 else {
                SSL_CTX_free(ctx)
                throw ReplayServer.StartError(call: "loading \(cert.certificatePath)", errno: ENOENT)
            }
            _ = csqlclient_SSL_CTX_set_min_proto_version(ctx, csqlclient_TLS_version(12))
            csqlclient_SSL_CTX_select_alpn_tds8(ctx, behaviour.requireALPN ? 1 : 0)
            tlsContext = ctx
            // OpenSSL writes to the socket with write(2): a client that hangs up mid-handshake would
            // raise SIGPIPE in the test process. Ignored process-wide (test servers only).
            signal(SIGPIPE, SIG_IGN)
        }
        #else
        if behaviour.tlsFirst != nil { throw ReplayServer.StartError(call: "TLS (no OpenSSL)", errno: ENOTSUP) }
        #endif
        try listen()
    }

    deinit {
        stop()
        #if canImport(CSQLClientOpenSSL)
        if let tlsContext { SSL_CTX_free(tlsContext) }
        #endif
    }

    /// The TCP port on 127.0.0.1.
    public var port: UInt16 { lock.withLock { _port } }

    /// One record per connection accepted so far, updated as the connection proceeds.
    public var records: [Record] { lock.withLock { _records } }

    /// Waits (at most `timeout` seconds) until `count` connections have been accepted and have
    /// reached a login reply or their end; returns the records.
    public func records(atLeast count: Int, timeout: TimeInterval = 10) -> [Record] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let current = records
            if current.count >= count && current.prefix(count).allSatisfy({ $0.reply != nil || $0.tlsFailure != nil }) || Date() > deadline {
                return current
            }
            usleep(10_000)
        }
    }

    /// Stops listening, closes every connection and waits (up to 5 s) for their threads.
    public func stop() {
        let (fd, open): (Int32, Set<Int32>) = lock.withLock {
            let r = (listenFD, clients)
            listenFD = -1
            return r
        }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
        for c in open { shutdown(c, Int32(SHUT_RDWR)) }
        _ = group.wait(timeout: .now() + 5)
    }

    private func listen() throws {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw ReplayServer.StartError(call: "socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, systemListen(fd, 64) == 0 else { let e = errno; close(fd); throw ReplayServer.StartError(call: "bind/listen", errno: e) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        lock.withLock { listenFD = fd; _port = UInt16(bigEndian: addr.sin_port) }
        group.enter()
        Thread.detachNewThread { [self] in
            acceptLoop(fd)
            group.leave()
        }
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let index: Int? = lock.withLock {
                guard listenFD >= 0 else { return nil }
                clients.insert(client)
                _records.append(Record(connectionIndex: _records.count))
                return _records.count - 1
            }
            guard let index else { close(client); return }
            group.enter()
            Thread.detachNewThread { [self] in
                serve(client, index: index)
                lock.withLock { _ = clients.remove(client) }
                close(client)
                lock.withLock { _ = aborting.remove(client); closedConnections += 1 }
                group.leave()
            }
        }
    }

    private func update(_ index: Int, _ change: (inout Record) -> Void) {
        lock.withLock { change(&_records[index]) }
    }

    // MARK: - One connection

    private func serve(_ fd: Int32, index: Int) {
        let channel: Channel
        if behaviour.tlsFirst != nil {
            #if canImport(CSQLClientOpenSSL)
            guard let tls = TLSChannel(fd: fd, context: tlsContext) else {
                update(index) { $0.tlsFailure = LoginScenarioServer.openSSLReason() }
                return
            }
            update(index) { $0.alpn = tls.alpn; $0.serverNameIndication = tls.serverName }
            channel = tls
            #else
            return
            #endif
        } else {
            channel = PlainChannel(fd: fd)
        }
        defer { if !(lock.withLock { aborting.contains(fd) }) { channel.shutdown() } }
        var reader = MessageReader(channel: channel)

        guard let pre = reader.next(), pre.type == .prelogin, let prelogin = try? Prelogin.decode(from: pre.payload) else {
            update(index) { $0.reply = "no PRELOGIN" }
            return
        }
        update(index) { $0.prelogin = prelogin }
        var answer = Prelogin(version: Prelogin.Version(major: 16, minor: 0, build: 1000), encryption: behaviour.encryption,
                              instanceOption: [0], threadID: nil, mars: 0, fedAuthRequired: behaviour.fedAuthRequired)
        answer.unknownOptions = []
        guard channel.write(Packet.encode(message: answer.encode(), type: .tabularResult, packetSize: 4096)) else { return }

        guard let first = reader.next(), first.type == .login7, let login = try? Login7.decode(from: first.payload) else {
            update(index) { $0.reply = "no LOGIN7" }
            return
        }
        update(index) { $0.login = login }
        var sspi: [UInt8]?
        if !login.sspi.isEmpty, let challenge = behaviour.ntlmChallenge {
            var w = ByteWriter()
            w.writeUInt8(TokenType.sspi.rawValue)
            w.writeUInt16LE(UInt16(truncatingIfNeeded: challenge.count))
            w.writeBytes(challenge)
            guard channel.write(Packet.encode(message: w.bytes, type: .tabularResult, packetSize: 4096)),
                  let leg = reader.next() else { return }
            guard leg.type == .sspi else {
                update(index) { $0.reply = "expected SSPI, got \(leg.type)" }
                return
            }
            sspi = leg.payload
            update(index) { $0.sspi = leg.payload }
        }
        var fedAuthToken: String?
        let fedAuth = login.featureExt?.first(where: { $0.id == Login7Feature.fedAuthID }).flatMap { try? FedAuth.decode($0.data) }
        update(index) { $0.fedAuth = fedAuth }
        if let info = behaviour.fedAuthInfo, fedAuth?.library == .adal {
            guard channel.write(Packet.encode(message: Self.fedAuthInfoToken(stsURL: info.stsURL, spn: info.spn),
                                              type: .tabularResult, packetSize: 4096)),
                  let leg = reader.next() else { return }
            guard leg.type == .federatedAuthToken, let message = try? FedAuthTokenMessage.decode(from: leg.payload) else {
                update(index) { $0.reply = "expected a FEDAUTH token message, got \(leg.type)" }
                return
            }
            let bytes = message.token.reveal()
            var r = ByteReader(bytes)
            fedAuthToken = try? r.readUTF16LE(byteCount: bytes.count)
            update(index) { $0.fedAuthToken = fedAuthToken }
        }
        let reply = behaviour.login(LoginContext(connectionIndex: index, prelogin: prelogin, login: login, sspi: sspi,
                                                 fedAuthToken: fedAuthToken))
        var session = behaviour.sessionRecovery.map { ScenarioSession(scenario: $0, login: login) }
        update(index) { $0.reply = "\(reply)" }
        let version = ServerTokens.ackVersion(forClient: login.tdsVersion)
        let tokens: [UInt8]
        switch reply {
        case .close:
            return
        case .tokens(let t):
            tokens = t
        case .fail(let number, let message, let state, let severity, let as_):
            let v = as_ ?? login.tdsVersion
            tokens = ServerTokens.message(token: 0xAA, number: number, state: state, severity: severity, text: message,
                                          server: name, version: v)
                + ServerTokens.done(status: .error, version: v)
        case .accept:
            tokens = loginResponse(login: login, version: version, routing: nil, session: session)
        case .route(let server, let port):
            tokens = loginResponse(login: login, version: version, routing: (server, port), session: session)
        }
        guard channel.write(Packet.encode(message: tokens, type: .tabularResult, packetSize: 4096)) else { return }
        guard case .accept = reply else { return }

        var routed = false
        while let request = reader.next() {
            update(index) { $0.requests.append(Request(type: request.type, payload: request.payload)) }
            var response: [UInt8]
            if request.type == .attention {
                response = ServerTokens.done(status: .attention, version: version)
            } else if let respond = behaviour.respond, let answer = respond(Request(type: request.type, payload: request.payload), version, login) {
                response = answer
            } else if let route = behaviour.routeAfterLogin, !routed {
                routed = true
                response = routingEnvChange(server: route.server, port: route.port) + ServerTokens.done(version: version)
            } else if request.type == .sqlBatch, var current = session,
                      let text = RequestDecoding.sqlBatchText(request.payload, version: version) {
                response = current.respond(to: text, server: name, version: version)
                session = current
                if current.closesWithoutAnswer { return }
            } else if request.type == .sqlBatch {
                let column = ColumnMetadata(typeInfo: .nvarchar(128), name: "server")
                response = ServerTokens.colMetadata([column], version: version)
                    + ((try? ServerTokens.row([.string(name)], columns: [column])) ?? [])
                    + ServerTokens.done(status: .count, rowCount: 1, version: version)
            } else {
                response = ServerTokens.done(version: version)
            }
            guard channel.write(Packet.encode(message: response, type: .tabularResult, packetSize: 4096)) else { return }
        }
    }

    private func loginResponse(login: Login7, version: TDSVersion, routing: (String, UInt16)?,
                               session: ScenarioSession? = nil) -> [UInt8] {
        var t: [UInt8] = []
        t += ServerTokens.envChange(type: 1, new: session?.database ?? (login.database.isEmpty ? "master" : login.database),
                                    old: "master")
        t += ServerTokens.envChangeCollation(behaviour.collation)
        t += ServerTokens.envChange(type: 2, new: session?.language ?? "us_english", old: "")
        t += ServerTokens.loginAck(version: version)
        t += ServerTokens.envChange(type: 4, new: "4096", old: "4096")
        if let (server, port) = routing { t += routingEnvChange(server: server, port: port) }
        var acks: [FeatureExtAck.Feature] = []
        for feature in login.featureExt ?? [] {
            switch feature.id {
            case Login7Feature.utf8SupportID: acks.append(.init(id: .utf8Support, data: [1]))
            case Login7Feature.fedAuthID where !behaviour.omitFedAuthAcknowledgement: acks.append(.init(id: .fedAuth, data: []))
            case Login7Feature.columnEncryptionID where behaviour.acknowledgesColumnEncryption:
                acks.append(.init(id: .columnEncryption, data: [1]))
            default: break
            }
        }
        if let recovery = session?.featureAcknowledgement { acks.append(recovery) }
        acks += behaviour.extraAcknowledgements
        if !acks.isEmpty, version.generation >= 0x74 {
            var w = ByteWriter()
            FeatureExtAck(features: acks).encode(into: &w)
            t += w.bytes
        }
        t += ServerTokens.done(version: version)
        return t
    }

    /// How ``dropConnections(_:)`` ends a connection.
    public enum Drop: Sendable {
        /// An orderly close: the client reads the end of the stream (FIN).
        case fin
        /// An abortive close (SO_LINGER 0): the client gets ECONNRESET (RST), no FIN.
        case reset
    }

    /// Drops every open connection now, as a gateway, a failover or a NAT timeout does to an idle
    /// one, and returns once they are closed (at most 5 s); answers how many were dropped.
    @discardableResult
    public func dropConnections(_ how: Drop) -> Int {
        let (open, before): ([Int32], Int) = lock.withLock {
            if case .reset = how { aborting.formUnion(clients) }
            return (Array(clients), closedConnections)
        }
        for fd in open {
            if case .reset = how {
                var option = linger(l_onoff: 1, l_linger: 0)
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
            }
            // Wakes the connection's thread out of its read without sending anything; it closes the socket.
            shutdown(fd, Int32(SHUT_RD))
        }
        let deadline = Date().addingTimeInterval(5)
        while lock.withLock({ closedConnections }) < before + open.count, Date() < deadline { usleep(1_000) }
        return open.count
    }

    /// [MS-TDS] 2.2.7.12 FEDAUTHINFO: TokenLength, CountOfInfoIDs (2), the SPN (0x02) and STSURL
    /// (0x01) options (id, length, offset counted from CountOfInfoIDs), then their UTF-16LE data.
    public static func fedAuthInfoToken(stsURL: String, spn: String) -> [UInt8] {
        func utf16(_ s: String) -> [UInt8] { var w = ByteWriter(); w.writeUTF16LE(s); return w.bytes }
        let options: [(UInt8, [UInt8])] = [(0x02, utf16(spn)), (0x01, utf16(stsURL))]
        var offset = 4 + 9 * options.count
        var body = ByteWriter()
        body.writeUInt32LE(UInt32(options.count))
        for (id, data) in options {
            body.writeUInt8(id)
            body.writeUInt32LE(UInt32(data.count))
            body.writeUInt32LE(UInt32(offset))
            offset += data.count
        }
        for (_, data) in options { body.writeBytes(data) }
        var w = ByteWriter()
        w.writeUInt8(TokenType.fedAuthInfo.rawValue)
        w.writeUInt32LE(UInt32(body.count))
        w.writeBytes(body.bytes)
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.9 ENVCHANGE type 20 (routing): TCP, the port, the server name.
    public func routingEnvChange(server: String, port: UInt16) -> [UInt8] {
        var w = ByteWriter()
        EnvChange(type: .routing, newValue: .routing(EnvChange.Routing(port: port, server: server)),
                  oldValue: .routing(nil)).encode(into: &w)
        return w.bytes
    }

    /// An NTLM CHALLENGE_MESSAGE ([MS-NLMP] 2.2.1.2): Unicode, NTLM, target info (NetBIOS domain
    /// `domain`, computer `computer`, and MsvAvTimestamp when `timestamp` is given).
    public static func ntlmChallenge(serverChallenge: [UInt8], domain: String = "Domain", computer: String = "Server",
                                     timestamp: UInt64? = nil, flags: UInt32 = 0xA28A_8235) -> [UInt8] {
        func utf16(_ s: String) -> [UInt8] { var w = ByteWriter(); w.writeUTF16LE(s); return w.bytes }
        var info = ByteWriter()
        for (id, value) in [(UInt16(2), utf16(domain)), (1, utf16(computer))] {
            info.writeUInt16LE(id); info.writeUInt16LE(UInt16(value.count)); info.writeBytes(value)
        }
        if let timestamp { info.writeUInt16LE(7); info.writeUInt16LE(8); info.writeUInt64LE(timestamp) }
        info.writeUInt32LE(0)
        let target = utf16(computer)
        var w = ByteWriter()
        w.writeBytes(Array("NTLMSSP".utf8) + [0])
        w.writeUInt32LE(2)
        w.writeUInt16LE(UInt16(target.count)); w.writeUInt16LE(UInt16(target.count)); w.writeUInt32LE(56)
        w.writeUInt32LE(flags)
        w.writeBytes(serverChallenge.prefix(8))
        w.writeBytes([UInt8](repeating: 0, count: 8))
        w.writeUInt16LE(UInt16(info.count)); w.writeUInt16LE(UInt16(info.count)); w.writeUInt32LE(UInt32(56 + target.count))
        w.writeBytes([10, 0, 0, 0, 0, 0, 0, 0x0F])
        w.writeBytes(target)
        w.writeBytes(info.bytes)
        return w.bytes
    }

    static func openSSLReason() -> String {
        #if canImport(CSQLClientOpenSSL)
        var buffer = [CChar](repeating: 0, count: 256)
        let e = ERR_get_error()
        if e == 0 { return "the TLS handshake failed" }
        ERR_error_string_n(e, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #else
        return "no TLS"
        #endif
    }
}

// MARK: - Byte channels (blocking, one thread per connection)

private protocol Channel: AnyObject {
    /// Bytes received, empty at the end of the stream.
    func read() -> [UInt8]
    func write(_ bytes: [UInt8]) -> Bool
    func shutdown()
}

private final class PlainChannel: Channel {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func read() -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return Array(buffer[0 ..< n]) }
            if n < 0, errno == EINTR { continue }
            return []
        }
    }
    func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            #if canImport(Darwin)
            let flags: Int32 = 0
            #else
            let flags = Int32(MSG_NOSIGNAL)
            #endif
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, flags) }
            if n <= 0 { if n < 0, errno == EINTR { continue }; return false }
            sent += n
        }
        return true
    }
    func shutdown() { _ = systemShutdown(fd) }
}

#if canImport(CSQLClientOpenSSL)
/// TLS straight on the socket (TDS 8.0), through OpenSSL's server side.
private final class TLSChannel: Channel {
    let fd: Int32
    let ssl: OpaquePointer
    let alpn: String?
    let serverName: String?

    init?(fd: Int32, context: OpaquePointer?) {
        ERR_clear_error()
        guard let context, let ssl = SSL_new(context) else { return nil }
        SSL_set_fd(ssl, fd)
        guard SSL_accept(ssl) == 1 else {
            SSL_free(ssl)
            return nil
        }
        self.fd = fd
        self.ssl = ssl
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        alpn = data.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
        serverName = csqlclient_SSL_get_servername(ssl).map { String(cString: $0) }
    }
    deinit { SSL_free(ssl) }

    func read() -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
        return n > 0 ? Array(buffer[0 ..< Int(n)]) : []
    }
    func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + sent, Int32(bytes.count - sent)) }
            if n <= 0 { return false }
            sent += Int(n)
        }
        return true
    }
    func shutdown() {
        _ = SSL_shutdown(ssl)
        _ = systemShutdown(fd)
    }
}
#endif

/// Whole messages from a channel, through the one packet framer (``PacketAssembler``).
private struct MessageReader {
    let channel: Channel
    var assembler = PacketAssembler()

    init(channel: Channel) { self.channel = channel }

    mutating func next() -> (type: PacketType, payload: [UInt8])? {
        while true {
            do {
                while let output = try assembler.next() {
                    if let message = output.message { return (message.type, message.payload) }
                }
            } catch {
                return nil
            }
            let bytes = channel.read()
            if bytes.isEmpty { return nil }
            assembler.append(bytes)
        }
    }
}

private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }
private func systemShutdown(_ fd: Int32) -> Int32 { shutdown(fd, Int32(SHUT_RDWR)) }
