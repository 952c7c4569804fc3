#if SwiftLog
import Logging

// The `SwiftLog` trait: a swift-log `Logger` receives the driver's events — the same
// ``SQLLogEvent``s as ``SQLConnectionConfiguration/logger`` (one source), with PostgresNIO's
// conventions for levels and metadata.

extension SQLConnectionConfiguration {
    /// A swift-log `Logger` for the events of every connection opened with this configuration
    /// (and of a ``SQLConnectionPool`` made with it); nil (the default) logs nothing there.
    ///
    /// Levels, as PostgresNIO's: `trace` for wire events (packets) and pool leases; `debug` for
    /// the connection's life (connect, TLS, login, each request's start and end — a request that
    /// failed with a server error is a `debug` record with `error.type`, not an error log);
    /// `warning` for faults that were recovered (a session recovered, a pooled connection
    /// discarded or not opened); `error` for a connection lost for good. Metadata:
    /// `sqlclient.connection.id`, `sqlclient.request.id`, `server.address`, `db.namespace`, and
    /// the other ``SQLLogEvent/Key`` facts. Never a password, token, parameter value or packet
    /// payload, whatever ``logger`` opted into. Works beside ``logger``; both see the same events.
    public var backgroundLogger: Logger? {
        get { observer(SwiftLogAdapter.name)?.payload as? Logger }
        set {
            setObserver(SwiftLogAdapter.name, newValue.map { logger in
                SQLEventObserver(name: SwiftLogAdapter.name, payload: logger) { configuration in
                    SwiftLogAdapter.receiver(logger, configuration)
                }
            })
        }
    }
}

extension SQLConnectionPool {
    /// A pool (as ``init(configuration:options:)``) whose connections and own events (opened,
    /// closed, discarded, leases) go to `backgroundLogger` (see
    /// ``SQLConnectionConfiguration/backgroundLogger``).
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` (see ``Options/validated()``).
    public convenience init(configuration: SQLConnectionConfiguration, options: Options? = nil,
                            backgroundLogger: Logger) throws {
        var configuration = configuration
        configuration.backgroundLogger = backgroundLogger
        try self.init(configuration: configuration, options: options)
    }
}

/// Turns ``SQLLogEvent``s into swift-log records.
enum SwiftLogAdapter {
    static let name = "swift-log"

    /// Metadata keys renamed to PostgresNIO's and OpenTelemetry's names.
    static let renamed = [SQLLogEvent.Key.connection: "sqlclient.connection.id",
                          SQLLogEvent.Key.request: "sqlclient.request.id"]

    static func receiver(_ logger: Logger, _ configuration: SQLConnectionConfiguration) -> SQLClientLogger {
        // The lowest driver level whose events can reach `logger` once mapped (see `level(of:)`).
        let minimum: SQLLogLevel = logger.logLevel <= .trace ? .trace : logger.logLevel <= .debug ? .debug : .info
        var base: Logger.Metadata = ["server.address": .string(configuration.address.host)]
        if !configuration.database.isEmpty { base["db.namespace"] = .string(configuration.database) }
        let fixed = base
        return SQLClientLogger(minimumLevel: minimum) { event in
            let level = Self.level(of: event)
            guard level >= logger.logLevel else { return }
            var metadata = fixed
            for (key, value) in event.metadata where !SQLClientLogger.sensitiveKeys.contains(key) {
                metadata[renamed[key] ?? key] = .string(value)
            }
            metadata["sqlclient.event"] = .string(event.kind.name)
            logger.log(level: level, "\(event.message)", metadata: metadata, source: "SQLClient")
        }
    }

    /// PostgresNIO's levels for an event (see ``SQLConnectionConfiguration/backgroundLogger``).
    static func level(of event: SQLLogEvent) -> Logger.Level {
        switch event.kind {
        case .packet:
            return .trace
        case .recovery:
            return event.level >= .error ? .error : .warning
        case .error:
            return .error
        case .pool:
            switch event.metadata[SQLLogEvent.Key.poolEvent] {
            case "leaseRequested", "leased", "released", "leaseFailed": return .trace
            case "discarded", "connectFailed": return .warning
            default: return .debug
            }
        default:
            // Connection life and requests; a request that failed (a SQL error, a timeout, a
            // cancellation) is the caller's to handle, so not an error log here.
            return .debug
        }
    }
}
#endif
