import Foundation
import TDS

/// The severity of a ``SQLLogEvent``; the names (raw values) are swift-log's `Logger.Level`
/// names, so `Logger.Level(rawValue: event.level.rawValue)` converts one.
public enum SQLLogLevel: String, Sendable, Hashable, Comparable, CaseIterable {
    /// Packets (header fields; payload bytes only with ``SQLClientLogger/includesSensitiveData``).
    case trace
    /// Each request's start and end, the TLS handshake, connecting.
    case debug
    /// A connection logged in (negotiated TDS version, packet size, server), closed.
    case info
    /// ATTENTION sent (a cancellation or a query timeout).
    case notice
    /// A request failed with a server error the connection survives.
    case warning
    /// A connection or login failed, or a connection broke.
    case error
    /// Not used by SQLClient today; there for swift-log's full range.
    case critical

    private var order: Int { Self.allCases.firstIndex(of: self) ?? 0 }
    /// `trace` < `debug` < … < `critical`.
    public static func < (a: SQLLogLevel, b: SQLLogLevel) -> Bool { a.order < b.order }
}

/// One thing that happened on a connection, as given to ``SQLClientLogger``'s handler.
///
/// `message` is a sentence for people; `metadata` carries the same facts as strings under
/// stable keys (see ``SQLLogEvent/Key``) for log pipelines. Neither ever holds a password, a
/// token or a parameter value, unless the logger was made with `includesSensitiveData: true`
/// (then parameter values and packet payloads appear; a LOGIN7 payload, which carries the
/// password, never does).
public struct SQLLogEvent: Sendable, CustomStringConvertible {
    /// What kind of event this is (an extensible set of static constants).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, for example `"requestFinished"`.
        public let name: String
        /// A kind named `name` (SQLClient's own are the static constants).
        public init(_ name: String) { self.name = name }
        /// `name`.
        public var description: String { name }

        /// TCP connect started or finished (host, port).
        public static let connect = Kind("connect")
        /// The TLS handshake inside PRELOGIN finished ([MS-TDS] 3.2.5.2): protocol version.
        public static let tls = Kind("tls")
        /// LOGIN7 was acknowledged (LOGINACK, [MS-TDS] 2.2.7.14): TDS version, packet size, server.
        public static let login = Kind("login")
        /// A request (SQL batch, RPC, transaction manager request) was sent.
        public static let requestStarted = Kind("requestStarted")
        /// A request ended: duration, rows, and the error if it failed.
        public static let requestFinished = Kind("requestFinished")
        /// ATTENTION was sent ([MS-TDS] 2.2.1.7) or acknowledged.
        public static let attention = Kind("attention")
        /// A failure of the connection (connect, TLS, login, transport, protocol).
        public static let error = Kind("error")
        /// A TDS packet went out or came in ([MS-TDS] 2.2.3): type, status, length, packet id.
        public static let packet = Kind("packet")
        /// The connection was closed.
        public static let close = Kind("close")
    }

    /// Metadata keys SQLClient uses.
    public enum Key {
        /// The host connected to.
        public static let host = "sql.host"
        /// The TCP port.
        public static let port = "sql.port"
        /// The connection's number within this process (1, 2, …).
        public static let connection = "sql.connection"
        /// The request's number on its connection.
        public static let request = "sql.request"
        /// `batch`, `rpc` or `transaction`.
        public static let requestKind = "sql.request_kind"
        /// The SQL text (with `@P1`… placeholders, never values), or the procedure name.
        public static let sql = "sql.text"
        /// The stored procedure an RPC calls by name (not set for `sp_executesql` and the other
        /// procedures called by id, whose statement is ``sql``).
        public static let procedure = "sql.procedure"
        /// The number of parameters of an RPC.
        public static let parameterCount = "sql.parameter_count"
        /// The parameters with their values (only with `includesSensitiveData`).
        public static let parameters = "sql.parameters"
        /// A duration in milliseconds (decimal, 3 fraction digits).
        public static let durationMilliseconds = "sql.duration_ms"
        /// Rows received.
        public static let rows = "sql.rows"
        /// The negotiated TDS version (for example `7.4`).
        public static let tdsVersion = "tds.version"
        /// The negotiated packet size in bytes.
        public static let packetSize = "tds.packet_size"
        /// The TLS protocol (for example `TLSv1.2`).
        public static let tlsProtocol = "tls.protocol"
        /// The server's program name and version from LOGINACK.
        public static let server = "sql.server"
        /// An error's ``SQLClientError/Code`` name.
        public static let errorCode = "error.code"
        /// An error's text (``SQLClientError/errorDescription``).
        public static let error = "error.message"
        /// `sent` or `received`.
        public static let direction = "tds.direction"
        /// A packet's type name (for example `SQL_BATCH`).
        public static let packetType = "tds.packet_type"
        /// A packet's status bits (for example `[EOM]`).
        public static let packetStatus = "tds.packet_status"
        /// A packet's length in bytes, header included.
        public static let packetLength = "tds.packet_length"
        /// A packet's payload as hex (only with `includesSensitiveData`; never LOGIN7).
        public static let payload = "tds.payload"
    }

    /// How severe the event is.
    public var level: SQLLogLevel
    /// What happened.
    public var kind: Kind
    /// A sentence for people, without secrets.
    public var message: String
    /// The facts as strings, under ``Key`` names.
    public var metadata: [String: String]

    /// An event; SQLClient makes these, tests and adapters may too.
    public init(level: SQLLogLevel, kind: Kind, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.kind = kind
        self.message = message
        self.metadata = metadata
    }

    /// `level kind: message key=value…` (keys sorted).
    public var description: String {
        let facts = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(level.rawValue) \(kind): \(message)" + (facts.isEmpty ? "" : " " + facts)
    }
}

