#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A connection to SQL Server over TDS 7.x: the driver that performs the actions of
/// ``ConnectionStateMachine`` on a ``ByteStream``.
///
/// ```swift
/// let connection = try await SQLConnection.connect(
///     connectionString: "Server=db.example.com;Database=shop;User ID=app;Password=…;TrustServerCertificate=true")
/// for table in try await connection.execute("SELECT id, name FROM customers; SELECT COUNT(*) AS n FROM orders") {
///     for row in table.rows { print(row["name"]?.stringValue ?? "NULL") }
/// }
/// for try await row in connection.query("SELECT id, name FROM customers") {   // streamed, with backpressure
///     let customer = try row.decode(Customer.self)
/// }
/// await connection.close()
/// ```
///
/// One request runs at a time: a request started while another is in progress waits for it.
/// Errors are ``SQLClientError``; after a server error of severity below 20 the connection stays usable.
public actor SQLConnection {
    /// The configuration the connection was opened with (the password stays redacted).
    public nonisolated let configuration: SQLConnectionConfiguration
    /// The resolved TCP port (from the address, or from the SQL Server Browser for a named instance).
    public nonisolated let port: Int
    /// Server messages (PRINT, INFO, ERROR) of every request, as they arrive.
    public nonisolated let messages: AsyncStream<SQLServerMessage>

    /// The session as of the last ENVCHANGE: database, language, collation, packet size, TDS version.
    public private(set) var session = SQLSessionInfo()

    private let socket: any ByteStream
    private var transport: any ByteStream
    private var machine: ConnectionStateMachine
    private var packets = PacketAssembler(maximumPacketSize: Int(UInt16.max))
    private var decoder: TokenStreamDecoder
    private var endOfMessagePending = false
    private var packetSize = Packet.defaultSize
    private let messageContinuation: AsyncStream<SQLServerMessage>.Continuation
    private var messageHandler: (@Sendable (SQLServerMessage) -> Void)?

    // One request at a time.
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var nextRequestID: UInt64 = 0
    private var activeRequestID: UInt64?
    private var currentColumns: SQLColumns?
    /// An action taken from the state machine by ``nextEvents(_:limit:)`` that needs an `await`
    /// (sending ATTENTION): performed by the next ``nextEvent(_:)``.
    private var deferredAction: ConnectionStateMachine.Action?

    // Timeouts and bounded cancellation (see startRequest, abandon, cancel).
    /// Why the connection was closed by the client (a cancellation the server never acknowledged).
    private var closeReason: SQLClientError?
    /// The request whose query timeout fired, and the limit it had.
    private var timedOut: (id: UInt64, limit: Duration)?
    private var requestWatchdog: Task<Void, Never>?
    private var attentionWatchdog: Task<Void, Never>?
    /// The task that started the active request (a hash of its handle), to detect a task that
    /// starts a request while its own earlier stream is unfinished (see ``startRequest(_:timeout:)``).
    private var activeOwner: Int?
    /// The request being abandoned (ATTENTION sent, draining), so that it is drained once.
    private var abandoningID: UInt64?
    /// Streaming requests cancelled because their own task started another request: their
    /// reader, if it resumes, gets `.cancelled` rather than a silent end.
    private var preempted: Set<UInt64> = []
    /// RETURNVALUE tokens of completed requests that had some, by request id (taken by the RPC layer).
    private var finishedReturnValues: [UInt64: [ReturnValue]] = [:]

    init(configuration: SQLConnectionConfiguration, port: Int, socket: any ByteStream) {
        self.configuration = configuration
        self.port = port
        self.socket = socket
        self.transport = socket
        self.machine = ConnectionStateMachine(encryption: configuration.encryption,
                                              trustServerCertificate: configuration.tls.trustServerCertificate,
                                              verifyWhenLoginOnly: configuration.verifyCertificateWhenLoginOnly)
        self.decoder = TokenStreamDecoder(version: configuration.tdsVersion,
                                          options: .init(maximumValueSize: configuration.maximumValueSize))
        (messages, messageContinuation) = AsyncStream.makeStream(of: SQLServerMessage.self,
                                                                 bufferingPolicy: .bufferingNewest(1024))
    }

    deinit {
        messageContinuation.finish()
        socket.close()
    }

    // MARK: - Connecting

    /// Connects, negotiates encryption, runs the TLS handshake inside PRELOGIN, and logs in.
    ///
    /// A named instance without a port is resolved through the SQL Server Browser (UDP).
    /// - Throws: ``SQLClientError``: `.hostNotFound`, `.instanceNotFound`, `.connectionFailed`,
    ///   `.timeout`, `.tlsFailed`, `.certificateVerificationFailed`, `.encryptionNotAvailable`,
    ///   `.loginFailed` (with the server's number, state and message; never the password), `.protocolError`.
    public static func connect(_ configuration: SQLConnectionConfiguration) async throws -> SQLConnection {
        let configuration = try configuration.validated()
        let address = configuration.address
        let port: Int
        if let p = address.port {
            port = p
        } else if let instance = address.instance {
            port = try await SQLServerBrowser.resolvePort(host: address.host, instance: instance,
                                                          browserPort: configuration.browserPort,
                                                          timeout: min(configuration.connectTimeout, .seconds(5)))
        } else {
            port = SQLServerAddress.defaultPort
        }
        let socket = try await SocketStream.connect(host: address.host, port: port, timeout: configuration.connectTimeout)
        return try await connect(configuration, port: port, over: socket)
    }

    /// Parses `connectionString` (see ``SQLConnectionConfiguration/init(connectionString:)``) and connects.
    public static func connect(connectionString: String) async throws -> SQLConnection {
        try await connect(try SQLConnectionConfiguration(connectionString: connectionString))
    }

    /// Logs in over an already connected stream (a socket, or a test double such as a replay stream).
    public static func connect(_ unvalidated: SQLConnectionConfiguration, port: Int = 0,
                               over stream: any ByteStream) async throws -> SQLConnection {
        let configuration: SQLConnectionConfiguration
        do {
            configuration = try unvalidated.validated()
        } catch {
            stream.close()
            throw error
        }
        let connection = SQLConnection(configuration: configuration, port: port, socket: stream)
        let timedOut = TimeoutFlag()
        let loginLimit = configuration.loginTimeout ?? configuration.connectTimeout
        let watchdog = Task {
            try await Task.sleep(for: loginLimit)
            timedOut.set()
            stream.close()
        }
        defer { watchdog.cancel() }
        do {
            try await connection.login()
        } catch let error as SQLClientError {
            stream.close()
            if timedOut.isSet {
                throw SQLClientError(.timeout, "the login did not finish within \(loginLimit)",
                                     underlying: error)
            }
            throw error
        } catch {
            stream.close()
            throw SQLClientError(.connectionFailed, "the login failed: \(error)")
        }
        if let textSize = configuration.textSize {
            _ = try await connection.executeBatch("SET TEXTSIZE \(textSize)")
        }
        return connection
    }

    private func login() async throws {
        var action = machine.connected()
        while true {
            switch action {
            case .sendPrelogin(let encryption):
                var prelogin = Prelogin(version: Prelogin.Version(major: 1, minor: 0, build: 0), encryption: encryption,
                                        threadID: UInt32(truncatingIfNeeded: getpid()), mars: 0)
                prelogin.setInstanceName(configuration.address.instance ?? "")
                try await transport.write(Packet.encode(message: prelogin.encode(), type: .prelogin,
                                                        packetSize: Packet.defaultSize))
                let reply = try await readWholeMessage(what: "the PRELOGIN response", cap: Self.maximumPreloginResponseSize,
                                                       capName: "maximumPreloginResponseSize", first: true)
                let response: Prelogin
                do {
                    response = try Prelogin.decode(from: reply)
                } catch {
                    throw SQLClientError.protocolError(error)
                }
                action = machine.preloginReceived(response)

            case .startTLSHandshake(let fullSession, let verify):
                guard let provider = configuration.tlsProvider ?? DefaultTLSProvider.provider else {
                    action = machine.transportFailed(SQLClientError(.encryptionNotAvailable,
                                                                    "no TLS provider on this platform"))
                    continue
                }
                var tls = configuration.tls
                if !verify { tls.trustServerCertificate = true }
                let session = try provider.makeClientSession(serverName: configuration.address.host, configuration: tls)
                try await tlsHandshake(session)
                if fullSession {
                    transport = try TLSStream(base: socket, session: session, leftover: packets.takeRemaining())
                    loginOnlyTLS = nil
                } else {
                    loginOnlyTLS = session
                }
                action = machine.tlsEstablished()

            case .sendLogin7(let throughTLS):
                let login7 = makeLogin7()
                packets.maximumMessageSize = Self.maximumLoginResponseSize
                let bytes = Packet.encode(message: login7.encode(), type: .login7, packetSize: Packet.defaultSize)
                if throughTLS, let session = loginOnlyTLS {
                    // ENCRYPT_OFF: LOGIN7 in TLS records, bare on the wire; the rest is plaintext.
                    try await socket.write(try session.encrypt(bytes))
                    loginOnlyTLS = nil
                } else {
                    try await transport.write(bytes)
                }
                action = try await nextAction()

            case .loginSucceeded(let info):
                session = info
                packetSize = info.packetSize
                packets.maximumMessageSize = nil
                return

            case .closeConnection(let error):
                transport.close()
                throw error

            case .forwardMessage(let message):
                deliver(message)
                action = try await nextAction()

            case .packetSizeChanged(let size):
                packetSize = size
                action = try await nextAction()

            case .sessionChanged(let info):
                session = info
                action = try await nextAction()

            case .none:
                action = try await nextAction()

            default:
                action = machine.transportFailed(SQLClientError(.protocolError, "unexpected step \(action) during login"))
            }
        }
    }

    private var loginOnlyTLS: (any TLSSession)?

    private func makeLogin7() -> Login7 {
        let host = configuration.workstationID ?? String(ProcessInfo.processInfo.hostName.utf16.prefix(Login7.maximumFieldLength)) ?? ""
        return configuration.login7(hostName: host, clientPID: UInt32(truncatingIfNeeded: getpid()))
    }

    /// The largest PRELOGIN response accepted (a real one is under 100 bytes).
    static let maximumPreloginResponseSize = 64 << 10
    /// The largest TLS handshake flight accepted from the server (one PRELOGIN message:
    /// ServerHello, certificate chain, …).
    static let maximumTLSFlightSize = 256 << 10
    /// The largest login response accepted (LOGINACK, ENVCHANGEs, INFO, FEATUREEXTACK…).
    static let maximumLoginResponseSize = 1 << 20

    /// The TLS handshake carried in PRELOGIN (0x12) packets ([MS-TDS] 3.2.5.2): client records go
    /// out as PRELOGIN packet payloads; the server's come back the same way (some servers type
    /// them TABULAR_RESULT; both are accepted).
    private func tlsHandshake(_ session: any TLSSession) async throws {
        var output = try session.startHandshake()
        var complete = false
        for _ in 0 ..< 64 {
            if !output.isEmpty {
                try await socket.write(Packet.encode(message: output, type: .prelogin, packetSize: Packet.defaultSize))
            }
            if complete { return }
            let received = try await readWholeMessage(what: "the TLS handshake", cap: Self.maximumTLSFlightSize,
                                                      capName: "maximumTLSFlightSize")
            let step = try session.continueHandshake(received)
            output = step.output
            complete = step.isComplete
        }
        throw SQLClientError(.tlsFailed, "the TLS handshake did not finish")
    }

    /// Reads one whole message's payload (PRELOGIN or TABULAR_RESULT packets up to EOM) from
    /// the socket, refusing more than `cap` bytes. `first`: the server's first answer, which
    /// must start like a TDS reply (type 0x04).
    private func readWholeMessage(what: String, cap: Int, capName: String, first: Bool = false) async throws -> [UInt8] {
        packets.maximumMessageSize = cap
        defer { packets.maximumMessageSize = nil }
        while true {
            if first, let byte = packets.firstBufferedByte, byte != PacketType.tabularResult.rawValue {
                throw SQLClientError(.protocolError, "the server at \(configuration.address.host):\(port) did not answer with TDS "
                                     + "(the first byte of its reply is 0x\(String(byte, radix: 16, uppercase: true)), not 0x04)")
            }
            let message: TDSMessage?
            do {
                message = try packets.nextMessage()
            } catch let error where error.code == .limitExceeded {
                throw SQLClientError(.protocolError, "\(what) is longer than its cap of \(cap) bytes (\(capName))",
                                     underlying: error)
            } catch {
                throw SQLClientError.protocolError(error)
            }
            if let message {
                guard message.type == .prelogin || message.type == .tabularResult else {
                    throw SQLClientError(.protocolError, "expected \(what), got a \(message.type) packet")
                }
                return message.payload
            }
            let bytes = try await transport.read(maxLength: 65_536)
            if bytes.isEmpty {
                throw SQLClientError(.connectionClosed, "the server closed the connection during \(what)")
            }
            packets.append(bytes)
        }
    }

    // MARK: - Decoding the response

    /// Reads and decodes until the state machine has something to do.
    private func nextAction() async throws -> ConnectionStateMachine.Action {
        while true {
            if let action = try nextBufferedAction() { return action }
            let bytes: [UInt8]
            do {
                bytes = try await transport.read(maxLength: 65_536)
            } catch let error as SQLClientError {
                if error.code == .cancelled { throw error }
                return machine.transportFailed(error)
            }
            if bytes.isEmpty {
                return machine.transportFailed(SQLClientError(.connectionClosed, "the server closed the connection"))
            }
            packets.append(bytes)
        }
    }

    /// The next action that the bytes already received lead to, nil when the socket must be read
    /// first. Synchronous, so that rows already received are decoded without suspending.
    private func nextBufferedAction() throws -> ConnectionStateMachine.Action? {
        if let action = deferredAction {
            deferredAction = nil
            return action
        }
        while true {
            if machine.state == .closed {
                return .closeConnection(closeReason ?? SQLClientError.closed())
            }
            let token: Token?
            do {
                token = try decoder.next()
            } catch {
                return machine.transportFailed(SQLClientError.protocolError(error))
            }
            if let token {
                let action = machine.tokenReceived(token)
                if case .none = action { continue }
                return action
            }
            if endOfMessagePending {
                endOfMessagePending = false
                do {
                    try decoder.finish()
                } catch {
                    return machine.transportFailed(SQLClientError.protocolError(error))
                }
                let action = machine.messageEnded()
                if case .none = action { continue }
                return action
            }
            let header: PacketHeader?
            do {
                header = try packets.peekHeader()
            } catch let error where error.code == .limitExceeded {
                return machine.transportFailed(SQLClientError(.protocolError,
                    "the login response is longer than its cap of \(Self.maximumLoginResponseSize) bytes (maximumLoginResponseSize)",
                    underlying: error))
            } catch {
                return machine.transportFailed(SQLClientError.protocolError(error))
            }
            if let header {
                guard header.type == .tabularResult else {
                    return machine.transportFailed(SQLClientError(.protocolError,
                                                                  "expected TABULAR_RESULT, got a \(header.type) packet"))
                }
                packets.consumePacket { _, payload in decoder.append(contentsOf: payload) }
                if header.status.contains(.endOfMessage) { endOfMessagePending = true }
                continue
            }
            return nil
        }
    }


    private func deliver(_ message: SQLServerMessage) {
        messageHandler?(message)
        messageContinuation.yield(message)
    }

    // MARK: - Requests

    /// Sets a handler called for every server message (PRINT, INFO, ERROR) as it arrives; nil removes it.
    public func setMessageHandler(_ handler: (@Sendable (SQLServerMessage) -> Void)?) {
        messageHandler = handler
    }

    private func acquire() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    /// Starts a SQL batch: waits for the connection, sends it, returns the request's id.
    func startBatch(_ sql: String) async throws -> UInt64 {
        try await startRequest(.sqlBatch(sql))
    }

    /// Starts a request (SQL batch, RPC or Transaction Manager request): waits for the
    /// connection, encodes it with the current transaction descriptor in ALL_HEADERS, sends it,
    /// and arms the query timeout (`timeout`, else ``SQLConnectionConfiguration/queryTimeout``).
    /// Returns the request's id for ``nextEvent(_:)``.
    ///
    /// When the active request was started by the calling task itself and is still unfinished
    /// (a streaming loop left with `break` while its iterator stays alive, as in top-level code),
    /// nobody else can ever consume it: waiting for it would wait forever. That request is
    /// cancelled first (ATTENTION, drained to DONE with DONE_ATTN within
    /// ``SQLConnectionConfiguration/cancelTimeout``, else the connection is closed), and its
    /// iterator, if resumed, throws `.cancelled`. Requests of other tasks are waited for, in order.
    func startRequest(_ request: OutgoingRequest, timeout: Duration? = nil) async throws -> UInt64 {
        if let id = activeRequestID, let owner = activeOwner, owner == Self.currentTaskKey(), abandoningID != id {
            if preempted.count >= 64 { preempted.removeAll() }
            preempted.insert(id)
            await abandon(id)
        }
        let requestLimit = try (timeout ?? configuration.queryTimeout).map {
            try SQLConnectionConfiguration.validatedTimeout($0, "the request timeout")
        }
        await acquire()
        let encoded: (PacketType, [UInt8])
        do {
            encoded = try request.encode(descriptor: OutgoingRequest.descriptor(from: session.transactionDescriptor),
                                         version: session.tdsVersion)
        } catch {
            release()
            throw error
        }
        switch machine.requestStarted() {
        case .sendRequest:
            break
        case .closeConnection(let error), .requestCompleted(error: .some(let error)):
            release()
            throw error
        default:
            release()
            throw SQLClientError(.invalidState, "the connection cannot start a request now")
        }
        nextRequestID &+= 1
        let id = nextRequestID
        activeRequestID = id
        activeOwner = Self.currentTaskKey()
        currentColumns = nil
        timedOut = nil
        if let limit = requestLimit {
            requestWatchdog = Task { [weak self] in
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                await self?.requestTimedOut(id, limit: limit)
            }
        }
        do {
            try await transport.write(Packet.encode(message: encoded.1, type: encoded.0, packetSize: packetSize))
        } catch let error as SQLClientError {
            finishRequest(id)
            if case .closeConnection(let e) = machine.transportFailed(error) { transport.close(); throw e }
            throw error
        }
        return id
    }

    private func finishRequest(_ id: UInt64) {
        guard activeRequestID == id else { return }
        activeRequestID = nil
        activeOwner = nil
        currentColumns = nil
        requestWatchdog?.cancel()
        requestWatchdog = nil
        attentionWatchdog?.cancel()
        attentionWatchdog = nil
        let values = machine.takeReturnValues()
        if !values.isEmpty {
            if finishedReturnValues.count >= 16, let oldest = finishedReturnValues.keys.min() {
                finishedReturnValues[oldest] = nil
            }
            finishedReturnValues[id] = values
        }
        release()
    }

    /// A hash of the current task's handle; nil outside a task.
    private static func currentTaskKey() -> Int? {
        withUnsafeCurrentTask { $0?.hashValue }
    }

    /// The RETURNVALUE tokens (OUTPUT parameters, UDF results) of completed request `id`, once.
    func takeReturnValues(_ id: UInt64) -> [ReturnValue] {
        finishedReturnValues.removeValue(forKey: id) ?? []
    }

    /// The query timeout of request `id` passed: send ATTENTION and bound the wait for its acknowledgement.
    private func requestTimedOut(_ id: UInt64, limit: Duration) async {
        guard activeRequestID == id else { return }
        timedOut = (id, limit)
        await sendBoundedAttention(id)
    }

    /// Sends ATTENTION for request `id` (if not already sent) and arms the acknowledgement bound
    /// (``SQLConnectionConfiguration/cancelTimeout``).
    private func sendBoundedAttention(_ id: UInt64) async {
        guard activeRequestID == id else { return }
        if case .sendAttention = machine.cancelRequested() {
            do {
                try await sendAttention()
            } catch {
                closeReason = SQLClientError(.connectionClosed, "sending ATTENTION failed: \(error)")
                _ = machine.transportFailed(closeReason ?? SQLClientError.closed())
                transport.close()
                return
            }
        }
        guard attentionWatchdog == nil else { return }
        let limit = configuration.cancelTimeout
        attentionWatchdog = Task { [weak self] in
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            await self?.attentionTimedOut(id, limit: limit)
        }
    }

    /// The server did not acknowledge the ATTENTION in time: close the connection, never hand it back half-read.
    private func attentionTimedOut(_ id: UInt64, limit: Duration) {
        guard activeRequestID == id, machine.state == .cancelling else { return }
        let error = SQLClientError(.timeout, "the server did not acknowledge the cancellation (ATTENTION) within \(limit); "
                                   + "the connection was closed")
        closeReason = error
        _ = machine.transportFailed(error)
        transport.close()
    }

    /// Events of request `id` in order, taken several at a time so that a streaming reader crosses
    /// into the actor once per batch instead of once per row: waits for the first event, then
    /// adds the ones the bytes already received hold (the socket is not read for them), up to
    /// `limit`. `ended` says the request completed after these events; `error` is what
    /// ``nextEvent(_:)`` threw after them (deliver the events first, then throw it).
    func nextEvents(_ id: UInt64, limit: Int) async -> EventBatch {
        var batch = EventBatch()
        do {
            guard let first = try await nextEvent(id) else {
                batch.ended = true
                return batch
            }
            batch.events.reserveCapacity(min(limit, 64))
            batch.events.append(first)
            var values: [SQLValue] = []
            collect: while batch.events.count < limit, activeRequestID == id {
                // Rows straight from the decoder while they are forwarded as they are (see
                // `ConnectionStateMachine.forwardsRows`): no Token, Action or step per row; each
                // row's values are decoded into an array of their own, sized once.
                if machine.forwardsRows, deferredAction == nil, let columns = currentColumns {
                    if values.capacity == 0 { values.reserveCapacity(columns.count) }
                    let item: TokenStreamDecoder.StreamItem?
                    do {
                        item = try decoder.next(appendingRowValuesTo: &values)
                    } catch {
                        deferredAction = machine.transportFailed(SQLClientError.protocolError(error))
                        item = nil
                    }
                    switch item {
                    case .row?:
                        batch.events.append(.row(SQLRow(columns: columns, values: values)))
                        values = []
                        continue collect
                    case .token(let token)?:
                        let action = machine.tokenReceived(token)
                        if case .none = action { continue collect }
                        deferredAction = action
                    case nil:
                        break
                    }
                }
                guard let action = try nextBufferedAction() else { break }
                switch try step(action, id) {
                case .event(let event): batch.events.append(event)
                case .end: batch.ended = true; break collect
                case .again: continue
                case .sendAttention: deferredAction = action; break collect
                }
            }
        } catch {
            batch.error = error
        }
        return batch
    }

    /// Rows of request `id` gathered into one ``SQLRowBlock`` (see ``rowBlocks(_:)``): waits for
    /// the first row (other events are delivered as usual: messages to ``messages``, counts
    /// dropped), then adds the rows of the same result set that the bytes already received hold,
    /// appending their values to one flat array, up to `limit` rows. `ended`/`error` as in
    /// ``nextEvents(_:limit:)``.
    func nextRowBlock(_ id: UInt64, limit: Int) async -> RowBlockBatch {
        var out = RowBlockBatch()
        do {
            var columns: SQLColumns
            while true {
                guard let event = try await nextEvent(id) else {
                    out.ended = true
                    return out
                }
                if case .row(let row) = event {
                    columns = row.columns
                    out.values.reserveCapacity(max(row.values.count, 1) * min(limit, 1024))
                    out.values.append(contentsOf: row.values)
                    out.rowCount = 1
                    break
                }
            }
            collect: while out.rowCount < limit, activeRequestID == id, machine.forwardsRows,
                           deferredAction == nil, currentColumns === columns {
                // Runs of whole buffered rows in one pass; anything else one token at a time.
                let run = decoder.appendBufferedRows(to: &out.values, limit: limit - out.rowCount)
                if run > 0 {
                    out.rowCount += run
                    continue collect
                }
                let item: TokenStreamDecoder.StreamItem?
                do {
                    item = try decoder.next(appendingRowValuesTo: &out.values)
                } catch {
                    deferredAction = machine.transportFailed(SQLClientError.protocolError(error))
                    break collect
                }
                switch item {
                case .row?:
                    out.rowCount += 1
                case .token(let token)?:
                    let action = machine.tokenReceived(token)
                    if case .none = action { continue collect }
                    deferredAction = action
                    break collect
                case nil:
                    // Cut the next received packet, if whole, and go on; stop at a socket read.
                    guard let action = try nextBufferedAction() else { break collect }
                    if case .forwardRow(let values) = action {
                        out.values.append(contentsOf: values)
                        out.rowCount += 1
                    } else {
                        deferredAction = action
                        break collect
                    }
                }
            }
            out.columns = columns
        } catch {
            out.error = error
        }
        return out
    }

    /// A run of rows from ``nextRowBlock(_:limit:)``.
    struct RowBlockBatch: Sendable {
        var columns: SQLColumns?
        var values: [SQLValue] = []
        var rowCount = 0
        var ended = false
        var error: (any Error)?
    }

    /// A run of events from ``nextEvents(_:limit:)``.
    struct EventBatch: Sendable {
        /// Never nil here; optional so that the reader can move each one out.
        var events: [SQLResponseEvent?] = []
        /// The request completed (without error) after `events`.
        var ended = false
        /// The request failed after `events`.
        var error: (any Error)?
    }

    /// What one state-machine action means for the reader of request `id`.
    private enum EventStep {
        case event(SQLResponseEvent)
        /// The request completed without error.
        case end
        /// Nothing for the reader; take the next action.
        case again
        /// ATTENTION must be sent (asynchronously) before going on.
        case sendAttention
    }

    /// Applies `action` for request `id` (synchronously). Throws the request's error when it ends
    /// with one.
    private func step(_ action: ConnectionStateMachine.Action, _ id: UInt64) throws -> EventStep {
        switch action {
        case .forwardColumns(let columns):
            let cols = SQLColumns(columns.map(SQLColumn.init))
            currentColumns = cols
            return .event(.columns(cols))
        case .forwardRow(let values):
            let cols = currentColumns ?? SQLColumns([])
            return .event(.row(SQLRow(columns: cols, values: values)))
        case .forwardStatementDone(let count):
            currentColumns = nil
            return .event(.statementDone(rowsAffected: count.map { Int(clamping: $0) }))
        case .forwardMessage(let message):
            deliver(message)
            return .event(.message(message))
        case .forwardReturnStatus(let status):
            return .event(.returnStatus(status))
        case .packetSizeChanged(let size):
            packetSize = size
            session.packetSize = size
            return .again
        case .sessionChanged(let info):
            session = info
            packetSize = info.packetSize
            return .again
        case .requestCompleted(let error):
            finishRequest(id)
            if let error { throw error }
            return .end
        case .requestCancelled:
            let timeout = timedOut.flatMap { $0.id == id ? $0.limit : nil }
            finishRequest(id)
            if let timeout {
                throw SQLClientError(.timeout, "the request did not finish within \(timeout) and was cancelled")
            }
            throw SQLClientError(.cancelled, "the request was cancelled")
        case .closeConnection(let error):
            transport.close()
            finishRequest(id)
            throw closeReason ?? error
        case .sendAttention:
            return .sendAttention
        default:
            return .again
        }
    }

    /// The next event of request `id`; nil when the request completed without error.
    /// - Throws: the request's ``SQLClientError`` (`.serverError` with every ERROR of the batch)
    ///   after its last event; `.cancelled` when it was cancelled; connection failures.
    func nextEvent(_ id: UInt64) async throws -> SQLResponseEvent? {
        guard activeRequestID == id else {
            if preempted.remove(id) != nil {
                throw SQLClientError(.cancelled, "the request was cancelled because the same task started another "
                                     + "request on the connection before this one was read to its end")
            }
            return nil
        }
        while true {
            let action: ConnectionStateMachine.Action
            do {
                action = try await nextAction()
            } catch let error as SQLClientError where error.code == .cancelled {
                // The task was cancelled while waiting: cancel on the server and drain, off this task.
                Task { await self.abandon(id) }
                throw error
            }
            switch try step(action, id) {
            case .event(let event): return event
            case .end: return nil
            case .again: continue
            case .sendAttention: try await sendAttention()
            }
        }
    }

    private func sendAttention() async throws {
        try await transport.write(Packet.encode(message: [], type: .attention, packetSize: packetSize))
    }

    /// Cancels request `id` (an abandoned stream or a cancelled task): sends ATTENTION and reads
    /// until the server acknowledges it, so the connection can run the next request.
    func abandon(_ id: UInt64) async {
        guard activeRequestID == id, abandoningID != id else { return }
        abandoningID = id
        defer { if abandoningID == id { abandoningID = nil } }
        await sendBoundedAttention(id)
        while activeRequestID == id {
            do {
                if try await nextEvent(id) == nil { break }
            } catch {
                break
            }
        }
    }

    /// Cancels the running request, if any: sends ATTENTION ([MS-TDS] 2.2.1.7); the request's
    /// reader then ends with `.cancelled` once the server acknowledges it.
    /// When the server does not acknowledge within ``SQLConnectionConfiguration/cancelTimeout``
    /// the connection is closed and the reader fails with `.timeout`.
    public func cancel() async throws {
        guard let id = activeRequestID else { return }
        await sendBoundedAttention(id)
        if let closeReason, machine.state == .closed { throw closeReason }
    }

    // MARK: - Public API

    /// Runs a batch and returns every result set, buffered.
    /// - Throws: ``SQLClientError`` `.serverError` (number, state, severity, message, procedure,
    ///   line) when the server reported an error; the connection stays usable below severity 20.
    public func execute(_ sql: String) async throws -> [SQLResultSet] {
        try await executeBatch(sql).resultSets
    }

    /// Runs a batch and returns everything it produced: result sets and counts in order, messages,
    /// return statuses.
    /// - Throws: ``SQLClientError`` `.serverError` as ``execute(_:)`` does.
    public func executeBatch(_ sql: String) async throws -> SQLBatchResult {
        let id = try await startBatch(sql)
        var result = SQLBatchResult()
        var current: SQLResultSet?
        while let event = try await nextEvent(id) {
            switch event {
            case .columns(let columns):
                if let open = current { result.statements.append(.resultSet(open)) }
                current = SQLResultSet(columns: columns)
            case .row(let row):
                current?.rows.append(row)
            case .statementDone(let count):
                if var open = current {
                    open.rowsAffected = count
                    result.statements.append(.resultSet(open))
                    current = nil
                } else if count != nil {
                    result.statements.append(.rowsAffected(count))
                }
            case .message(let message):
                result.messages.append(message)
            case .returnStatus(let status):
                result.returnStatuses.append(status)
            }
        }
        if let open = current { result.statements.append(.resultSet(open)) }
        return result
    }

    /// Streams the events of a batch (result set starts, rows, statement counts, messages) as
    /// they are read from the socket. The batch is sent when iteration starts.
    public nonisolated func events(_ sql: String) -> SQLResponseEventSequence {
        SQLResponseEventSequence(connection: self, sql: sql)
    }

    /// Streams the rows of a batch (of all its result sets), reading from the socket only as rows
    /// are consumed. Breaking out of the loop cancels the rest of the batch (ATTENTION) when the
    /// iterator is released; if it stays alive (top-level code keeps it), the batch is cancelled
    /// when the same task starts its next request on the connection.
    /// - Throws (from iteration): ``SQLClientError`` `.serverError` when the batch reports an error.
    public nonisolated func query(_ sql: String) -> SQLRowSequence {
        SQLRowSequence(events: SQLResponseEventSequence(connection: self, sql: sql))
    }

    /// Closes the connection. Later requests throw `.connectionClosed`.
    public func close() {
        requestWatchdog?.cancel()
        attentionWatchdog?.cancel()
        if case .closeConnection = machine.closeRequested() {}
        transport.close()
        socket.close()
        messageContinuation.finish()
    }

    /// True until the connection is closed or broken.
    public var isOpen: Bool { machine.state != .closed }
}

