/// How the client negotiates encryption in PRELOGIN ([MS-TDS] 2.2.6.5 ENCRYPTION, 3.2.5.1).
public enum SQLEncryption: String, Sendable, Hashable, CaseIterable {
    /// Send ENCRYPT_ON: the whole session runs under TLS and the certificate is verified (unless
    /// trusted). A server that answers NOT_SUP or OFF is refused (`.encryptionNotAvailable`). The default.
    case on
    /// Like `.on` (sent as ENCRYPT_ON); named for sqlcmd's and FreeTDS's "require".
    case required
    /// Send ENCRYPT_OFF: only the LOGIN7 packet travels under TLS, then the session is plaintext
    /// (full TLS if the server insists with ON/REQ). As in Microsoft's drivers, the certificate
    /// is not verified in this mode unless `verifyCertificateWhenLoginOnly` asks for it.
    case off
    /// Send ENCRYPT_NOT_SUP: no TLS at all (the password travels obfuscated only). A server that
    /// requires encryption refuses the connection.
    case notSupported

    /// The PRELOGIN ENCRYPTION byte sent for this setting.
    var preloginValue: Prelogin.Encryption {
        switch self {
        case .on, .required: return .on
        case .off: return .off
        case .notSupported: return .notSupported
        }
    }
}

/// What the session looks like after login and as ENVCHANGE tokens update it.
public struct SQLSessionInfo: Sendable, Hashable {
    /// The current database ([MS-TDS] ENVCHANGE type 1).
    public var database: String = ""
    /// The current language (ENVCHANGE type 2).
    public var language: String = ""
    /// The session's default collation (ENVCHANGE type 7), 5 bytes on the wire.
    public var collation: Collation?
    /// The negotiated packet size in bytes (ENVCHANGE type 4).
    public var packetSize: Int = Packet.defaultSize
    /// The TDS version the server accepted (LOGINACK).
    public var tdsVersion: TDSVersion = .v7_4
    /// The server's program name from LOGINACK (for example "Microsoft SQL Server"), without the
    /// NUL padding SQL Server sends.
    public var serverProgramName: String = ""
    /// The server's version from LOGINACK.
    public var serverVersion: String = ""
    /// The descriptor of the open transaction, nil when none (ENVCHANGE types 8–10).
    public var transactionDescriptor: [UInt8]?
    /// How the session is encrypted: "full" (every packet), "login" (LOGIN7 only) or "none".
    public var encryption: String = "none"

    public init() {}
}

/// The connection as a pure state machine ([MS-TDS] 3.2.5 client states): events in, actions
/// out, no I/O. One driver (``SQLConnection``) performs the actions.
///
/// States: `initialized` → `preloginSent` → (`tlsHandshake`) → `loginSent` → `ready` ⇄ `executing`
/// (→ `cancelling` after an ATTENTION) → `closed`.
struct ConnectionStateMachine: Sendable {
    enum State: Sendable, Equatable {
        case initialized
        case preloginSent
        case tlsHandshake(fullSession: Bool)
        case loginSent
        case ready
        case executing
        case cancelling
        case closed
    }

    /// What the driver must do next.
    enum Action: Sendable {
        /// Nothing to do (keep reading when a request or login is in progress).
        case none
        /// Send a PRELOGIN message with this ENCRYPTION value.
        case sendPrelogin(Prelogin.Encryption)
        /// Run the TLS handshake inside PRELOGIN packets; then send `tlsEstablished`.
        /// `fullSession`: keep TLS for every packet; otherwise only for LOGIN7. `verify`: check the certificate.
        case startTLSHandshake(fullSession: Bool, verify: Bool)
        /// Send LOGIN7 (through TLS when encryption was negotiated).
        case sendLogin7(throughTLS: Bool)
        /// Login completed.
        case loginSucceeded(SQLSessionInfo)
        /// The connection cannot be used: close the transport and fail whoever waits.
        case closeConnection(SQLClientError)
        /// Send the request (SQL batch or RPC) prepared by the caller.
        case sendRequest
        /// Send an ATTENTION packet.
        case sendAttention
        /// A result set starts with these columns.
        case forwardColumns([ColumnMetadata])
        /// A row of the current result set.
        case forwardRow([SQLValue])
        /// A statement finished; `rowsAffected` when DONE carried the COUNT flag.
        case forwardStatementDone(rowsAffected: UInt64?)
        /// A server message (INFO or ERROR) to hand to the caller.
        case forwardMessage(SQLServerMessage)
        /// A RETURNSTATUS value of a procedure.
        case forwardReturnStatus(Int32)
        /// The packet size changed (ENVCHANGE type 4); use it for the next requests.
        case packetSizeChanged(Int)
        /// The session changed (database, language, collation, transaction).
        case sessionChanged(SQLSessionInfo)
        /// The request is over: the connection is ready again. `error` when the server reported one.
        case requestCompleted(error: SQLClientError?)
        /// The request was cancelled and the server acknowledged the ATTENTION.
        case requestCancelled
    }

