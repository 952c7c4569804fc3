#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClientTesting
import TDS
import XCTest

/// `sqlclient`'s output (Sources/sqlclient/QueryOutput.swift): sqlcmd's table layout with widths
/// from the declared types and its -h/-s/-W/-w/-o flags, CSV with an explicit NULL, JSON Lines
/// with typed values, and rows printed as they arrive with flat memory on an endless result.
final class QueryOutputTests: XCTestCase {
    func testTableWidthsComeFromDeclaredTypes() throws {
        let r = try CLI.live(["-Q", "SELECT id, name, score FROM people WHERE id <= 3 ORDER BY id"])
        XCTAssertEqual(r.status, 0, r.stderr)
        // int: 11 wide, right-aligned; nvarchar(6) (pysqlbridge declares a text column by its
        // longest value in the table); float: 24, right-aligned, NULL too.
        XCTAssertEqual(r.stdout, """
            id          name   score                   \n\
            ----------- ------ ------------------------
                      1 Alice                      91.5
                      2 Bob                       78.25
                      3 Chloé                      NULL

            (3 rows affected)

            """)
    }

    /// -W: no padding (trailing spaces gone), dashes as long as the name; -s: the separator;
    /// -h N: headers again every N rows; -h -1: none.
    func testTrimSeparatorAndHeaderRows() throws {
        let r = try CLI.live(["-W", "-s", ";", "-h", "2", "-Q", "SELECT id, city FROM people ORDER BY id"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "id;city\n--;----\n1;Paris\n2;NULL\n\nid;city\n--;----\n3;Zürich\n4;Berlin\n\n(4 rows affected)\n")
        let none = try CLI.live(["-W", "-s,", "-h-1", "-Q", "SELECT id, city FROM people WHERE id = 1"])
        XCTAssertEqual(none.stdout, "1,Paris\n\n(1 row affected)\n")
    }

    /// -w: no line longer than the width; wrapped lines keep every character.
    func testScreenWidthWrapsLines() throws {
        let r = try CLI.live(["-w", "12", "-Q", "SELECT id, name FROM people WHERE id = 1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertTrue(lines.allSatisfy { $0.count <= 12 }, r.stdout)
        XCTAssertEqual(r.stdout, "id          \nname  \n----------- \n------\n          1 \nAlice \n\n(1 row affec\nted)\n")
    }

    /// -o: results in the file, nothing on standard output; server messages stay on standard error.
    func testOutputFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-o-\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try CLI.live(["-h-1", "-W", "-o", path], stdin: "SELECT 7 AS n\nGO\nRAISERROR('to stderr', 16, 2)\n")
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stdout, "")
        XCTAssertTrue(r.stderr.contains("to stderr"), r.stderr)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "7\n\n(1 row affected)\n")
        let unwritable = try CLI.live(["-o", "/nonexistent/dir/out.txt", "-Q", "SELECT 1"])
        XCTAssertEqual(unwritable.status, 2)
        XCTAssertTrue(unwritable.stderr.contains("cannot write \"/nonexistent/dir/out.txt\""), unwritable.stderr)
    }

    /// -m L hides messages below severity L (the error still sets the status).
    func testErrorLevelHidesLowerSeverities() throws {
        let sql = "RAISERROR('eleven', 11, 1)\nGO\nRAISERROR('sixteen', 16, 1)\n"
        let all = try CLI.live([], stdin: sql)
        XCTAssertTrue(all.stderr.contains("eleven") && all.stderr.contains("sixteen"), all.stderr)
        let some = try CLI.live(["-m", "12"], stdin: sql)
        XCTAssertEqual(some.status, 1)
        XCTAssertFalse(some.stderr.contains("eleven"), some.stderr)
        XCTAssertTrue(some.stderr.contains("sixteen"), some.stderr)
    }

