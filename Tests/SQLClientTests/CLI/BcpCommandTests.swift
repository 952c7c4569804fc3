import Foundation
import XCTest
import SQLClientTesting
import TDS
@testable import SQLClient

/// `sqlclient bcp TABLE in FILE` against the recording bulk-load server, and beside FreeTDS's
/// `freebcp` loading the same file into the same server.
final class BcpCommandTests: XCTestCase {
    static func c(_ name: String, _ type: TypeInfo) -> ColumnMetadata {
        ColumnMetadata(flags: [.nullable, .updateable], typeInfo: type, name: name)
    }

    /// Every type freebcp reads from character files (datetimeoffset it cannot: "syntax error in
    /// source field"; it misreads dates before 1753: 0001-01-01 as 2001-01-01, 1000-01-01 as 1900-01-01).
    static let table: [ColumnMetadata] = [
        c("tiny", .tinyint), c("small", .smallint), c("i", .int), c("big", .bigint), c("flag", .bit), c("r", .real), c("f", .float),
        c("dec", .decimal(precision: 18, scale: 4)), c("num", .numeric(precision: 38, scale: 0)), c("m", .money), c("sm", .smallMoney),
        c("d", .date), c("t7", .time(scale: 7)), c("dt2", .datetime2(scale: 3)), c("dto", .datetimeOffset(scale: 7)), c("dt", .datetime),
        c("sdt", .smallDateTime), c("g", .uniqueIdentifier), c("ch", .char(10)), c("vc", .varchar(20)), c("vcmax", .varchar(nil)),
        c("nc", .nchar(5)), c("nvc", .nvarchar(30)), c("nvcmax", .nvarchar(nil)), c("bin", .binary(4)), c("vb", .varbinary(16)),
        c("vbmax", .varbinary(nil)),
    ]

    static let file = """
        7|-300|42|9000000000|1|1.5|-2.25|12345.6789|12345678901234567890123456789012345678|123.4567|-5|2024-02-29|\
        12:34:56.1234567|1999-12-31 23:59:59.997||2023-03-04 05:06:07.123|2009-07-08 10:00:00|6F9619FF-8B86-D011-B42D-00C04FC964FF|\
        fixed|café|\(String(repeating: "v", count: 9000))|ñandú|snowman ☃ 𝄞|\(String(repeating: "Ω", count: 5000))|DEADBEEF|010203|\
        \(String(repeating: "AB", count: 9000))
        255|-32768|-2147483648|-9223372036854775808|0|-0.5|1e+300|-99999999999999.9999|0|-922337203685477.5808|214748.3647|1753-01-02|\
        00:00:00|9999-12-31 23:59:59.999||1753-01-01 00:00:00|2079-06-06 00:00:00|00000000-0000-0000-0000-000000000001|x|\
        z|y|12345|n|m|00000000|FF|00
        ||||||||||||||||||||||||||

        """

    func binary() throws -> URL {
        guard let binary = CLIComparisonTests.sqlclientBinary() else { throw XCTSkip("no sqlclient binary next to the tests") }
        return binary
    }

