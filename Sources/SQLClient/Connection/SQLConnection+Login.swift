#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import TDS

/// Connecting and logging in ([MS-TDS] 3.2.5.1–3.2.5.3): PRELOGIN, the TLS handshake inside
/// PRELOGIN packets, LOGIN7 and the login response, under one time budget.
extension SQLConnection {
    /// The largest PRELOGIN response accepted (a real one is under 100 bytes).
    static let maximumPreloginResponseSize = 64 << 10
    /// The largest login response accepted (LOGINACK, ENVCHANGEs, INFO, FEATUREEXTACK…).
    static let maximumLoginResponseSize = 1 << 20

    /// Connects, negotiates encryption, runs the TLS handshake inside PRELOGIN, and logs in.
    ///
    /// A named instance without a port is resolved through the SQL Server Browser (UDP).
    /// ``SQLConnectionConfiguration/connectTimeout`` bounds everything: the Browser, resolving the
    /// host, connecting, PRELOGIN, TLS and the login.
    /// - Throws: ``SQLClientError``: `.invalidConfiguration` (before anything is sent),
    ///   `.hostNotFound`, `.instanceNotFound`, `.connectionFailed`, `.timeout`, `.tlsFailed`,
    ///   `.certificateVerificationFailed`, `.encryptionNotAvailable`, `.loginFailed` (with the
    ///   server's number, state and message; never the password), `.protocolError` (also for a
    ///   server that does not answer with TDS).
    public static func connect(_ configuration: SQLConnectionConfiguration) async throws -> SQLConnection {
        let configuration = try configuration.validated()
        let clock = SystemConnectionClock()
        let deadline = clock.now() + configuration.connectTimeout
        func remaining() throws -> Duration {
            let left = deadline - clock.now()
            guard left > .zero else {
                throw SQLClientError(.timeout, "connecting did not finish within \(configuration.connectTimeout)")
            }
            return left
        }
        let address = configuration.address
        let port: Int
        if let p = address.port {
            port = p
        } else if let instance = address.instance {
            port = try await SQLServerBrowser.resolvePort(host: address.host, instance: instance,
                                                          browserPort: configuration.browserPort,
                                                          timeout: min(try remaining(), .seconds(5)))
        } else {
            port = SQLServerAddress.defaultPort
        }
        return try await connect(configuration, port: port, purpose: .connect, clock: clock, deadline: deadline)
    }

    /// What a login through `connect(_:port:purpose:clock:deadline:)` is for: what differs
    /// between a new connection and an idle connection's recovery.
    enum LoginPurpose: Sendable {
        /// A new connection: transient login errors are retried (``SQLConnectRetryPolicy``), the
        /// connect and its failure are logged (``SQLLogEvent``), and `SET TEXTSIZE` follows the login.
        case connect
        /// One attempt of an idle connection's recovery (`SQLConnection+Recovery.swift`, whose
        /// machine retries): LOGIN7 carries this SESSIONRECOVERY data; no retry, no connect event.
        case recovery(SessionRecoveryFeature)

        var isConnect: Bool { if case .connect = self { return true } else { return false } }
    }

