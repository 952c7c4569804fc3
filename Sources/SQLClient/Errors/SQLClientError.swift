import Foundation
import TDS

/// The one error type thrown by the SQLClient module.
///
/// `code` says what kind of failure it is (an extensible set of static constants);
/// `serverMessage` is set when the server reported it (number, state, severity, text, procedure, line);
/// `underlying` keeps the lower-level cause (a `TDSDecodingError`, an `errno` failure, a TLS error).
/// No password ever appears in `message`, `description` or the underlying error.
public struct SQLClientError: Error, Sendable, CustomStringConvertible {
    /// An extensible error code: compare with the static constants, add your own with `init(_:)`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, for example `"serverError"` (what `description` prints).
        public let name: String
        /// A code named `name`; SQLClient's own are the static constants below.
        package init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }

        /// The configuration, connection string or server address is invalid.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A feature or connection-string key that is known but not supported.
        public static let unsupported = Code("unsupported")
        /// The host name did not resolve.
        public static let hostNotFound = Code("hostNotFound")
        /// A named instance could not be resolved through the SQL Server Browser ([MC-SQLR]).
        public static let instanceNotFound = Code("instanceNotFound")
        /// The TCP connection could not be established.
        public static let connectionFailed = Code("connectionFailed")
        /// Connecting or waiting for the server took longer than the configured timeout.
        public static let timeout = Code("timeout")
        /// The server closed the connection, or the connection was closed locally.
        public static let connectionClosed = Code("connectionClosed")
        /// A socket read or write failed.
        public static let ioError = Code("ioError")
        /// The TLS handshake or record layer failed.
        public static let tlsFailed = Code("tlsFailed")
        /// The server's certificate was not trusted or did not match the host name.
        public static let certificateVerificationFailed = Code("certificateVerificationFailed")
        /// Encryption was required but the server (or this build) cannot provide it.
        public static let encryptionNotAvailable = Code("encryptionNotAvailable")
        /// The server refused the login (18456 and related numbers).
        public static let loginFailed = Code("loginFailed")
        /// The server reported an error for a batch (see `serverMessage`).
        public static let serverError = Code("serverError")
        /// The server sent bytes that do not follow [MS-TDS] (see `underlying`).
        public static let protocolError = Code("protocolError")
        /// The operation was cancelled (task cancellation or an ATTENTION acknowledged by the server).
        public static let cancelled = Code("cancelled")
        /// The connection is busy with another request or has been closed.
        public static let invalidState = Code("invalidState")
        /// A value could not be converted to the requested Swift type.
        public static let decodingFailed = Code("decodingFailed")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable explanation (never contains a password).
    public var message: String
    /// The server's message when the server reported the error.
    public var serverMessage: SQLServerMessage?
    /// The ERROR tokens of the failed request, in order (the first is `serverMessage`): at most
    /// the first 1,000 (every one also reaches ``SQLConnection/messages`` as it arrives).
    public var serverMessages: [SQLServerMessage]
    /// The lower-level cause, when there is one.
    public var underlying: (any Error & Sendable)?

    /// An error of kind `code` explained by `message` (never a password). `serverMessages`
    /// defaults to `[serverMessage]` when the server reported it.
    public init(_ code: Code, _ message: String, serverMessage: SQLServerMessage? = nil,
                serverMessages: [SQLServerMessage] = [], underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.serverMessage = serverMessage
        self.serverMessages = serverMessages.isEmpty ? (serverMessage.map { [$0] } ?? []) : serverMessages
        self.underlying = underlying
    }

    /// The server's error number, when the server reported the error.
    public var number: Int32? { serverMessage?.number }
    /// The server's error state, when the server reported the error.
    public var state: UInt8? { serverMessage?.state }
    /// The server's severity (class), when the server reported the error.
    public var severity: UInt8? { serverMessage?.severity }

    /// `SQLClientError.<code>: <message> (Msg N, Level L, State S, Line X) [cause: …]`.
    public var description: String {
        var text = "SQLClientError.\(code): \(message)"
        if let m = serverMessage { text += " (" + m.reference + ")" }
        if let underlying { text += " [cause: \(underlying)]" }
        return text
    }
}

// MARK: - Foundation error protocols

extension SQLClientError: LocalizedError {
    /// The text `error.localizedDescription` shows: ``message``, then for a server error its
    /// number, severity (level), state, procedure and line in sqlcmd's words, for example
    /// `Invalid object name 'missing'. (Msg 208, Level 16, State 1, Line 1)`. Never contains a password.
    public var errorDescription: String? {
        var text = message
        if let m = serverMessage {
            if !m.message.isEmpty, !message.contains(m.message) { text += ": " + m.message }
            text += " (" + m.reference + ")"
        }
        return text
    }

    /// What kind of failure this is, in words (for example "The server reported an error.").
    public var failureReason: String? {
        switch code {
        case .serverError: return "The server reported an error."
        case .loginFailed: return "The server refused the login."
        case .certificateVerificationFailed: return "The server's TLS certificate was not accepted."
        case .tlsFailed: return "The TLS handshake or record layer failed."
        case .timeout: return "The operation did not finish in time."
        case .cancelled: return "The operation was cancelled."
        case .connectionClosed: return "The connection is closed."
        case .protocolError: return "The server sent data that does not follow the TDS protocol."
        case .invalidConfiguration: return "The connection configuration is invalid."
        default: return nil
        }
    }

}

#if canImport(Darwin)
extension SQLClientError: CustomNSError {
    /// `"SQLClient"`.
    public static var errorDomain: String { "SQLClient" }

    /// The server's error number when the server reported the error (for example 208, 18456),
    /// else a small stable number for ``code`` (1 for `.invalidConfiguration` … in declaration
    /// order; 0 for a code defined outside this module).
    public var errorCode: Int {
        if let number = serverMessage?.number { return Int(number) }
        return (Self.codeOrder.firstIndex(of: code).map { $0 + 1 }) ?? 0
    }

    /// `NSLocalizedDescriptionKey` (``errorDescription``), `"code"` (``Code/name``) and, for a
    /// server error, `"number"`, `"severity"`, `"state"`, `"lineNumber"`, `"procedureName"`, `"serverName"`;
    /// `NSUnderlyingErrorKey` when there is a cause.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: errorDescription ?? message, "code": code.name]
        if let m = serverMessage {
            info["number"] = Int(m.number)
            info["severity"] = Int(m.severity)
            info["state"] = Int(m.state)
            info["lineNumber"] = Int(m.lineNumber)
            info["procedureName"] = m.procedureName
            info["serverName"] = m.serverName
        }
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return info
    }

    static let codeOrder: [Code] = [
        .invalidConfiguration, .unsupported, .hostNotFound, .instanceNotFound, .connectionFailed, .timeout,
        .connectionClosed, .ioError, .tlsFailed, .certificateVerificationFailed, .encryptionNotAvailable,
        .loginFailed, .serverError, .protocolError, .cancelled, .invalidState, .decodingFailed, .invalidParameter,
    ]
}
#endif

extension SQLClientError {
    /// A decoding error as the error of a request or a login: `.protocolError`. Past a cap
    /// (`.limitExceeded`) the message names the cap.
    static func protocolError(_ error: TDSDecodingError) -> SQLClientError {
        if error.code == .limitExceeded {
            return SQLClientError(.protocolError, "the server sent more than the client accepts: \(error)", underlying: error)
        }
        return SQLClientError(.protocolError, "the server sent malformed data: \(error)", underlying: error)
    }

    static func closed(_ detail: String = "the connection is closed") -> SQLClientError {
        SQLClientError(.connectionClosed, detail)
    }
}
