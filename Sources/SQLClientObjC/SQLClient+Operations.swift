import Foundation
import SQLClient

extension SQLClient {
    /// Connects and logs in, then calls `completion` with true, or with false after an error
    /// notification (``SQLClientErrorNotification``: the server's number and severity for a
    /// refused login, 18456; code 20009 when the server cannot be reached, 20003 when ``timeout``
    /// passed, 20002 for a TLS or protocol failure).
    ///
    /// - Parameters:
    ///   - host: `server`, `server:port`, `server,port`, `server\instance`, `server\instance:port`
    ///     (a named instance without a port is looked up through the SQL Server Browser, UDP 1434),
    ///     or an IPv6 address (`::1`, `[::1]:1433`).
    ///   - username: the SQL Server login (or `DOMAIN\user` for NTLM).
    ///   - password: its password (never logged, printed or put in a notification).
    ///   - database: the initial database; nil or empty keeps the login's default.
    ///   - completion: called on ``callbackQueue`` with whether the client is connected.
    ///
    /// Encryption is on and the server's certificate verified (see ``trustServerCertificate``).
    /// A connect made while connected fails (a message notification says so) and keeps the
    /// connection; call ``disconnect()`` first.
    public func connect(_ host: String, username: String, password: String, database: String?,
                        completion: (@Sendable (Bool) -> Void)?) {
        let settings = state.withLock { state in
            ConnectSettings(timeout: state.timeout, textSize: Self.textSize(state.maxTextSize),
                            trustServerCertificate: state.trustServerCertificate, configure: state.configurationHandler)
        }
        enqueue { client in
            await client.runConnect(host: host, username: username, password: password,
                                    database: database, settings: settings, completion: completion)
        }
    }

    /// Runs `sql` as one SQL batch, exactly as written (the Objective-C SQLClient had no
    /// parameters: values the app splices into the text are SQL; see
    /// ``execute(_:parameters:completion:)``), and calls `completion` with its result sets: an
    /// array of tables, each an array of rows, each a dictionary from column name to value
    /// (`NSNull` for NULL; see ``SQLClient/foundationValue(_:)`` for the types).
    /// A statement without a result set (INSERT, UPDATE…) adds no table. On failure `completion`
    /// gets nil, after an error notification (a server error's number, message and severity;
    /// 20003 for a timeout, 20004 for a lost connection, 20047 when not connected). Server
    /// messages (PRINT, INFO) post ``SQLClientMessageNotification`` as they arrive.
    public func execute(_ sql: String, completion: (@Sendable ([[[String: Any]]]?) -> Void)?) {
        submit(SQLQuery(unsafeSQL: sql), completion: completion)
    }

    /// As ``execute(_:completion:)``, with values bound to `@P1`, `@P2`… in `sql` (an RPC to
    /// `sp_executesql`, [MS-TDS] 2.2.6.6): values never become SQL text. Each value is an
    /// `NSNull` (or nil), `NSNumber` (a BOOL as bit, an integer as bigint, a double as float),
    /// `NSDecimalNumber`/`Decimal` (decimal), `NSString`, `NSDate` (datetime2, UTC), `NSUUID`,
    /// `NSData`/`[UInt8]` (varbinary), or an `SQLParameter` for an explicit type. Another type
    /// fails the call (an error notification names its position) without sending anything.
    public func execute(_ sql: String, parameters: [Any], completion: (@Sendable ([[[String: Any]]]?) -> Void)?) {
        var bound: [SQLParameter] = []
        for (index, value) in parameters.enumerated() {
            guard let parameter = Self.parameter(value) else {
                let failure = SQLClientError(.invalidParameter,
                                             "parameter @P\(index + 1): \(type(of: value)) cannot be sent as a SQL Server value")
                state.withLock { $0.pendingExecutions += 1 }
                enqueue { client in
                    client.state.withLock { $0.pendingExecutions -= 1 }
                    client.postError(failure, during: .execute)
                    client.deliver { completion?(nil) }
                }
                return
            }
            var p = parameter
            p.name = "@P\(index + 1)"
            bound.append(p)
        }
        submit(SQLQuery(unsafeSQL: sql, parameters: bound), completion: completion)
    }

    /// Closes the connection once the calls made before it have run (a call made after it finds
    /// the client not connected). Safe to call when not connected.
    public func disconnect() {
        enqueue { client in
            let connection = client.state.withLock { state -> SQLConnection? in
                let c = state.connection
                state.connection = nil
                state.connected = false
                state.appliedTextSize = nil
                return c
            }
            await connection?.close()
        }
    }

    // MARK: - The queue of calls