    /// The one connect path, from `port` on `configuration`'s host by `deadline`: each attempt
    /// opens a socket and logs in; a redirect ([MS-TDS] ENVCHANGE type 20) is followed once, with
    /// the same credentials and options, and transient login errors are retried as `purpose`
    /// allows (``ConnectPlan``), all within the one budget.
    static func connect(_ configuration: SQLConnectionConfiguration, port: Int, purpose: LoginPurpose,
                        clock: any ConnectionClock, deadline: Duration) async throws -> SQLConnection {
        let host = configuration.address.host
        let policy = purpose.isConnect ? configuration.connectRetry
            : SQLConnectRetryPolicy(count: 0, interval: configuration.connectRetry.interval)
        var plan = ConnectPlan(host: host, port: port, serverName: configuration.loginServerName ?? host, policy: policy)
        var attempt = configuration
        var redirectedFrom: String?
        while true {
            let target = plan.target
            let left = deadline - clock.now()
            guard left > .zero else {
                throw SQLClientError(.timeout, (purpose.isConnect ? "connecting" : "the recovery login")
                                     + " did not finish within \(configuration.connectTimeout)")
            }
            let outcome: ConnectPlan.Outcome
            do {
                let socket = try await openSocket(host: target.host, port: target.port, configuration: attempt,
                                                  timeout: left, logsFailure: purpose.isConnect)
                return try await logIn(attempt, port: target.port, over: socket, clock: clock, deadline: deadline,
                                       redirectedFrom: redirectedFrom, purpose: purpose)
            } catch let redirect as LoginRedirect {
                outcome = .routed(redirect.routing)
            } catch let error as SQLClientError where error.code != .timeout && error.code != .cancelled {
                outcome = .failed(error)
            }
            switch plan.next(after: outcome, remaining: deadline - clock.now()) {
            case .done:
                throw SQLClientError(.invalidState, "the connect plan ended without a connection")
            case .follow(let next):
                redirectedFrom = "\(target.host):\(target.port)"
                attempt.address = SQLServerAddress(host: next.host, port: next.port)
                attempt.loginServerName = next.serverName
            case .retry(let delay):
                try await clock.sleep(until: clock.now() + delay)
            case .fail(let error):
                throw error
            }
        }
    }

    /// The TCP connection of one attempt: every resolved address at once with
    /// ``SQLConnectionConfiguration/multiSubnetFailover``, else one after another; TCP keep-alive set.
    private static func openSocket(host: String, port: Int, configuration: SQLConnectionConfiguration,
                                   timeout: Duration, logsFailure: Bool) async throws -> SocketStream {
        let socket: SocketStream
        do {
            socket = configuration.multiSubnetFailover
                ? try await ParallelConnect.connect(host: host, port: port, timeout: timeout)
                : try await SocketStream.connect(host: host, port: port, timeout: timeout)
        } catch let error as SQLClientError {
            if logsFailure { configuration.eventLogger?.connectionFailed(error, connection: 0) }
            throw error
        }
        if let keepAlive = configuration.keepAlive {
            do {
                let (idle, interval) = keepAlive.seconds
                try socket.enableKeepAlive(idleSeconds: idle, intervalSeconds: interval)
            } catch {
                socket.close()
                throw error
            }
        }
        return socket
    }

    /// A login answered with a routing ENVCHANGE: the attempt is over, the next one goes there.
    struct LoginRedirect: Error {
        var routing: EnvChange.Routing
    }

    /// Parses `connectionString` (see ``SQLConnectionConfiguration/init(connectionString:)``) and connects.
    public static func connect(connectionString: String) async throws -> SQLConnection {
        try await connect(try SQLConnectionConfiguration(connectionString: connectionString))
    }

    /// Logs in over an already connected stream (a socket, or a test double such as a replay
    /// stream), within ``SQLConnectionConfiguration/loginTimeout`` (else `connectTimeout`).
    package static func connect(_ configuration: SQLConnectionConfiguration, port: Int = 0,
                               over stream: any ByteStream) async throws -> SQLConnection {
        try await connect(configuration, port: port, over: stream, clock: SystemConnectionClock())
    }

    /// As ``connect(_:port:over:)``, with the connection's time from `clock` (tests).
    static func connect(_ configuration: SQLConnectionConfiguration, port: Int = 0, over stream: any ByteStream,
                        clock: any ConnectionClock) async throws -> SQLConnection {
        let validated: SQLConnectionConfiguration
        do {
            validated = try configuration.validated()
        } catch {
            stream.close()
            throw error
        }
        do {
            return try await logIn(validated, port: port, over: stream, clock: clock,
                                   deadline: clock.now() + (validated.loginTimeout ?? validated.connectTimeout))
        } catch let redirect as LoginRedirect {
            throw SQLClientError(.unsupported, "the server redirected the login to \(redirect.routing.server):\(redirect.routing.port);"
                                 + " a connection over a given stream cannot follow it (connect with a configuration instead)")
        }
    }