    private(set) var state: State = .initialized
    private(set) var session = SQLSessionInfo()
    let encryption: SQLEncryption
    let verifyWhenLoginOnly: Bool
    let trustServerCertificate: Bool

    // Login progress
    private var loginAck: LoginAck?
    private var loginErrors: [SQLServerMessage] = []
    // Request progress
    private var requestErrors: [SQLServerMessage] = []
    private var fatalError: SQLServerMessage?
    private var attentionAcknowledged = false
    private var attentionSent = false
    /// RETURNVALUE tokens of the current request, in arrival order (taken by the RPC layer).
    private(set) var returnValues: [ReturnValue] = []

    init(encryption: SQLEncryption, trustServerCertificate: Bool, verifyWhenLoginOnly: Bool = false) {
        self.encryption = encryption
        self.trustServerCertificate = trustServerCertificate
        self.verifyWhenLoginOnly = verifyWhenLoginOnly
    }

    // MARK: - Connecting

    /// The transport is connected: send PRELOGIN.
    mutating func connected() -> Action {
        guard state == .initialized else { return invalid("connected") }
        state = .preloginSent
        return .sendPrelogin(encryption.preloginValue)
    }

    /// The server's PRELOGIN response arrived ([MS-TDS] 2.2.6.5; answered in a TABULAR_RESULT packet).
    mutating func preloginReceived(_ response: Prelogin) -> Action {
        guard state == .preloginSent else { return invalid("PRELOGIN response") }
        let server = response.encryption?.mode ?? .notSupported
        let verify = !trustServerCertificate
        switch encryption {
        case .on, .required:
            if server == .on || server == .required {
                state = .tlsHandshake(fullSession: true)
                session.encryption = "full"
                return .startTLSHandshake(fullSession: true, verify: verify)
            }
            return fail(SQLClientError(.encryptionNotAvailable,
                                       "the server answered PRELOGIN encryption \(server) but encryption is required;"
                                       + " connect with encrypt=off or notSupported to allow it"))
        case .off:
            if server == .on || server == .required {
                state = .tlsHandshake(fullSession: true)
                session.encryption = "full"
                return .startTLSHandshake(fullSession: true, verify: verify && verifyWhenLoginOnly)
            }
            if server == .off {
                state = .tlsHandshake(fullSession: false)
                session.encryption = "login"
                return .startTLSHandshake(fullSession: false, verify: verify && verifyWhenLoginOnly)
            }
            state = .loginSent
            session.encryption = "none"
            return .sendLogin7(throughTLS: false)
        case .notSupported:
            // [MS-TDS] 2.2.6.5: a client that cannot encrypt, facing a server that requires it,
            // ends the connection; ENCRYPT_ON is not a valid answer to ENCRYPT_NOT_SUP and is
            // treated the same. LOGIN7 is never sent in the clear to such a server.
            if server == .required || server == .on {
                return fail(SQLClientError(.encryptionNotAvailable,
                                           "the server requires encryption (PRELOGIN \(server == .on ? "ENCRYPT_ON" : "ENCRYPT_REQ")) "
                                           + "but this client was configured with encryption not supported"))
            }
            state = .loginSent
            session.encryption = "none"
            return .sendLogin7(throughTLS: false)
        }
    }

