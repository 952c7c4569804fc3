import TDS

/// Identifies one request on a connection, in the order requests were made.
struct RequestID: Hashable, Comparable, Sendable, CustomStringConvertible {
    let value: UInt64
    static func < (a: RequestID, b: RequestID) -> Bool { a.value < b.value }
    var description: String { "#\(value)" }
}

/// Why a request is being cancelled: decides the error its reader gets once the server has
/// acknowledged the ATTENTION.
enum CancelReason: Sendable, Equatable {
    /// ``SQLConnection/cancel()``, or the task reading the request was cancelled.
    case cancelled
    /// The query timeout (the limit it had) passed.
    case timedOut(Duration)
    /// The stream was dropped before its end: nobody reads the rest.
    case abandoned

    /// The error a reader of the cancelled request gets.
    var error: SQLClientError {
        switch self {
        case .cancelled, .abandoned:
            return SQLClientError(.cancelled, "the request was cancelled")
        case .timedOut(let limit):
            return SQLClientError(.timeout, "the request did not finish within \(limit) and was cancelled")
        }
    }
}

/// The running request as a pure state machine (a part of `ConnectionStateMachine`): where it
/// is in its life (being written, being read), its cancellation (ATTENTION, [MS-TDS] 2.2.1.7,
/// 3.2.5.4) and what its response tokens mean. No I/O.
///
/// Cancellation: while the request is still being written, a cancel is only noted
/// (`pending`): the writer finishes the packets in flight, ends the message with an EOM|IGNORE
/// packet and sends ATTENTION (as Microsoft.Data.SqlClient does), so ATTENTION never
/// interleaves with the request's packets. Once the request is written, a cancel sends
/// ATTENTION at once. Either way the response is then read, and discarded, until DONE (or
/// DONEPROC) with DONE_ATTN acknowledges the ATTENTION.
struct RequestStateMachine: Sendable {
    enum Phase: Sendable, Equatable {
        /// Packets of the request are being written.
        case writing
        /// The request is written; its response is being read.
        case reading
    }

    enum Cancellation: Sendable, Equatable {
        case none
        /// Requested while the request was being written: ATTENTION goes out once the writer stops.
        case pending(CancelReason)
        /// ATTENTION was sent; the response is discarded until its acknowledgement.
        case attentionSent(CancelReason)

        var reason: CancelReason? {
            switch self {
            case .none: return nil
            case .pending(let r), .attentionSent(let r): return r
            }
        }
    }

    let id: RequestID
    /// The query timeout armed when the request started to be written.
    let timeout: Duration?
    private(set) var phase: Phase = .writing
    private(set) var cancellation: Cancellation = .none
    /// Nobody reads the response: the driver drains it.
    var isAbandoned = false
    private var attentionAcknowledged = false
    /// The request's ERROR messages, for its error: the first ``maximumKeptErrors`` (every one
    /// is forwarded to the message stream as it arrives), so a response of endless ERROR
    /// tokens streams in bounded memory as endless rows do.
    private var errors: [SQLServerMessage] = []
    /// How many ERROR messages a request's error keeps (``SQLClientError/serverMessages``).
    static let maximumKeptErrors = 1000
    private var fatal: SQLServerMessage?
    /// RETURNVALUE tokens in arrival order (taken by the RPC layer).
    private(set) var returnValues: [ReturnValue] = []

    init(id: RequestID, timeout: Duration?) {
        self.id = id
        self.timeout = timeout
    }

    /// Rows and results are forwarded (not discarded after an ATTENTION).
    var forwardsResults: Bool { cancellation == .none }

    // MARK: - Lifecycle

    /// What the writer does after writing some packets of the request.
    enum WriteStep: Sendable, Equatable {
        /// Go on (or, after the last packet, read the response).
        case proceed
        /// Stop: send an EOM|IGNORE packet, then ATTENTION.
        case endWithIgnore
        /// The request is written and a cancel came while writing its last packets: send ATTENTION.
        case sendAttention
    }

    /// Some packets were written; `complete`: the message's last packet (EOM) among them.
    mutating func packetsWritten(complete: Bool) -> WriteStep {
        guard phase == .writing else { return .proceed }
        if case .pending(let reason) = cancellation {
            cancellation = .attentionSent(reason)
            phase = .reading
            return complete ? .sendAttention : .endWithIgnore
        }
        if complete { phase = .reading }
        return .proceed
    }