    /// Logs in over `stream` for `purpose`, closing it on failure. The login ends by `deadline`,
    /// or by ``SQLConnectionConfiguration/loginTimeout`` from now when that comes first.
    private static func logIn(_ configuration: SQLConnectionConfiguration, port: Int, over stream: any ByteStream,
                              clock: any ConnectionClock, deadline: Duration, redirectedFrom: String? = nil,
                              purpose: LoginPurpose = .connect) async throws -> SQLConnection {
        var recovering: SessionRecoveryFeature?
        if case .recovery(let feature) = purpose { recovering = feature }
        let connection = SQLConnection(configuration: configuration, port: port, socket: stream, clock: clock,
                                       recovering: recovering)
        var end = deadline
        if let limit = configuration.loginTimeout { end = min(end, clock.now() + limit) }
        let events = purpose.isConnect ? configuration.eventLogger : nil
        events?.connect(host: configuration.address.host, port: port, connection: connection.logNumber, connected: true)
        do {
            try await connection.runLogin(deadline: end, redirectedFrom: redirectedFrom)
        } catch {
            events?.connectionFailed(error as? SQLClientError ?? SQLClientError(.connectionFailed, "\(error)"),
                                     connection: connection.logNumber)
            stream.close()
            await connection.abortLogin()
            throw error
        }
        if purpose.isConnect, let textSize = configuration.textSize {
            _ = try await connection.run(.sqlBatch("SET TEXTSIZE \(textSize)"), timeout: nil)
        }
        return connection
    }

    private func abortLogin() {
        if machine.state != .closed { for action in machine.closeRequested() { performNow(action) } }
        reader.release()
    }

    /// The login exchange, holding the write path throughout.
    func runLogin(deadline: Duration, redirectedFrom: String?) async throws {
        try await acquireWriteGate()
        defer { releaseWriteGate() }
        do {
            try await loginSteps(deadline: deadline)
            session.host = configuration.address.host
            session.port = port
            session.redirectedFrom = redirectedFrom
        } catch let redirect as LoginRedirect {
            throw redirect
        } catch {
            // A login that ran out of time fails with the timeout, whatever the read in flight said.
            if machine.state == .closed, let reason = machine.closeError, reason.code == .timeout { throw reason }
            if let error = error as? SQLClientError { throw error }
            throw SQLClientError(.connectionFailed, "the login failed: \(error)")
        }
    }

