// The README's "Testing your code without a SQL Server" example: the code between the
// markers is the README's block, character for character (checked below).
// README example begins
import Foundation
import SQLClient
import SQLClientTesting
import XCTest

/// The code under test: products to reorder.
func productsToReorder(_ connection: SQLConnection) async throws -> [String] {
    let result = try await connection.execute(
        "SELECT title FROM products WHERE stock < 5 OR stock IS NULL ORDER BY title")
    return result.rows.compactMap { $0["title"]?.canonicalText }
}

final class ReorderTests: XCTestCase {
    func testProductsToReorder() async throws {
        // Recorded once with `sqlclient record`, committed with the tests.
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fixtures/sessions/readme-inventory.tdssession")
        let identity = try TLSServerIdentity.generated()         // a CA and a certificate, made here
        let server = ReplayServer(recording: try ReplayRecording(contentsOf: file),
                                  options: .init(tls: identity, strict: true))
        let port = try server.start()
        defer { server.stop() }

        // The default encryption (.on) stays: the test only trusts the generated CA.
        var config = try SQLConnectionConfiguration(server: "127.0.0.1,\(port)", user: "demo",
                                                    password: "not checked by the replay server")
        config.tls.caFile = try identity.caCertificateFile()
        let connection = try await SQLConnection.connect(config)
        let titles = try await productsToReorder(connection)
        await connection.close()

        XCTAssertEqual(titles, ["Monitor 27in", "Mouse"])
        try server.verify(requireAllReplayed: true)   // nothing unexpected, nothing left over
    }
}
// README example ends

final class ReadmeRecordReplayExampleTests: XCTestCase {
    func testTheReadmeShowsThisExampleAsItIs() throws {
        let here = try String(contentsOfFile: #filePath, encoding: .utf8)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let begin = "// README example begins\n", end = "// README example ends"
        let start = try XCTUnwrap(here.range(of: begin)), stop = try XCTUnwrap(here.range(of: end))
        let example = String(here[start.upperBound ..< stop.lowerBound])
        XCTAssertTrue(readme.contains("```swift\n" + example + "```\n"),
                      "README.md's record-and-replay example differs from ReadmeRecordReplayExampleTests.swift")
    }
}
