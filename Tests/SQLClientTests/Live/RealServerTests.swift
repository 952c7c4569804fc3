import Foundation
import XCTest
@testable import SQLClient
import TDS

/// What only a real SQL Server can show (pysqlbridge sends few types, nothing for PRINT, no
/// counts for DML, no procedures, and refuses TDS 7.1): run in real-server mode (LiveServer:
/// SQLCLIENT_TEST_HOST, SQLCLIENT_TEST_USER, SQLCLIENT_TEST_PASSWORD, SQLCLIENT_TEST_DATABASE),
/// skipped with a message otherwise. The same behaviours are covered without a server on replay
/// sessions (ReplayConnectionTests, RPCReplayTests, TransactionReplayTests, the conformance oracle).
final class RealServerTests: XCTestCase {
    override func setUp() async throws {
        try LiveServer.requireRealServer()
    }

    /// Every SQL Server type by CAST: the declared type (any of the names given) and the value's canonical text.
    func testEveryTypeByCast() async throws {
        let long = String(repeating: "x", count: 9000)
        let wide = String(repeating: "é", count: 5000)
        let cases: [(sql: String, types: [String], text: String?)] = [
            ("CAST(255 AS tinyint)", ["tinyint"], "255"),
            ("CAST(-32768 AS smallint)", ["smallint"], "-32768"),
            ("CAST(-2147483648 AS int)", ["int"], "-2147483648"),
            ("CAST(9223372036854775807 AS bigint)", ["bigint"], "9223372036854775807"),
            ("CAST(1 AS bit)", ["bit"], "1"),
            ("CAST(1.5 AS real)", ["real"], "1.5"),
            ("CAST(0.1 AS float)", ["float"], "0.1"),
            ("CAST(-12.345 AS decimal(10,3))", ["decimal(10,3)"], "-12.345"),
            ("CAST(123.4 AS numeric(5,1))", ["numeric(5,1)", "decimal(5,1)"], "123.4"),
            ("CAST(922337203685477.5807 AS money)", ["money"], "922337203685477.5807"),
            ("CAST(-214748.3648 AS smallmoney)", ["smallmoney"], "-214748.3648"),
            ("CAST('2024-02-29' AS date)", ["date"], "2024-02-29"),
            ("CAST('13:14:15.1234567' AS time(7))", ["time(7)"], "13:14:15.1234567"),
            ("CAST('13:14:15' AS time(0))", ["time(0)"], "13:14:15"),
            ("CAST('2024-02-29 13:14:15.123' AS datetime)", ["datetime"], "2024-02-29 13:14:15.123"),
            ("CAST('2024-02-29 13:14:29' AS smalldatetime)", ["smalldatetime"], "2024-02-29 13:14:00"),
            ("CAST('2024-02-29 13:14:15.1234567' AS datetime2(7))", ["datetime2(7)"], "2024-02-29 13:14:15.1234567"),
            ("CAST('2024-02-29 13:14:15.12 +02:00' AS datetimeoffset(2))", ["datetimeoffset(2)"], "2024-02-29 13:14:15.12 +02:00"),
            ("CAST('abc' AS char(5))", ["char(5)"], "abc  "),
            ("CAST('abc' AS varchar(10))", ["varchar(10)"], "abc"),
            ("REPLICATE(CAST('x' AS varchar(max)), 9000)", ["varchar(max)"], long),
            ("CAST(N'ünï' AS nchar(4))", ["nchar(4)"], "ünï "),
            ("CAST(N'✓ Zürich' AS nvarchar(20))", ["nvarchar(20)"], "✓ Zürich"),
            ("REPLICATE(CAST(N'é' AS nvarchar(max)), 5000)", ["nvarchar(max)"], wide),
            ("CAST(0xDEADBEEF AS binary(6))", ["binary(6)"], "0xDEADBEEF0000"),
            ("CAST(0xDEADBEEF AS varbinary(10))", ["varbinary(10)"], "0xDEADBEEF"),
            ("CAST(0x00 AS varbinary(max))", ["varbinary(max)"], "0x00"),
            ("CAST('6F9619FF-8B86-D011-B42D-00C04FC964FF' AS uniqueidentifier)", ["uniqueidentifier"],
             "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
            ("CAST('<a>1</a>' AS xml)", ["xml"], "<a>1</a>"),
            ("CAST(CAST(5 AS int) AS sql_variant)", ["sql_variant"], "5"),
            ("CAST('old text' AS text)", ["text"], "old text"),
            ("CAST(N'old ntext' AS ntext)", ["ntext"], "old ntext"),
            ("CAST(0xAB AS image)", ["image"], "0xAB"),
            ("CAST(NULL AS int)", ["int"], nil),
            ("CAST(NULL AS nvarchar(max))", ["nvarchar(max)"], nil),
        ]
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        for c in cases {
            do {
                let sets = try await connection.execute("SELECT \(unsafeRaw: c.sql) AS v")
                let set = try XCTUnwrap(sets.resultSets.first, c.sql)
                XCTAssertTrue(c.types.contains(set.columns[0].typeName), "\(c.sql): \(set.columns[0].typeName)")
                XCTAssertEqual(set.rows.first?[0].canonicalText, c.text, c.sql)
            } catch {
                XCTFail("\(c.sql): \(error)")
            }
        }
    }

    /// PRINT, RAISERROR at severity 10 (INFO) and 16 (ERROR, substituted) arrive in order with the rows.
    func testPrintAndRaiserror() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        var messages: [SQLServerMessage] = []
        var rows = 0
        do {
            for try await event in connection.events("PRINT 'hello'; SELECT 1 AS a; RAISERROR('info %d', 10, 1, 7); RAISERROR('bad %s', 16, 2, 'x')") {
                if case .message(let m) = event { messages.append(m) }
                if case .row = event { rows += 1 }
            }
            XCTFail("RAISERROR severity 16 did not end the batch with an error")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError)
            XCTAssertEqual(error.message, "bad x")
        }
        XCTAssertEqual(rows, 1)
        XCTAssertEqual(messages.map(\.message), ["hello", "info 7", "bad x"])
        XCTAssertEqual(messages.map(\.severity), [0, 10, 16])
        XCTAssertEqual(messages.map(\.isError), [false, false, true])
        XCTAssertEqual(messages.last?.state, 2)
        // A statement that does not parse is a server error (pysqlbridge says nothing).
        do {
            _ = try await connection.execute("SELEC 1")
            XCTFail("SELEC 1 succeeded")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.number, 102, error.message)
        }
    }

    /// A procedure with an OUTPUT parameter, a result set and a return status (a temporary procedure).
    func testProcedureWithOutputParameter() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        _ = try await connection.execute("""
            CREATE PROCEDURE #sqlclient_double @x int, @y int OUTPUT AS
            BEGIN SELECT @x AS x; SET @y = @x * 2; RETURN 3 END
            """)
        let result = try await connection.callProcedure("#sqlclient_double",
                                                        parameters: [.input("@x", Int32(21)), .output("@y", type: .int)])
        XCTAssertEqual(result.resultSets.first?.rows.first?["x"], .int(21))
        XCTAssertEqual(result.outputs.first?.value, .int(42))
        XCTAssertEqual(result.returnStatus, 3)
        let sql = try await connection.execute("SELECT \(Int32(5)) * 3 AS fifteen")
        XCTAssertEqual(sql.rows.first?["fifteen"], .int(15))
    }

    /// Transaction Manager requests: a rollback undoes, a commit keeps, withTransaction rolls back on throw.
    func testTransactions() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        _ = try await connection.execute("CREATE TABLE #tx (n int)")
        try await connection.beginTransaction()
        _ = try await connection.execute("INSERT INTO #tx VALUES (1)")
        try await connection.rollbackTransaction()
        try await connection.beginTransaction()
        _ = try await connection.execute("INSERT INTO #tx VALUES (2)")
        try await connection.commitTransaction()
        struct Planned: Error {}
        do {
            try await connection.withTransaction { conn in
                _ = try await conn.execute("INSERT INTO #tx VALUES (3)")
                throw Planned()
            }
        } catch is Planned {}
        let rows = try await connection.execute("SELECT n FROM #tx ORDER BY n")
        XCTAssertEqual(rows.resultSets.first?.rows.map { $0[0] }, [.int(2)])
        let open = try await connection.execute("SELECT @@TRANCOUNT AS n")
        XCTAssertEqual(open.resultSets.first?.rows.first?["n"], .int(0))
    }

    /// DONE counts of INSERT, UPDATE and DELETE.
    func testRowsAffectedByDML() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let result = try await connection.execute("""
            CREATE TABLE #r (n int);
            INSERT INTO #r VALUES (1), (2), (3);
            UPDATE #r SET n = n + 1 WHERE n >= 2;
            DELETE FROM #r WHERE n = 1;
            """)
        let counts = result.statements.compactMap { statement -> Int? in
            if case .rowsAffected(let n) = statement { return n }
            return nil
        }
        XCTAssertEqual(counts, [3, 2, 1])
    }

    /// LOGIN7 at every TDS version this client speaks; the session runs at the acknowledged one.
    func testLoginsAtTDS71To74() async throws {
        for version in [TDSVersion.v7_1_1, .v7_2, .v7_3A, .v7_3B, .v7_4] {
            let connection = try await SQLConnection.connect(LiveServer.configuration(tdsVersion: version))
            let session = await connection.session
            XCTAssertEqual(session.tdsVersion.generation, version.generation, "\(version)")
            let sets = try await connection.execute("SELECT N'é ✓' AS s, CAST(1 AS bigint) AS b, name FROM people WHERE id = 3")
            XCTAssertEqual(sets.resultSets.first?.rows.first?["s"]?.stringValue, "é ✓", "\(version)")
            XCTAssertEqual(sets.resultSets.first?.rows.first?["b"]?.intValue, 1, "\(version)")
            XCTAssertEqual(sets.resultSets.first?.rows.first?["name"]?.stringValue, "Chloé", "\(version)")
            await connection.close()
        }
    }

    /// sqlclient on the real server: PRINT text on standard error, DML counts as sqlcmd prints them.
    func testCLIPrintsMessagesAndCounts() throws {
        let r = try CLI.live([], stdin: "PRINT 'hello'\nCREATE TABLE #c (n int)\nINSERT INTO #c VALUES (1), (2), (3)\nGO\n")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr, "hello\n")
        XCTAssertEqual(r.stdout, "\n(3 rows affected)\n")
        let json = try CLI.live(["--format", "json"], stdin: "CREATE TABLE #c (n int)\nINSERT INTO #c VALUES (1), (2)\n")
        XCTAssertEqual(json.stdout, "{\"rowsAffected\":2}\n")
        let syntax = try CLI.live([], stdin: "SELEC 1\n")
        XCTAssertEqual(syntax.status, 1)
        XCTAssertTrue(syntax.stderr.contains("Msg 102, Level 15"), syntax.stderr)
    }
}
