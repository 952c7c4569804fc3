import Foundation
import XCTest
@testable import SQLClient

/// Integration tests against pysqlbridge 2.1.3 on loopback (see Fixtures/demo and scripts/pysqlbridge.sh).
final class LiveServerTests: XCTestCase {
    func testFullSessionTLSLoginAndSelect() async throws {
        let connection = try await LiveServer.connect(encryption: .on)
        let session = await connection.session
        XCTAssertEqual(session.encryption, "full")
        XCTAssertEqual(session.tdsVersion, .v7_4)
        XCTAssertFalse(session.database.isEmpty)
        let tables = try await connection.execute("SELECT id, name, score, city FROM people ORDER BY id")
        XCTAssertEqual(tables.count, 1)
        let people = try XCTUnwrap(tables.first)
        XCTAssertEqual(people.columns.map(\.name), ["id", "name", "score", "city"])
        XCTAssertEqual(people.rows.count, 4)
        XCTAssertEqual(people.rows[0]["id"], .int(1))
        XCTAssertEqual(people.rows[0]["name"]?.stringValue, "Alice")
        XCTAssertEqual(people.rows[0]["score"]?.doubleValue, 91.5)
        XCTAssertEqual(people.rows[1]["city"], .null)
        XCTAssertEqual(people.rows[2]["name"]?.stringValue, "Chloé")
        XCTAssertEqual(people.rows[2]["score"], .null)
        XCTAssertEqual(people.rows[2]["city"]?.stringValue, "Zürich")
        XCTAssertEqual(people.rows[3]["score"]?.doubleValue, 64)
        await connection.close()
    }

    func testLoginOnlyTLSThenPlaintextSession() async throws {
        let connection = try await LiveServer.connect(encryption: .off)
        let session = await connection.session
        XCTAssertEqual(session.encryption, "login")
        let tables = try await connection.execute("SELECT COUNT(*) AS n FROM people")
        XCTAssertEqual(tables.first?.rows.first?["n"]?.intValue, 4)
        await connection.close()
    }
}