    func write(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bcp-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: url)
        return url
    }

    func ours(_ server: BulkLoadServer, _ file: URL, _ extra: [String] = []) throws -> (status: Int32, stdout: String, stderr: String) {
        try CLIComparisonTests.run(try binary().path, ["bcp", "dbo.loadme", "in", file.path, "-S", "127.0.0.1,\(try server.start())",
                                                       "-U", "u", "-P", "p", "-N", "notsupported", "-c", "-t", "|"] + extra)
    }

    /// Time types at scale 7, so that FreeTDS's datetime2(7) and our datetime2(3) compare by value.
    static func normalized(_ v: SQLValue) -> SQLValue {
        switch v {
        case .time(let t): return .time(t.rescaled(to: 7) ?? t)
        case .datetime2(let d): return .datetime2(SQLDateTime2(date: d.date, time: d.time.rescaled(to: 7) ?? d.time))
        default: return v
        }
    }

    func testFreebcpAndOurBcpLoadTheSameFileToTheSameValues() throws {
        guard let freebcp = ["/usr/bin/freebcp", "/usr/local/bin/freebcp"].first(where: FileManager.default.isExecutableFile) else {
            throw XCTSkip("FreeTDS freebcp is not installed (apt-get install freetds-bin)")
        }
        let file = try write(Self.file)
        defer { try? FileManager.default.removeItem(at: file) }
        let theirsServer = BulkLoadServer(tables: ["loadme": Self.table])
        defer { theirsServer.stop() }
        let port = try theirsServer.start()
        let conf = FileManager.default.temporaryDirectory.appendingPathComponent("bcp-freetds-\(UUID().uuidString).conf")
        try Data("[bulk]\n\thost = 127.0.0.1\n\tport = \(port)\n\ttds version = 7.4\n\tencryption = off\n\tclient charset = UTF-8\n".utf8)
            .write(to: conf)
        defer { try? FileManager.default.removeItem(at: conf) }
        let freetds = try CLIComparisonTests.run(freebcp, ["dbo.loadme", "in", file.path, "-S", "bulk", "-U", "u", "-P", "p", "-c", "-t", "|"],
                                                 environment: ["FREETDSCONF": conf.path, "FREETDS": conf.path])
        XCTAssertTrue(freetds.stdout.contains("3 rows copied."), freetds.stdout + freetds.stderr)
        let oursServer = BulkLoadServer(tables: ["loadme": Self.table])
        defer { oursServer.stop() }
        let result = try ours(oursServer, file)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("3 rows copied."), result.stdout)

        let theirs = try XCTUnwrap(theirsServer.loads.first)
        let mine = try XCTUnwrap(oursServer.loads.first)
        XCTAssertNil(theirs.error)
        XCTAssertNil(theirs.done, "FreeTDS ends the message without DONE")
        XCTAssertEqual(mine.done, Done(status: []))
        XCTAssertEqual(theirs.columns.map(\.name), mine.columns.map(\.name))
        // Types: the same but for datetime2, which FreeTDS declares at scale 7 whatever the table's.
        var differences: [String] = []
        for (a, b) in zip(theirs.columns, mine.columns) where a.typeInfo != b.typeInfo {
            differences.append("\(a.name): freebcp \(a.typeInfo.sqlTypeName), ours \(b.typeInfo.sqlTypeName)")
        }
        XCTAssertEqual(differences, ["dt2: freebcp datetime2(7), ours datetime2(3)"])
        XCTAssertEqual(theirs.rows.count, 3)
        XCTAssertEqual(theirs.rows.count, mine.rows.count)
        for (r, (a, b)) in zip(theirs.rows, mine.rows).enumerated() {
            for (i, (x, y)) in zip(a, b).enumerated() {
                XCTAssertEqual(Self.normalized(x), Self.normalized(y), "line \(r + 1) column \(Self.table[i].name)")
            }
        }
        XCTAssertEqual(mine.rows[0][2], .int(42))
        XCTAssertEqual(mine.rows[0][20], .string(String(repeating: "v", count: 9000)))
        XCTAssertEqual(mine.rows.last, Array(repeating: .null, count: Self.table.count))
        XCTAssertEqual(mine.rows.dropFirst().first?[9], .money(SQLMoney(units: Int64.min)))
    }

    func testBadLinesAreReportedWithTheirNumbersAndSkipped() throws {
        let server = BulkLoadServer(tables: ["loadme": [Self.c("i", .int), Self.c("s", .nvarchar(5))]])
        defer { server.stop() }
        let file = try write("1|one\nx|two\n3|three!\n4\n5|five\r\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try ours(server, file)
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stderr, """
            line 2: column 1 [i]: "x" is not a valid int
            line 3: column 2 [s]: 6 UTF-16 code units exceed nvarchar(5) (at most 5)
            line 4: 1 field(s) for 2 column(s)
            3 row(s) skipped

            """)
        XCTAssertTrue(r.stdout.contains("2 rows copied."), r.stdout)
        XCTAssertEqual(server.loads.first?.rows, [[.int(1), .string("one")], [.int(5), .string("five")]])
    }

    func testRangeBatchesAndHints() throws {
        let server = BulkLoadServer(tables: ["loadme": [Self.c("i", .int), Self.c("s", .nvarchar(5))]])
        defer { server.stop() }
        let file = try write("header,row\n1,a\n2,b\n3,c\n4,d\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try CLIComparisonTests.run(try binary().path, [
            "bcp", "loadme", "in", file.path, "-S", "127.0.0.1,\(try server.start())", "-U", "u", "-P", "p", "-N", "notsupported",
            "-t", ",", "-r", "\\n", "-F", "2", "-L", "4", "-b", "2", "-k",
            "-h", "TABLOCK, ORDER(i DESC, [s]), CHECK_CONSTRAINTS, FIRE_TRIGGERS, ROWS_PER_BATCH = 3, KILOBYTES_PER_BATCH=16"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(server.loads.map(\.rowCount), [2, 1])
        XCTAssertEqual(server.loads.first?.statement, "INSERT BULK [loadme] ([i] int, [s] nvarchar(5)) WITH (CHECK_CONSTRAINTS, "
                           + "FIRE_TRIGGERS, KEEP_NULLS, KILOBYTES_PER_BATCH = 16, ROWS_PER_BATCH = 3, ORDER([i] DESC, [s] ASC), TABLOCK)")
        XCTAssertEqual(server.loads.flatMap(\.rows).map { $0[0] }, [.int(1), .int(2), .int(3)])
        for bad in [["bcp", "t", "out", "f"], ["bcp", "t", "in", "f", "-h", "NOLOCK"], ["bcp", "t", "in", "f", "-F", "0"],
                    ["bcp", "t", "in", "f", "-F", "3", "-L", "2"], ["bcp"]] {
            XCTAssertEqual(try CLIComparisonTests.run(try binary().path, bad).status, 2, "\(bad)")
        }
    }
}