/// Set once by the login watchdog.
final class TimeoutFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

// MARK: - Sequences

/// The events of one batch, streamed. See ``SQLConnection/events(_:)``.
public struct SQLResponseEventSequence: AsyncSequence, Sendable {
    public typealias Element = SQLResponseEvent
    let connection: SQLConnection
    let sql: String

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: Cursor(connection: connection, sql: sql))
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let cursor: Cursor
        public mutating func next() async throws -> SQLResponseEvent? {
            if let event = try cursor.takeBuffered() { return event }
            return try await cursor.next()
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this): events
        /// already fetched are taken without leaving the caller's executor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> SQLResponseEvent? {
            if let event = try cursor.takeBuffered() { return event }
            return try await cursor.next()
        }
    }

    /// Owns the request: sends it on the first `next()`, and cancels it (ATTENTION) if dropped before its end.
    ///
    /// Events are fetched from the connection in batches (``SQLConnection/nextEvents(_:limit:)``:
    /// the ones the received bytes already hold), so a million-row result does not cross into
    /// the actor a million times; the socket is still read only as events are consumed.
    final class Cursor: @unchecked Sendable {
        let connection: SQLConnection
        let sql: String
        private var id: UInt64?
        /// The request is over on the connection (completed, failed or abandoned).
        private var finished = false
        /// Fetched events, each moved out (set to nil) as it is delivered.
        private var buffered: [SQLResponseEvent?] = []
        private var position = 0
        /// The request's error, thrown after the buffered events.
        private var pendingError: (any Error)?
        /// Events fetched per crossing into the connection.
        static let batchLimit = 512

        init(connection: SQLConnection, sql: String) {
            self.connection = connection
            self.sql = sql
        }

        /// The next event already fetched, without suspending; nil when none is buffered.
        /// Checks for task cancellation every 32 events (buffered rows are not all delivered
        /// after the task was cancelled).
        @inline(__always)
        func takeBuffered() throws -> SQLResponseEvent? {
            guard position < buffered.count else { return nil }
            if position & 31 == 0, !finished, let id, Task.isCancelled {
                finished = true
                buffered = []
                position = 0
                let connection = self.connection
                Task { await connection.abandon(id) }
                throw SQLClientError(.cancelled, "the request was cancelled")
            }
            var event: SQLResponseEvent?
            swap(&event, &buffered[position])   // moved out: no reference counting per event
            position += 1
            return event
        }

        func next() async throws -> SQLResponseEvent? {
            if let event = try takeBuffered() { return event }
            if let error = pendingError {
                pendingError = nil
                throw error
            }
            if finished { return nil }
            do {
                if id == nil { id = try await connection.startBatch(sql) }
                guard let id else { return nil }
                let batch = await connection.nextEvents(id, limit: Cursor.batchLimit)
                if batch.ended || batch.error != nil { finished = true }
                buffered = batch.events
                position = 0
                pendingError = batch.error
                return try await next()
            } catch {
                finished = true
                throw error
            }
        }

        deinit {
            if let id, !finished {
                let connection = self.connection
                Task { await connection.abandon(id) }
            }
        }
    }
}

/// The rows of one batch, streamed. See ``SQLConnection/query(_:)``.
public struct SQLRowSequence: AsyncSequence, Sendable {
    public typealias Element = SQLRow
    let events: SQLResponseEventSequence

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(inner: events.makeAsyncIterator())
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var inner: SQLResponseEventSequence.AsyncIterator
        public mutating func next() async throws -> SQLRow? {
            try await next(isolation: nil)
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this): rows
        /// already fetched are taken without leaving the caller's executor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> SQLRow? {
            while true {
                while let event = try inner.cursor.takeBuffered() {
                    if case .row(let row) = event { return row }
                }
                guard let event = try await inner.cursor.next() else { return nil }
                if case .row(let row) = event { return row }
            }
        }
    }
}
