import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// `sqlclient` batch splitting against the replay server: CRLF scripts split on GO, `GO n` runs
/// the batch n times (bad counts are usage errors before anything runs), script files in UTF-16
/// or with a UTF-8 byte order mark, unreadable files, and standard input run batch by batch.
extension ReplayConnectionTests {
    private func binary() throws -> URL {
        guard let binary = CLIComparisonTests.sqlclientBinary() else {
            XCTFail("the sqlclient executable was not built next to the tests")
            throw XCTSkip("no sqlclient binary")
        }
        return binary
    }

    private func answer(_ sql: String, _ id: Int32) -> ReplaySession.Exchange {
        Self.exchange(sql, [Self.colMetadata(), Self.row(id, "r\(id)"), Self.done([.count], 1)])
    }

    private func args(_ server: ReplayServer) -> [String] {
        ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p", "--encrypt", "notsupported", "--format", "csv"]
    }

    func testCLISplitsCRLFScriptsAndRepeatsGOCount() throws {
        let binary = try binary()
        let server = try start([answer("SELECT id, name FROM a", 1),
                                answer("SELECT id, name FROM b", 2), answer("SELECT id, name FROM b", 2)])
        let r = try CLIComparisonTests.run(binary.path, args(server),
                                           stdin: "SELECT id, name FROM a\r\nGO\r\nSELECT id, name FROM b\r\n  go 2 \r\n")
        server.stop()
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(server.unmatchedRequests, [])
        XCTAssertEqual(server.connections.first?.requests.dropFirst().count, 3, "\(server.connections.first?.requests ?? [])")
        XCTAssertEqual(r.stdout.components(separatedBy: "2,r2").count - 1, 2, r.stdout)
        XCTAssertTrue(r.stdout.contains("1,r1"), r.stdout)
    }

    /// `-l`/`-t` of 9223372036854775807 never trap: the CLI takes any whole number of seconds and
    /// the configuration clamps it (``SQLConnectionConfiguration/maximumTimeout``), as it does the
    /// same seconds through a connection string: the batch runs.
    func testCLIHugeTimeoutsDoNotTrap() throws {
        let binary = try binary()
        let huge = "9223372036854775807"
        for flags in [["-l", huge], ["-t", huge], ["-l", "0"]] {
            let server = try start([answer("SELECT id, name FROM a", 3)])
            let r = try CLIComparisonTests.run(binary.path, args(server) + flags + ["-Q", "SELECT id, name FROM a"])
            server.stop()
            XCTAssertEqual(r.status, 0, "\(flags): \(r.stderr)")
            XCTAssertTrue(r.stdout.contains("3,r3"), "\(flags): \(r.stdout)")
        }
        let server = try start([answer("SELECT id, name FROM a", 3)])
        let cs = "Server=127.0.0.1,\(server.port);User ID=u;Password=p;Encrypt=notsupported;"
            + "Connect Timeout=\(huge);Command Timeout=\(huge)"
        let r = try CLIComparisonTests.run(binary.path, ["--connection-string", cs, "--format", "csv", "-Q", "SELECT id, name FROM a"])
        server.stop()
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("3,r3"), r.stdout)
    }

    func testCLIRejectsBadGOCountsBeforeRunning() throws {
        let binary = try binary()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("go-count-\(getpid()).sql")
        defer { try? FileManager.default.removeItem(at: file) }
        for count in ["0", "-1", "99999999999", "2147483648"] {
            try Data("SELECT 1\r\nGO \(count)\r\n".utf8).write(to: file)
            // No server: the count is refused before connecting (a connection failure would be 3).
            let r = try CLIComparisonTests.run(binary.path, ["-S", "127.0.0.1,1", "-U", "u", "-P", "p", "-i", file.path])
            XCTAssertEqual(r.status, 2, "GO \(count): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("invalid batch count \"\(count)\""), r.stderr)
        }
    }

    func testCLIReadsUTF16AndBOMScriptsAndReportsMissingFiles() throws {
        let binary = try binary()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("enc-\(getpid()).sql")
        defer { try? FileManager.default.removeItem(at: file) }
        let script = "SELECT id, name FROM a\r\nGO\r\n"
        let encodings: [[UInt8]] = [
            [0xFF, 0xFE] + Array(script.data(using: .utf16LittleEndian) ?? Data()),
            [0xFE, 0xFF] + Array(script.data(using: .utf16BigEndian) ?? Data()),
            [0xEF, 0xBB, 0xBF] + Array(script.utf8),
        ]
        for bytes in encodings {
            try Data(bytes).write(to: file)
            let server = try start([answer("SELECT id, name FROM a", 7)])
            let r = try CLIComparisonTests.run(binary.path, args(server) + ["-i", file.path])
            server.stop()
            XCTAssertEqual(r.status, 0, "\(bytes.prefix(3)): \(r.stderr)")
            XCTAssertTrue(r.stdout.contains("7,r7"), r.stdout)
            XCTAssertEqual(server.unmatchedRequests, [])
        }
        let missing = try CLIComparisonTests.run(binary.path, ["-S", "127.0.0.1,1", "-U", "u", "-P", "p",
                                                               "-i", "/nonexistent/dir/x.sql"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertEqual(missing.stderr, "sqlclient: cannot read \"/nonexistent/dir/x.sql\": no such file\n")
    }

    func testHelpListsEveryCommand() throws {
        for flag in ["--help", "-?", "-h"] {
            // As sqlcmd: help on standard output, exit status 0.
            let r = try CLIComparisonTests.run(try binary().path, [flag])
            XCTAssertEqual(r.status, 0, flag)
            XCTAssertEqual(r.stderr, "", flag)
            for command in ["sqlclient decode FILE", "sqlclient replay SESSION.tdssession", "--exec PROCEDURE", "--connection-string"] {
                XCTAssertTrue(r.stdout.contains(command), "\(flag): \(command) missing from:\n\(r.stdout)")
            }
        }
    }

    /// The first batch's result is printed while standard input is still open: batches run as
    /// their GO line arrives, not after end of input.
    func testCLIRunsStandardInputBatchesAsTheyArrive() throws {
        let binary = try binary()
        let server = try start([answer("SELECT id, name FROM a", 3), answer("SELECT id, name FROM b", 4)])
        defer { server.stop() }
        let process = Process()
        process.executableURL = binary
        process.arguments = args(server)
        let out = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = input
        let seen = DispatchSemaphore(value: 0)
        let collected = OutputBox()
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if collected.append(data).contains("3,r3") { seen.signal() }
        }
        try process.run()
        input.fileHandleForWriting.write(Data("SELECT id, name FROM a\nGO\n".utf8))
        let first = seen.wait(timeout: .now() + 30)
        XCTAssertEqual(first, .success, "the first batch ran before the end of input: \(collected.text)")
        XCTAssertFalse(collected.text.contains("4,r4"))
        input.fileHandleForWriting.write(Data("SELECT id, name FROM b\nGO\n".utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        out.fileHandleForReading.readabilityHandler = nil
        let rest = out.fileHandleForReading.readDataToEndOfFile()
        let all = collected.append(rest)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertTrue(all.contains("4,r4"), all)
    }
}

private final class OutputBox: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func append(_ more: Data) -> String {
        lock.withLock {
            data.append(more)
            return String(decoding: data, as: UTF8.self)
        }
    }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}