    /// CSV: NULL as `NULL` (sqlcmd's default) or the --null text; a string that reads like it is quoted.
    func testCSVNullRepresentation() throws {
        let sql = "SELECT id, city, N'NULL' AS word, N'' AS empty FROM people WHERE id = 2"
        let byDefault = try CLI.live(["--format", "csv", "-Q", sql])
        XCTAssertEqual(byDefault.status, 0, byDefault.stderr)
        XCTAssertEqual(byDefault.stdout, "id,city,word,empty\r\n2,NULL,\"NULL\",\r\n")
        let empty = try CLI.live(["--format", "csv", "--null", "", "-Q", sql])
        XCTAssertEqual(empty.stdout, "id,city,word,empty\r\n2,,NULL,\"\"\r\n")
        let semicolons = try CLI.live(["--format", "csv", "-s", ";", "-h-1", "-Q", "SELECT N'a;b' AS x, N'c,d' AS y"])
        XCTAssertEqual(semicolons.stdout, "\"a;b\";c,d\r\n")
    }

    /// --format json: JSON Lines, one object per result set; ints and bits are numbers, NULL null.
    func testJSONLinesWithTypedValues() throws {
        let r = try CLI.live(["--format", "json", "-Q",
                              "SELECT id, name, score FROM people WHERE id IN (2, 3) ORDER BY id; "
                              + "SELECT CAST(1 AS bit) AS b, CAST(9007199254740993 AS bigint) AS big, 1.5e0 AS f"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, [
            #"{"columns":[{"name":"id","type":"int"},{"name":"name","type":"nvarchar(6)"},{"name":"score","type":"float"}],"rows":[[2,"Bob",78.25],[3,"Chloé",null]],"rowsAffected":2}"#,
            // 2^53 + 1 is beyond what a double holds: its digits in a string (issue 26's JSON rule).
            #"{"columns":[{"name":"b","type":"bit"},{"name":"big","type":"bigint"},{"name":"f","type":"float"}],"rows":[[1,"9007199254740993",1.5]],"rowsAffected":1}"#,
        ])
        for line in lines { XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(line.utf8)), line) }
    }

    /// Issue 26 item 5: one JSON rule for `--format json|jsonl` and `decode --format json`, exact
    /// for any JSON reader: integers up to ±(2^53 - 1) as numbers, beyond as strings; decimal and
    /// money as strings of their digits; `--json-numbers` makes them all numbers, in both.
    func testOneJSONRuleForQueryOutputAndDecode() throws {
        let columns = [ColumnMetadata(typeInfo: .int, name: "i"), ColumnMetadata(typeInfo: .bigint, name: "safe"),
                       ColumnMetadata(typeInfo: .bigint, name: "big"), ColumnMetadata(typeInfo: .bigint, name: "low"),
                       ColumnMetadata(typeInfo: .decimal(precision: 20, scale: 2), name: "d"),
                       ColumnMetadata(typeInfo: .money, name: "m"), ColumnMetadata(typeInfo: .float, name: "f"),
                       ColumnMetadata(typeInfo: .bit, name: "b"), ColumnMetadata(typeInfo: .nvarchar(10), name: "s")]
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
        try Row(values: [.int(-7), .bigint(9_007_199_254_740_991), .bigint(9_007_199_254_740_993), .bigint(Int64.min),
                         .decimal(try XCTUnwrap(SQLDecimal("123456789012345678.25"))), .money(SQLMoney(units: 123_456)),
                         .float(0.1), .bit(true), .string("x")]).encode(into: &w, columns: columns)
        Done(status: [.count], currentCommand: 0xC1, rowCount: 1).encode(into: &w, version: .v7_4)
        let sql = "SELECT * FROM numbers"
        let server = ReplayServer(session: ReplaySession(name: "numbers", exchanges: [
            .init(request: .sqlBatch(sql), response: [.init(bytes: w.bytes)]),
            .init(request: .sqlBatch(sql), response: [.init(bytes: w.bytes)]),
            .init(request: .sqlBatch(sql), response: [.init(bytes: w.bytes)]),
        ]))
        let port = try server.start()
        defer { server.stop() }
        let exact = #"[-7,9007199254740991,"9007199254740993","-9223372036854775808","123456789012345678.25","12.3456",0.1,1,"x"]"#
        let numbers = #"[-7,9007199254740991,9007199254740993,-9223372036854775808,123456789012345678.25,12.3456,0.1,1,"x"]"#
        let json = try CLI.run(CLI.loopbackArguments(port: Int(port)) + ["--format", "json", "-Q", sql])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertTrue(json.stdout.contains(#""rows":["# + exact + "]"), json.stdout)
        let jsonl = try CLI.run(CLI.loopbackArguments(port: Int(port)) + ["--format", "jsonl", "-Q", sql])
        XCTAssertEqual(jsonl.stdout, #"{"i":-7,"safe":9007199254740991,"big":"9007199254740993","low":"-9223372036854775808","d":"123456789012345678.25","m":"12.3456","f":0.1,"b":1,"s":"x"}"# + "\n")
        let flagged = try CLI.run(CLI.loopbackArguments(port: Int(port)) + ["--format", "json", "--json-numbers", "-Q", sql])
        XCTAssertTrue(flagged.stdout.contains(#""rows":["# + numbers + "]"), flagged.stdout)
        for line in (json.stdout + flagged.stdout + jsonl.stdout).split(separator: "\n") {
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(line.utf8)), String(line))
        }

        // decode --format json: the same values, by the same rule (a bare token stream: --tokens).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("numbers-\(UUID().uuidString).bin")
        try Data(w.bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let decoded = try CLI.run(["decode", file.path, "--tokens", "--tds-version", "7.4", "--format", "json"])
        XCTAssertEqual(decoded.status, 0, decoded.stderr)
        XCTAssertTrue(decoded.stdout.contains(#""values":"# + exact), decoded.stdout)
        let decodedNumbers = try CLI.run(["decode", file.path, "--tokens", "--tds-version", "7.4", "--format", "json", "--json-numbers"])
        XCTAssertTrue(decodedNumbers.stdout.contains(#""values":"# + numbers), decodedNumbers.stdout)
        // Both documented.
        let help = try CLI.run(["--help"])
        XCTAssertTrue(help.stdout.contains("--json-numbers"), help.stdout)
        XCTAssertTrue(help.stdout.contains("2^53"), help.stdout)
        let decodeHelp = try CLI.run(["decode", "--help"])
        XCTAssertTrue(decodeHelp.stdout.contains("--json-numbers"), decodeHelp.stdout)
    }

    /// --format jsonl: one object per row, keys by SQLColumns.dictionaryKeys.
    func testJSONLOneObjectPerRow() throws {
        let r = try CLI.live(["--format", "jsonl", "-Q", "SELECT id, city, id, COUNT(*) FROM people WHERE id <= 2 GROUP BY id, city ORDER BY id"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, #"{"id":1,"city":"Paris","id_2":1,"column4":1}"# + "\n" + #"{"id":2,"city":null,"id_2":2,"column4":1}"# + "\n")
    }

    /// What the live server cannot send: decimal and money stay strings in JSON (exact digits),
    /// a count-only statement, PRINT text on standard error.
    func testDecimalsStayStringsAndCountsAndPrintOnReplay() throws {
        let columns = [ColumnMetadata(typeInfo: .decimal(precision: 10, scale: 3), name: "d"),
                       ColumnMetadata(typeInfo: .money, name: "m")]
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
        try Row(values: [.decimal(try XCTUnwrap(SQLDecimal("-1.500"))), .money(SQLMoney(units: 123_456))])
            .encode(into: &w, columns: columns)
        Done(status: [.count, .more], currentCommand: 0xC1, rowCount: 1).encode(into: &w, version: .v7_4)
        w.bytes += ServerTokens.message(number: 0, state: 1, severity: 0, text: "printed", version: .v7_4)
        Done(status: [.count], currentCommand: 0xC3, rowCount: 3).encode(into: &w, version: .v7_4)
        let sql = "SELECT d, m FROM t; PRINT 'printed'; UPDATE t SET d = 0"
        let server = ReplayServer(session: ReplaySession(name: "output", exchanges: [
            .init(request: .sqlBatch(sql), response: [.init(bytes: w.bytes)]),
            .init(request: .sqlBatch(sql), response: [.init(bytes: w.bytes)]),
        ]))
        let port = try server.start()
        defer { server.stop() }
        let json = try CLI.run(CLI.loopbackArguments(port: Int(port)) + ["--format", "json", "-Q", sql])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(json.stdout, #"{"columns":[{"name":"d","type":"decimal(10,3)"},{"name":"m","type":"money"}],"rows":[["-1.500","12.3456"]],"rowsAffected":1}"#
                       + "\n" + #"{"rowsAffected":3}"# + "\n")
        XCTAssertEqual(json.stderr, "printed\n")
        let table = try CLI.run(CLI.loopbackArguments(port: Int(port)) + ["-Q", sql])
        XCTAssertEqual(table.stdout, "d            m                    \n------------ ---------------------\n      -1.500               12.3456\n\n(1 row affected)\n\n(3 rows affected)\n")
    }

    /// An endless result set: rows keep printing and the CLI's resident memory stays under
    /// 64 MiB after 10 s (read from /proc/PID/status of the child). Then -t's query timeout on the
    /// same server: ATTENTION, the timeout reported, the next batch still runs.
    func testEndlessResultStreamsWithFlatMemory() throws {
        #if !os(Linux)
        throw XCTSkip("reads /proc")
        #else
        let server = try EndlessRowsServer()
        defer { server.stop() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try CLI.binary())
        process.arguments = CLI.loopbackArguments(port: server.port) + ["-Q", "SELECT id, name FROM endless"]
        process.environment = CLI.environment([:])
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let counter = LineCounter()
        out.fileHandleForReading.readabilityHandler = { counter.add($0.availableData) }
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            out.fileHandleForReading.readabilityHandler = nil
        }
        var samples: [(seconds: Int, lines: Int, rss: Int)] = []
        for second in 1 ... 10 {
            Thread.sleep(forTimeInterval: 1)   // sampling a running process, not waiting for a result
            let rss = processStatusField(pid: process.processIdentifier, "VmRSS") ?? -1
            samples.append((second, counter.lines, rss))
        }
        let summary = samples.map { "\($0.seconds)s: \($0.lines) lines, \($0.rss >> 10) KiB" }.joined(separator: "; ")
        print("CLI-RSS: \(summary)")
        XCTAssertTrue(process.isRunning, "the CLI ended on an endless result: \(summary)")
        let last = try XCTUnwrap(samples.last)
        XCTAssertGreaterThan(last.rss, 0, summary)
        XCTAssertLessThan(last.rss, 64 << 20, "resident memory after 10 s: \(summary)")
        XCTAssertGreaterThan(last.lines, samples[4].lines, "rows stopped printing: \(summary)")
        XCTAssertGreaterThan(samples[0].lines, 0, "nothing printed in the first second: \(summary)")
        XCTAssertGreaterThan(server.rowsSent, 100_000, summary)
        #endif
    }

    func testQueryTimeoutCancelsAndTheNextBatchRuns() throws {
        let server = try EndlessRowsServer()
        defer { server.stop() }
        // The endless batch times out after 1 s (ATTENTION, acknowledged); the next one runs.
        let r = try CLI.run(CLI.loopbackArguments(port: server.port) + ["-t", "1", "--format", "csv", "-h-1"],
                            stdin: "SELECT id, name FROM endless\nGO\nSELECT id, name FROM endless2\nGO\n")
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(server.attentions, 2, r.stderr)
        XCTAssertEqual(r.stderr.components(separatedBy: "did not finish within").count - 1, 2, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("1,row 1\r\n2,row 2\r\n"), String(r.stdout.prefix(100)))
    }
}

/// Counts the lines a child writes (nothing else kept).
final class LineCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add(_ data: Data) {
        let n = data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        lock.withLock { count += n }
    }
    var lines: Int { lock.withLock { count } }
}
