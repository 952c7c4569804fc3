import Foundation
import SQLClient
import SQLClientTesting
import TDS
import TDSCapture
import XCTest

/// Real server bytes from ../shared/captures (read at test time, never copied) replayed through
/// FreeTDS and through SQLClient (the full client path and the token decoder), compared value
/// by value. The sessions are what `sqlclient decode --to-session` makes of each capture.
final class CaptureReplayTests: XCTestCase {
    var capturesDirectory: URL {
        get throws {
            guard let dir = SharedCaptures.directory(packageRoot: FreeTDSOracle.packageRoot) else {
                throw XCTSkip("../shared/captures is absent")
            }
            return dir
        }
    }

    /// Whole plaintext result messages recorded from SQL Server 2019/2022/2025 (.hex files).
    static let hexResponses = [
        "packetbeat/packetbeat_test_15x_response_1.hex",
        "packetbeat/packetbeat_test_16x_datetimeResponse_1.hex",
        "packetbeat/packetbeat_test_16x_nullColsResponse_1.hex",
        "packetbeat/packetbeat_test_16x_selectResponse_1.hex",
        "packetbeat/packetbeat_test_16x_typesResponse_1.hex",
        "pysqlbridge/result.hex",
    ]

    /// The sessions `sqlclient decode --to-session` makes of a capture (ReplayRecording(capture:)),
    /// as FreeTDS's oracle program can ask for them: each RPC's response under a synthetic batch
    /// text (FreeTDS then reads the same tokens: rows, RETURNSTATUS, RETURNVALUE, DONEPROC), other
    /// requests without a response left out.
    static func batchSessions(_ path: String, in dir: URL) throws -> [ReplaySession] {
        let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(path)))
        var sessions: [ReplaySession] = []
        for var section in try ReplayRecording(capture: bytes, fileName: path).sections {
            var rpcCount = 0
            section.exchanges = section.exchanges.compactMap { e in
                var e = e
                switch e.request {
                case .login7: return e.responseBytes.isEmpty ? nil : e
                case .sqlBatch: return e.responseBytes.isEmpty ? nil : e
                case .rpc(let name, _):
                    rpcCount += 1
                    e.request = .sqlBatch("-- capture RPC \(rpcCount): \(name)")
                    return e.responseBytes.isEmpty ? nil : e
                default: return nil
                }
            }
            if !section.exchanges.isEmpty { sessions.append(section) }
        }
        return sessions
    }

    func testHexCaptureResultsDecodeLikeFreeTDS() async throws {
        let dir = try capturesDirectory
        var session = ReplaySession(name: "hex captures", version: .v7_4)
        for path in Self.hexResponses {
            guard let response = try Self.batchSessions(path, in: dir).first?.exchanges.first else {
                XCTFail("\(path) holds no response"); continue
            }
            session.exchanges.append(.init(request: .sqlBatch("-- capture \(path)"), response: response.response))
        }
        let outcome = try await CaptureComparison.run(session: session, version: .v7_4)
        print(outcome.report)
        for f in outcome.failures { XCTFail(f) }
        XCTAssertGreaterThanOrEqual(outcome.valuesCompared, 40, outcome.report)
    }

    func testPcapSessionsDecodeLikeFreeTDS() async throws {
        let dir = try capturesDirectory
        var total = 0
        var reports: [String] = []
        for name in ["packetbeat_mssql_login_and_select.pcap", "packetbeat_mssql_login_and_insert.pcap", "ndpi_mssql_tds.pcap"] {
            for session in try Self.batchSessions(name, in: dir) {
                let version = session.version ?? .v7_4
                let outcome = try await CaptureComparison.run(session: session, version: version)
                reports.append("\(name) \(session.name) (TDS \(version)): " + outcome.report)
                total += outcome.valuesCompared
                for f in outcome.failures { XCTFail("\(name) \(session.name): \(f)") }
            }
        }
        print(reports.joined(separator: "\n"))
        XCTAssertGreaterThan(total, 0, "no values compared from the pcaps")
    }
}

/// Replays one in-memory session to FreeTDS, SQLConnection and TokenStreamDecoder and compares.
enum CaptureComparison {
    struct Outcome {
        var valuesCompared = 0
        var resultSets = 0
        var failures: [String] = []
        var explained = 0
        var returnStatuses = 0
        var rowCounts = 0
        var messages = 0
        var recordedLogin = false
        /// Values compared with Microsoft ODBC Driver 18 (0 where it is not installed or the session is 7.1).
        var msodbcValuesCompared = 0
        var report: String {
            (recordedLogin ? "recorded login response; " : "") + "\(rowCounts) DONE counts, \(resultSets) result sets, \(valuesCompared) values compared, \(returnStatuses) return statuses, \(messages) INFO/ERROR, \(explained) explained FreeTDS deviations, \(msodbcValuesCompared) values compared with MSODBC, \(failures.count) failures"
        }
    }

