import Foundation
import SQLClient
import SQLClientTesting
import TDS
import TDSCapture
import XCTest

/// Real server bytes from ../shared/captures (read at test time, never copied) replayed through
/// FreeTDS and through SQLClient (the full client path and the token decoder), compared value
/// by value. Sessions are built in memory: each recorded SQL batch with the response that
/// followed it, and each whole plaintext result packet of the `.hex` files under a synthetic
/// batch text.
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

    /// A token stream from a `.hex` file: the payload of the TDS packets it holds, or the bytes
    /// themselves when they are a bare token stream.
    static func tokenStream(_ hex: HexCapture) throws -> [UInt8] {
        var assembler = PacketAssembler()
        assembler.append(hex.bytes)
        if let messages = try? assembler.nextMessages(), let m = messages.first,
           m.type == .tabularResult, assembler.bufferedByteCount == 0 {
            return m.payload
        }
        return hex.bytes
    }

    func testHexCaptureResultsDecodeLikeFreeTDS() async throws {
        let dir = try capturesDirectory
        var session = ReplaySession(name: "hex captures", version: .v7_4)
        for path in Self.hexResponses {
            let url = dir.appendingPathComponent(path)
            guard let data = try? Data(contentsOf: url) else { XCTFail("cannot read \(path)"); continue }
            let hex = try HexCapture.parse(Array(data))
            session.exchanges.append(.init(request: .sqlBatch("-- capture \(path)"),
                                           response: [.init(comment: path, bytes: try Self.tokenStream(hex))]))
        }
        let outcome = try await CaptureComparison.run(session: session, version: .v7_4)
        print(outcome.report)
        for f in outcome.failures { XCTFail(f) }
        XCTAssertGreaterThanOrEqual(outcome.valuesCompared, 40, outcome.report)
    }

    static func isLoginResponse(_ payload: [UInt8], version: TDSVersion) -> Bool {
        var decoder = TokenStreamDecoder(version: version)
        decoder.append(payload)
        while let t = try? decoder.next() { if case .loginAck = t { return true } }
        return false
    }

    func testPcapSessionsDecodeLikeFreeTDS() async throws {
        let dir = try capturesDirectory
        var total = 0
        var reports: [String] = []
        for name in ["packetbeat_mssql_login_and_select.pcap", "packetbeat_mssql_login_and_insert.pcap", "ndpi_mssql_tds.pcap"] {
            let data = try Data(contentsOf: dir.appendingPathComponent(name))
            let capture = try CaptureFile(bytes: Array(data), fileName: name)
            for (index, tds) in try capture.tdsSessions().enumerated() where tds.legacyProtocolReason == nil {
                let version = tds.version.version
                var session = ReplaySession(name: "\(name) #\(index)", version: version)
                // Each SQL batch with the response that followed it; each RPC's response under a
                // synthetic batch text (FreeTDS then reads the same tokens: rows, RETURNSTATUS,
                // RETURNVALUE, DONEPROC); a plaintext login response as the recorded LOGIN7 answer.
                var pending: String?
                var rpcCount = 0
                for message in tds.messages {
                    guard let m = message.message else { pending = nil; continue }
                    if message.direction == .client {
                        switch m.type {
                        case .sqlBatch: pending = (try? SQLBatch.decode(from: m.payload, version: version))?.text
                        case .rpc:
                            rpcCount += 1
                            let name = (try? RPCRequest.decode(from: m.payload, version: version)).flatMap { r -> String? in
                                guard let call = r.calls.first else { return nil }
                                switch call.procedure { case .id(let id): return id.description; case .name(let n): return n }
                            } ?? "?"
                            pending = "-- capture RPC \(rpcCount): \(name)"
                        default: pending = nil
                        }
                    } else if m.type == .tabularResult {
                        if let sql = pending {
                            session.exchanges.append(.init(request: .sqlBatch(sql), response: [.init(bytes: m.payload)]))
                        } else if session.loginResponse == nil, Self.isLoginResponse(m.payload, version: version) {
                            session.exchanges.append(.init(request: .login7, response: [.init(comment: "recorded login response", bytes: m.payload)]))
                        }
                        pending = nil
                    }
                }
                guard !session.exchanges.isEmpty else { continue }
                let outcome = try await CaptureComparison.run(session: session, version: version)
                reports.append("\(name) #\(index) (TDS \(version)): " + outcome.report)
                total += outcome.valuesCompared
                for f in outcome.failures { XCTFail("\(name) #\(index): \(f)") }
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
                    let result = try await connection.executeBatch(sql)
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