/// Receives a connection's events at ``minimumLevel`` and above (set it as
/// ``SQLConnectionConfiguration/logger``). The handler is called synchronously on the
/// connection's executor: keep it quick (hand the event to your logging system).
///
/// An adapter to swift-log is a few lines:
///
/// ```swift
/// import Logging
/// let log = Logger(label: "sqlclient")
/// configuration.logger = SQLClientLogger(minimumLevel: .debug) { event in
///     log.log(level: Logger.Level(rawValue: event.level.rawValue) ?? .info, "\(event.message)",
///             metadata: event.metadata.mapValues { .string($0) })
/// }
/// ```
///
/// Or print them: `SQLClientLogger(minimumLevel: .trace) { print($0) }`.
public struct SQLClientLogger: Sendable {
    /// Events below this level are not made at all (their text is never built).
    public var minimumLevel: SQLLogLevel
    /// Opt in to parameter values (``SQLLogEvent/Key/parameters``) and packet payloads
    /// (``SQLLogEvent/Key/payload``, never LOGIN7's) in events. Default false: no value a
    /// caller sends appears in any event.
    public var includesSensitiveData: Bool
    /// Called with every event at ``minimumLevel`` or above.
    public let handler: @Sendable (SQLLogEvent) -> Void

    /// A logger calling `handler` for events at `minimumLevel` (default `.info`) and above.
    public init(minimumLevel: SQLLogLevel = .info, includesSensitiveData: Bool = false,
                _ handler: @escaping @Sendable (SQLLogEvent) -> Void) {
        self.minimumLevel = minimumLevel
        self.includesSensitiveData = includesSensitiveData
        self.handler = handler
    }

    /// True when events at `level` reach the handler.
    @inline(__always)
    public func isEnabled(_ level: SQLLogLevel) -> Bool { level >= minimumLevel }

    /// Sends an event when `level` is enabled; `message` and `metadata` are built only then.
    public func log(_ level: SQLLogLevel, _ kind: SQLLogEvent.Kind, _ message: @autoclosure () -> String,
                    metadata: @autoclosure () -> [String: String] = [:]) {
        guard isEnabled(level) else { return }
        handler(SQLLogEvent(level: level, kind: kind, message: message(), metadata: metadata()))
    }
}

// MARK: - The events the connection reports (call sites in the driver)

extension SQLClientLogger {
    /// `.connect` at debug: a TCP connection to `host`:`port` is being opened (`connected` false) or is open.
    func connect(host: String, port: Int, connection: Int, connected: Bool) {
        log(.debug, .connect, connected ? "connected to \(host):\(port)" : "connecting to \(host):\(port)",
            metadata: [SQLLogEvent.Key.host: host, SQLLogEvent.Key.port: String(port),
                       SQLLogEvent.Key.connection: String(connection)])
    }

    /// `.tls` at debug: the handshake finished with `protocolName`.
    func tlsEstablished(protocolName: String?, fullSession: Bool, connection: Int) {
        let what = fullSession ? "the whole session" : "LOGIN7 only"
        log(.debug, .tls, "TLS \(protocolName ?? "handshake") established for \(what)",
            metadata: [SQLLogEvent.Key.tlsProtocol: protocolName ?? "", SQLLogEvent.Key.connection: String(connection)])
    }

    /// `.login` at info: LOGINACK arrived; the negotiated version and packet size.
    func loggedIn(_ session: SQLSessionInfo, connection: Int) {
        let server = [session.serverProgramName, session.serverVersion].filter { !$0.isEmpty }.joined(separator: " ")
        log(.info, .login,
            "logged in: TDS \(session.tdsVersion), packet size \(session.packetSize)"
                + (server.isEmpty ? "" : ", \(server)") + (session.database.isEmpty ? "" : ", database \(session.database)"),
            metadata: [SQLLogEvent.Key.tdsVersion: "\(session.tdsVersion)",
                       SQLLogEvent.Key.packetSize: String(session.packetSize),
                       SQLLogEvent.Key.server: server, SQLLogEvent.Key.connection: String(connection)])
    }

