import Foundation
import XCTest
@testable import SQLClient
import TDS

/// Integration tests against the live server: pysqlbridge 2.1.3 on loopback (see Fixtures/demo and
/// scripts/pysqlbridge.sh), or a real SQL Server in real-server mode (LiveServer), where what is
/// pysqlbridge's own (its version, its quirks) is not asserted.
final class LiveServerTests: XCTestCase {
    func testFullSessionTLSLoginAndSelect() async throws {
        let connection = try await LiveServer.connect(encryption: .on)
        let session = await connection.session
        XCTAssertEqual(session.encryption, .full)
        XCTAssertEqual(session.tdsVersion, .v7_4)
        if LiveServer.isPysqlbridge { XCTAssertEqual(session.serverVersion, "17.0.1000") }
        XCTAssertFalse(session.database.isEmpty)
        XCTAssertEqual(session.language, "us_english")
        XCTAssertNotNil(session.collation)
        let tables = try await connection.execute("SELECT id, name, score, city FROM people ORDER BY id")
        XCTAssertEqual(tables.resultSets.count, 1)
        let people = try XCTUnwrap(tables.resultSets.first)
        XCTAssertEqual(people.columns.map(\.name), ["id", "name", "score", "city"])
        XCTAssertEqual(people.columns.map(\.typeName), ["int", "nvarchar(6)", "float", "nvarchar(6)"])
        XCTAssertEqual(people.rowsAffected, 4)
        XCTAssertEqual(people.rows.count, 4)
        XCTAssertEqual(people.rows[0]["id"], .int(1))
        XCTAssertEqual(people.rows[0]["NAME"]?.stringValue, "Alice", "lookup by name is case-insensitive")
        XCTAssertEqual(people.rows[0]["score"], .float(91.5))
        XCTAssertEqual(people.rows[1]["city"], .null)
        XCTAssertEqual(people.rows[2]["name"]?.stringValue, "Chloé")
        XCTAssertEqual(people.rows[2]["score"], .null)
        XCTAssertEqual(people.rows[2]["city"]?.stringValue, "Zürich")
        XCTAssertEqual(people.rows[3]["score"]?.doubleValue, 64)
        XCTAssertNil(people.rows[3]["no such column"])
        await connection.close()
        let open = await connection.isOpen
        XCTAssertFalse(open)
    }

