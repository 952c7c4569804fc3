import Foundation
import SQLClientTesting
import TDS
import TDSCapture
import XCTest

/// Captures turned into replay sessions (`sqlclient decode CAPTURE --to-session FILE`): every
/// plaintext capture of ../shared/captures with a login and queries replays to the CLI with the
/// values that were captured.
final class CaptureSessionsTests: XCTestCase {
    func captures() throws -> URL {
        guard let dir = SharedCaptures.directory(packageRoot: SharedCaptures.packageRoot(from: #filePath)) else {
            throw XCTSkip("../shared/captures is absent: captures-to-sessions tests skipped")
        }
        return dir
    }

    /// Every capture file (pcap, pcapng, .hex), relative paths.
    func captureFiles(_ dir: URL) -> [String] {
        let walker = FileManager.default.enumerator(atPath: dir.path)
        var out: [String] = []
        while let path = walker?.nextObject() as? String {
            if ["pcap", "pcapng", "hex"].contains((path as NSString).pathExtension) { out.append(path) }
        }
        return out.sorted()
    }

    /// The values of each result set of a captured response, and its last DONE count.
    static func captured(_ bytes: [UInt8], version: TDSVersion) -> (sets: [[[String?]]], count: Int?) {
        var decoder = TokenStreamDecoder(version: version)
        decoder.append(bytes)
        var sets: [[[String?]]] = []
        var count: Int?
        while let t = try? decoder.next() {
            if case .colMetadata(let m) = t, !m.isNoMetadata { sets.append([]) }
            if let v = t.rowValues, !sets.isEmpty { sets[sets.count - 1].append(v.map(\.canonicalText)) }
            if let d = t.doneStatus, d.status.contains(.count) { count = Int(d.rowCount) }
        }
        return (sets, count)
    }

    func testCapturesWithALoginAndQueriesReplayToTheCLIWithTheCapturedValues() throws {
        let dir = try captures()
        guard let sqlclient = ChildProcess.sqlclientExecutable() else { throw XCTSkip("the sqlclient binary is not built next to the tests") }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("capture-sessions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var replayedCaptures: [String] = []
        var valuesCompared = 0
        for path in captureFiles(dir) {
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(path)))
            guard let recording = try? ReplayRecording(capture: bytes, fileName: path) else { continue }
            // Sessions with a recorded login (LOGINACK) and at least one SQL batch.
            let eligible = recording.sections.filter { s in
                guard let login = s.loginResponse,
                      Self.containsLoginAck(login.responseBytes, version: s.version ?? .v7_4) else { return false }
                return s.exchanges.contains { if case .sqlBatch = $0.request { return true } else { return false } }
            }
            guard !eligible.isEmpty else { continue }
            // Through the command line, as a user would.
            let file = work.appendingPathComponent("\(replayedCaptures.count).tdssession")
            let made = try ChildProcess.run(sqlclient, ["decode", dir.appendingPathComponent(path).path, "--to-session", file.path])
            XCTAssertEqual(made.status, 0, "\(path): \(made.stderr)")
            let written = try ReplayRecording(contentsOf: file)
            XCTAssertTrue(Self.same(written, recording), "\(path): the CLI writes what ReplayRecording(capture:) makes")
            for section in eligible {
                let only = work.appendingPathComponent("\(replayedCaptures.count)-section.tdssession")
                try ReplayRecording(section).write(to: only)
                let server = try ChildProcess(sqlclient, ["replay", only.path])
                defer {
                    server.closeInput()
                    _ = try? server.wait(timeout: 30)
                }
                guard let line = server.waitForLine(containing: "listening on"), let port = line.split(separator: ":").last else {
                    return XCTFail("replay did not start: \(server.stderr)")
                }
                let version = section.version ?? .v7_4
                for exchange in section.exchanges {
                    guard case .sqlBatch(let sql) = exchange.request else { continue }
                    let run = try ChildProcess.run(sqlclient, ["-S", "127.0.0.1,\(port)", "-U", "u", "-P", "p", "--encrypt", "notsupported",
                                                               "--tds-version", ReplayRecordingVersion.text(version),
                                                               "--format", "json", "-Q", sql], timeout: 60)
                    XCTAssertEqual(run.status, 0, "\(path) \(sql): \(run.stderr)")
                    let expected = Self.captured(exchange.responseBytes, version: version)
                    let objects = run.stdout.split(separator: "\n").compactMap {
                        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                    }
                    let sets = objects.compactMap { $0["rows"] as? [[Any]] }.map { rows in
                        rows.map { row in row.map { v -> String? in v is NSNull ? nil : "\(v)" } }
                    }
                    XCTAssertEqual(sets, expected.sets, "\(path) \(sql)")
                    valuesCompared += expected.sets.joined().joined().count
                    if let count = expected.count {
                        XCTAssertEqual(objects.last?["rowsAffected"] as? Int, count, "\(path) \(sql): \(run.stdout)")
                    }
                }
            }
            replayedCaptures.append(path)
        }
        print("captures replayed to the CLI: \(replayedCaptures.joined(separator: ", ")); \(valuesCompared) values compared")
        XCTAssertTrue(replayedCaptures.contains("packetbeat_mssql_login_and_select.pcap"), "\(replayedCaptures)")
        XCTAssertTrue(replayedCaptures.contains("packetbeat_mssql_login_and_insert.pcap"), "\(replayedCaptures)")
        XCTAssertGreaterThan(valuesCompared, 0)
    }

