import Foundation
import XCTest
import SQLClientTesting
import TDS

/// sqlcmd habits of issue 26 item 6: `-y`/`-Y` display widths, `-k` control characters, `:out`
/// and `:error` redirection, `:connect`, `-L` (servers through SQL Server Browser).
final class SqlcmdHabitsTests: XCTestCase {
    /// A replay server answering `sql` with one row of `values` in `columns`, `copies` times.
    func server(_ columns: [ColumnMetadata], _ values: [SQLValue], sql: String, copies: Int = 8,
                extra: [ReplaySession.Exchange] = []) throws -> ReplayServer {
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
        try Row(values: values).encode(into: &w, columns: columns)
        Done(status: [.count], currentCommand: 0xC1, rowCount: 1).encode(into: &w, version: .v7_4)
        let exchanges = (0 ..< copies).map { _ in ReplaySession.Exchange(request: .sqlBatch(sql), response: [.init(bytes: w.bytes)]) }
        let server = ReplayServer(session: ReplaySession(name: "habits", exchanges: exchanges + extra))
        _ = try server.start()
        return server
    }

    /// The data line of a one-row table (the third line: header, dashes, row).
    func row(_ stdout: String) -> String {
        let lines = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return lines.count > 2 ? lines[2] : ""
    }

    func testDisplayWidthsOfLargeAndSizedTypes() throws {
        let big = String(repeating: "x", count: 300)
        let sql = "SELECT big, v FROM t"
        let server = try server([ColumnMetadata(typeInfo: .nvarchar(nil), name: "big"), ColumnMetadata(typeInfo: .varchar(20), name: "v")],
                                [.string(big), .string("abcdefghijklmnop")], sql: sql)
        defer { server.stop() }
        let args = CLI.loopbackArguments(port: Int(server.port)) + ["-Q", sql]
        // Default: the max type 256 wide (cut), varchar(20) 20 wide.
        let plain = try CLI.run(args)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(row(plain.stdout), String(repeating: "x", count: 256) + " " + "abcdefghijklmnop    ")
        // -y 10: the max type 10 wide.
        let narrow = try CLI.run(args + ["-y", "10"])
        XCTAssertEqual(row(narrow.stdout), "xxxxxxxxxx abcdefghijklmnop    ")
        // -y 0: whole values.
        let whole = try CLI.run(args + ["-y0"])
        XCTAssertEqual(row(whole.stdout), big + " abcdefghijklmnop    ")
        // -Y 5: sized types at most 5 wide; the large type keeps -y's width.
        let fixed = try CLI.run(args + ["-Y", "5", "-y", "3"])
        XCTAssertEqual(row(fixed.stdout), "xxx abcde")
        XCTAssertEqual(fixed.stdout.split(separator: "\n").first.map(String.init), "big v    ")
        // Out of range: a usage error.
        let bad = try CLI.run(args + ["-y", "8001"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("invalid -y display width"), bad.stderr)
    }

    func testControlCharacters() throws {
        let sql = "SELECT s FROM t"
        let server = try server([ColumnMetadata(typeInfo: .nvarchar(20), name: "s")], [.string("a\tb\r\n\nc")], sql: sql)
        defer { server.stop() }
        let csv = CLI.loopbackArguments(port: Int(server.port)) + ["--format", "csv", "-h", "-1", "-Q", sql]
        XCTAssertEqual(try CLI.run(csv).stdout, "\"a\tb\r\n\nc\"\r\n", "without -k the value is as sent (quoted)")
        XCTAssertEqual(try CLI.run(csv + ["-k"]).stdout, "abc\r\n", "-k removes control characters")
        XCTAssertEqual(try CLI.run(csv + ["-k1"]).stdout, "a b   c\r\n", "-k1 replaces each with a space")
        XCTAssertEqual(try CLI.run(csv + ["-k", "2"]).stdout, "a b c\r\n", "-k2 replaces each run with one space")
        let table = try CLI.run(CLI.loopbackArguments(port: Int(server.port)) + ["-k2", "-Q", sql])
        XCTAssertEqual(row(table.stdout), "a b c" + String(repeating: " ", count: 15))
    }

    func testOutAndErrorRedirect() throws {
        let sql = "SELECT v FROM t"
        var printed = ServerTokens.message(number: 0, state: 1, severity: 0, text: "printed", version: .v7_4)
        var done = ByteWriter()
        Done(status: [], currentCommand: 0xC1, rowCount: 0).encode(into: &done, version: .v7_4)
        printed += done.bytes
        let server = try server([ColumnMetadata(typeInfo: .int, name: "v")], [.int(7)], sql: sql,
                                extra: [.init(request: .sqlBatch("PRINT 'printed'"), response: [.init(bytes: printed)])])
        defer { server.stop() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let results = dir.appendingPathComponent("results.txt").path
        let errors = dir.appendingPathComponent("errors.txt").path
        let script = """
            \(sql)
            GO
            :out \(results)
            \(sql)
            GO
            :error "\(errors)"
            PRINT 'printed'
            GO
            :bogus
            :OUT stdout
            \(sql)
            GO
            """
        let r = try CLI.run(CLI.loopbackArguments(port: Int(server.port)) + ["-h", "-1"], stdin: script + "\n")
        XCTAssertEqual(r.status, 1, "the unknown command is a script error: \(r.stderr)")
        // A blank line before each result set after the first, wherever results go (as sqlcmd).
        XCTAssertEqual(r.stdout, "          7\n\n(1 row affected)\n\n          7\n\n(1 row affected)\n")
        XCTAssertEqual(r.stderr, "", "messages and errors went to the :error file")
        XCTAssertEqual(try String(contentsOfFile: results, encoding: .utf8), "\n          7\n\n(1 row affected)\n")
        XCTAssertEqual(try String(contentsOfFile: errors, encoding: .utf8), "printed\nsqlclient: unknown command \":bogus\"\n")
    }

    func testConnectSwitchesTheSession() throws {
        let alpha = try LoginScenarioServer(name: "alpha", behaviour: .init())
        let beta = try LoginScenarioServer(name: "beta", behaviour: .init())
        defer { alpha.stop(); beta.stop() }
        let script = """
            SELECT @@SERVERNAME
            GO
            :connect 127.0.0.1,\(beta.port)
            SELECT @@SERVERNAME
            GO
            :connect 127.0.0.1,\(alpha.port) -U other -P s3cret-Pw
            SELECT @@SERVERNAME
            GO
            :connect 127.0.0.1,1 -l 2
            SELECT @@SERVERNAME
            GO
            """
        let r = try CLI.run(CLI.loopbackArguments(port: Int(alpha.port)) + ["-h", "-1"], stdin: script + "\n")
        XCTAssertEqual(r.status, 1, "the failed :connect is an error: \(r.stderr)")
        let names = r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { ["alpha", "beta"].contains($0) }
        XCTAssertEqual(names, ["alpha", "beta", "alpha", "alpha"], "after the failed :connect the session stays: \(r.stdout)")
        XCTAssertTrue(r.stderr.contains("127.0.0.1"), r.stderr)
        XCTAssertFalse((r.stdout + r.stderr).contains("s3cret"), "a password is never printed")
        let alphaLogins = alpha.records(atLeast: 2).compactMap(\.login?.userName)
        XCTAssertEqual(alphaLogins, ["u", "other"])
        XCTAssertEqual(beta.records(atLeast: 1).compactMap(\.login?.userName), ["u"], "without -U the same login")
    }

    func testListServersThroughTheBrowser() throws {
        let responder = try ConfigurationTests.SSRPResponder(instances: ["SQLEXPRESS": 41433, "MSSQLSERVER": 1433])
        defer { responder.stop() }
        let list = try CLI.run(["-L", "--browser", "127.0.0.1:\(responder.port)"])
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertEqual(list.stdout, "\nServers:\n    LOOPBACK\n    LOOPBACK\\SQLEXPRESS\n")
        let clean = try CLI.run(["-Lc", "--browser", "127.0.0.1:\(responder.port)"])
        XCTAssertEqual(clean.stdout, "LOOPBACK\nLOOPBACK\\SQLEXPRESS\n")
        XCTAssertEqual(responder.received.first, [0x03], "CLNT_UCAST_EX")
    }
}
