import Foundation
import XCTest

/// sqlcmd's script language in `sqlclient` (Sources/sqlclient/Script.swift and the runner in
/// QueryCommand.swift), against the live test server: variables, `:r`, `GO [n] -- comment`,
/// commands only outside strings and comments, `:on error`, `-b`, `exit`/`quit`, `-e`.
final class ScriptTests: XCTestCase {
    private var directory: URL!

    override func setUp() async throws {
        try LiveServer.require()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-script-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func file(_ name: String, _ text: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// Values of result sets, one line per row, with `-h-1 -W -s|` (no headers, no padding).
    private func rows(_ r: CLI.Result) -> [String] {
        r.stdout.split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.hasPrefix("(") }
    }

    func testVariablesFromTheCommandLineSetvarAndTheEnvironment() throws {
        let script = """
        :setvar who "Ann ""A."" Lee"
        SELECT name FROM people WHERE id = $(id)
        SELECT '$(who)' AS who, '$(SQLCLIENT_TEST_FROM_ENV)' AS env, '$(SQLCMDUSER)' AS login
        GO
        :setvar id 3
        SELECT name FROM people WHERE id = $(id)
        """
        let r = try CLI.live(["-h-1", "-W", "-s|", "-v", "id=2", "-i", try file("vars.sql", script)],
                             environment: ["SQLCLIENT_TEST_FROM_ENV": "from env"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(rows(r), ["Bob", "Ann \"A.\" Lee|from env|demo", "Chloé"])
    }

    /// An undefined variable is an error: the batch is not sent, later batches run, status 1.
    func testUndefinedVariableStopsItsBatch() throws {
        let r = try CLI.live(["-h-1", "-W"], stdin: "SELECT $(nope) AS x\nGO\nSELECT 5 AS five\nGO\n")
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("'nope' scripting variable not defined"), r.stderr)
        XCTAssertEqual(rows(r), ["5"])
        // -x leaves $(name) as written.
        let literal = try CLI.live(["-h-1", "-W", "-x", "-Q", "SELECT '$(nope)' AS x"])
        XCTAssertEqual(literal.status, 0, literal.stderr)
        XCTAssertEqual(rows(literal), ["$(nope)"])
    }

    func testReadFileWithVariableInItsName() throws {
        _ = try file("part.sql", "SELECT title FROM products WHERE sku = $(sku)\nGO\n")
        let main = try file("main.sql", ":setvar dir \(directory.path)\n:r $(dir)/part.sql\nSELECT 'after' AS a\n")
        let r = try CLI.live(["-h-1", "-W", "-v", "sku=101", "-i", main])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(rows(r), ["Mouse", "after"])
        let missing = try CLI.live(["-h-1", "-W"], stdin: ":r \(directory.path)/none.sql\nSELECT 1 AS one\n")
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains(":r: cannot read"), missing.stderr)
        XCTAssertEqual(rows(missing), ["1"])
        // A file that reads itself stops at the nesting bound instead of looping.
        let loop = try file("loop.sql", ":r \(directory.path)/loop.sql\n")
        let looped = try CLI.live(["-i", loop])
        XCTAssertEqual(looped.status, 1)
        XCTAssertTrue(looped.stderr.contains("nested more than"), looped.stderr)
    }

    /// `GO n -- comment` repeats, `go -- x` separates; GO inside a string or a block comment is text.
    func testGOWithCommentsAndInsideStringsOrComments() throws {
        let script = """
        SELECT 1 AS a
        GO 2 -- twice
        SELECT 'x
        GO
        y' AS s
        go -- once
        /* a comment
        GO
        */ SELECT 3 AS c
        GO
        SELECT 4 AS d -- GO
        """
        let r = try CLI.live(["-h-1", "-W"], stdin: script)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(rows(r), ["1", "1", "x GO y", "3", "4"])
    }

    /// -b stops at the first error (status 1, later batches skipped); without it later batches
    /// run and the status is still 1; `:on error ignore` runs on and leaves the status at 0.
    func testExitOnErrorAndOnErrorCommands() throws {
        let script = "SELECT 1 AS a\nGO\nRAISERROR('boom', 16, 1)\nGO\nSELECT 2 AS b\nGO\n"
        let stopped = try CLI.live(["-h-1", "-W", "-b"], stdin: script)
        XCTAssertEqual(stopped.status, 1)
        XCTAssertEqual(rows(stopped), ["1"])
        XCTAssertTrue(stopped.stderr.contains("Msg 50000, Level 16, State 1, Line 1\nboom"), stopped.stderr)

        let goesOn = try CLI.live(["-h-1", "-W"], stdin: script)
        XCTAssertEqual(goesOn.status, 1)
        XCTAssertEqual(rows(goesOn), ["1", "2"])

        let ignored = try CLI.live(["-h-1", "-W", "-b"], stdin: ":on error ignore\n" + script)
        XCTAssertEqual(ignored.status, 0, ignored.stderr)
        XCTAssertEqual(rows(ignored), ["1", "2"])

        let exits = try CLI.live(["-h-1", "-W"], stdin: ":on error exit\n" + script)
        XCTAssertEqual(exits.status, 1)
        XCTAssertEqual(rows(exits), ["1"])
    }

    func testExitAndQuit() throws {
        // exit: stop, the batch typed so far is not run.
        let bare = try CLI.live(["-h-1", "-W"], stdin: "SELECT 1 AS a\nGO\nSELECT 2 AS b\nexit\nSELECT 3 AS c\n")
        XCTAssertEqual(bare.status, 0)
        XCTAssertEqual(rows(bare), ["1"])
        // exit(): run it, then stop.
        let run = try CLI.live(["-h-1", "-W"], stdin: "SELECT 2 AS b\nEXIT()\nSELECT 3 AS c\n")
        XCTAssertEqual(run.status, 0)
        XCTAssertEqual(rows(run), ["2"])
        // exit(query): the status is the query's first column.
        let value = try CLI.live(["-h-1", "-W"], stdin: "SELECT 2 AS b\n:exit(SELECT COUNT(*) FROM people)\nSELECT 3 AS c\n")
        XCTAssertEqual(value.status, 4, value.stderr)
        XCTAssertEqual(rows(value), ["2", "4"])
        // quit: stop at once.
        let quit = try CLI.live(["-h-1", "-W"], stdin: "SELECT 2 AS b\nquit\nSELECT 3 AS c\n")
        XCTAssertEqual(quit.status, 0)
        XCTAssertEqual(rows(quit), [])
    }

    /// -e prints each batch before its results; :listvar lists variables; :reset drops the batch.
    func testEchoListvarAndReset() throws {
        let r = try CLI.live(["-h-1", "-W", "-e", "-v", "colour=blue"],
                             stdin: "SELECT 'dropped' AS x\n:reset\nSELECT '$(colour)' AS c\nGO\n:listvar\n")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("SELECT 'blue' AS c\nblue\n"), r.stdout)
        XCTAssertFalse(r.stdout.contains("dropped"), r.stdout)
        XCTAssertTrue(r.stdout.contains("COLOUR = \"blue\""), r.stdout)
        let unknown = try CLI.live([], stdin: ":frobnicate\n")
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("unknown command \":frobnicate\""), unknown.stderr)
    }

    /// A bad GO count in -Q or -i text is refused before connecting (nothing has run).
    func testBadGOCountInScriptTextIsAUsageError() throws {
        let r = try CLI.run(["-S", "127.0.0.1,1", "-U", "u", "-P", "p", "-Q", "SELECT 1\nGO 0 -- none"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("invalid batch count \"0\""), r.stderr)
        // With a variable the count is known only when the line runs.
        let v = try CLI.live(["-h-1", "-W", "-v", "n=3"], stdin: "SELECT 1 AS a\nGO $(n)\n")
        XCTAssertEqual(v.status, 0, v.stderr)
        XCTAssertEqual(rows(v), ["1", "1", "1"])
    }

    /// -q runs its text, then reads standard input; several -i files run in order.
    func testInitialQueryThenStandardInputAndSeveralInputFiles() throws {
        let q = try CLI.live(["-h-1", "-W", "-q", "SELECT 1 AS a"], stdin: "SELECT 2 AS b\n")
        XCTAssertEqual(q.status, 0, q.stderr)
        XCTAssertEqual(rows(q), ["1", "2"])
        let a = try file("a.sql", "SELECT 'a' AS x\n"), b = try file("b.sql", "SELECT 'b' AS x\n")
        let files = try CLI.live(["-h-1", "-W", "-i", a, b])
        XCTAssertEqual(files.status, 0, files.stderr)
        XCTAssertEqual(rows(files), ["a", "b"])
    }
}
