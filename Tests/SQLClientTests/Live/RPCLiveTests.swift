import Foundation
import XCTest
@testable import SQLClient
import TDS

/// Parameterized queries against the live test server (pysqlbridge reads int, float, bit,
/// nvarchar and NULL parameters; it sends no RETURNVALUE, so OUTPUT values travel through a batch).
final class RPCLiveTests: XCTestCase {
    func testParameterizedSelectsWithIntFloatBitNVarcharAndNull() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        // pysqlbridge declares nvarchar(n) with n in characters, not UTF-16 code units: a character
        // outside the BMP (two units) makes its value longer than its TYPE_INFO, which the decoder
        // refuses (as Microsoft's driver does). The emoji travels only to a real SQL Server.
        let text = LiveServer.isPysqlbridge ? "héllo ✓" : "héllo 😀"
        let r = try await connection.execute("SELECT \(Int32(41)) + 1 AS a, \(2.25) AS b, \(true) AS c, \(text) AS d, \(nil as String?) AS e")
        let row = try XCTUnwrap(r.rows.first)
        XCTAssertEqual(row["a"]?.intValue, 42)
        XCTAssertEqual(row["b"]?.doubleValue, 2.25)
        XCTAssertEqual(row["c"]?.boolValue, true)
        XCTAssertEqual(row["d"]?.stringValue, text)
        XCTAssertEqual(row["e"], .null)

        // Parameters in WHERE clauses of the demo table.
        let bob = try await connection.execute("SELECT name FROM people WHERE id = \(Int32(2))")
        XCTAssertEqual(bob.rows.map { $0["name"]?.stringValue }, ["Bob"])
        let high = try await connection.execute("SELECT id FROM people WHERE score > \(80.0) ORDER BY id")
        XCTAssertEqual(high.rows.compactMap { $0["id"]?.intValue }, [1])
        let byName = try await connection.execute("SELECT id FROM people WHERE name = \("Chloé")")
        XCTAssertEqual(byName.rows.compactMap { $0["id"]?.intValue }, [3])
        let bigint = try await connection.execute("SELECT \(9_000_000_000) AS big")
        XCTAssertEqual(bigint.rows.first?["big"]?.intValue, 9_000_000_000)

        let listed = try await connection.execute("SELECT name FROM people WHERE id IN (\(list: [Int32(1), 3])) ORDER BY id")
        XCTAssertEqual(listed.rows.map { $0["name"]?.stringValue }, ["Alice", "Chloé"])

        // Streaming a parameterized query.
        var ids: [Int] = []
        for try await row in connection.query("SELECT id FROM people WHERE id >= \(Int32(2)) ORDER BY id") {
            ids.append(row["id"]?.intValue ?? -1)
        }
        XCTAssertEqual(ids, [2, 3, 4])
    }

    /// The same parameterized query at every TDS version the live server accepts (ALL_HEADERS,
    /// TYPE_INFO and collation rules per version).
    func testParameterizedQueryAtEachTDSVersion() async throws {
        try LiveServer.require()
        for version in [TDSVersion.v7_2, .v7_3A, .v7_3B, .v7_4] {
            let connection = try await SQLConnection.connect(LiveServer.configuration(tdsVersion: version))
            let r = try await connection.execute("SELECT \(Int32(6)) * 7 AS a, \("ünï") AS b, \(nil as Int32?) AS c, \(0.5) AS d")
            let row = try XCTUnwrap(r.rows.first, "\(version)")
            XCTAssertEqual(row["a"]?.intValue, 42, "\(version)")
            XCTAssertEqual(row["b"]?.stringValue, "ünï", "\(version)")
            XCTAssertEqual(row["c"], .null, "\(version)")
            XCTAssertEqual(row["d"]?.doubleValue, 0.5, "\(version)")
            await connection.close()
        }
    }

    func testQuotesAndInjectionTextComeBackAsData() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let evil = "O'Brien \"x\" '; DROP TABLE x; --"
        let r = try await connection.execute("SELECT \(evil) AS s")
        XCTAssertEqual(r.rows.first?["s"]?.stringValue, evil)
        let none = try await connection.execute("SELECT COUNT(*) AS n FROM people WHERE name = \("'; DROP TABLE people; --")")
        XCTAssertEqual(none.rows.first?["n"]?.intValue, 0)
        let all = try await connection.execute("SELECT COUNT(*) AS n FROM people")
        XCTAssertEqual(all.resultSets.first?.rows.first?["n"]?.intValue, 4, "the table is still there")
    }

    /// sp_executesql with an OUTPUT parameter, called through EXEC in a batch.
    func testExecuteSQLWithOutputParameterThroughExecInABatch() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let r = try await connection.execute("""
            DECLARE @x int;
            EXEC sp_executesql N'SET @o = @i * 2', N'@i int, @o int OUTPUT', @i = 21, @o = @x OUTPUT;
            SELECT @x AS x
            """)
        XCTAssertEqual(r.resultSets.last?.rows.first?["x"]?.intValue, 42)
        // The same through SQLClient: a parameterized batch whose statement runs EXEC sp_executesql.
        let p = try await connection.execute("""
            DECLARE @x int; EXEC sp_executesql N'SET @o = @i + 1', N'@i int, @o int OUTPUT', @i = \(Int32(99)), @o = @x OUTPUT; SELECT @x AS x
            """)
        XCTAssertEqual(p.rows.last?["x"]?.intValue, 100)
    }

    /// A failed parameterized query is a server error; the connection answers the next one.
    func testServerErrorLeavesTheConnectionUsable() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        do {
            _ = try await connection.execute("SELECT * FROM no_such_table WHERE id = \(Int32(1))")
            XCTFail("expected a server error")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError)
            XCTAssertNotNil(error.number)
        }
        let r = try await connection.execute("SELECT \(Int32(5)) AS n")
        XCTAssertEqual(r.rows.first?["n"]?.intValue, 5)
    }
}
