import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// Matching for tests: strict order with a diff, parameter-insensitive requests, `*`
/// parameters, the report of what was never replayed, and verify().
final class ReplayMatchingTests: XCTestCase {
    static let version = TDSVersion.v7_4

    static func one(_ value: Int32) throws -> [ReplaySession.Segment] {
        let c = ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "c")
        return [.init(bytes: ServerTokens.colMetadata([c], version: version)),
                .init(bytes: try ServerTokens.row([.int(value)], columns: [c])),
                .init(bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 1, version: version))]
    }

    static func session() throws -> ReplaySession {
        ReplaySession(name: "orders", version: version, exchanges: [
            .init(request: .sqlBatch("SELECT 1 AS c"), response: try one(1)),
            .init(request: .rpc(procedure: "sp_executesql", parameters: [
                .init(name: "", value: "SELECT @P1 AS c"), .init(name: "", value: "@P1 int"), .init(name: "@P1", value: "2"),
            ]), response: try one(2)),
            .init(request: .sqlBatch("SELECT 3 AS c"), response: try one(3)),
        ])
    }

    func connect(_ server: ReplayServer) async throws -> SQLConnection {
        let port = try server.start()
        return try await SQLConnection.connect(SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
            encryption: .notSupported, connectTimeout: .seconds(10), tdsVersion: Self.version))
    }

    func value(_ connection: SQLConnection, _ sql: String) async throws -> SQLValue? {
        try await connection.execute(SQLQuery(unsafeSQL: sql)).resultSets.first?.rows.first?.values.first
    }

    /// sp_executesql `sql` declaring `@P1 int` = `p1`.
    func value(_ connection: SQLConnection, _ sql: String, p1: Int32) async throws -> SQLValue? {
        let call = RPCCall(procedure: .id(.spExecuteSQL), parameters: [
            RPCParameter(typeInfo: .nvarchar(nil), value: .string(sql)),
            RPCParameter(typeInfo: .nvarchar(4000), value: .string("@P1 int")),
            RPCParameter(name: "@P1", typeInfo: .int, value: .int(p1)),
        ])
        return try await connection.execute(rpc: [call]).rows.first?.values.first
    }

    func testStrictModeRefusesARequestOutOfOrderWithADiff() async throws {
        let server = ReplayServer(session: try Self.session(), options: .init(strict: true))
        defer { server.stop() }
        let connection = try await connect(server)
        let first = try await value(connection, "SELECT 1 AS c")
        XCTAssertEqual(first, .int(1))
        do {
            _ = try await connection.execute("SELECT 3 AS c")   // recorded, but not next
            XCTFail("strict mode answered a request out of order")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.number, 50000)
            XCTAssertTrue(error.serverMessage?.message.contains("- >>> RPC sp_executesql") ?? false, "\(error)")
            XCTAssertTrue(error.serverMessage?.message.contains("+ | SELECT 3 AS c") ?? false, "\(error)")
        }
        let second = try await value(connection, "SELECT @P1 AS c", p1: 2)
        let third = try await value(connection, "SELECT 3 AS c")
        XCTAssertEqual([second, third], [.int(2), .int(3)], "a refusal does not move the expected position")
        await connection.close()
        server.stop()
        let mismatch = try XCTUnwrap(server.mismatches.first)
        XCTAssertEqual(server.mismatches.count, 1)
        XCTAssertEqual(mismatch.connection, 1)
        XCTAssertEqual(mismatch.position, 2)
        XCTAssertEqual(mismatch.received, .sqlBatch("SELECT 3 AS c"))
        XCTAssertEqual(mismatch.diff, """
            - >>> RPC sp_executesql
            - |  = "SELECT @P1 AS c"
            - |  = "@P1 int"
            - | @P1 = "2"
            + >>> SQL_BATCH
            + | SELECT 3 AS c
            """)
        XCTAssertThrowsError(try server.verify()) { error in
            XCTAssertTrue("\(error)".contains("replay (strict): connection 1 expected exchange 2 of \"orders\""), "\(error)")
        }
    }

    func testStrictModeRefusesARequestAfterTheLastOne() async throws {
        let server = ReplayServer(session: ReplaySession(name: "short", exchanges: [
            .init(request: .sqlBatch("SELECT 1 AS c"), response: try Self.one(1)),
        ]), options: .init(strict: true))
        defer { server.stop() }
        let connection = try await connect(server)
        _ = try await connection.execute("SELECT 1 AS c")
        do {
            _ = try await connection.execute("SELECT 1 AS c")
            XCTFail("strict mode replayed an exchange twice")
        } catch {}
        await connection.close()
        server.stop()
        XCTAssertNil(server.mismatches.first?.position)
        XCTAssertTrue(server.mismatches.first?.description.contains("nothing more") ?? false)
    }

    func testParameterInsensitiveRequestsMatchWhateverTheValues() async throws {
        for rule in [ReplayServer.ParameterInsensitiveRequest.procedure("sp_executesql"), .statement("  SELECT @P1 AS c\n")] {
            let server = ReplayServer(session: try Self.session(), options: .init(parameterInsensitive: [rule]))
            defer { server.stop() }
            let connection = try await connect(server)
            let v = try await value(connection, "SELECT @P1 AS c", p1: 999)
            XCTAssertEqual(v, .int(2), "\(rule)")
            await connection.close()
            server.stop()
            XCTAssertEqual(server.unmatchedRequests, [], "\(rule)")
        }
        // Without the rule the value must be the recorded one.
        let strictValues = ReplayServer(session: try Self.session())
        defer { strictValues.stop() }
        let connection = try await connect(strictValues)
        _ = try? await value(connection, "SELECT @P1 AS c", p1: 999)
        await connection.close()
        strictValues.stop()
        XCTAssertEqual(strictValues.unmatchedRequests.count, 1)
        // A statement rule does not cover another statement.
        XCTAssertFalse(ReplayServer.matches(
            recorded: .rpc(procedure: "sp_executesql", parameters: [.init(name: "", value: "SELECT 1"), .init(name: "@P1", value: "1")]),
            received: .rpc(procedure: "sp_executesql", parameters: [.init(name: "", value: "SELECT 2"), .init(name: "@P1", value: "1")]),
            ignoringParameters: [.statement("SELECT 2")]))
    }

    func testAStarParameterMatchesAnyValue() async throws {
        let text = """
            >>> RPC sp_executesql
            | = "SELECT @P1 AS c"
            | = "@P1 int"
            | @P1 = *
            <<<
            81 01 00 00 00 00 00 09 00 38 01 63 00
            D1 07 00 00 00
            FD 10 00 C1 00 01 00 00 00 00 00 00 00
            """
        let session = try ReplaySession(text: text)
        guard case .rpc(_, let params) = session.exchanges[0].request else { return XCTFail("not an RPC") }
        XCTAssertTrue(params[2].matchesAnyValue)
        XCTAssertTrue(session.text.contains("| @P1 = *\n"))
        XCTAssertEqual(try ReplaySession(text: session.text), session)
        let server = ReplayServer(session: session)
        defer { server.stop() }
        let connection = try await connect(server)
        let a = try await value(connection, "SELECT @P1 AS c", p1: 1)
        let b = try await value(connection, "SELECT @P1 AS c", p1: -5)
        XCTAssertEqual([a, b], [.int(7), .int(7)])
        await connection.close()
    }

    func testUnreplayedExchangesAreReported() async throws {
        let server = ReplayServer(session: try Self.session())
        defer { server.stop() }
        let connection = try await connect(server)
        _ = try await connection.execute("SELECT 3 AS c")
        await connection.close()
        server.stop()
        XCTAssertEqual(server.unreplayedExchanges.map(\.index), [0, 1])
        XCTAssertEqual(server.unreplayedExchanges.first?.description, "orders exchange 1: SQL_BATCH SELECT 1 AS c")
        XCTAssertNoThrow(try server.verify())
        XCTAssertThrowsError(try server.verify(requireAllReplayed: true)) { error in
            let failure = error as? ReplayServer.VerificationFailure
            XCTAssertEqual(failure?.unreplayed.count, 2)
            XCTAssertTrue("\(error)".contains("recorded but never replayed (2):"))
        }
    }

    func testConnectionsAreServedFromTheirOwnSections() async throws {
        let recording = ReplayRecording(comment: nil, sections: [
            ReplaySession(name: "first", exchanges: [.init(request: .sqlBatch("SELECT c"), response: try Self.one(1))]),
            ReplaySession(name: "second", exchanges: [.init(request: .sqlBatch("SELECT c"), response: try Self.one(2))]),
        ])
        let server = ReplayServer(recording: recording)
        defer { server.stop() }
        let port = try server.start()
        var seen: [SQLValue?] = []
        for _ in 0 ..< 3 {
            let connection = try await SQLConnection.connect(SQLConnectionConfiguration(
                address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
                encryption: .notSupported, connectTimeout: .seconds(10)))
            seen.append(try await value(connection, "SELECT c"))
            await connection.close()
        }
        XCTAssertEqual(seen, [.int(1), .int(2), .int(1)], "connection n from section n, cycling")
        server.stop()
        XCTAssertEqual(server.connections.map(\.section).sorted(), [0, 0, 1])
    }

    func testATransactionManagerRequestIsMatchedByItsTypeAndFields() async throws {
        let envBegin: [UInt8] = [0xE3, 0x0B, 0x00, 0x08, 0x08, 1, 0, 0, 0, 0, 0, 0, 0, 0x00]
        let session = ReplaySession(name: "tm", version: Self.version, exchanges: [
            .init(request: .transactionManager(type: "TM_BEGIN_XACT", parameters: [.init(name: "isolation", value: "0"), .init(name: "name", value: "")]),
                  response: [.init(comment: "ENVCHANGE begin transaction", bytes: envBegin), .init(comment: "DONE", bytes: ServerTokens.done(version: Self.version))]),
        ])
        XCTAssertEqual(try ReplaySession(text: session.text), session)
        let server = ReplayServer(session: session)
        defer { server.stop() }
        let connection = try await connect(server)
        try await connection.beginTransaction()
        await connection.close()
        server.stop()
        XCTAssertEqual(server.unmatchedRequests, [])
        XCTAssertEqual(server.unreplayedExchanges, [])
    }
}
