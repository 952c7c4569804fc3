#if canImport(CSQLClientOpenSSL)
import Foundation
import SQLClientTesting
import TDS
import XCTest

/// Record once against a real server, replay for any client: `sqlclient record` between the
/// CLI (and Microsoft's driver) and pysqlbridge with TLS on both legs, then `sqlclient replay
/// --tls` of that file to the CLI (byte-identical output), to FreeTDS's tsql and to Microsoft's
/// driver (their usual results).
final class RecordingProxyCommandTests: XCTestCase {
    /// What the CLI runs: results, NULLs, non-ASCII text, a server error, JSON output.
    static let runs: [[String]] = [
        ["-Q", "SELECT * FROM people"],
        ["-Q", "SELECT name, city FROM people WHERE id = 3"],
        ["--format", "json", "-Q", "SELECT sku, title, price FROM products ORDER BY sku"],
        ["-Q", "SELECT nope FROM people"],
        ["--encrypt", "off", "-Q", "SELECT COUNT(*) AS n FROM products"],   // TLS for the login only
    ]

    static let driverScript = """
        import sys, mssql_python
        c = mssql_python.connect(f"Server=127.0.0.1,{sys.argv[1]};UID=demo;PWD={sys.argv[2]};Encrypt=yes;TrustServerCertificate=yes")
        cur = c.cursor()
        cur.execute("SELECT id, name, score, city FROM people ORDER BY id")
        for row in cur.fetchall(): print(tuple(row))
        c.close()
        """

    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("record-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    func cli(_ port: Int, password: String, _ tls: [String], _ run: [String]) throws -> ChildProcess.Outcome {
        try ChildProcess.run(try LiveBridge.sqlclient(),
                             ["-S", "127.0.0.1,\(port)", "-U", LiveBridge.user, "-P", password] + tls + run, timeout: 60)
    }

