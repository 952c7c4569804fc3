import TDS

// The connection machine's outputs (``ConnectionStateMachine``): what its driver must do, and
// what closing fails. Apart from the machine's file to keep each under the size limit.
extension ConnectionStateMachine {
    /// What closing fails: the error for everyone and the queued requests to fail with it (the
    /// driver stops all its timers). A request being run gets the error from its own reader or writer.
    struct CloseContext: Sendable {
        var error: SQLClientError
        var failedRequests: [RequestID] = []
        /// Reservations still waiting for the connection (see ``reserve(_:)``): they fail too.
        var failedReservations: [ReservationID] = []
    }

    /// Who holds the connection between requests (``SQLConnection/withTransaction(isolationLevel:isolation:_:)``):
    /// while a reservation is held, only requests made under it start; the others wait in the
    /// queue until it is released.
    struct ReservationID: Hashable, Sendable, CustomStringConvertible {
        var value: UInt64
        var description: String { "reservation\(value)" }
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
        /// The login response carried a routing ENVCHANGE (type 20): this connection is over (its
        /// timers stopped); log in again at the routing target.
        case loginRouted(EnvChange.Routing)
        /// The server's SSPI token (NTLM challenge): answer it with an SSPI message (packet type
        /// 0x11), then keep reading the login response.
        case sspiChallenge([UInt8])
        /// The server's FEDAUTHINFO ([MS-TDS] 2.2.7.12) in the FEDAUTH MSAL workflow: get a token for
        /// its SPN from its STSURL and send it in a FEDAUTH token message (packet type 0x08,
        /// [MS-TDS] 2.2.6.3), then keep reading the login response.
        case fedAuthInfoReceived(FedAuthInfo)

        /// The request may be written now (its turn came): resume whoever waits for it.
        case startRequest(RequestID)
        /// A request that was not running fails (cancelled while queued, connection closed).
        case failRequest(RequestID, SQLClientError)
        /// Start (or restart) a timer; fire `timeoutFired(id, now:)` at `deadline`.
        case scheduleTimeout(TimerID, deadline: Duration)
        /// Stop a timer.
        case cancelTimeout(TimerID)
        /// Stop writing the request: send its last packet with EOM|IGNORE ([MS-TDS] 2.2.3.1.2).
        case endRequestWithIgnore(RequestID)
        /// Send an ATTENTION packet ([MS-TDS] 2.2.1.7) for the request, after its last packet.
        case sendAttention(RequestID)
        /// Nobody reads the request's response any more: read it to its end in the background.
        case drainRequest(RequestID)
        /// The connection cannot be used: close the transport, fail the listed requests and stop the timers.
        case closeConnection(CloseContext)

        /// A result set starts with these columns.
        case forwardColumns(ColMetadata)
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
        /// The request is over: the connection is ready again. `error` when the server reported one;
        /// `returnValues`: its RETURNVALUE tokens (OUTPUT parameters, UDF results) in arrival order.
        case requestCompleted(RequestID, error: SQLClientError?, returnValues: [ReturnValue] = [])
        /// The request was cancelled and the server acknowledged the ATTENTION: its reader gets `error`.
        case requestCancelled(RequestID, SQLClientError)
        /// The reservation is held now: resume whoever waits for it.
        case reservationGranted(ReservationID)
        /// A reservation that was waiting fails (the connection closed).
        case failReservation(ReservationID, SQLClientError)
    }
}