    func testLoginOnlyTLSThenPlaintextSession() async throws {
        let connection = try await LiveServer.connect(encryption: .off)
        let session = await connection.session
        XCTAssertEqual(session.encryption, .loginOnly)
        let tables = try await connection.execute("SELECT COUNT(*) AS n FROM people")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["n"]?.intValue, 4)
        // A second request on the same plaintext session.
        let again = try await connection.execute("SELECT name FROM people WHERE id = 4")
        XCTAssertEqual(again.resultSets.first?.rows.first?["name"]?.stringValue, "Dmitri")
        await connection.close()
    }

    func testOlderTDSVersionsOnRequest() async throws {
        try LiveServer.require()
        for version in [TDSVersion.v7_2, .v7_3A, .v7_3B] {
            let connection = try await SQLConnection.connect(LiveServer.configuration(tdsVersion: version))
            let session = await connection.session
            XCTAssertEqual(session.tdsVersion.generation, version.generation, "\(version)")
            let tables = try await connection.execute("SELECT name FROM people WHERE id = 2")
            XCTAssertEqual(tables.resultSets.first?.rows.first?["name"]?.stringValue, "Bob")
            await connection.close()
        }
        // pysqlbridge refuses TDS 7.1 by closing the connection (7.1 is shown on replayed sessions
        // and, in real-server mode, in RealServerTests).
        guard LiveServer.isPysqlbridge else { return }
        do {
            _ = try await SQLConnection.connect(LiveServer.configuration(tdsVersion: .v7_1_1))
            XCTFail("pysqlbridge accepted a TDS 7.1 login")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed)
        }
    }

    func testWrongPasswordIsATypedLoginErrorWithoutThePassword() async throws {
        try LiveServer.require()
        let secret = "Wr0ng-Secret-\(UUID().uuidString.prefix(8))"
        var config = LiveServer.configuration(password: secret)
        do {
            _ = try await SQLConnection.connect(config)
            XCTFail("logged in with a wrong password")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .loginFailed)
            XCTAssertEqual(error.number, 18456)
            XCTAssertEqual(error.severity, 14)
            XCTAssertEqual(error.state, 1)
            XCTAssertEqual(error.serverMessage?.message, "Login failed for user 'demo'.")
            for text in [error.description, error.message, "\(error)", String(reflecting: error),
                         config.description, "\(config)", String(reflecting: config)] {
                XCTAssertFalse(text.contains(secret), "the password leaked into: \(text)")
            }
        }
        // The same in login-only mode.
        config.encryption = .off
        do {
            _ = try await SQLConnection.connect(config)
            XCTFail("logged in with a wrong password")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .loginFailed)
            XCTAssertEqual(error.number, 18456)
            XCTAssertFalse("\(error)".contains(secret))
        }
    }

    func testSelfSignedCertificateIsRefusedUnlessTrusted() async throws {
        try LiveServer.requirePysqlbridge("its certificate is self-signed")
        try LiveServer.require()
        for encryption in [SQLEncryption.on, .required] {
            do {
                _ = try await SQLConnection.connect(LiveServer.configuration(encryption: encryption, trust: false))
                XCTFail("the self-signed certificate was accepted with \(encryption)")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .certificateVerificationFailed)
                XCTAssertTrue(error.message.contains("self-signed certificate"), error.message)
            }
        }
        // Login-only encryption does not verify unless asked (as Microsoft's drivers)…
        let loginOnly = try await SQLConnection.connect(LiveServer.configuration(encryption: .off, trust: false))
        await loginOnly.close()
        // …and refuses when asked.
        var strict = LiveServer.configuration(encryption: .off, trust: false)
        strict.verifyCertificateWhenLoginOnly = true
        do {
            _ = try await SQLConnection.connect(strict)
            XCTFail("the self-signed certificate was accepted")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .certificateVerificationFailed)
        }
        // Trusting it connects.
        let trusted = try await SQLConnection.connect(LiveServer.configuration(encryption: .on, trust: true))
        await trusted.close()
    }

    func testBitAndDatetimeThroughCast() async throws {
        let connection = try await LiveServer.connect()
        let tables = try await connection.execute(
            """
            SELECT CAST(1 AS bit) AS yes, CAST(0 AS bit) AS no, CAST('2024-02-29 13:45:10' AS datetime) AS at, \
            CAST(NULL AS int) AS nothing
            """)
        let row = try XCTUnwrap(tables.resultSets.first?.rows.first)
        XCTAssertEqual(row["yes"], .bit(true))
        XCTAssertEqual(row["no"], .bit(false))
        XCTAssertEqual(row["at"]?.canonicalText, "2024-02-29 13:45:10.000")
        XCTAssertEqual(tables.resultSets.first?.columns[2].typeName, "datetime")
        let date = try XCTUnwrap(row["at"]?.dateValue())
        XCTAssertEqual(date.timeIntervalSince1970, 1_709_214_310, accuracy: 0.001)
        XCTAssertEqual(row["nothing"], .null)
        await connection.close()
    }

    func testTwoResultSetsInOneBatch() async throws {
        let connection = try await LiveServer.connect()
        let result = try await connection.execute(
            "SELECT name FROM people WHERE id <= 2 ORDER BY id; SELECT sku, price FROM products ORDER BY sku")
        let sets = result.resultSets
        XCTAssertEqual(sets.count, 2)
        XCTAssertEqual(sets[0].rows.map { $0["name"]?.stringValue }, ["Alice", "Bob"])
        XCTAssertEqual(sets[0].rowsAffected, 2)
        XCTAssertEqual(sets[1].columns.map(\.name), ["sku", "price"])
        XCTAssertEqual(sets[1].rows.map { $0[0] }, [.int(100), .int(101), .int(102)])
        XCTAssertEqual(sets[1].rows.map { $0["price"]?.doubleValue }, [49.9, 19.99, 249.0])
        XCTAssertEqual(sets[1].rowsAffected, 3)
        await connection.close()
    }

    func testInsertAndUpdateOnATemporaryTable() async throws {
        let connection = try await LiveServer.connect()
        let result = try await connection.execute("""
            CREATE TABLE #t (id int, name nvarchar(20));
            INSERT INTO #t VALUES (1, 'a'), (2, 'b'), (3, 'c');
            SELECT @@ROWCOUNT AS inserted;
            UPDATE #t SET name = 'z' WHERE id >= 2;
            SELECT @@ROWCOUNT AS updated;
            """)
        let sets = result.resultSets
        XCTAssertEqual(sets.count, 2)
        XCTAssertEqual(sets[0].rows.first?["inserted"], .int(3))
        XCTAssertEqual(sets[1].rows.first?["updated"], .int(2))
        // pysqlbridge ends DML statements with DONE without the COUNT flag (counts from DONE are
        // shown on recorded SQL Server sessions in ReplayConnectionTests); SQL Server counts them.
        XCTAssertEqual(result.statements.count, LiveServer.isPysqlbridge ? 2 : 4)
        // The temporary table lives on the session: a later batch sees the updates.
        let after = try await connection.execute("SELECT id, name FROM #t ORDER BY id")
        XCTAssertEqual(after.resultSets.first?.rows.map { $0["name"]?.stringValue }, ["a", "z", "z"])
        await connection.close()
    }

    func testRaiserrorIsThrownWithItsNumbersAndTheConnectionStaysUsable() async throws {
        let connection = try await LiveServer.connect()
        let received = MessageLog()
        await connection.setMessageHandler { received.append($0) }
        do {
            _ = try await connection.execute("RAISERROR('custom failure %d', 16, 3, 5)")
            XCTFail("RAISERROR severity 16 did not throw")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError)
            XCTAssertEqual(error.number, 50000)
            XCTAssertEqual(error.severity, 16)
            XCTAssertEqual(error.state, 3)
            XCTAssertEqual(error.serverMessage?.lineNumber, 1)
            // pysqlbridge does not substitute %d.
            XCTAssertEqual(error.serverMessage?.message, LiveServer.isPysqlbridge ? "custom failure %d" : "custom failure 5")
        }
        XCTAssertEqual(received.messages.map(\.number), [50000])
        let tables = try await connection.execute("SELECT 7 AS seven")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["seven"], .int(7))
        await connection.close()
    }

    func testErrorInTheMiddleOfABatch() async throws {
        let connection = try await LiveServer.connect()
        var events: [SQLResponseEvent] = []
        do {
            for try await event in connection.events("SELECT 1 AS a; SELECT * FROM nosuchtable; SELECT 2 AS b") {
                events.append(event)
            }
            XCTFail("the batch did not fail")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError)
            XCTAssertEqual(error.number, 208)
            XCTAssertEqual(error.severity, 16)
            XCTAssertTrue(error.message.contains("nosuchtable"), error.message)
        }
        // The first statement's result came before the error, the error came as a message.
        var rows: [SQLValue] = []
        var messages: [Int32] = []
        for event in events {
            if case .row(let r) = event { rows.append(r[0]) }
            if case .message(let m) = event { messages.append(m.number) }
        }
        XCTAssertEqual(rows.first, .int(1))
        XCTAssertEqual(messages, [208])
        // Still usable.
        let after = try await connection.execute("SELECT name FROM people WHERE id = 1")
        XCTAssertEqual(after.resultSets.first?.rows.first?["name"]?.stringValue, "Alice")
        await connection.close()
    }

    func testQueryStreamsRowsAndDecodesThem() async throws {
        struct Person: Decodable, Equatable {
            let id: Int
            let name: String
            let score: Double?
            let city: String?
        }
        let connection = try await LiveServer.connect()
        var people: [Person] = []
        for try await row in connection.query("SELECT id, name, score, city FROM people ORDER BY id") {
            people.append(try row.decode(Person.self))
        }
        XCTAssertEqual(people, [
            Person(id: 1, name: "Alice", score: 91.5, city: "Paris"),
            Person(id: 2, name: "Bob", score: 78.25, city: nil),
            Person(id: 3, name: "Chloé", score: nil, city: "Zürich"),
            Person(id: 4, name: "Dmitri", score: 64, city: "Berlin"),
        ])
        // A non-optional property over a NULL names the column.
        do {
            for try await row in connection.query("SELECT id, name, score, city FROM people WHERE id = 2") {
                struct Strict: Decodable { let city: String }
                _ = try row.decode(Strict.self)
            }
            XCTFail("decoded NULL into String")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .decodingFailed)
            XCTAssertTrue(error.message.contains("\"city\""), error.message)
        }
        await connection.close()
    }

    func testBreakingOutOfAQueryCancelsItAndTheConnectionStaysUsable() async throws {
        let connection = try await LiveServer.connect()
        // A result large enough to span many packets.
        let big = "SELECT a.id AS a, b.id AS b, c.name AS c, d.sku AS d FROM people a CROSS JOIN people b "
            + "CROSS JOIN people c CROSS JOIN products d CROSS JOIN people e CROSS JOIN people f"
        var seen = 0
        for try await _ in connection.query(SQLQuery(unsafeSQL: big)) {
            seen += 1
            if seen == 3 { break }
        }
        XCTAssertEqual(seen, 3)
        // The next request waits for the abandoned one to be cancelled and drained.
        let tables = try await connection.execute("SELECT COUNT(*) AS n FROM products")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["n"]?.intValue, 3)
        await connection.close()
    }

    func testConnectionStringAndServerForms() async throws {
        try LiveServer.requirePysqlbridge("loopback address forms of the demo server")
        let password = LiveServer.password
        for server in ["127.0.0.1,\(LiveServer.port)", "127.0.0.1:\(LiveServer.port)", "tcp:localhost,\(LiveServer.port)"] {
            let connection = try await SQLConnection.connect(connectionString:
                "Server=\(server);User ID=demo;Password=\"\(password)\";Encrypt=true;TrustServerCertificate=true;"
                + "Application Name=conn-string test;Connect Timeout=20")
            let tables = try await connection.execute("SELECT APP_NAME() AS app")
            XCTAssertEqual(tables.resultSets.first?.rows.first?["app"]?.stringValue, "conn-string test")
            await connection.close()
        }
    }

    func testMessagesStream() async throws {
        let connection = try await LiveServer.connect()
        // A subscriber sees the messages from when it subscribed (the login's 5701/5703 came before).
        var iterator = connection.messages.makeAsyncIterator()
        _ = try? await connection.execute("RAISERROR('first', 16, 1)")
        _ = try? await connection.execute("RAISERROR('second', 11, 2)")
        let first = await iterator.next()
        let second = await iterator.next()
        XCTAssertEqual(first?.message, "first")
        XCTAssertEqual(first?.isError, true)
        XCTAssertEqual(second?.message, "second")
        XCTAssertEqual(second?.severity, 11)
        XCTAssertEqual(second?.state, 2)
        await connection.close()
        let end = await iterator.next()
        XCTAssertNil(end, "closing ends the subscription")
    }
}

/// Collects messages from a handler (called on the connection's executor).
final class MessageLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [SQLServerMessage] = []
    func append(_ m: SQLServerMessage) { lock.withLock { items.append(m) } }
    var messages: [SQLServerMessage] { lock.withLock { items } }
}
