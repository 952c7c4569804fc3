import Foundation
import TDS

/// A connection to SQL Server over TDS 7.x: the driver that performs the actions of
/// `ConnectionStateMachine` on a `ByteStream`.
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
///
/// Layout: the decisions (login, the queue of requests, cancellation, every timeout, closing)
/// are `ConnectionStateMachine`'s; this actor only performs its actions. The login is in
/// `SQLConnection+Login.swift`, the one write path in `RequestWriter.swift`, reading responses
/// in `SQLConnection+Responses.swift` (over `ResponseReader`), the one cursor behind every
/// streamed shape in `ResponseCursor.swift`. The read-ahead's decisions are
/// `ReadAheadStateMachine`'s, who reads the socket included (one reader at a time, by
/// construction); everyone who waits (a request for its turn, a writer for the socket, a cursor
/// for the batch read ahead) waits in a `WaiterQueue`.
public actor SQLConnection {
    /// The configuration the connection was opened with (validated; the password stays redacted).
    public nonisolated let configuration: SQLConnectionConfiguration
    /// The resolved TCP port (from the address, or from the SQL Server Browser for a named instance).
    public nonisolated let port: Int
    /// Server messages (PRINT, INFO, ERROR) of every request, as they arrive, for every
    /// subscriber: each `for await` loop (or ``SQLMessageBroadcaster/subscribe()``) receives every
    /// message from when it subscribed, buffering at most
    /// ``SQLConnectionConfiguration/messageBufferLimit`` unread ones (then its oldest are dropped
    /// and counted). The loops end when the connection closes.
    public nonisolated let messages: SQLMessageBroadcaster

    /// The session as of the last ENVCHANGE: database, language, collation, packet size, TDS version.
    public internal(set) var session = SQLSessionInfo()

    /// The socket (or test stream) the connection was opened over (replaced when an idle
    /// connection is recovered, see `SQLConnection+Recovery.swift`).
    var socket: any ByteStream
    /// What requests travel over: `socket`, or a TLS stream over it.
    var transport: any ByteStream
    var machine: ConnectionStateMachine
    var reader: ResponseReader
    var packetSize = Packet.defaultSize
    let clock: any ConnectionClock
    private var messageHandler: (@Sendable (SQLServerMessage) -> Void)?

    // Performing the machine's actions.
    var nextRequestNumber: UInt64 = 0
    /// Requests waiting for their turn (a turn or failure that comes first is kept).
    let turns = WaiterQueue<RequestID, Void>()
    /// Reservations (``withTransaction(isolationLevel:isolation:_:)``) waiting to be granted (a
    /// grant or failure that comes before its holder parks is kept).
    let reservations = WaiterQueue<ConnectionStateMachine.ReservationID, Void>()
    private var timerTasks: [TimerID: Task<Void, Never>] = [:]
    /// The columns of the result set being read.
    var currentColumns: SQLColumns?
    /// Always Encrypted: the decryption of the result set being read, when it has encrypted
    /// columns (``ResultDecryption``); rows then take the token path, each decrypted.
    var resultDecryption: ResultDecryption?
    /// A COLMETADATA with encrypted columns whose keys are still to be unwrapped (asynchronously,
    /// between two synchronous collections of a batch) before its rows are read.
    var pendingDecryption: ColMetadata?
    /// The requests that do not decrypt (SQLQueryColumnEncryption `.disabled`): their encrypted
    /// columns read as varbinary ciphertext.
    var requestsWithoutDecryption: Set<RequestID> = []
    /// What sp_describe_parameter_encryption said, by statement text and declaration (bounded:
    /// ``ParameterEncryptionPlan/cacheLimit``).
    var parameterEncryptionPlans: [String: ParameterEncryptionPlan] = [:]
    /// The keys of a running request's encrypted OUTPUT parameters, by lowercased name: their
    /// RETURNVALUE tokens (`ConnectionStateMachine.Action.requestCompleted`) are decrypted with them.
    var outputParameterKeys: [RequestID: [String: AEADAes256CbcHmacSha256]] = [:]
    /// The request whose response is read in parts, large values in pieces (``streamingValues(_:timeout:)``).
    var partsRequest: RequestID?
    /// The request whose rows a typed read takes: large binary values assembled as `Data`
    /// (``TokenStreamDecoder/assemblesLargeBinaryAsData``, issue 43).
    var dataRequest: RequestID?
    /// The cursors waiting for the batch read ahead for them (``nextBatch(_:caller:)``), by
    /// reader serial; who reads the socket, and what is read ahead, is `ReadAheadStateMachine`'s
    /// (a sub-state of the machine's, changed through its events).
    let aheadTakers = WaiterQueue<UInt64, ResponseBatch>()
    /// The one write path: whoever writes holds it (see `RequestWriter.swift`).
    var writeGateBusy = false
    let writeGateWaiters = WaiterQueue<UInt64, Void>()
    /// Packet status bits for the first packet of the next request (RESETCONNECTION), see
    /// ``resetConnectionBeforeNextRequest(keepingTransaction:)``.
    var nextRequestStatus: PacketStatus = []
    /// The SESSIONRECOVERY data this connection's LOGIN7 carries when it recovers another's session.
    let sessionRecoveryLogin: SessionRecoveryFeature?

    /// This connection's number in the log (``SQLLogEvent/Key/connection``).
    let logNumber = SQLConnection.nextLogNumber()
    /// When each logged request started (only while a logger is set).
    var requestStarts: [RequestID: Duration] = [:]

    init(configuration: SQLConnectionConfiguration, port: Int, socket: any ByteStream,
         clock: any ConnectionClock = SystemConnectionClock(), recovering: SessionRecoveryFeature? = nil) {
        self.configuration = configuration
        self.sessionRecoveryLogin = recovering
        self.port = port
        self.socket = socket
        self.transport = socket
        self.clock = clock
        self.machine = ConnectionStateMachine(encryption: configuration.encryption,
                                              trustServerCertificate: configuration.tls.trustServerCertificate,
                                              verifyWhenLoginOnly: configuration.verifyCertificateWhenLoginOnly,
                                              cancelTimeout: configuration.cancelTimeout,
                                              expectsSSPI: configuration.authentication.usesSSPI,
                                              requestedVersion: configuration.tdsVersion,
                                              recovery: Self.recoveryMachine(configuration))
        var options = TokenStreamDecoder.Options(maximumValueSize: configuration.maximumValueSize)
        options.acceptsShortDoneBeforeLoginAck = true   // a TDS 7.1 server refusing a 7.4 login
        self.reader = ResponseReader(version: configuration.tdsVersion, options: options)
        if let logger = configuration.eventLogger, logger.isEnabled(.trace) {
            let number = logNumber
            reader.onPacket = { logger.packetReceived($0, connection: number) }
        }
        messages = SQLMessageBroadcaster(bufferLimit: configuration.messageBufferLimit)
    }

    deinit {
        messages.finish()
        for task in timerTasks.values { task.cancel() }
        socket.close()
    }

    // MARK: - Performing actions

    /// Performs lifecycle actions (everything but the forwards, which the reader of a request
    /// turns into events). ATTENTION goes out through the one write path.
    func perform(_ actions: [ConnectionStateMachine.Action]) async {
        for action in actions {
            if case .sendAttention(let id) = action {
                await sendAttention(for: id)
            } else {
                performNow(action)
            }
        }
    }

    /// Performs an action that needs no suspension (an ATTENTION is sent from a task of its own).
    func performNow(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .startRequest(let id):
            turns.resume(id, with: .success(()))
        case .failRequest(let id, let error):
            turns.resume(id, with: .failure(error))
        case .scheduleTimeout(let id, let deadline):
            timerTasks[id]?.cancel()
            let clock = self.clock
            // Unstructured: a timer of the machine's; kept in `timerTasks`, cancelled when disarmed or closed.
            timerTasks[id] = Task { [weak self] in
                do { try await clock.sleep(until: deadline) } catch { return }
                await self?.timerFired(id)
            }
        case .cancelTimeout(let id):
            timerTasks.removeValue(forKey: id)?.cancel()
        case .sendAttention(let id):
            // Unstructured: this is synchronous; the ATTENTION waits for the one write path.
            Task { await self.sendAttention(for: id) }
        case .drainRequest(let id):
            if startDrain(id) { spawnDrain(id) }
        case .closeConnection(let context):
            closeTransport(context)
        case .forwardMessage(let message):
            deliver(message)
        case .packetSizeChanged(let size):
            packetSize = size
            session.packetSize = size
        case .sessionChanged(let info):
            session = info
            packetSize = info.packetSize
        case .loginSucceeded(let info):
            session = info
            packetSize = info.packetSize
        case .reservationGranted(let key):
            reservations.resume(key, with: .success(()))
        case .failReservation(let key, let error):
            reservations.resume(key, with: .failure(error))
        case .none, .sendPrelogin, .startTLSHandshake, .sendLogin7, .loginRouted, .sspiChallenge, .fedAuthInfoReceived, .endRequestWithIgnore, .forwardColumns,
             .forwardRow, .forwardStatementDone, .forwardReturnStatus, .requestCompleted, .requestCancelled:
            break
        }
    }

    private func timerFired(_ id: TimerID) async {
        timerTasks[id] = nil
        await perform(machine.timeoutFired(id, now: clock.now()))
    }

    /// Closes the transport (a read or write in flight fails at once), fails the waiting requests,
    /// stops the timers, drops the receive buffers and ends ``messages`` (after what it holds):
    /// after a fatal error as after ``close()``, nobody is left waiting.
    private func closeTransport(_ context: ConnectionStateMachine.CloseContext) {
        transport.close()
        socket.close()
        reader.release()
        currentColumns = nil
        resultDecryption = nil
        pendingDecryption = nil
        for task in timerTasks.values { task.cancel() }
        timerTasks = [:]
        for id in context.failedRequests { performNow(.failRequest(id, context.error)) }
        for key in context.failedReservations { performNow(.failReservation(key, context.error)) }
        messages.finish()   // subscribers read what they hold, then their loops end
        // Whoever waits for the write path wakes up to find the connection closed.
        writeGateWaiters.resumeAll(with: .failure(closedError))
    }

    /// The error for whoever uses a closed connection.
    var closedError: SQLClientError { machine.closeError ?? SQLClientError.closed() }

    func deliver(_ message: SQLServerMessage) {
        messageHandler?(message)
        messages.publish(message)
    }

    // MARK: - Public API

    /// Sets a handler called for every server message (PRINT, INFO, ERROR) as it arrives; nil removes it.
    public func setMessageHandler(_ handler: (@Sendable (SQLServerMessage) -> Void)?) {
        messageHandler = handler
    }

    /// Cancels the running request, if any: sends ATTENTION ([MS-TDS] 2.2.1.7; after the
    /// request's last packet when it is still being written). Nothing happens when no request
    /// is running.
    ///
    /// - A request still being written: its reader ends with `.cancelled` once the server
    ///   acknowledges; when the server does not acknowledge within
    ///   ``SQLConnectionConfiguration/cancelTimeout`` the connection is closed and the reader
    ///   fails with `.timeout`.
    /// - A response being read: the connection reads it to the acknowledgement itself, so that a
    ///   stream nobody reads any more (a loop left with `break` whose iterator stays alive, as in
    ///   top-level code, where the next request would wait for it) ends too. Its reader throws
    ///   `.cancelled` (at once if it is waiting, else when it next asks). When the server does
    ///   not acknowledge within ``SQLConnectionConfiguration/cancelTimeout`` the connection is
    ///   closed: later requests fail with `.connectionClosed`, whose underlying error says so.
    /// - Throws: the connection's error when sending ATTENTION failed and closed it.
    public func cancel() async throws {
        let wasOpen = machine.state != .closed
        if let running = machine.request, running.phase == .reading, !running.isAbandoned {
            await abandon(running.id, reason: .cancelled)
        } else {
            await perform(machine.cancelRequested(nil, reason: .cancelled, now: clock.now()))
        }
        if wasOpen, machine.state == .closed { throw closedError }
    }

    /// Closes the connection: every request waiting for its turn and the running one fail with
    /// `.connectionClosed` at once. Later requests throw `.connectionClosed`.
    public func close() {
        if machine.state != .closed { logger?.closed(connection: logNumber) }
        for action in machine.closeRequested() { performNow(action) }
        transport.close()
        socket.close()
        messages.finish()
    }

    /// True until the connection is closed or broken.
    public var isOpen: Bool { machine.state != .closed }
}
