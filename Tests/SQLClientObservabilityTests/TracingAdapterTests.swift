#if Tracing
import InMemoryTracing
import Tracing
import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// The `Tracing` trait: OpenTelemetry database client spans, read back with
/// swift-distributed-tracing's own `InMemoryTracer`.
final class TracingAdapterTests: XCTestCase {
    static let secretValue = "tok-1a2b3c-SECRET-VALUE"

    func attribute(_ span: FinishedInMemorySpan, _ key: String) -> String? {
        span.attributes.get(key).map(Self.text)
    }

    static func text(_ value: SpanAttribute) -> String {
        switch value {
        case .string(let s): return s
        case .int64(let i): return String(i)
        case .int32(let i): return String(i)
        default: return "\(value)"
        }
    }

    func everything(_ span: FinishedInMemorySpan) -> String {
        var s = span.operationName
        span.attributes.forEach { key, value in s += " \(key)=\(Self.text(value))" }
        return s
    }

    func testQueryFailingQueryAndLeaseGiveTheSpans() async throws {
        try Bridge.require()
        let tracer = InMemoryTracer()
        var configuration = Bridge.configuration()
        configuration.tracing = SQLTracingOptions(tracer: tracer)
        let pool = try SQLConnectionPool(configuration: configuration, maximumConnections: 2)
        let parent = tracer.startSpan("handler")
        let secret = Self.secretValue
        try await ServiceContext.$current.withValue(parent.context) {
            _ = try await pool.execute("SELECT 42 AS answer")
            _ = try await pool.execute("SELECT \(secret) AS v")
            do {
                _ = try await pool.execute("SELECT * FROM no_such_table_41")
                XCTFail("the failing query succeeded")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .serverError, "\(error)")
            }
        }
        parent.end()
        await pool.close()

        let spans = tracer.finishedSpans
        let requests = spans.filter { $0.kind == .client }
        XCTAssertEqual(requests.map(\.operationName), ["SELECT", "SELECT", "SELECT"])
        for span in requests {
            XCTAssertEqual(span.parentSpanID, parent.spanID, "parent from ServiceContext.current")
            XCTAssertEqual(span.traceID, parent.traceID)
            XCTAssertEqual(attribute(span, "db.system.name"), "microsoft.sql_server")
            XCTAssertEqual(attribute(span, "db.operation.name"), "SELECT")
            XCTAssertEqual(attribute(span, "server.address"), "127.0.0.1")
            XCTAssertEqual(attribute(span, "server.port"), String(Bridge.port))
            XCTAssertNil(attribute(span, "db.namespace"), "no database configured")
        }
        XCTAssertEqual(attribute(requests[0], "db.query.text"), "SELECT 42 AS answer")
        XCTAssertNil(requests[0].status)
        XCTAssertNil(attribute(requests[0], "error.type"))
        let parameterized = try XCTUnwrap(attribute(requests[1], "db.query.text"))
        XCTAssertTrue(parameterized.hasPrefix("SELECT @"), parameterized)
        let failed = requests[2]
        XCTAssertEqual(failed.status?.code, .error)
        let number = try XCTUnwrap(attribute(failed, "db.response.status_code"))
        XCTAssertNotNil(Int(number), number)
        XCTAssertEqual(attribute(failed, "error.type"), number)