    static func versionArgument(_ v: TDSVersion) -> String {
        switch v.generation { case 0x71, 0x70: return "7.1"; case 0x72: return "7.2"; case 0x73: return "7.3"; default: return "7.4" }
    }

    static func run(session: ReplaySession, version: TDSVersion) async throws -> Outcome {
        var outcome = Outcome()
        outcome.recordedLogin = session.loginResponse != nil
        let requests = session.exchanges.filter { $0.request != .login7 }
        let batches = requests.compactMap { e -> String? in if case .sqlBatch(let s) = e.request { return s } else { return nil } }
        let server = ReplayServer(session: session)
        let port = try server.start()
        defer { server.stop() }

        // Token decoder over the recorded bytes: decoded[batch][result set][row][column].
        var decoded: [[[[String?]]]] = []
        var hasError: [Bool] = []
        var statuses: [[Int]] = []
        var counts: [[Int]] = []
        var messageNumbers: [[Int]] = []
        for e in requests {
            var decoder = TokenStreamDecoder(version: version)
            decoder.append(e.responseBytes)
            var sawError = false
            var batchSets: [[[String?]]] = []
            var batchStatuses: [Int] = []
            var batchCounts: [Int] = []
            var batchMessages: [Int] = []
            do {
                while let t = try decoder.next() {
                    switch t {
                    case .colMetadata: batchSets.append([])
                    case .row, .nbcRow:
                        if let v = t.rowValues, !batchSets.isEmpty { batchSets[batchSets.count - 1].append(v.map(\.canonicalText)) }
                    case .error(let m): sawError = true; batchMessages.append(Int(m.message.number))
                    case .info(let m): batchMessages.append(Int(m.message.number))
                    case .returnStatus(let r): batchStatuses.append(Int(r.value))
                    case .done, .doneProc, .doneInProc:
                        if let d = t.doneStatus, d.status.contains(.count) { batchCounts.append(Int(d.rowCount)) }
                    default: break
                    }
                }
                try decoder.finish()
            } catch {
                outcome.failures.append("TokenStreamDecoder failed on \(e.request): \(error)")
            }
            decoded.append(batchSets)
            statuses.append(batchStatuses)
            counts.append(batchCounts)
            messageNumbers.append(batchMessages)
            hasError.append(sawError)
        }
        // SQLClient's full client path.
        var clientSets: [[[[String?]]]?] = []
        let config = SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "replay", password: "replay",
            encryption: .notSupported, connectTimeout: .seconds(10), tdsVersion: version)
        do {
            let connection = try await SQLConnection.connect(config)
            for (b, sql) in batches.enumerated() {
                do {
                    let result = try await connection.execute(SQLQuery(unsafeSQL: sql))
                    clientSets.append(result.resultSets.map { $0.rows.map { $0.values.map(\.canonicalText) } })
                } catch {
                    if !(b < hasError.count && hasError[b]) {
                        outcome.failures.append("SQLConnection failed on \(sql.prefix(60)): \(error)")
                    }
                    clientSets.append(nil)
                }
            }
            await connection.close()
        } catch {
            outcome.failures.append("SQLConnection could not connect to the replay server: \(error)")
        }

        // FreeTDS.
        let freetds: FreeTDSOracle.Output
        do {
            freetds = try FreeTDSOracle.query(port: port, version: versionArgument(version), batches: batches)
        } catch let e as FreeTDSOracle.Unavailable {
            throw XCTSkip(e.description)
        }