    /// A cancel for this request; true when ATTENTION must be sent now.
    mutating func cancel(_ reason: CancelReason) -> Bool {
        guard cancellation == .none else { return false }
        switch phase {
        case .writing:
            cancellation = .pending(reason)
            return false
        case .reading:
            cancellation = .attentionSent(reason)
            return true
        }
    }

    // MARK: - Response

    /// The meaning of one response token for this request. ENVCHANGE is the connection's.
    mutating func token(_ token: Token) -> ConnectionStateMachine.Action {
        let discarding = !forwardsResults
        switch token {
        case .colMetadata(let meta):
            return discarding || meta.isNoMetadata ? .none : .forwardColumns(meta)
        case .row, .nbcRow:
            guard !discarding, let values = token.rowValues else { return .none }
            return .forwardRow(values)
        case .done(let d):
            if d.status.contains(.attention) { return acknowledgeAttention() }
            if discarding { return .none }
            return .forwardStatementDone(rowsAffected: d.affectedRows)
        case .doneInProc(let d):
            if discarding { return .none }
            return .forwardStatementDone(rowsAffected: d.status.contains(.count) ? d.rowCount : nil)
        case .doneProc(let d):
            if d.status.contains(.attention) { return acknowledgeAttention() }
            return .none
        case .error(let e):
            let m = e.message
            if m.severity >= 20 { fatal = fatal ?? m }
            if !discarding, errors.count < Self.maximumKeptErrors { errors.append(m) }
            return .forwardMessage(m)
        case .info(let i):
            return .forwardMessage(i.message)
        case .returnStatus(let s):
            return discarding ? .none : .forwardReturnStatus(s.value)
        case .returnValue(let value):
            // [MS-TDS] 2.2.7.19: an OUTPUT parameter or UDF result; kept for the request's result.
            if !discarding { returnValues.append(value) }
            return .none
        case .envChange, .order, .colInfo, .tabName, .altMetadata, .altRow, .offset, .dataClassification,
             .sessionState, .featureExtAck:
            return .none
        case .loginAck, .sspi, .fedAuthInfo:
            return .closeConnection(.init(error: SQLClientError(.protocolError, "unexpected \(token.name) token in a response")))
        }
    }

    /// DONE or DONEPROC with DONE_ATTN: the acknowledgement of this request's ATTENTION
    /// ([MS-TDS] 2.2.1.7). One that answers no ATTENTION (none was sent for this request, e.g. a
    /// second acknowledgement of the previous request's) would end this request with the wrong
    /// response and hand its real response to the next request: a protocol error, the
    /// connection closed.
    private mutating func acknowledgeAttention() -> ConnectionStateMachine.Action {
        guard case .attentionSent = cancellation else {
            return .closeConnection(.init(error: SQLClientError(
                .protocolError, "the server acknowledged an ATTENTION (DONE_ATTN) that was not sent for this request")))
        }
        attentionAcknowledged = true
        return .none
    }

    /// How a response message's end (EOM) ends the request.
    enum End: Sendable {
        /// More is to come (an ATTENTION not yet acknowledged).
        case keepReading
        /// Done; with the server's error (every ERROR of the batch) when it reported one.
        case completed(SQLClientError?)
        /// The server acknowledged the ATTENTION: the reader gets the reason's error.
        case cancelled(SQLClientError)
        /// An error of severity 20 or more: the connection is closed.
        case fatal(SQLClientError)
    }

    mutating func messageEnded() -> End {
        if let fatal {
            return .fatal(SQLClientError(.serverError, fatal.message, serverMessage: fatal,
                                         serverMessages: errors.isEmpty ? [fatal] : errors))
        }
        if let reason = cancellation.reason {
            // The acknowledgement may come in a message of its own after the response ends (and
            // after the DONE of a message ended with IGNORE).
            return attentionAcknowledged ? .cancelled(reason.error) : .keepReading
        }
        guard let first = errors.first else { return .completed(nil) }
        return .completed(SQLClientError(.serverError, first.message, serverMessage: first, serverMessages: errors))
    }
}