    private func loginSteps(deadline: Duration) async throws {
        var pending: [ConnectionStateMachine.Action] = []
        let budget = configuration.loginTimeout.map { min($0, configuration.connectTimeout) } ?? configuration.connectTimeout
        for action in machine.connected(now: clock.now(), deadline: deadline, budget: budget) {
            if case .scheduleTimeout = action { performNow(action) } else { pending.append(action) }
        }
        var authentication = LoginAuthentication(configuration.authentication)
        try await authentication.prepare(address: configuration.address, port: port, timeout: max(.zero, deadline - clock.now()))
        machine.configureLogin(maximumSSPITokens: authentication.maximumSSPITokens,
                               expectsFedAuthInfo: configuration.authentication.usesFedAuthWorkflow)
        if configuration.encryption == .strict {
            try await strictTLSHandshake()
        }
        var serverPrelogin: Prelogin?
        var loginOnlyTLS: (any TLSSession)?
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .sendPrelogin(let encryption):
                var prelogin = Prelogin(version: Prelogin.Version(major: 1, minor: 0, build: 0), encryption: encryption,
                                        threadID: UInt32(truncatingIfNeeded: getpid()), mars: 0)
                prelogin.setInstanceName(configuration.address.instance ?? "")
                prelogin.fedAuthRequired = authentication.preloginFedAuthRequired
                try await writeHoldingGate(Packet.encode(message: prelogin.encode(), type: .prelogin,
                                                         packetSize: Packet.defaultSize))
                var framer = reader.framer
                let reply = try await PreloginTLSHandshake.readMessage(
                    from: transport, framer: &framer, what: "the PRELOGIN response", cap: Self.maximumPreloginResponseSize,
                    capName: "maximumPreloginResponseSize", firstReplyFrom: "\(configuration.address.host):\(port)")
                reader.framer = framer
                let response: Prelogin
                do {
                    response = try Prelogin.decode(from: reply)
                } catch {
                    throw SQLClientError.protocolError(error)
                }
                serverPrelogin = response
                pending.append(machine.preloginReceived(response))

            case .startTLSHandshake(let fullSession, let verify):
                guard let provider = configuration.tlsProvider ?? DefaultTLSProvider.provider else {
                    pending.append(machine.transportFailed(SQLClientError(.encryptionNotAvailable,
                                                                          "no TLS provider on this platform")))
                    continue
                }
                var tls = configuration.tls
                if !verify { tls.trustServerCertificate = true }
                let session = try provider.makeClientSession(serverName: configuration.address.host, configuration: tls)
                var framer = reader.framer
                try await PreloginTLSHandshake.perform(session, over: socket, framer: &framer)
                logger?.tlsEstablished(protocolName: session.negotiatedProtocol, fullSession: fullSession, connection: logNumber)
                if fullSession {
                    transport = try TLSStream(base: socket, session: session, leftover: framer.takeRemaining())
                } else {
                    loginOnlyTLS = session
                }
                reader.framer = framer
                pending.append(machine.tlsEstablished())

            case .sendLogin7(let throughTLS):
                let host = configuration.workstationID
                    ?? String(decoding: ByteWriter.utf16Prefix(ProcessInfo.processInfo.hostName, maxUnits: Login7.maximumFieldLength), as: UTF16.self)
                var login7 = configuration.login7(hostName: host, clientPID: UInt32(truncatingIfNeeded: getpid()))
                addSessionRecovery(to: &login7)   // SQLConnection+Recovery.swift
                configuration.typeSupport.request(in: &login7)   // JSONSUPPORT, VECTORSUPPORT
                configuration.columnEncryption.request(in: &login7)   // COLUMNENCRYPTION (Always Encrypted)
                authentication.apply(to: &login7, serverPrelogin: serverPrelogin)
                if configuration.applicationIntent == .readOnly { login7.typeFlags.insert(.readOnlyIntent) }
                // The configuration was checked without this attempt's credentials (an access
                // token in FEDAUTH, SSPI data): the whole message must still fit [MS-TDS] 2.2.6.4.
                if let violation = login7.limitViolation {
                    throw SQLClientError(.invalidConfiguration, SQLConnectionConfiguration.describe(violation))
                }
                let bytes = Packet.encode(message: login7.encode(), type: .login7, packetSize: Packet.defaultSize)
                reader.limitMessages(to: Self.maximumLoginResponseSize, capName: "maximumLoginResponseSize")
                if throughTLS, let session = loginOnlyTLS {
                    // ENCRYPT_OFF: LOGIN7 in TLS records, bare on the wire; the rest is plaintext.
                    try await writeHoldingGate(try await session.encrypt(bytes), to: socket)
                    loginOnlyTLS = nil
                } else {
                    try await writeHoldingGate(bytes)
                }
                pending += try await nextLoginActions()

            case .sspiChallenge(let challenge):
                // [MS-TDS] 2.2.6.8: the answer travels as an SSPI message (packet type 0x11).
                let answer = try authentication.sspiResponse(to: challenge)
                // Kerberos: nothing to send when the server's token completed the context (LOGINACK follows).
                if !answer.isEmpty {
                    try await writeHoldingGate(Packet.encode(message: answer, type: .sspi, packetSize: Packet.defaultSize))
                }
                pending += try await nextLoginActions()

            case .fedAuthInfoReceived(let info):
                // [MS-TDS] 2.2.6.3: the token for the server's SPN, in a FEDAUTH token message (0x08).
                let message = try await authentication.fedAuthTokenMessage(for: info, serverPrelogin: serverPrelogin,
                                                                           timeout: max(.zero, deadline - clock.now()))
                try await writeHoldingGate(Packet.encode(message: message, type: .federatedAuthToken, packetSize: Packet.defaultSize))
                pending += try await nextLoginActions()

            case .loginRouted(let routing):
                for rest in pending { performNow(rest) }
                throw LoginRedirect(routing: routing)

            case .loginSucceeded:
                try authentication.check(machine.featureExtAck)
                let types = try configuration.typeSupport.negotiated(by: machine.featureExtAck)
                let columnEncryption: UInt8
                do {
                    columnEncryption = try configuration.columnEncryption.negotiated(by: machine.featureExtAck)
                } catch {
                    throw error.sqlClientError   // secure enclaves asked for: not supported
                }
                performNow(action)
                (session.jsonSupportVersion, session.vectorSupportVersion) = types   // JSONSUPPORT, VECTORSUPPORT
                session.columnEncryptionVersion = columnEncryption   // COLUMNENCRYPTION
                logger?.loggedIn(session, connection: logNumber)
                reader.limitMessages(to: nil)
                for rest in pending { performNow(rest) }
                return

            case .closeConnection(let context):
                performNow(action)
                throw context.error

            case .scheduleTimeout, .cancelTimeout, .forwardMessage, .packetSizeChanged, .sessionChanged:
                performNow(action)
                if pending.isEmpty, machine.state == .loginSent { pending += try await nextLoginActions() }

            case .none:
                if machine.state == .loginSent { pending += try await nextLoginActions() }

            default:
                pending.append(machine.transportFailed(SQLClientError(.protocolError, "unexpected step \(action) during login")))
            }
        }
        // The steps ran out without LOGINACK: the machine was closed meanwhile (the login timer
        // fired while a response was on its way in: the machine answers what comes after with
        // no action), so the login failed, with the machine's reason.
        throw machine.state == .closed ? closedError
            : SQLClientError(.protocolError, "the login ended without a LOGINACK")
    }

    /// The machine's next actions from the login response (reading the socket as needed).
    private func nextLoginActions() async throws -> [ConnectionStateMachine.Action] {
        while true {
            if machine.state == .closed { return [.closeConnection(.init(error: closedError))] }
            let item: ResponseReader.Item
            do {
                item = try reader.next()
            } catch {
                return [machine.transportFailed(error)]
            }
            switch item {
            case .token(let token):
                let action = machine.tokenReceived(token)
                if case .none = action { continue }
                return [action]
            case .messageEnded:
                let actions = machine.messageEnded(now: clock.now())
                if actions.isEmpty { continue }
                return actions
            case .needBytes:
                let bytes = try await transport.read(maxLength: 65_536)
                if bytes.isEmpty {
                    if machine.login?.expectsSSPI == true, machine.login?.sspiAnswered != true {
                        // Kerberos refused: the server closes after LOGIN7's token (pysqlbridge does).
                        return [machine.transportFailed(SQLClientError(.loginFailed,
                            "the server closed the connection after the Windows authentication token in LOGIN7:"
                            + " it refused the Kerberos ticket (is the SPN's key in the server's keytab?) or the NTLM message"))]
                    }
                    if machine.login?.sspiAnswered == true {
                        // A server that refuses the NTLM answer may just close (pysqlbridge does).
                        return [machine.transportFailed(SQLClientError(.loginFailed,
                            "the server closed the connection after the Windows (NTLM) authentication message:"
                            + " the user name, domain or password was refused"))]
                    }
                    return [machine.transportFailed(SQLClientError(.connectionClosed,
                                                                   "the server closed the connection during the login"))]
                }
                reader.append(bytes)
            }
        }
    }

    /// TDS 8.0 ([MS-TDS] 3.2.5.1): TLS on the socket before PRELOGIN, every byte after it inside.
    private func strictTLSHandshake() async throws {
        guard let provider = configuration.tlsProvider ?? DefaultTLSProvider.provider else {
            throw SQLClientError(.encryptionNotAvailable, "Encrypt=Strict needs TLS, and this platform has no TLS provider")
        }
        let session = try provider.makeStrictClientSession(serverName: configuration.address.host, configuration: configuration.tls)
        try await StrictTLS.handshake(session, over: socket)
        transport = try TLSStream(base: socket, session: session)
    }
}