        let leases = spans.filter { $0.operationName == "SQLConnectionPool.lease" }
        XCTAssertEqual(leases.count, 3)
        for lease in leases {
            XCTAssertEqual(lease.parentSpanID, parent.spanID)
            XCTAssertEqual(lease.kind, .internal)
            XCTAssertNotNil(attribute(lease, "sqlclient.connection.id"))
            XCTAssertEqual(attribute(lease, "db.system.name"), "microsoft.sql_server")
        }
        for span in spans {
            XCTAssertFalse(everything(span).contains(Bridge.password), everything(span))
            XCTAssertFalse(everything(span).contains(secret), everything(span))
        }
        XCTAssertTrue(tracer.activeSpans.isEmpty, "every span ended")
    }

    func testQueryTextCanBeTurnedOffAndTheNamespaceNamesTheSpan() async throws {
        let server = try RecoveringServer.start()
        defer { server.stop() }
        let tracer = InMemoryTracer()
        var configuration = RecoveringServer.configuration(server)
        configuration.tracing = SQLTracingOptions(tracer: tracer, includesQueryText: false)
        XCTAssertEqual(configuration.tracing?.includesQueryText, false)
        try await RecoveringServer.recoverOnce(configuration, server)
        let spans = tracer.finishedSpans
        XCTAssertEqual(spans.map(\.operationName), ["SELECT shop", "SELECT shop"])
        for span in spans {
            XCTAssertEqual(attribute(span, "db.namespace"), "shop")
            XCTAssertNil(attribute(span, "db.query.text"))
            XCTAssertEqual(span.parentSpanID, nil, "no context: a root span")
            XCTAssertFalse(everything(span).contains(RecoveringServer.password))
        }
    }

    func testBulkCopyIsASpan() async throws {
        let columns: [ColumnMetadata] = [
            ColumnMetadata(flags: [.nullable, .updateable], typeInfo: .nvarchar(20), name: "name"),
            ColumnMetadata(flags: [.updateable], typeInfo: TypeInfo(type: .int4, length: 4), name: "qty"),
        ]
        let server = BulkLoadServer(tables: ["stock": columns])
        defer { server.stop() }
        let port = try server.start()
        let tracer = InMemoryTracer()
        var configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u",
                                                       password: "bulk-S3cret-pw", encryption: .notSupported,
                                                       connectTimeout: .seconds(20))
        configuration.tracing = SQLTracingOptions(tracer: tracer)
        let connection = try await SQLConnection.connect(configuration)
        let rows: [[SQLValue]] = [[.string("a"), .int(1)], [.string("b"), .int(2)]]
        let result = try await connection.bulkInsert(into: "stock", rows: rows)
        await connection.close()
        XCTAssertEqual(result.rowsCopied, 2)
        let spans = tracer.finishedSpans
        let bulk = try XCTUnwrap(spans.first { $0.operationName == "BULK INSERT" }, "\(spans.map(\.operationName))")
        XCTAssertEqual(bulk.kind, .client)
        XCTAssertEqual(attribute(bulk, "db.operation.name"), "BULK INSERT")
        XCTAssertEqual(attribute(bulk, "db.system.name"), "microsoft.sql_server")
        XCTAssertNil(attribute(bulk, "db.query.text"), "a bulk load has no statement text")
        XCTAssertNil(bulk.status)
        // The INSERT BULK statement before it is a batch span of its own.
        XCTAssertTrue(spans.contains { $0.operationName == "INSERT" && (attribute($0, "db.query.text") ?? "").hasPrefix("INSERT BULK") },
                      "\(spans.map(\.operationName))")
        for span in spans { XCTAssertFalse(everything(span).contains("bulk-S3cret-pw")) }
    }

    func testTransactionStatementsAreSpans() async throws {
        try Bridge.require()
        let tracer = InMemoryTracer()
        var configuration = Bridge.configuration()
        configuration.tracing = SQLTracingOptions(tracer: tracer)
        let connection = try await SQLConnection.connect(configuration)
        do {
            try await connection.withTransaction { tx in
                _ = try await tx.execute("SELECT 1 AS one")
            }
        } catch {
            await connection.close()
            throw XCTSkip("pysqlbridge does not run transactions: \(error)")
        }
        await connection.close()
        let names = tracer.finishedSpans.map(\.operationName)
        XCTAssertEqual(names.first, "BEGIN TRANSACTION", "\(names)")
        XCTAssertTrue(names.contains("SELECT"), "\(names)")
        XCTAssertEqual(names.last, "COMMIT TRANSACTION", "\(names)")
        XCTAssertTrue(tracer.finishedSpans.allSatisfy { attribute($0, "db.query.text") == nil || $0.operationName == "SELECT" })
    }
}
#endif
