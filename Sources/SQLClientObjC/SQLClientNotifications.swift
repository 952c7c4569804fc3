import Foundation
import SQLClient

/// Posted on `NotificationCenter.default` (object: the ``SQLClient``) for every server INFO or
/// PRINT message ([MS-TDS] 2.2.7.13), as it arrives, on the client's ``SQLClient/callbackQueue``.
/// `userInfo`: ``SQLClientMessageKey`` (the text), ``SQLClientCodeKey`` (the message number),
/// ``SQLClientSeverityKey`` (0–10). The client's own notes (a connect while connected) carry the
/// message alone. The same string as the Objective-C SQLClient's constant.
public let SQLClientMessageNotification = "SQLClientMessageNotification"

/// Posted on `NotificationCenter.default` (object: the ``SQLClient``) for every server ERROR
/// ([MS-TDS] 2.2.7.10) and every client-side failure, before the completion block of the call
/// that failed, on the client's ``SQLClient/callbackQueue``. `userInfo`: ``SQLClientMessageKey``,
/// ``SQLClientCodeKey``, ``SQLClientSeverityKey`` and, for client-side failures and
/// refused logins, ``SQLClientErrorKey``.
///
/// Codes: a server error's own number and severity (18456 and 14 for a refused login, 208 and 16
/// for an unknown table…). Client-side failures use FreeTDS's db-lib numbers, which apps of the
/// Objective-C SQLClient saw: 20003 (SYBETIME, severity 6) a login or query timeout; 20009
/// (SYBECONN, 9) the server cannot be reached (unknown host or instance, refused or failed TCP);
/// 20002 (SYBEFCON, 9) the connection failed after TCP (TLS, certificate, encryption, protocol);
/// 20004 (SYBEREAD, 9) the connection was lost during a call; 20047 (SYBEDDNE, 9) a call made
/// while not connected; 20000 (severity 7) the call itself is wrong (a malformed host, a
/// parameter that cannot be sent). The same string as the Objective-C SQLClient's constant.
public let SQLClientErrorNotification = "SQLClientErrorNotification"

/// `userInfo` key of both notifications: the message text (`String`).
public let SQLClientMessageKey = "SQLClientMessageKey"

/// `userInfo` key: the error or message number (`NSNumber`, an int).
public let SQLClientCodeKey = "SQLClientCodeKey"

/// `userInfo` key: the severity (`NSNumber`, an int): the server's 0–25, or db-lib's for
/// client-side failures (see ``SQLClientErrorNotification``).
public let SQLClientSeverityKey = "SQLClientSeverityKey"

/// `userInfo` key of ``SQLClientErrorNotification`` (new): the `SQLClientError` behind a
/// client-side failure or a refused login, with its code, server message and cause (in
/// Objective-C an `NSError` of domain `SQLClient`).
public let SQLClientErrorKey = "SQLClientErrorKey"

extension Notification.Name {
    /// ``SQLClientErrorNotification`` as a notification name.
    public static let sqlClientError = Notification.Name(SQLClientErrorNotification)
    /// ``SQLClientMessageNotification`` as a notification name.
    public static let sqlClientMessage = Notification.Name(SQLClientMessageNotification)
}

extension SQLClient {
    /// ``SQLClientErrorNotification``, for Objective-C code (a Swift module cannot export a global
    /// constant to Objective-C: `SQLClient.errorNotification`).
    public static let errorNotification = SQLClientErrorNotification
    /// ``SQLClientMessageNotification``, for Objective-C code (`SQLClient.messageNotification`).
    public static let messageNotification = SQLClientMessageNotification
    /// ``SQLClientMessageKey``, for Objective-C code (`SQLClient.messageKey`).
    public static let messageKey = SQLClientMessageKey
    /// ``SQLClientCodeKey``, for Objective-C code (`SQLClient.codeKey`).
    public static let codeKey = SQLClientCodeKey
    /// ``SQLClientSeverityKey``, for Objective-C code (`SQLClient.severityKey`).
    public static let severityKey = SQLClientSeverityKey

    /// Where a client-side failure happened (it chooses the db-lib code).
    enum Phase {
        /// Connecting and logging in.
        case connect
        /// Running a call on a connection.
        case execute
        /// A call made while the client is not connected.
        case notConnected
    }

    /// A server message from the connection's message handler: ERROR tokens become error
    /// notifications, INFO tokens (PRINT, RAISERROR ≤ 10) message notifications.
    func post(_ message: SQLServerMessage) {
        let info: [String: Any] = [SQLClientMessageKey: message.message,
                                   SQLClientCodeKey: NSNumber(value: Int(message.number)),
                                   SQLClientSeverityKey: NSNumber(value: Int(message.severity))]
        postNotification(message.isError ? SQLClientErrorNotification : SQLClientMessageNotification, info)
    }

    /// A message notification with the text alone (the client's own notes).
    func postMessage(_ text: String) {
        postNotification(SQLClientMessageNotification, [SQLClientMessageKey: text])
    }

    /// An error notification for a failed call.
    func postError(_ error: any Error, during phase: Phase) {
        let (code, severity, text) = Self.errorFields(error, during: phase)
        var info: [String: Any] = [SQLClientMessageKey: text,
                                   SQLClientCodeKey: NSNumber(value: code),
                                   SQLClientSeverityKey: NSNumber(value: severity)]
        if let error = error as? SQLClientError { info[SQLClientErrorKey] = error }
        postNotification(SQLClientErrorNotification, info)
    }

    /// Code, severity and text of an error notification (see ``SQLClientErrorNotification``).
    static func errorFields(_ error: any Error, during phase: Phase) -> (code: Int, severity: Int, message: String) {
        guard let error = error as? SQLClientError else { return (20000, 7, "\(error)") }
        if let server = error.serverMessage {
            return (Int(server.number), Int(server.severity), server.message)
        }
        switch error.code {
        case .timeout:
            return (20003, 6, error.message)
        case .hostNotFound, .instanceNotFound, .connectionFailed:
            return (20009, 9, error.message)
        case .invalidConfiguration, .invalidParameter, .unsupported, .invalidState:
            return (20000, 7, error.message)
        default:
            if phase == .notConnected { return (20047, 9, error.message) }
            return phase == .connect ? (20002, 9, error.message) : (20004, 9, error.message)
        }
    }

    private func postNotification(_ name: String, _ info: [String: Any]) {
        if name == SQLClientErrorNotification { state.withLock { $0.errorsPosted += 1 } }
        let box = SendableBox(info)
        deliver { [weak self] in
            NotificationCenter.default.post(name: Notification.Name(name), object: self, userInfo: box.value)
        }
    }

    /// Queues `work` for ``callbackQueue`` (the main queue when nil). Deliveries run in the order
    /// they were queued, one after another, even on a concurrent queue: one operation at a time
    /// drains what is waiting.
    func deliver(_ work: @escaping @Sendable () -> Void) {
        let (queue, start) = state.withLock { state -> (OperationQueue, Bool) in
            state.outbox.append(work)
            let start = !state.draining
            state.draining = true
            return (state.callbackQueue ?? OperationQueue.main, start)
        }
        if start {
            queue.addOperation { [self] in drainDeliveries() }
        }
    }

    private func drainDeliveries() {
        while true {
            let batch = state.withLock { state -> [@Sendable () -> Void] in
                let items = state.outbox
                state.outbox = []
                if items.isEmpty { state.draining = false }
                return items
            }
            if batch.isEmpty { return }
            for work in batch { work() }
        }
    }
}