    /// The TLS handshake inside PRELOGIN completed.
    mutating func tlsEstablished() -> Action {
        guard case .tlsHandshake = state else { return invalid("TLS established") }
        state = .loginSent
        return .sendLogin7(throughTLS: true)
    }

    // MARK: - Requests

    /// The caller wants to send a request (SQL batch or RPC).
    mutating func requestStarted() -> Action {
        switch state {
        case .ready:
            state = .executing
            requestErrors = []
            returnValues = []
            attentionSent = false
            attentionAcknowledged = false
            return .sendRequest
        case .closed:
            return .closeConnection(SQLClientError(.connectionClosed, "the connection is closed"))
        default:
            return .requestCompleted(error: SQLClientError(.invalidState,
                                                           "another request is in progress on this connection"))
        }
    }

    /// Hands over the RETURNVALUE tokens collected for the current request.
    mutating func takeReturnValues() -> [ReturnValue] {
        defer { returnValues = [] }
        return returnValues
    }

    /// The caller wants to cancel the running request.
    mutating func cancelRequested() -> Action {
        guard state == .executing else { return .none }
        state = .cancelling
        attentionSent = true
        return .sendAttention
    }

    /// The caller closes the connection.
    mutating func closeRequested() -> Action {
        if state == .closed { return .none }
        state = .closed
        return .closeConnection(SQLClientError(.connectionClosed, "the connection was closed"))
    }

    /// The transport failed or the peer closed it.
    mutating func transportFailed(_ error: SQLClientError) -> Action {
        if state == .closed { return .none }
        state = .closed
        return .closeConnection(error)
    }

    // MARK: - Tokens

    /// One token of the server's response.
    /// Whether a ROW or NBCROW received now would be forwarded to the reader, i.e. whether
    /// ``tokenReceived(_:)`` answers `.forwardRow` for it (while executing a request). The
    /// driver's batch reader relies on this to hand rows over without passing each one through
    /// ``tokenReceived(_:)``: rows change no state here.
    var forwardsRows: Bool { state == .executing }

    mutating func tokenReceived(_ token: Token) -> Action {
        switch state {
        case .loginSent:
            return loginToken(token)
        case .executing, .cancelling:
            return requestToken(token)
        case .closed:
            return .none
        default:
            return fail(SQLClientError(.protocolError, "unexpected \(token.name) token before login"))
        }
    }

    /// The server's response message ended (the packet with EOM was decoded).
    mutating func messageEnded() -> Action {
        switch state {
        case .loginSent:
            if let fatal = fatalError, loginAck == nil {
                return fail(loginError(from: [fatal] + loginErrors.filter { $0 != fatal }))
            }
            guard let ack = loginAck else {
                return fail(loginError(from: loginErrors))
            }
            state = .ready
            session.tdsVersion = ack.tdsVersion
            session.serverProgramName = ack.trimmedProgramName
            session.serverVersion = ack.serverVersion.description
            return .loginSucceeded(session)
        case .executing:
            if let fatal = fatalError {
                return fail(SQLClientError(.serverError, fatal.message, serverMessage: fatal,
                                           serverMessages: requestErrors))
            }
            state = .ready
            guard let first = requestErrors.first else { return .requestCompleted(error: nil) }
            return .requestCompleted(error: SQLClientError(.serverError, first.message, serverMessage: first,
                                                          serverMessages: requestErrors))
        case .cancelling:
            if let fatal = fatalError {
                return fail(SQLClientError(.serverError, fatal.message, serverMessage: fatal))
            }
            // The ATTENTION acknowledgement may come in its own message after the response ends.
            guard attentionAcknowledged else { return .none }
            state = .ready
            return .requestCancelled
        default:
            return .none
        }
    }

    private mutating func loginToken(_ token: Token) -> Action {
        switch token {
        case .loginAck(let ack):
            loginAck = ack
            return .none
        case .envChange(let change):
            return applyEnvChange(change)
        case .error(let e):
            let m = SQLServerMessage(e.message, isError: true)
            loginErrors.append(m)
            if m.severity >= 20 { fatalError = fatalError ?? m }
            return .forwardMessage(m)
        case .info(let i):
            return .forwardMessage(SQLServerMessage(i.message, isError: false))
        case .done, .featureExtAck, .sessionState, .doneProc, .doneInProc:
            return .none
        case .sspi, .fedAuthInfo:
            return fail(SQLClientError(.unsupported, "the server asked for \(token.name) authentication, which is not supported"))
        default:
            return fail(SQLClientError(.protocolError, "unexpected \(token.name) token in the login response"))
        }
    }