    func testEveryCaptureOfTDS7ConversationsBecomesSessions() throws {
        let dir = try captures()
        var report: [String] = []
        for path in captureFiles(dir) {
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(path)))
            guard let recording = try? ReplayRecording(capture: bytes, fileName: path) else { continue }
            let exchanges = recording.sections.reduce(0) { $0 + $1.exchanges.count }
            report.append("\(path): \(recording.sections.count) sessions, \(exchanges) exchanges")
            XCTAssertTrue(Self.same(try ReplayRecording(text: recording.text), recording), "\(path): the file form reads back")
        }
        print(report.joined(separator: "\n"))
        let byName = Dictionary(report.map { (String($0.prefix { $0 != ":" }), $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(byName["ndpi_mssql_tds.pcap"], "ndpi_mssql_tds.pcap: 12 sessions, 19 exchanges")
        XCTAssertEqual(byName["arkime_tds5_sybase.pcap"], "arkime_tds5_sybase.pcap: 0 sessions, 0 exchanges", "Sybase TDS 5.0 is left out")
    }

    func testAMidConnectionCaptureKeepsItsRPCsAndResponses() throws {
        let dir = try captures()
        let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent("ndpi_mssql_tds.pcap")))
        let recording = try ReplayRecording(capture: bytes, fileName: "ndpi_mssql_tds.pcap")
        let rpcs = recording.allExchanges.compactMap { e -> String? in
            if case .rpc(let name, _) = e.request { return name } else { return nil }
        }
        XCTAssertTrue(rpcs.contains("sp_executesql"), "\(rpcs)")
        XCTAssertTrue(rpcs.contains("sp_prepexec"), "\(rpcs)")
        // The conversation with 4-byte row counts is decoded at TDS 7.1, as `sqlclient decode` does.
        let old = try XCTUnwrap(recording.sections.first { $0.name.contains(":2222 ") })
        XCTAssertTrue(old.comment?.contains("TDS 7.1") ?? false, old.comment ?? "")
        XCTAssertFalse(recording.text.contains("not decoded at"), "every captured response decodes")
    }

    /// The same sections, settings and exchanges (a one-section file holds the recording's
    /// comment as its session's).
    static func same(_ a: ReplayRecording, _ b: ReplayRecording) -> Bool {
        let a = ReplayRecording(comment: nil, sections: a.sections.filter { !$0.exchanges.isEmpty })
        let b = ReplayRecording(comment: nil, sections: b.sections.filter { !$0.exchanges.isEmpty })
        return a.sections.count == b.sections.count && zip(a.sections, b.sections).allSatisfy {
            $0.exchanges == $1.exchanges && $0.version == $1.version && $0.packetSize == $1.packetSize && $0.name == $1.name
        }
    }

    static func containsLoginAck(_ bytes: [UInt8], version: TDSVersion) -> Bool {
        var decoder = TokenStreamDecoder(version: version)
        decoder.append(bytes)
        while let t = try? decoder.next() { if case .loginAck = t { return true } }
        return false
    }
}

/// The `--tds-version` text of a version.
enum ReplayRecordingVersion {
    static func text(_ v: TDSVersion) -> String {
        switch v.generation { case 0x71, 0x70: return "7.1"; case 0x72: return "7.2"; case 0x73: return "7.3"; default: return "7.4" }
    }
}