    /// Appends a call to the queue: it starts when every call made before it has finished.
    func enqueue(_ operation: @escaping @Sendable (SQLClient) async -> Void) {
        state.withLock { state in
            let previous = state.tail
            // Unstructured: the Objective-C API is callback-based; each call is a task chained after the previous one.
            state.tail = Task { [self] in
                await previous?.value
                await operation(self)
            }
        }
    }

    private func submit(_ query: SQLQuery, completion: (@Sendable ([[[String: Any]]]?) -> Void)?) {
        let (timeout, textSize) = state.withLock { state in
            state.pendingExecutions += 1
            return (state.timeout, Self.textSize(state.maxTextSize))
        }
        enqueue { client in
            let tables = await client.runExecute(query, timeout: timeout, textSize: textSize)
            client.state.withLock { $0.pendingExecutions -= 1 }
            let box = SendableBox(tables)
            client.deliver { completion?(box.value) }
        }
    }

    // MARK: - Connect

    /// The settings a connect call read when it was made.
    struct ConnectSettings: Sendable {
        var timeout: TimeInterval
        var textSize: Int
        var trustServerCertificate: Bool
        var configure: (@Sendable (inout SQLConnectionConfiguration) -> Void)?
    }

    private func runConnect(host: String, username: String, password: String, database: String?,
                            settings: ConnectSettings, completion: (@Sendable (Bool) -> Void)?) async {
        if let existing = state.withLock({ $0.connection }), await existing.isOpen {
            postMessage("Attempting to connect while a connection is active.")
            deliver { completion?(false) }
            return
        }
        state.withLock { state in
            state.host = host
            state.username = username
            state.database = database
            state.connection = nil
            state.connected = false
        }
        do {
            var configuration = try SQLConnectionConfiguration(server: host, user: username, password: password,
                                                               database: database ?? "",
                                                               trustServerCertificate: settings.trustServerCertificate)
            configuration.connectTimeout = Self.duration(seconds: settings.timeout) ?? SQLConnectionConfiguration.maximumTimeout
            configuration.textSize = settings.textSize
            settings.configure?(&configuration)
            let connection = try await SQLConnection.connect(configuration)
            await connection.setMessageHandler { [weak self] message in
                self?.post(message)
            }
            state.withLock { state in
                state.connection = connection
                state.connected = true
                state.appliedTextSize = configuration.textSize
            }
            deliver { completion?(true) }
        } catch {
            postError(error, during: .connect)
            deliver { completion?(false) }
        }
    }

    // MARK: - Execute

    /// Runs one query and returns its tables, or nil after posting the error.
    private func runExecute(_ query: SQLQuery, timeout: TimeInterval, textSize: Int) async -> [[[String: Any]]]? {
        let (connection, applied) = state.withLock { state in (state.connection, state.appliedTextSize) }
        guard let connection, await connection.isOpen else {
            if connection != nil { markClosed() }
            postError(SQLClientError(.connectionClosed, "Attempting to execute while not connected."), during: .notConnected)
            return nil
        }
        let errorsBefore = state.withLock { $0.errorsPosted }
        do {
            if textSize != applied {
                _ = try await connection.execute(SQLQuery(unsafeSQL: "SET TEXTSIZE \(textSize)"),
                                                 timeout: Self.duration(seconds: timeout))
                state.withLock { $0.appliedTextSize = textSize }
            }
            let result = try await connection.execute(query, timeout: Self.duration(seconds: timeout))
            let version = await connection.session.tdsVersion
            return Self.tables(of: result, tdsVersion: version)
        } catch {
            // A server error was already posted by the message handler, as it arrived.
            let alreadyPosted = (error as? SQLClientError)?.code == .serverError
                && state.withLock { $0.errorsPosted } > errorsBefore
            if !alreadyPosted { postError(error, during: .execute) }
            if await !connection.isOpen { markClosed() }
            return nil
        }
    }

    private func markClosed() {
        state.withLock { state in
            state.connected = false
        }
    }

    /// `seconds` as a timeout: nil (no limit) for 0, negative or NaN; clamped to the longest
    /// the core accepts. Never traps.
    static func duration(seconds: TimeInterval) -> Duration? {
        guard seconds.isFinite else { return seconds > 0 ? SQLConnectionConfiguration.maximumTimeout : nil }
        guard seconds > 0 else { return nil }
        let limit = Double(Int32.max)
        if seconds >= limit { return SQLConnectionConfiguration.maximumTimeout }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// The `SET TEXTSIZE` value for ``maxTextSize``: -1 (no limit) for 0 or negative, else clamped to an int.
    static func textSize(_ maxTextSize: Int) -> Int {
        maxTextSize <= 0 ? -1 : min(maxTextSize, Int(Int32.max))
    }
}

/// A value handed from the call that made it to the queue that delivers it, never touched again
/// by the maker (results, completion blocks of non-Sendable types).
struct SendableBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
