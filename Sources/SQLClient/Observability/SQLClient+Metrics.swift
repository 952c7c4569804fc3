#if Metrics
import Foundation
import Metrics
import Synchronization

// The `Metrics` trait: OpenTelemetry's database client metrics through swift-metrics, computed
// from the driver's events (the same ``SQLLogEvent``s as ``SQLConnectionConfiguration/logger``).

extension SQLConnectionConfiguration {
    /// Where the connections (and a ``SQLConnectionPool`` made with this configuration) record
    /// their metrics; nil (the default) records none. `MetricsSystem.factory` is the bootstrapped one.
    ///
    /// Every metric has the dimensions `server.address` and `db.namespace` (the configured
    /// database, when set):
    /// - `db.client.operation.duration` (timer): each request (batch, RPC, transaction request,
    ///   bulk load) from sending to the end of its response; `error.type` (the error's
    ///   ``SQLClientError/Code`` name) when it failed.
    /// - `db.client.connection.count` (gauge, `db.client.connection.state` `idle` or `used`): a
    ///   pool's connections after each lease and return; 0 once the pool closed.
    /// - `db.client.connection.create_time` (timer): connecting to logged in.
    /// - `db.client.connection.wait_time` (timer): a pool lease's wait for a connection.
    /// - `db.client.connection.timeouts` (counter): pool leases that timed out.
    /// - `sqlclient.logins` (counter): logins acknowledged (LOGINACK).
    /// - `sqlclient.session_recoveries` (counter, `result` `recovered` or `failed`): idle
    ///   connections found dropped and recovered (or not) with SESSIONRECOVERY.
    /// - `sqlclient.errors` (counter, `error.type`): requests and connections that failed, by kind.
    public var metricsFactory: (any MetricsFactory)? {
        get { observer(MetricsAdapter.name).flatMap { ($0.payload as? MetricsAdapter.Payload)?.factory } }
        set {
            setObserver(MetricsAdapter.name, newValue.map { factory in
                let state = MetricsAdapter.State()
                return SQLEventObserver(name: MetricsAdapter.name, payload: MetricsAdapter.Payload(factory: factory)) { configuration in
                    MetricsAdapter.receiver(factory, state, configuration)
                }
            })
        }
    }
}

/// Turns ``SQLLogEvent``s into metric values.
enum MetricsAdapter {
    static let name = "metrics"

    struct Payload: @unchecked Sendable {   // MetricsFactory is Sendable in swift-metrics 2.5+
        let factory: any MetricsFactory
    }

    /// When each connection started connecting (for create_time), by connection number.
    final class State: Sendable {
        private let connecting = Mutex<[String: ContinuousClock.Instant]>([:])

        func started(_ connection: String) {
            connecting.withLock { if $0[connection] == nil { $0[connection] = .now } }
        }

        func finished(_ connection: String) -> Duration? {
            connecting.withLock { $0.removeValue(forKey: connection).map { .now - $0 } }
        }
    }

    static func receiver(_ factory: any MetricsFactory, _ state: State,
                         _ configuration: SQLConnectionConfiguration) -> SQLClientLogger {
        var base = [("server.address", configuration.address.host)]
        if !configuration.database.isEmpty { base.append(("db.namespace", configuration.database)) }
        let dimensions = base
        return SQLClientLogger(minimumLevel: .debug) { event in
            record(event, dimensions, factory, state)
        }
    }

    private static func record(_ event: SQLLogEvent, _ dimensions: [(String, String)], _ factory: any MetricsFactory,
                               _ state: State) {
        let m = event.metadata
        switch event.kind {
        case .requestFinished:
            var d = dimensions
            if let code = m[SQLLogEvent.Key.errorCode] {
                d.append(("error.type", code))
                Counter(label: "sqlclient.errors", dimensions: dimensions + [("error.type", code)], factory: factory).increment()
            }
            if let ns = event.durationNanoseconds {
                Timer(label: "db.client.operation.duration", dimensions: d, factory: factory).recordNanoseconds(ns)
            }
        case .connect:
            if let connection = m[SQLLogEvent.Key.connection] { state.started(connection) }
        case .login:
            Counter(label: "sqlclient.logins", dimensions: dimensions, factory: factory).increment()
            if let connection = m[SQLLogEvent.Key.connection], let took = state.finished(connection) {
                Timer(label: "db.client.connection.create_time", dimensions: dimensions, factory: factory).recordNanoseconds(nanoseconds(took))
            }
        case .error:
            if let connection = m[SQLLogEvent.Key.connection] { _ = state.finished(connection) }
            Counter(label: "sqlclient.errors", dimensions: dimensions + [("error.type", m[SQLLogEvent.Key.errorCode] ?? "unknown")],
                    factory: factory).increment()
        case .recovery where event.level == .info || event.level >= .error:
            let result = event.level == .info ? "recovered" : "failed"
            Counter(label: "sqlclient.session_recoveries", dimensions: dimensions + [("result", result)], factory: factory).increment()
        case .pool:
            switch m[SQLLogEvent.Key.poolEvent] {
            case "leased":
                if let ns = event.durationNanoseconds {
                    Timer(label: "db.client.connection.wait_time", dimensions: dimensions, factory: factory).recordNanoseconds(ns)
                }
                counts(m, dimensions, factory)
            case "released":
                counts(m, dimensions, factory)
            case "leaseTimeout":
                Counter(label: "db.client.connection.timeouts", dimensions: dimensions, factory: factory).increment()
            case "poolClosed":
                for s in ["idle", "used"] {
                    Gauge(label: "db.client.connection.count", dimensions: dimensions + [("db.client.connection.state", s)],
                          factory: factory).record(0)
                }
            default:
                break
            }
        default:
            break
        }
    }

    private static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? Int64.max : whole &+ attoseconds / 1_000_000_000
    }

    private static func counts(_ m: [String: String], _ dimensions: [(String, String)], _ factory: any MetricsFactory) {
        for (state, key) in [("idle", SQLLogEvent.Key.poolIdle), ("used", SQLLogEvent.Key.poolUsed)] {
            guard let value = m[key].flatMap(Int.init) else { continue }
            Gauge(label: "db.client.connection.count", dimensions: dimensions + [("db.client.connection.state", state)],
                  factory: factory).record(value)
        }
    }
}
#endif