    /// `.requestStarted` at debug: the SQL text (placeholders only) or procedure, the parameter
    /// count, and the parameters with their values only when ``includesSensitiveData``.
    func requestStarted(_ request: Int, kind: String, text: String, parameters: [String] = [], procedure: String? = nil,
                        connection: Int) {
        guard isEnabled(.debug) else { return }
        var metadata = [SQLLogEvent.Key.request: String(request), SQLLogEvent.Key.requestKind: kind,
                        SQLLogEvent.Key.sql: text, SQLLogEvent.Key.connection: String(connection)]
        if let procedure { metadata[SQLLogEvent.Key.procedure] = procedure }
        if !parameters.isEmpty {
            metadata[SQLLogEvent.Key.parameterCount] = String(parameters.count)
            if includesSensitiveData { metadata[SQLLogEvent.Key.parameters] = parameters.joined(separator: ", ") }
        }
        log(.debug, .requestStarted, "\(kind) #\(request) started: \(Self.abbreviated(text))", metadata: metadata)
    }

    /// `.requestFinished`: debug when it succeeded; warning when it failed with a server error;
    /// error for any other failure. `duration` from sending to the end of the response.
    func requestFinished(_ request: Int, duration: Duration, rows: Int, error: SQLClientError?, connection: Int) {
        let level: SQLLogLevel = error == nil ? .debug : (error?.code == .serverError ? .warning : .error)
        guard isEnabled(level) else { return }
        var metadata = [SQLLogEvent.Key.request: String(request),
                        SQLLogEvent.Key.durationMilliseconds: Self.milliseconds(duration),
                        SQLLogEvent.Key.rows: String(rows), SQLLogEvent.Key.connection: String(connection)]
        if let error {
            metadata[SQLLogEvent.Key.errorCode] = error.code.name
            metadata[SQLLogEvent.Key.error] = error.errorDescription ?? error.message
            if let number = error.number { metadata[SQLLogEvent.Key.errorNumber] = String(number) }
        }
        let outcome = error.map { "failed (\($0.errorDescription ?? $0.message))" } ?? "finished"
        log(level, .requestFinished, "request #\(request) \(outcome) in \(Self.milliseconds(duration)) ms, \(rows) rows",
            metadata: metadata)
    }

    /// `.attention` at notice: ATTENTION was sent for `request` (`reason`: cancelled, timeout).
    func attention(_ request: Int, reason: String, connection: Int) {
        log(.notice, .attention, "ATTENTION sent for request #\(request) (\(reason))",
            metadata: [SQLLogEvent.Key.request: String(request), SQLLogEvent.Key.connection: String(connection)])
    }

    /// `.error` at error: the connection failed (connect, TLS, login, transport, protocol).
    func connectionFailed(_ error: SQLClientError, connection: Int) {
        log(.error, .error, error.errorDescription ?? error.message,
            metadata: [SQLLogEvent.Key.errorCode: error.code.name, SQLLogEvent.Key.connection: String(connection)])
    }

    /// `.packet` at trace: one packet's header fields; its payload as hex only with
    /// ``includesSensitiveData``, and never for LOGIN7 (it carries the password).
    func packet(_ bytes: ArraySlice<UInt8>, sent: Bool, connection: Int) {
        guard isEnabled(.trace), bytes.count >= PacketHeader.size else { return }
        let start = bytes.startIndex
        let type = PacketType(rawValue: bytes[start])
        let status = PacketStatus(rawValue: bytes[start + 1])
        let length = Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
        var metadata = [SQLLogEvent.Key.direction: sent ? "sent" : "received", SQLLogEvent.Key.packetType: type.name,
                        SQLLogEvent.Key.packetStatus: status.description, SQLLogEvent.Key.packetLength: String(length),
                        SQLLogEvent.Key.connection: String(connection)]
        if includesSensitiveData, type != .login7 {
            metadata[SQLLogEvent.Key.payload] = bytes.dropFirst(PacketHeader.size)
                .map { String($0, radix: 16, uppercase: true).leftPadded(2) }.joined()
        }
        log(.trace, .packet, "\(sent ? "sent" : "received") \(type.name) \(status) \(length) bytes", metadata: metadata)
    }

    /// `.close` at info.
    func closed(connection: Int) {
        log(.info, .close, "connection closed", metadata: [SQLLogEvent.Key.connection: String(connection)])
    }

    /// `d` in milliseconds with 3 fraction digits ("12.345").
    static func milliseconds(_ d: Duration) -> String {
        let (seconds, attoseconds) = d.components
        let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        let sign = micros < 0 ? "-" : ""
        let m = micros.magnitude
        return sign + String(m / 1000) + "." + String(m % 1000).leftPadded(3)
    }

    /// The first 200 characters of `text`, newlines as spaces.
    static func abbreviated(_ text: String) -> String {
        let flat = text.replacingOccurrences(of: "\r\n", with: " ").replacingOccurrences(of: "\n", with: " ")
        return flat.count <= 200 ? flat : String(flat.prefix(200)) + "…"
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