    private mutating func requestToken(_ token: Token) -> Action {
        let discarding = state == .cancelling
        switch token {
        case .colMetadata(let meta):
            return discarding || meta.isNoMetadata ? .none : .forwardColumns(meta.columns)
        case .row, .nbcRow:
            guard !discarding, let values = token.rowValues else { return .none }
            return .forwardRow(values)
        case .done(let d):
            if d.status.contains(.attention) { attentionAcknowledged = true; return .none }
            if discarding { return .none }
            return .forwardStatementDone(rowsAffected: d.affectedRows)
        case .doneInProc(let d):
            if discarding { return .none }
            return .forwardStatementDone(rowsAffected: d.status.contains(.count) ? d.rowCount : nil)
        case .doneProc(let d):
            if d.status.contains(.attention) { attentionAcknowledged = true }
            return .none
        case .error(let e):
            let m = SQLServerMessage(e.message, isError: true)
            if m.severity >= 20 { fatalError = fatalError ?? m }
            if !discarding { requestErrors.append(m) }
            return .forwardMessage(m)
        case .info(let i):
            return .forwardMessage(SQLServerMessage(i.message, isError: false))
        case .envChange(let change):
            return applyEnvChange(change)
        case .returnStatus(let s):
            return discarding ? .none : .forwardReturnStatus(s.value)
        case .returnValue(let value):
            // [MS-TDS] 2.2.7.19: an OUTPUT parameter or UDF result; kept for the request's result.
            if !discarding { returnValues.append(value) }
            return .none
        case .order, .colInfo, .tabName, .altMetadata, .altRow, .offset, .dataClassification,
             .sessionState, .featureExtAck:
            return .none
        case .loginAck, .sspi, .fedAuthInfo:
            return fail(SQLClientError(.protocolError, "unexpected \(token.name) token in a response"))
        }
    }

    private mutating func applyEnvChange(_ change: EnvChange) -> Action {
        switch change.type {
        case .database:
            session.database = change.newText ?? session.database
        case .language:
            session.language = change.newText ?? session.language
        case .sqlCollation:
            if let bytes = change.newValue.bytes, bytes.count == 5 {
                var reader = ByteReader(bytes)
                session.collation = try? Collation.decode(from: &reader)
            }
        case .packetSize:
            if let size = change.newPacketSize, size >= Packet.minimumSize, size <= Int(UInt16.max) {
                session.packetSize = size
                return .packetSizeChanged(size)
            }
            return .none
        case .beginTransaction:
            session.transactionDescriptor = change.transactionDescriptor
        case .commitTransaction, .rollbackTransaction, .transactionEnded:
            session.transactionDescriptor = nil
        default:
            return .none
        }
        return state == .loginSent ? .none : .sessionChanged(session)
    }

    private func loginError(from errors: [SQLServerMessage]) -> SQLClientError {
        guard let first = errors.first else {
            return SQLClientError(.loginFailed, "the server ended the login response without LOGINACK")
        }
        return SQLClientError(.loginFailed, first.message, serverMessage: first, serverMessages: errors)
    }

    private mutating func fail(_ error: SQLClientError) -> Action {
        state = .closed
        return .closeConnection(error)
    }

    private mutating func invalid(_ event: String) -> Action {
        fail(SQLClientError(.invalidState, "\(event) is not expected in state \(state)"))
    }
}

extension SQLServerMessage {
    /// A public message from a decoded ERROR or INFO token body.
    init(_ m: ServerMessage, isError: Bool) {
        self.init(number: m.number, state: m.state, severity: m.severity, message: m.message,
                  serverName: m.serverName, procedureName: m.procedureName, lineNumber: m.lineNumber,
                  isError: isError)
    }
}
