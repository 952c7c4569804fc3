#if Metrics
import Metrics
import MetricsTestKit
import XCTest
@testable import SQLClient
import SQLClientTesting

/// The `Metrics` trait: OpenTelemetry's database client metrics, read back with swift-metrics'
/// own `TestMetrics`.
final class MetricsAdapterTests: XCTestCase {
    let server = [("server.address", "127.0.0.1")]

    func testQueryFailingQueryAndLeaseGiveTheMetrics() async throws {
        try Bridge.require()
        let metrics = TestMetrics()
        var configuration = Bridge.configuration()
        configuration.metricsFactory = metrics
        XCTAssertNotNil(configuration.metricsFactory)
        let pool = try SQLConnectionPool(configuration: configuration, maximumConnections: 2)

        _ = try await pool.execute("SELECT 42 AS answer")
        do {
            _ = try await pool.execute("SELECT * FROM no_such_table_41")
            XCTFail("the failing query succeeded")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError, "\(error)")
        }
        // While a lease is held: one used, nothing idle (one connection was enough so far).
        try await pool.withConnection { _ in
            let used = try metrics.expectGauge("db.client.connection.count", server + [("db.client.connection.state", "used")])
            XCTAssertEqual(used.lastValue, 1)
            let idle = try metrics.expectGauge("db.client.connection.count", server + [("db.client.connection.state", "idle")])
            XCTAssertEqual(idle.lastValue, 0)
        }

        let ok = try metrics.expectTimer("db.client.operation.duration", server)
        XCTAssertEqual(ok.values.count, 1, "the successful query")
        XCTAssertTrue(ok.values.allSatisfy { $0 > 0 })
        let failed = try metrics.expectTimer("db.client.operation.duration", server + [("error.type", "serverError")])
        XCTAssertEqual(failed.values.count, 1)
        XCTAssertEqual(try metrics.expectCounter("sqlclient.errors", server + [("error.type", "serverError")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("sqlclient.logins", server).totalValue, 1)
        let create = try metrics.expectTimer("db.client.connection.create_time", server)
        XCTAssertEqual(create.values.count, 1)
        XCTAssertTrue(create.values.allSatisfy { $0 > 0 })
        let wait = try metrics.expectTimer("db.client.connection.wait_time", server)
        XCTAssertEqual(wait.values.count, 3, "three leases")
        XCTAssertEqual(try metrics.expectGauge("db.client.connection.count", server + [("db.client.connection.state", "idle")]).lastValue, 1,
                       "returned")

        await pool.close()
        XCTAssertEqual(try metrics.expectGauge("db.client.connection.count", server + [("db.client.connection.state", "used")]).lastValue, 0)
        XCTAssertEqual(try metrics.expectGauge("db.client.connection.count", server + [("db.client.connection.state", "idle")]).lastValue, 0)
        // No secret in any label or dimension.
        let labels = metrics.counters.map { "\($0.label) \($0.dimensions)" } + metrics.timers.map { "\($0.label) \($0.dimensions)" }
            + metrics.recorders.map { "\($0.label) \($0.dimensions)" }
        XCTAssertFalse(labels.isEmpty)
        for label in labels { XCTAssertFalse(label.contains(Bridge.password), label) }
    }

    func testLeaseTimeoutIsCounted() async throws {
        try Bridge.require()
        let metrics = TestMetrics()
        var configuration = Bridge.configuration()
        configuration.metricsFactory = metrics
        let pool = try SQLConnectionPool(configuration: configuration, maximumConnections: 1, minimumConnections: 1,
                                         leaseTimeout: .milliseconds(100))
        // The connection opened first (its login is not bounded by the short lease timeout).
        for _ in 0 ..< 20_000 where pool.metrics.idle < 1 { try await Task.sleep(for: .milliseconds(1)) }
        XCTAssertEqual(pool.metrics.idle, 1)
        try await pool.withConnection { _ in
            do {
                _ = try await pool.execute("SELECT 1 AS one")
                XCTFail("leased while the only connection was held")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .timeout, "\(error)")
            }
        }
        await pool.close()
        XCTAssertEqual(try metrics.expectCounter("db.client.connection.timeouts", server).totalValue, 1)
    }

    func testSessionRecoveryIsCountedWithTheNamespace() async throws {
        let server = try RecoveringServer.start()
        defer { server.stop() }
        let metrics = TestMetrics()
        var configuration = RecoveringServer.configuration(server)
        configuration.metricsFactory = metrics
        try await RecoveringServer.recoverOnce(configuration, server)
        let dimensions = [("server.address", "127.0.0.1"), ("db.namespace", "shop")]
        XCTAssertEqual(try metrics.expectCounter("sqlclient.session_recoveries", dimensions + [("result", "recovered")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("sqlclient.logins", dimensions).totalValue, 2,
                       "the first login and the recovery's LOGIN7 (SESSIONRECOVERY)")
        XCTAssertEqual(try metrics.expectTimer("db.client.operation.duration", dimensions).values.count, 2)
    }
}
#endif