        // Microsoft ODBC Driver 18 (TDS 7.2 and later), where installed: result sets and values.
        if version.generation >= 0x72, (try? MSODBCOracle.executable()) != nil {
            let msodbc = try MSODBCOracle.query(port: port, batches: batches)
            for (b, sql) in batches.enumerated() {
                let ours = b < decoded.count ? decoded[b] : []
                let theirs = b < msodbc.batches.count ? msodbc.batches[b] : FreeTDSOracle.Batch()
                if theirs.results.count != ours.count {
                    outcome.failures.append("MSODBC returned \(theirs.results.count) result sets for \(sql.prefix(60)), SQLClient \(ours.count); \(theirs.failures) \(theirs.messages.prefix(2))")
                }
                for (s, (theirSet, ourRows)) in zip(theirs.results, ours).enumerated() {
                    if theirSet.rows.count != ourRows.count {
                        outcome.failures.append("MSODBC returned \(theirSet.rows.count) rows in result \(s + 1) of \(sql.prefix(60)), SQLClient \(ourRows.count)")
                    }
                    for (r, (theirRow, ourRow)) in zip(theirSet.rows, ourRows).enumerated() {
                        for (c, (their, our)) in zip(theirRow, ourRow).enumerated() {
                            outcome.msodbcValuesCompared += 1
                            let odbcType = c < theirSet.columnTypes.count ? theirSet.columnTypes[c] : 0
                            let typeName = odbcType == 7 ? "real" : odbcType == 6 || odbcType == 8 ? "float" : "ODBC type \(odbcType)"
                            if CanonicalComparison.same(their, our, type: typeName, label: "") { continue }
                            outcome.failures.append("\(sql.prefix(60)) result \(s + 1) row \(r + 1) column \(c + 1) (\(typeName)): MSODBC \(their ?? "NULL"), SQLClient \(our ?? "NULL")")
                        }
                    }
                }
            }
        }

        for (b, sql) in batches.enumerated() {
            let ours = b < decoded.count ? decoded[b] : []
            outcome.resultSets += ours.count
            if b < clientSets.count, let client = clientSets[b], client != ours {
                outcome.failures.append("SQLConnection and TokenStreamDecoder differ on \(sql.prefix(60)): \(client.prefix(2)) vs \(ours.prefix(2))")
            }
            let theirs = b < freetds.batches.count ? freetds.batches[b] : FreeTDSOracle.Batch()
            let ourStatuses = b < statuses.count ? statuses[b] : []
            outcome.returnStatuses += ourStatuses.count
            let ourMessages = b < messageNumbers.count ? messageNumbers[b] : []
            let theirMessages = theirs.messages.filter { $0.hasPrefix("MSG ") }
                .compactMap { Int($0.split(separator: " ").dropFirst().first ?? "") }
            outcome.messages += ourMessages.count
            if theirMessages != ourMessages {
                outcome.failures.append("server messages of \(sql.prefix(60)): FreeTDS \(theirMessages), SQLClient \(ourMessages)")
            }
            let ourCounts = b < counts.count ? counts[b] : []
            outcome.rowCounts += ourCounts.count
            if theirs.counts.filter({ $0 >= 0 }).last != ourCounts.last {
                outcome.failures.append("row counts of \(sql.prefix(60)): FreeTDS \(theirs.counts), SQLClient \(ourCounts)")
            }
            if theirs.returnStatus.last != ourStatuses.last {
                outcome.failures.append("return status of \(sql.prefix(60)): FreeTDS \(theirs.returnStatus), SQLClient \(ourStatuses)")
            }
            if theirs.results.count != ours.count {
                outcome.failures.append("FreeTDS returned \(theirs.results.count) result sets for \(sql.prefix(60)), SQLClient \(ours.count); \(theirs.failures) \(theirs.messages.prefix(2))")
            }
            for (s, (theirSet, ourRows)) in zip(theirs.results, ours).enumerated() {
                if theirSet.rows.count != ourRows.count {
                    outcome.failures.append("FreeTDS returned \(theirSet.rows.count) rows in result \(s + 1) of \(sql.prefix(60)), SQLClient \(ourRows.count)")
                }
                for (r, (theirRow, ourRow)) in zip(theirSet.rows, ourRows).enumerated() {
                    for (c, (their, our)) in zip(theirRow, ourRow).enumerated() {
                        outcome.valuesCompared += 1
                        let dbType = c < theirSet.columnTypes.count ? theirSet.columnTypes[c] : 0
                        let typeName = dbType == 59 ? "real" : dbType == 62 ? "float" : "column type \(dbType)"
                        if CanonicalComparison.same(their, our, type: typeName, label: "") { continue }
                        if FreeTDSDeviations.explain(type: typeName, label: "", version: versionArgument(version), expected: our, freetds: their) != nil {
                            outcome.explained += 1
                            continue
                        }
                        outcome.failures.append("\(sql.prefix(60)) result \(s + 1) row \(r + 1) column \(c + 1) (\(typeName)): FreeTDS \(their ?? "NULL"), SQLClient \(our ?? "NULL")")
                    }
                }
            }
        }
        return outcome
    }
}
