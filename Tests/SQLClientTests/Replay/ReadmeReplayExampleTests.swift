import XCTest
import SQLClient
import SQLClientTesting

/// The README's "Testing without a SQL Server" example, run as written.
final class ReadmeReplayExampleTests: XCTestCase {
    func testReadmeReplayExample() async throws {
        let session = try ReplaySession(text: """
            >>> SQL_BATCH
            | SELECT 1 AS c
            <<<
            81 01 00 00 00 00 00 09 00 38 01 63 00
            D1 01 00 00 00
            FD 10 00 C1 00 01 00 00 00 00 00 00 00
            """)
        let server = ReplayServer(session: session)
        let port = try server.start(host: "127.0.0.1", port: 0)
        defer { server.stop() }
        let connection = try await SQLConnection.connect(
            try SQLConnectionConfiguration(server: "127.0.0.1,\(port)", user: "u", password: "p",
                                           encryption: .notSupported))
        let results = try await connection.execute("SELECT 1 AS c")
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(results[0].rows.count, 1)
        XCTAssertEqual(results[0].rows[0]["c"], .int(1))
        XCTAssertEqual(results[0].columns.first?.name, "c")
        XCTAssertEqual(server.unmatchedRequests.count, 0)
        await connection.close()
    }
}
