import Foundation
import XCTest
@testable import SQLClient
import TDS

/// Runs the same queries through FreeTDS's `tsql` and through `sqlclient --format json` against
/// the live test server and checks that both clients read the same values.
final class CLIComparisonTests: XCTestCase {
    /// The built `sqlclient` executable, next to the test bundle.
    static func sqlclientBinary() -> URL? {
        var candidates: [URL] = []
        let runner = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        candidates.append(runner.deletingLastPathComponent().appendingPathComponent("sqlclient"))
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("sqlclient"))
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("sqlclient"))
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("sqlclient"))
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    stdin: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let r = try CLI.execute(executable, arguments, environment: env, stdin: stdin)
        return (r.status, r.stdout, r.stderr)
    }

    static func tsqlPath() -> String? {
        ["/usr/bin/tsql", "/usr/local/bin/tsql"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// tsql's rows (tab-separated, `-o q`), without the header line.
    func tsqlRows(_ sql: String) throws -> [[String]] {
        guard let tsql = Self.tsqlPath() else { throw XCTSkip("FreeTDS tsql is not installed (apt-get install freetds-bin)") }
        let result = try Self.run(tsql, ["-H", LiveServer.host, "-p", String(LiveServer.port), "-U", LiveServer.user,
                                         "-P", LiveServer.password, "-o", "q"],
                                  environment: ["TDSVER": "7.4"], stdin: sql + "\ngo\n")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        XCTAssertFalse(lines.isEmpty, "tsql printed nothing; stderr: \(result.stderr)")
        return lines.dropFirst().map { $0.components(separatedBy: "\t") }
    }

    struct JSONResult: Decodable {
        struct Column: Decodable { let name: String; let type: String }
        /// A value of `--format json`: integers and bits are JSON numbers, the rest strings;
        /// kept as text (a number's digits as written).
        struct Cell: Decodable {
            let text: String
            init(from decoder: Decoder) throws {
                let c = try decoder.singleValueContainer()
                if let i = try? c.decode(Int64.self) { text = String(i) }
                else if let d = try? c.decode(Double.self) { text = String(d) }
                else { text = try c.decode(String.self) }
            }
        }
        let columns: [Column]?
        let rows: [[Cell?]]?
        let rowsAffected: Int?
    }

    func sqlclientResults(_ sql: String) throws -> [JSONResult] {
        guard let binary = Self.sqlclientBinary() else {
            XCTFail("the sqlclient executable was not built next to the tests")
            return []
        }
        let result = try Self.run(binary.path, ["-S", "\(LiveServer.host),\(LiveServer.port)", "-U", LiveServer.user,
                                                "--trust-server-certificate", "--format", "json", "-Q", sql],
                                  environment: ["SQLCMDPASSWORD": LiveServer.password])
        XCTAssertEqual(result.status, 0, "sqlclient failed: \(result.stderr)")
        return try result.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(JSONResult.self, from: Data($0.utf8))
        }
    }

    /// tsql prints datetime as "Feb 29 2024 01:45PM" (minute precision).
    static func tsqlDate(_ text: String) -> Date? {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "MMM d yyyy hh:mma"
        return f.date(from: text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " "))
    }

    static func canonicalDate(_ text: String) -> Date? {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
        return f.date(from: text)
    }

    func assertSameValues(_ sql: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let theirs = try tsqlRows(sql)
        let ours = try sqlclientResults(sql)
        XCTAssertEqual(ours.count, 1, file: file, line: line)
        guard let set = ours.first, let columns = set.columns, let rows = set.rows else {
            return XCTFail("no result set from sqlclient", file: file, line: line)
        }
        XCTAssertEqual(rows.count, theirs.count, "row count", file: file, line: line)
        XCTAssertEqual(set.rowsAffected, rows.count, file: file, line: line)
        for (r, (mine, other)) in zip(rows, theirs).enumerated() {
            XCTAssertEqual(mine.count, other.count, "row \(r) width", file: file, line: line)
            for (c, (cell, text)) in zip(mine, other).enumerated() {
                let value = cell?.text
                let type = columns[c].type
                let place = "row \(r) column \(columns[c].name) (\(type))"
                guard let value else {
                    XCTAssertEqual(text, "NULL", place, file: file, line: line)
                    continue
                }
                switch type {
                case "float", "real":
                    XCTAssertEqual(Double(value), Double(text), place, file: file, line: line)
                case "datetime":
                    let mineDate = try XCTUnwrap(Self.canonicalDate(value), place, file: file, line: line)
                    let theirDate = try XCTUnwrap(Self.tsqlDate(text), "\(place): \(text)", file: file, line: line)
                    XCTAssertEqual(floor(mineDate.timeIntervalSince1970 / 60), theirDate.timeIntervalSince1970 / 60,
                                   place, file: file, line: line)
                default:
                    XCTAssertEqual(value, text, place, file: file, line: line)
                }
            }
        }
    }

    override func setUp() async throws {
        try LiveServer.requirePysqlbridge("compares with FreeTDS's tsql on the demo server")
    }

    func testPeopleReadTheSame() throws {
        try assertSameValues("SELECT id, name, score, city FROM people ORDER BY id")
    }

    func testProductsReadTheSame() throws {
        try assertSameValues("SELECT sku, title, price, stock FROM products ORDER BY sku")
    }

    func testCastsReadTheSame() throws {
        try assertSameValues("SELECT CAST(1 AS bit) AS yes, CAST(0 AS bit) AS no, "
                             + "CAST('2024-02-29 13:45:10' AS datetime) AS at, 1.5e0 AS f, CAST(NULL AS int) AS n, "
                             + "N'ünïcødé ✓' AS s, -2147483648 AS low, CAST(9007199254740993 AS bigint) AS big")
    }

    func testCLIExitStatusesAndMessages() throws {
        guard let binary = Self.sqlclientBinary() else { return XCTFail("sqlclient was not built") }
        let server = "\(LiveServer.host),\(LiveServer.port)"
        // A server error: the message on stderr in sqlcmd's form, exit status 1, earlier results printed.
        let failed = try Self.run(binary.path, ["-S", server, "-U", "demo", "-C", "-Q",
                                                "SELECT 1 AS a; RAISERROR('stop here', 16, 4)"],
                                  environment: ["SQLCMDPASSWORD": LiveServer.password])
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains("Msg 50000, Level 16, State 4, Line 1\nstop here"), failed.stderr)
        XCTAssertTrue(failed.stdout.contains("(1 row affected)"), failed.stdout)
        // A login failure: exit status 3, the password nowhere.
        let secret = "NotThePassword-42"
        let denied = try Self.run(binary.path, ["-S", server, "-U", "demo", "-P", secret, "-C", "-Q", "SELECT 1"])
        XCTAssertEqual(denied.status, 3)
        XCTAssertTrue(denied.stderr.contains("Msg 18456, Level 14, State 1"), denied.stderr)
        XCTAssertFalse(denied.stderr.contains(secret) || denied.stdout.contains(secret))
        // Batches on stdin separated by GO, table output.
        let table = try Self.run(binary.path, ["-S", server, "-U", "demo", "-C"],
                                 environment: ["SQLCMDPASSWORD": LiveServer.password, "TDSVER": "7.4"],
                                 stdin: "SELECT name FROM people WHERE id = 1\nGO\nSELECT sku FROM products WHERE sku = 101\ngo\n")
        XCTAssertEqual(table.status, 0, table.stderr)
        // sqlcmd's widths come from the declared types: nvarchar(6) (pysqlbridge sizes text columns
        // by their longest value) and int (11, right-aligned).
        XCTAssertEqual(table.stdout, "name  \n------\nAlice \n\n(1 row affected)\n\nsku        \n-----------\n        101\n\n(1 row affected)\n")
        // Not trusting the self-signed certificate fails to connect.
        let untrusted = try Self.run(binary.path, ["-S", server, "-U", "demo", "-Q", "SELECT 1"],
                                     environment: ["SQLCMDPASSWORD": LiveServer.password])
        XCTAssertEqual(untrusted.status, 3)
        XCTAssertTrue(untrusted.stderr.contains("certificate"), untrusted.stderr)
        // A usage error.
        let usage = try Self.run(binary.path, ["-S", server])
        XCTAssertEqual(usage.status, 2)
    }

    func testCLIJSONForCountOnlyStatements() throws {
        guard let binary = Self.sqlclientBinary() else { return XCTFail("sqlclient was not built") }
        // pysqlbridge gives DML no count, so `SET ROWCOUNT`-free SELECTs carry it; a replay test
        // covers `{"rowsAffected":N}` for INSERT. Here: JSON shape of a SELECT with no rows.
        let result = try Self.run(binary.path, ["-S", "\(LiveServer.host),\(LiveServer.port)", "-U", "demo", "-C",
                                                "--format", "json", "-Q", "SELECT id FROM people WHERE id > 100"],
                                  environment: ["SQLCMDPASSWORD": LiveServer.password])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "{\"columns\":[{\"name\":\"id\",\"type\":\"int\"}],\"rows\":[],\"rowsAffected\":0}\n")
    }

    func testCLIInputFileConnectionStringAndTDSVER() throws {
        guard let binary = Self.sqlclientBinary() else { return XCTFail("sqlclient was not built") }
        let server = "\(LiveServer.host),\(LiveServer.port)"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-cli-\(UUID().uuidString).sql")
        try "SELECT name FROM people WHERE id = 4\ngo\nSELECT title FROM products WHERE sku = 100\nGO 2\n"
            .write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try Self.run(binary.path, ["-S", server, "-U", "demo", "-C", "--format", "json", "-i", file.path],
                                    environment: ["SQLCMDPASSWORD": LiveServer.password])
        XCTAssertEqual(fromFile.status, 0, fromFile.stderr)
        let lines = fromFile.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, "GO 2 runs the second batch twice")
        XCTAssertTrue(lines[0].contains("[\"Dmitri\"]"), fromFile.stdout)
        XCTAssertTrue(lines[2].contains("[\"Keyboard\"]"), fromFile.stdout)

        let viaString = try Self.run(binary.path, [
            "--connection-string",
            "Server=\(server);UID=demo;PWD='\(LiveServer.password)';TrustServerCertificate=true;Encrypt=optional",
            "--format", "csv", "-Q", "SELECT COUNT(*) AS n FROM products"])
        XCTAssertEqual(viaString.status, 0, viaString.stderr)
        XCTAssertEqual(viaString.stdout, "n\r\n3\r\n")

        // TDSVER picks the login's TDS version (pysqlbridge refuses 7.1 by closing the connection).
        let v72 = try Self.run(binary.path, ["-S", server, "-U", "demo", "-C", "--format", "csv", "-Q", "SELECT 1 AS one"],
                               environment: ["SQLCMDPASSWORD": LiveServer.password, "TDSVER": "7.2"])
        XCTAssertEqual(v72.status, 0, v72.stderr)
        let v71 = try Self.run(binary.path, ["-S", server, "-U", "demo", "-C", "-Q", "SELECT 1"],
                               environment: ["SQLCMDPASSWORD": LiveServer.password, "TDSVER": "7.1"])
        XCTAssertEqual(v71.status, 3)
        let bad = try Self.run(binary.path, ["-S", server, "-U", "demo", "-C", "-Q", "SELECT 1"],
                               environment: ["SQLCMDPASSWORD": LiveServer.password, "TDSVER": "5.0"])
        XCTAssertEqual(bad.status, 2)
    }
}
