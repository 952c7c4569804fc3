#if Tracing
import Foundation
import Synchronization
import Tracing

// The `Tracing` trait: OpenTelemetry database client spans through swift-distributed-tracing,
// made from the driver's events (the same ``SQLLogEvent``s as ``SQLConnectionConfiguration/logger``).

/// How connections made with a configuration trace their requests (see
/// ``SQLConnectionConfiguration/tracing``).
public struct SQLTracingOptions: Sendable {
    /// The tracer spans are started on (default: the bootstrapped `InstrumentationSystem.tracer`).
    public var tracer: any Tracer
    /// Put the statement in `db.query.text` (default true). The text is the parameterized one
    /// (`@P1`… placeholders, or the interpolations' parameters); parameter values never appear.
    /// False leaves the attribute out (for statements whose text itself is confidential).
    public var includesQueryText: Bool

    /// Options tracing to `tracer`, with the statement text unless `includesQueryText` is false.
    public init(tracer: any Tracer = InstrumentationSystem.tracer, includesQueryText: Bool = true) {
        self.tracer = tracer
        self.includesQueryText = includesQueryText
    }
}

extension SQLConnectionConfiguration {
    /// Traces every request of connections opened with this configuration (and a
    /// ``SQLConnectionPool``'s leases); nil (the default) traces nothing.
    ///
    /// Each request (SQL batch, RPC, transaction manager request, bulk load) is a `client` span
    /// whose parent is `ServiceContext.current` of the task that sent it, named
    /// `{db.operation.name} {db.namespace}`, with OpenTelemetry's database attributes:
    /// `db.system.name` (`microsoft.sql_server`), `db.namespace`, `db.operation.name`,
    /// `db.query.text` (see ``SQLTracingOptions/includesQueryText``), `db.stored_procedure.name`,
    /// `server.address`, `server.port`, and when it failed `db.response.status_code` (the SQL
    /// error number), `error.type` (that number, else the ``SQLClientError/Code`` name) and an
    /// error status. A pool lease's wait is an `internal` span `SQLConnectionPool.lease`.
    public var tracing: SQLTracingOptions? {
        get { observer(TracingAdapter.name)?.payload as? SQLTracingOptions }
        set {
            setObserver(TracingAdapter.name, newValue.map { options in
                let spans = TracingAdapter.Spans()
                return SQLEventObserver(name: TracingAdapter.name, payload: options) { configuration in
                    TracingAdapter.receiver(options, spans, configuration)
                }
            })
        }
    }
}

/// Turns request and lease events into spans.
enum TracingAdapter {
    static let name = "tracing"

    /// The spans started and not yet ended, by request (`c<connection>.r<request>`) or lease (`l<lease>`).
    final class Spans: Sendable {
        private let open = Mutex<[String: any Span]>([:])

        func put(_ key: String, _ span: any Span) { open.withLock { $0[key] = span } }
        func take(_ key: String) -> (any Span)? { open.withLock { $0.removeValue(forKey: key) } }
    }

    static func receiver(_ options: SQLTracingOptions, _ spans: Spans,
                         _ configuration: SQLConnectionConfiguration) -> SQLClientLogger {
        let host = configuration.address.host
        let port = configuration.address.port ?? (configuration.address.instance == nil ? 1433 : nil)
        let namespace = configuration.database
        return SQLClientLogger(minimumLevel: .debug) { event in
            let m = event.metadata
            switch event.kind {
            case .requestStarted:
                guard let key = requestKey(m) else { return }
                let operation = event.operationName
                let span = options.tracer.startSpan(namespace.isEmpty ? operation : "\(operation) \(namespace)",
                                                    context: ServiceContext.current ?? .topLevel, ofKind: .client)
                span.attributes["db.system.name"] = "microsoft.sql_server"
                if !namespace.isEmpty { span.attributes["db.namespace"] = namespace }
                span.attributes["db.operation.name"] = operation
                if options.includesQueryText, let text = event.queryText { span.attributes["db.query.text"] = text }
                if let procedure = m[SQLLogEvent.Key.procedure] { span.attributes["db.stored_procedure.name"] = procedure }
                span.attributes["server.address"] = host
                if let port { span.attributes["server.port"] = port }
                spans.put(key, span)
            case .requestFinished:
                guard let key = requestKey(m), let span = spans.take(key) else { return }
                if let code = m[SQLLogEvent.Key.errorCode] {
                    if let number = m[SQLLogEvent.Key.errorNumber] { span.attributes["db.response.status_code"] = number }
                    span.attributes["error.type"] = m[SQLLogEvent.Key.errorNumber] ?? code
                    span.setStatus(SpanStatus(code: .error))
                }
                span.end()
            case .pool:
                guard let lease = m[SQLLogEvent.Key.poolLease] else { return }
                switch m[SQLLogEvent.Key.poolEvent] {
                case "leaseRequested":
                    let span = options.tracer.startSpan("SQLConnectionPool.lease", context: ServiceContext.current ?? .topLevel,
                                                        ofKind: .internal)
                    span.attributes["db.system.name"] = "microsoft.sql_server"
                    if !namespace.isEmpty { span.attributes["db.namespace"] = namespace }
                    span.attributes["server.address"] = host
                    spans.put("l" + lease, span)
                case "leased":
                    guard let span = spans.take("l" + lease) else { return }
                    if let connection = m[SQLLogEvent.Key.connection] { span.attributes["sqlclient.connection.id"] = connection }
                    span.end()
                case "leaseFailed":
                    guard let span = spans.take("l" + lease) else { return }
                    span.attributes["error.type"] = m[SQLLogEvent.Key.errorCode] ?? "unknown"
                    span.setStatus(SpanStatus(code: .error))
                    span.end()
                default:
                    break
                }
            default:
                break
            }
        }
    }

    private static func requestKey(_ m: [String: String]) -> String? {
        guard let c = m[SQLLogEvent.Key.connection], let r = m[SQLLogEvent.Key.request] else { return nil }
        return "c\(c).r\(r)"
    }
}
#endif