    /// Starts `sqlclient ARGS` and returns it with the port of its `listening on HOST:PORT` line.
    func serve(_ arguments: [String]) throws -> (ChildProcess, Int) {
        let child = try ChildProcess(try LiveBridge.sqlclient(), arguments)
        guard let line = child.waitForLine(containing: "listening on"),
              let port = line.split(separator: " ")[2].split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .punctuationCharacters)) }) else {
            child.signal(SIGKILL)
            throw XCTSkip("sqlclient \(arguments.first ?? "") did not start: \(child.stderr)")
        }
        return (child, port)
    }

    func freetdsConf(port: Int, caFile: String?) throws -> String {
        let url = directory.appendingPathComponent("freetds-\(port).conf")
        try """
        [server]
        \thost = 127.0.0.1
        \tport = \(port)
        \ttds version = 7.4
        \tencryption = require
        \(caFile.map { "\tca file = \($0)" } ?? "")
        """.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    func tsqlRows(port: Int, password: String, caFile: String?) throws -> ChildProcess.Outcome {
        try ChildProcess.run(try LiveBridge.tsql(), ["-S", "server", "-U", LiveBridge.user, "-P", password, "-o", "q"],
                             environment: ["FREETDSCONF": try freetdsConf(port: port, caFile: caFile)],
                             stdin: "SELECT * FROM people\ngo\nSELECT name, city FROM people WHERE id = 3\ngo\n", timeout: 60)
    }

    func testRecordedThroughTheProxyWithTLSThenReplayedEveryClientSeesWhatTheServerSent() throws {
        try LiveBridge.require()
        let upstream = LiveBridge.port
        let password = LiveBridge.password
        // Direct runs against the server (trusting its self-signed certificate).
        let direct = try Self.runs.map { try cli(upstream, password: password, ["-C"], $0) }
        XCTAssertEqual(direct.map(\.status), [0, 0, 0, 1, 0], direct.map(\.stderr).joined())

        // Recording: each client trusts only the proxy's generated CA; the proxy checks nothing upstream.
        let file = directory.appendingPathComponent("demo.tdssession")
        let proxyCA = directory.appendingPathComponent("proxy-ca.pem").path
        let (recorder, proxyPort) = try serve(["record", "--upstream", "127.0.0.1,\(upstream)", "--listen", "127.0.0.1:0",
                                               "--out", file.path, "--trust-upstream-certificate", "--write-ca", proxyCA])
        let recorded = try Self.runs.map { try cli(proxyPort, password: password, ["--ca-file", proxyCA], $0) }
        var driverThroughProxy: ChildProcess.Outcome?
        do {
            driverThroughProxy = try LiveBridge.microsoftDriver(Self.driverScript, [String(proxyPort), password])
        } catch is XCTSkip {
            print("Microsoft's driver is not installed: its recording and replay are skipped")
        }
        recorder.closeInput()
        let stopped = try recorder.wait(timeout: 30)
        XCTAssertEqual(stopped.status, 0, stopped.stderr)
        XCTAssertTrue(stopped.stdout.contains("recorded \(Self.runs.count + (driverThroughProxy == nil ? 0 : 1)) connections"), stopped.stdout)
        XCTAssertTrue(stopped.stderr.contains("connection 1: TLS whole session"), stopped.stderr)
        XCTAssertTrue(stopped.stderr.contains("connection 5: TLS login only"), stopped.stderr)
        for (d, r) in zip(direct, recorded) {
            XCTAssertEqual(r.stdout, d.stdout)
            XCTAssertEqual(r.stderr, d.stderr)
            XCTAssertEqual(r.status, d.status)
        }

        // The file: no password, in any encoding.
        let data = try Data(contentsOf: file)
        let text = String(decoding: data, as: UTF8.self)
        let utf16 = Array(password.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let recording = try ReplayRecording(text: text)
        XCTAssertFalse(text.contains(password))
        for form in [Array(password.utf8), utf16, Login7.obfuscate(utf16)] {
            XCTAssertFalse(Array(data).contains(subsequence: form))
            for e in recording.allExchanges { XCTAssertFalse(e.responseBytes.contains(subsequence: form), "\(e.request)") }
        }
        XCTAssertEqual(recording.sections.count, Self.runs.count + (driverThroughProxy == nil ? 0 : 1))

        // Replay with TLS, strict: the same runs print the same bytes.
        let replayCA = directory.appendingPathComponent("replay-ca.pem").path
        let (replayer, replayPort) = try serve(["replay", file.path, "--tls", "--write-ca", replayCA, "--strict"])
        let replayed = try Self.runs.map { try cli(replayPort, password: "not-the-password", ["--ca-file", replayCA], $0) }
        replayer.closeInput()
        let report = try replayer.wait(timeout: 30)
        for (n, (d, r)) in zip(direct, replayed).enumerated() {
            XCTAssertEqual(r.stdout, d.stdout, "run \(n + 1) \(Self.runs[n])")
            XCTAssertEqual(r.stderr, d.stderr, "run \(n + 1)")
            XCTAssertEqual(r.status, d.status, "run \(n + 1)")
        }
        XCTAssertFalse(report.stdout.contains("replay (strict)"), report.stdout)
        XCTAssertFalse(report.stdout.contains("unmatched"), report.stdout)

        // The same file replayed to FreeTDS's tsql (TLS, checking the replay server's CA) and to Microsoft's driver.
        let (server, port) = try serve(["replay", file.path, "--tls", "--write-ca", replayCA])
        defer {
            server.closeInput()
            _ = try? server.wait(timeout: 30)
        }
        do {
            let tsqlDirect = try tsqlRows(port: upstream, password: password, caFile: nil)
            let tsqlReplayed = try tsqlRows(port: port, password: "not-the-password", caFile: replayCA)
            XCTAssertEqual(tsqlReplayed.status, 0, tsqlReplayed.stderr)
            XCTAssertTrue(tsqlReplayed.stdout.contains("Chloé\tNULL\tZürich"), tsqlReplayed.stdout)
            XCTAssertEqual(tsqlReplayed.stdout, tsqlDirect.stdout)
        } catch let skip as XCTSkip {
            print("tsql: \(skip.message ?? "skipped")")
        }
        if let driverThroughProxy {
            let driverDirect = try LiveBridge.microsoftDriver(Self.driverScript, [String(upstream), password])
            let driverReplayed = try LiveBridge.microsoftDriver(Self.driverScript, [String(port), "not-the-password"])
            XCTAssertEqual(driverDirect.status, 0, driverDirect.stderr)
            XCTAssertTrue(driverDirect.stdout.contains("(3, 'Chloé', None, 'Zürich')"), driverDirect.stdout)
            XCTAssertEqual(driverThroughProxy.stdout, driverDirect.stdout)
            XCTAssertEqual(driverReplayed.stdout, driverDirect.stdout, driverReplayed.stderr)
        }
    }

    func testACaptureBecomesASessionThatReplaysToTheCLI() throws {
        // (The real captures are covered by CaptureSessionsTests; this checks the command line.)
        let session = ReplayServerTLSTests.session   // SELECT 1 AS c
        var capture = "# a response as the .hex format writes it\n"
        capture += Packet.encode(message: session.exchanges[0].responseBytes, type: .tabularResult, packetSize: 4096)
            .map { String(format: "%02X", $0) }.joined(separator: " ") + "\n"
        let hex = directory.appendingPathComponent("one.hex"), out = directory.appendingPathComponent("one.tdssession")
        try capture.write(to: hex, atomically: true, encoding: .utf8)
        let made = try ChildProcess.run(try LiveBridge.sqlclient(), ["decode", hex.path, "--to-session", out.path])
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertTrue(made.stdout.contains("wrote 1 session to"), made.stdout)
        let read = try ReplayRecording(contentsOf: out)
        XCTAssertEqual(read.sections.first?.exchanges.first?.responseBytes, session.exchanges[0].responseBytes)
        let (server, port) = try serve(["replay", out.path])
        defer {
            server.closeInput()
            _ = try? server.wait(timeout: 30)
        }
        let run = try cli(port, password: "p", ["--encrypt", "notsupported"], ["--format", "csv", "-Q", "-- response 1 (its request was not captured)"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("1"), run.stdout)
    }

    func testBadUsageIsRefused() throws {
        let sqlclient = try LiveBridge.sqlclient()
        for args in [["record"], ["record", "--upstream", "x"], ["record", "--upstream", "x", "--out", "a", "--out-dir", "b"],
                     ["record", "--upstream", "x", "--out", "a", "--listen", "nonsense"],
                     ["record", "--upstream", "x", "--out", "a", "--certificate", "c.pem"],
                     ["replay", "f.tdssession", "--certificate", "c.pem", "--key", "k.pem"],
                     ["decode", "f.pcap", "--to-session"]] {
            let run = try ChildProcess.run(sqlclient, args, timeout: 30)
            XCTAssertEqual(run.status, 2, "\(args): \(run.stderr)")
        }
    }
}
#endif
