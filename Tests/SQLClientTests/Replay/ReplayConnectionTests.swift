import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// The connection against ``ReplayServer`` sessions built here with the TDS token encoders: what
/// the live test server cannot show (PRINT/INFO between rows, DONE counts for DML, a database
/// ENVCHANGE after USE, a TDS 7.1 login, ATTENTION, a fatal error).
final class ReplayConnectionTests: XCTestCase {
    static let columns = [
        ColumnMetadata(typeInfo: .int, name: "id"),
        ColumnMetadata(typeInfo: .nvarchar(20), name: "name"),
    ]

    static func colMetadata(_ version: TDSVersion = .v7_4) -> [UInt8] {
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: version)
        return w.bytes
    }

    static func row(_ id: Int32, _ name: String?) -> [UInt8] {
        var w = ByteWriter()
        try? Row(values: [.int(id), name.map { .string($0) } ?? .null]).encode(into: &w, columns: columns)
        return w.bytes
    }

    static func done(_ status: DoneStatus, _ count: UInt64 = 0, _ version: TDSVersion = .v7_4) -> [UInt8] {
        var w = ByteWriter()
        Done(status: status, currentCommand: 0xC1, rowCount: count).encode(into: &w, version: version)
        return w.bytes
    }

    static func envDatabase(_ new: String, _ old: String) -> [UInt8] {
        var w = ByteWriter()
        EnvChange(type: .database, newValue: .text(new), oldValue: .text(old)).encode(into: &w)
        return w.bytes
    }

    static func exchange(_ sql: String, _ parts: [[UInt8]]) -> ReplaySession.Exchange {
        ReplaySession.Exchange(request: .sqlBatch(sql), response: parts.map { ReplaySession.Segment(bytes: $0) })
    }

    func start(_ exchanges: [ReplaySession.Exchange], version: TDSVersion? = nil) throws -> ReplayServer {
        let server = ReplayServer(session: ReplaySession(name: "test", version: version, exchanges: exchanges))
        _ = try server.start()
        return server
    }

    func configuration(_ server: ReplayServer, version: TDSVersion = .v7_4) -> SQLConnectionConfiguration {
        // The replay server answers PRELOGIN with ENCRYPT_NOT_SUP: connect without TLS.
        SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "u",
                                   password: "p", encryption: .notSupported, connectTimeout: .seconds(20),
                                   tdsVersion: version)
    }

    func testInfoAndErrorBetweenRowsAndCountsFromDone() async throws {
        let v = TDSVersion.v7_4
        let sql = "SELECT id, name FROM t; PRINT 'x'; INSERT INTO t VALUES (3, 'c'), (4, 'd'); RAISERROR('bad', 16, 2)"
        let server = try start([Self.exchange(sql, [
            Self.colMetadata(), Self.row(1, "a"),
            ServerTokens.message(number: 0, state: 1, severity: 0, text: "between rows", line: 1, version: v),
            Self.row(2, nil), Self.done([.more, .count], 2),
            ServerTokens.message(number: 0, state: 1, severity: 0, text: "x", line: 1, version: v),
            Self.done([.more, .count], 2),
            ServerTokens.message(token: 0xAA, number: 50000, state: 2, severity: 16, text: "bad", procedure: "", line: 1, version: v),
            Self.done([.error]),
        ])])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        var trace: [String] = []
        do {
            for try await event in connection.events(SQLQuery(unsafeSQL: sql)) {
                switch event {
                case .columns(let c): trace.append("columns \(c.map(\.name))")
                case .row(let r): trace.append("row \(r[0]) \(r["name"]!)")
                case .statementDone(let n): trace.append("done \(n.map(String.init) ?? "-")")
                case .message(let m): trace.append("\(m.isError ? "error" : "info") \(m.number) \(m.message)")
                case .returnStatus(let s): trace.append("status \(s)")
                case .outputValue(let v): trace.append("output \(v)")
                }
            }
            XCTFail("the batch did not throw")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError)
            XCTAssertEqual(error.number, 50000)
            XCTAssertEqual(error.state, 2)
        }
        XCTAssertEqual(trace, [
            "columns [\"id\", \"name\"]", "row 1 a", "info 0 between rows", "row 2 NULL", "done 2",
            "info 0 x", "done 2", "error 50000 bad", "done -",
        ])
        await connection.close()
    }

    func testCountOnlyStatementsInExecuteBatchAndTheCLIJSON() async throws {
        let sql = "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'); UPDATE t SET name = 'z' WHERE id > 1"
        let server = try start([Self.exchange(sql, [Self.done([.more, .count], 3), Self.done([.count], 2)])])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        let result = try await connection.execute(SQLQuery(unsafeSQL: sql))
        XCTAssertEqual(result.statements.count, 2)
        guard case .rowsAffected(let inserted) = result.statements[0], case .rowsAffected(let updated) = result.statements[1] else {
            return XCTFail("\(result.statements)")
        }
        XCTAssertEqual(inserted, 3)
        XCTAssertEqual(updated, 2)
        await connection.close()

        guard let binary = CLIComparisonTests.sqlclientBinary() else { return XCTFail("sqlclient was not built") }
        let json = try CLIComparisonTests.run(binary.path, ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p",
                                                            "--encrypt", "notsupported", "--format", "json", "-Q", sql])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(json.stdout, "{\"rowsAffected\":3}\n{\"rowsAffected\":2}\n")
        let table = try CLIComparisonTests.run(binary.path, ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p",
                                                             "--encrypt", "notsupported", "-Q", sql])
        XCTAssertEqual(table.stdout, "\n(3 rows affected)\n\n(2 rows affected)\n")
    }

    func testUseDatabaseIsTrackedFromEnvChange() async throws {
        let v = TDSVersion.v7_4
        let server = try start([Self.exchange("USE archive", [
            Self.envDatabase("archive", "master"),
            ServerTokens.message(number: 5701, state: 2, severity: 0, text: "Changed database context to 'archive'.",
                                 line: 1, version: v),
            Self.done([]),
        ])])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        let before = await connection.session.database
        XCTAssertNotEqual(before, "archive")
        let result = try await connection.execute("USE archive")
        XCTAssertEqual(result.messages.map(\.number), [5701])
        let after = await connection.session.database
        XCTAssertEqual(after, "archive")
        await connection.close()
    }

    func testLoginAtTDS71() async throws {
        let v = TDSVersion.v7_1_1
        let server = try start([Self.exchange("SELECT id, name FROM t", [
            Self.colMetadata(v), Self.row(7, "seven"), Self.done([.count], 1, v),
        ])])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server, version: .v7_1_1))
        let session = await connection.session
        XCTAssertEqual(session.tdsVersion.generation, 0x71)
        let tables = try await connection.execute("SELECT id, name FROM t")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["name"]?.stringValue, "seven")
        XCTAssertEqual(tables.resultSets.first?.rowsAffected, 1)
        XCTAssertEqual(server.unmatchedRequests, [], "the 7.1 SQL_BATCH (no ALL_HEADERS) was matched by its text")
        await connection.close()
        server.stop()  // waits for the connection's log
        XCTAssertEqual(server.connections.first?.clientVersion?.generation, 0x71)
    }

    func testTextSizeRunsSetTextSizeAfterLogin() async throws {
        let server = try start([Self.exchange("SET TEXTSIZE 2048", [Self.done([])])])
        defer { server.stop() }
        var config = configuration(server)
        config.textSize = 2048
        let connection = try await SQLConnection.connect(config)
        await connection.close()
        server.stop()  // waits for the connection's log
        XCTAssertEqual(server.connections.first?.requests, [.login7, .sqlBatch("SET TEXTSIZE 2048")])
        XCTAssertEqual(server.unmatchedRequests, [])
    }

    func testFatalErrorClosesTheConnection() async throws {
        let v = TDSVersion.v7_4
        let server = try start([Self.exchange("SELECT 1", [
            ServerTokens.message(token: 0xAA, number: 605, state: 3, severity: 21, text: "corrupt page", line: 1, version: v),
            Self.done([.error]),
        ])])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        // Subscribed before the request (a loop started in a task might subscribe after the end).
        let subscription = connection.messages.subscribe()
        let messages = Task { () -> [Int32] in
            var numbers: [Int32] = []
            for await message in subscription { numbers.append(message.number) }
            return numbers
        }
        do {
            _ = try await connection.execute("SELECT 1")
            XCTFail("no error")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.number, 605)
            XCTAssertEqual(error.severity, 21)
        }
        let open = await connection.isOpen
        XCTAssertFalse(open)
        // The fatal error ends `messages` too (after the message it holds): no listener waits forever.
        let heard = await withTaskGroup(of: [Int32]?.self) { group in
            group.addTask { await messages.value }
            group.addTask { try? await Task.sleep(for: .seconds(10)); return nil }   // a safety net only
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        messages.cancel()
        // The fatal message is the last; it ends the stream.
        XCTAssertNotNil(heard, "messages never ended after the fatal error")
        XCTAssertEqual(heard?.last, 605, "messages ended after the fatal error: \(String(describing: heard))")
        do {
            _ = try await connection.execute("SELECT 1")
            XCTFail("a closed connection ran a batch")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed)
        }
    }

    func testAbandonedQuerySendsAttentionAndTheNextRequestRuns() async throws {
        // Many small segments (one per row) so the server checks for ATTENTION between packets.
        var parts: [[UInt8]] = [Self.colMetadata()]
        for i in 0 ..< 20_000 { parts.append(Self.row(Int32(i), "row number \(i)")) }
        parts.append(Self.done([.count], 20_000))
        let server = try start([
            Self.exchange("SELECT id, name FROM big", parts),
            Self.exchange("SELECT id, name FROM small", [Self.colMetadata(), Self.row(1, "one"), Self.done([.count], 1)]),
        ])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        var seen: [Int] = []
        for try await row in connection.query("SELECT id, name FROM big") {
            seen.append(row["id"]?.intValue ?? -1)
            if seen.count == 3 { break }
        }
        XCTAssertEqual(seen, [0, 1, 2])
        let tables = try await connection.execute("SELECT id, name FROM small")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["name"]?.stringValue, "one")
        await connection.close()
        server.stop()  // waits for the connection's log
        XCTAssertEqual(server.connections.first?.attentions, 1)
    }

    func testExplicitCancelEndsTheStreamWithCancelled() async throws {
        var parts: [[UInt8]] = [Self.colMetadata()]
        for i in 0 ..< 20_000 { parts.append(Self.row(Int32(i), "row number \(i)")) }
        parts.append(Self.done([.count], 20_000))
        let server = try start([Self.exchange("SELECT id, name FROM big", parts)])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        var count = 0
        do {
            for try await _ in connection.query("SELECT id, name FROM big") {
                count += 1
                if count == 5 { try await connection.cancel() }
            }
            XCTFail("the stream ended without the cancellation")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .cancelled)
        }
        // Rows the reader had already taken from the received bytes (it takes them a batch at a
        // time) may still be delivered; everything decoded after the ATTENTION is discarded.
        XCTAssertGreaterThanOrEqual(count, 5)
        XCTAssertLessThan(count, 20_000, "rows after the ATTENTION are discarded")
        await connection.close()
        server.stop()  // waits for the connection's log
        XCTAssertEqual(server.connections.first?.attentions, 1)
    }

    /// A task cancelled while it takes rows already received stops within 32 rows (the cursor
    /// checks every 32nd take), with `.cancelled`, and the request is cancelled on the server
    /// (one ATTENTION, sent off the task: the next request waits for its acknowledgement).
    func testTaskCancelledWhileTakingBufferedRowsStopsWithin32Rows() async throws {
        var parts: [[UInt8]] = [Self.colMetadata()]
        for i in 0 ..< 20_000 { parts.append(Self.row(Int32(i), "r\(i)")) }
        parts.append(Self.done([.count], 20_000))
        let server = try start([
            Self.exchange("SELECT id, name FROM big", parts),
            Self.exchange("SELECT id, name FROM small", [Self.colMetadata(), Self.row(1, "one"), Self.done([.count], 1)]),
        ])
        defer { server.stop() }
        let connection = try await SQLConnection.connect(configuration(server))
        let reader = Task { () -> (Int, SQLClientError?) in
            var count = 0
            do {
                for try await row in connection.query("SELECT id, name FROM big") {
                    XCTAssertEqual(row[0].intValue, count)
                    count += 1
                    if count == 100 { withUnsafeCurrentTask { $0?.cancel() } }
                }
                return (count, nil)
            } catch {
                return (count, error as? SQLClientError)
            }
        }
        let (count, error) = await reader.value
        XCTAssertEqual(error?.code, .cancelled, "\(String(describing: error))")
        XCTAssertGreaterThanOrEqual(count, 100)
        XCTAssertLessThanOrEqual(count, 100 + 32)
        let next = try await connection.execute("SELECT id, name FROM small")
        XCTAssertEqual(next.rows.first?["name"]?.stringValue, "one")
        await connection.close()
        server.stop()  // waits for the connection's log
        XCTAssertEqual(server.connections.first?.attentions, 1)
    }

    func testConnectionClosedAtEveryByteOfAResponseIsAnErrorNeverAPartialResult() async throws {
        let response = Self.colMetadata() + Self.row(1, "a") + Self.row(2, nil) + Self.row(3, "ccc") + Self.done([.count], 3)
        var exchanges: [ReplaySession.Exchange] = []
        for n in 0 ..< response.count {
            exchanges.append(ReplaySession.Exchange(request: .sqlBatch("SELECT \(n)"),
                                                    response: [ReplaySession.Segment(bytes: response)],
                                                    faults: ReplaySession.Faults(closeAfter: n)))
        }
        exchanges.append(Self.exchange("SELECT whole", [response]))
        let server = try start(exchanges)
        defer { server.stop() }
        for n in 0 ..< response.count {
            let connection = try await SQLConnection.connect(configuration(server))
            do {
                let tables = try await connection.execute("SELECT \(unsafeRaw: String(n))")
                XCTFail("cut after \(n) bytes, yet returned \(tables)")
            } catch let error as SQLClientError {
                XCTAssertTrue(error.code == .connectionClosed || error.code == .protocolError, "after \(n) bytes: \(error)")
            }
            let open = await connection.isOpen
            XCTAssertFalse(open, "after \(n) bytes")
            await connection.close()
        }
        // The uncut response reads whole.
        let connection = try await SQLConnection.connect(configuration(server))
        let tables = try await connection.execute("SELECT whole")
        XCTAssertEqual(tables.resultSets.first?.rows.map { $0["name"] }, [.string("a"), .null, .string("ccc")])
        await connection.close()
    }
}
