import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// The conformance oracle: every generated fixture (every type, TDS 7.1–7.4, ROW and NBCROW)
/// is replayed to FreeTDS (db-lib, `freetds/oracle.c`) and decoded by SQLClient, and both are
/// compared value by value with each other and with the value the generator encoded.
///
/// A SQLClient value that differs from the encoded one fails the test, naming the type, the
/// value's label, the TDS version and the row format. A FreeTDS value that differs is a
/// failure too unless ``FreeTDSDeviations`` explains it (see Fixtures/oracle/README.md).
final class OracleConformanceTests: XCTestCase {
    /// SQLClient's full client path (connect to the replay server, PRELOGIN, LOGIN7 at the
    /// fixture's version, SQL batches, decode) against FreeTDS.
    func testEveryTypeDecodesLikeFreeTDS() async throws {
        try await runOracle(path: .client)
    }

    /// The same through ``TokenStreamDecoder`` alone, fed the recorded bytes in 4,088-byte
    /// pieces, so a failure can be told apart from one in the connection layer.
    func testEveryTypeDecodesLikeFreeTDSThroughTheTokenDecoder() async throws {
        try await runOracle(path: .tokenStream)
    }

    /// The 7.2 and 7.4 sessions again with the server setting a 512-byte packet size by
    /// ENVCHANGE (the clients ask for 4,096), so rows and PLP chunks span many packets.
    func testSmallServerPacketsDecodeTheSame() async throws {
        try await runOracle(path: .client, packetSize: 512,
                            only: { $0.version == .v7_2 || ($0.version == .v7_4 && $0.format == .nbcrow) })
    }

    func runOracle(path: SQLClientSide.Path, packetSize: Int? = nil,
                   only: (OracleFixtures.Fixture) -> Bool = { _ in true }) async throws {
        let fixtures = try OracleFixtures.fixtures().filter(only)
        var report = ConformanceReport(path: path)
        for fixture in fixtures {
            let url = OracleFixtureFileTests.directory.appendingPathComponent(fixture.fileName)
            let session = try ReplaySession(contentsOf: url)
            XCTAssertEqual(session, fixture.session, "\(fixture.fileName) is stale: regenerate it")

            var served = session
            if let packetSize { served.packetSize = packetSize }
            let server = ReplayServer(session: served)
            let port = try server.start()
            // SQLClient: over the replay server, or the token decoder over the same bytes.
            let ours: [SQLClientSide.Batch]
            switch path {
            case .client: ours = await SQLClientSide.query(port: port, fixture: fixture)
            case .tokenStream: ours = try SQLClientSide.decode(session: session, fixture: fixture)
            }

            // FreeTDS: over the replay server.
            let theirs: FreeTDSOracle.Output
            do {
                theirs = try FreeTDSOracle.query(port: port, version: OracleFixtures.versionName(fixture.version),
                                                 batches: fixture.expectations.map(\.sql))
            } catch let e as FreeTDSOracle.Unavailable {
                server.stop()
                throw XCTSkip(e.description)
            }
            server.stop()
            // Both clients logged in at the fixture's version, and the server acknowledged it.
            let logins = server.connections.filter { $0.clientVersion != nil }
            XCTAssertGreaterThanOrEqual(logins.count, path == .client ? 2 : 1, fixture.fileName)
            for log in logins {
                if let packetSize { XCTAssertEqual(log.packetSize, packetSize) }
                XCTAssertEqual(log.clientVersion?.generation, fixture.version.generation, fixture.fileName)
                XCTAssertEqual(log.ackedVersion, fixture.version, fixture.fileName)
            }
            XCTAssertTrue(theirs.ended, "FreeTDS did not finish \(fixture.fileName):\n\(theirs.raw.suffix(2000))")
            XCTAssertEqual(server.unmatchedRequests.filter { if case .sqlBatch(let s) = $0 { return s.hasPrefix("SELECT id") } else { return false } }, [])

            report.compare(fixture: fixture, ours: ours, freetds: theirs)
        }
        print(report.text)
        for failure in report.failures { XCTFail(failure) }
        // Every FreeTDS deviation recorded in Fixtures/oracle/README.md is still observed (if
        // FreeTDS changes, the README and the rules must change with it).
        for id in FreeTDSDeviations.all.map(\.id) + FreeTDSDeviations.lostRows.map(\.id) {
            XCTAssertGreaterThan(report.explained[id, default: 0], 0, "FreeTDS deviation \(id) was not observed: update the README")
        }
        XCTAssertGreaterThanOrEqual(report.valuesCompared, 500, "the oracle must compare at least 500 values")
        XCTAssertEqual(Set(report.versionsSeen), Set(fixtures.map { OracleFixtures.versionName($0.version) }))
    }
}

/// SQLClient's side of the comparison: decoded batches (result sets of rows of canonical text).
enum SQLClientSide {
    enum Path: String { case client = "SQLConnection over the replay server", tokenStream = "TokenStreamDecoder over the recorded bytes" }

    struct Batch {
        var results: [[[String?]]] = []
        var columnNames: [[String]] = []
        var counts: [UInt64] = []
        var returnValues: [String?] = []
        var returnStatuses: [Int] = []
        var error: String?
    }

    /// Connects with ``SQLConnection`` (no encryption, the fixture's TDS version) and runs every
    /// batch of the fixture.
    static func query(port: UInt16, fixture: OracleFixtures.Fixture) async -> [Batch] {
        let config = SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "oracle", password: "oracle",
            encryption: .notSupported, connectTimeout: .seconds(10), applicationName: "sqlclient-oracle",
            tdsVersion: fixture.version)
        let connection: SQLConnection
        do {
            connection = try await SQLConnection.connect(config)
        } catch {
            return fixture.expectations.map { _ in Batch(error: "connect: \(error)") }
        }
        var out: [Batch] = []
        for e in fixture.expectations {
            var batch = Batch()
            if e.kind == .outputParameters, let procedure = e.procedure {
                do {
                    let result = try await connection.callProcedure(procedure)
                    batch.returnValues = result.outputs.map { $0.value.canonicalText }
                    batch.returnStatuses = result.returnStatuses.map(Int.init)
                } catch {
                    batch.error = "\(error)"
                }
                out.append(batch)
                continue
            }
            do {
                let result = try await connection.executeBatch(e.sql)
                for statement in result.statements {
                    switch statement {
                    case .resultSet(let set):
                        batch.results.append(set.rows.map { $0.values.map(\.canonicalText) })
                        batch.columnNames.append(set.columns.map(\.name))
                        if let n = set.rowsAffected { batch.counts.append(UInt64(n)) }
                    case .rowsAffected(let n):
                        if let n { batch.counts.append(UInt64(n)) }
                    }
                }
            } catch {
                batch.error = "\(error)"
            }
            out.append(batch)
        }
        await connection.close()
        return out
    }

    /// Decodes each exchange's response with ``TokenStreamDecoder`` fed in packet-sized pieces
    /// (4096-byte packets as on the wire).
    static func decode(session: ReplaySession, fixture: OracleFixtures.Fixture) throws -> [Batch] {
        var out: [Batch] = []
        for e in fixture.expectations {
            guard let exchange = OracleFixtures.exchange(for: e, in: session) else {
                out.append(Batch(error: "no recording")); continue
            }
            var batch = Batch()
            var decoder = TokenStreamDecoder(version: fixture.version)
            let bytes = exchange.responseBytes
            var i = 0
            do {
                while i < bytes.count {
                    let end = min(i + 4088, bytes.count)
                    decoder.append(Array(bytes[i..<end]))
                    i = end
                    while let token = try decoder.next() { collect(token, into: &batch) }
                }
                try decoder.finish()
            } catch {
                batch.error = "\(error)"
            }
            out.append(batch)
        }
        return out
    }

    static func collect(_ token: Token, into batch: inout Batch) {
        switch token {
        case .colMetadata(let m):
            batch.results.append([])
            batch.columnNames.append(m.columns.map(\.name))
        case .row, .nbcRow:
            guard let values = token.rowValues, !batch.results.isEmpty else { return }
            batch.results[batch.results.count - 1].append(values.map(\.canonicalText))
        case .done, .doneInProc, .doneProc:
            if let d = token.doneStatus, d.status.contains(.count) { batch.counts.append(d.rowCount) }
        case .returnValue(let r):
            batch.returnValues.append(r.value.canonicalText)
        case .returnStatus(let r):
            batch.returnStatuses.append(Int(r.value))
        default: break
        }
    }
}

/// Known differences between FreeTDS's decoding and the correct value. Each has an id, the
/// reason (also in Fixtures/oracle/README.md) and a rule that says whether it explains a
/// given difference; everything else is an unexplained mismatch.
enum FreeTDSDeviations {
    struct Deviation: Sendable {
        var id: String
        var reason: String
        var explains: @Sendable (_ type: String, _ label: String, _ version: String, _ expected: String?, _ freetds: String?) -> Bool
    }

    static let all: [Deviation] = [
        Deviation(
            id: "bom-dropped",
            reason: "FreeTDS converts UTF-16LE to the client charset with iconv, which drops a leading U+FEFF as a byte order mark",
            explains: { _, _, _, expected, freetds in
                guard let expected, let freetds, expected.unicodeScalars.first == "\u{FEFF}" else { return false }
                return freetds == String(String.UnicodeScalarView(expected.unicodeScalars.dropFirst()))
            }),
        Deviation(
            id: "variant-no-conversion",
            reason: "db-lib has no conversion from SYBVARIANT (98): dbwillconvert is false and dbconvert fails with 20053; db-lib does not expose the base type",
            explains: { type, _, _, expected, freetds in
                type == "sql_variant" && expected != nil && freetds == FreeTDSOracle.unsupported("98")
            }),
    ]

    /// Rows FreeTDS never returns because it fails on them (and gives up the connection).
    static let lostRows: [(id: String, type: String, label: String, reason: String)] = [
        ("plp-split-surrogates", "nvarchar(max)", "surrogates split across chunks",
         "FreeTDS fails with error 2401 (\"Character set conversion is not available\") on an nvarchar(max) value whose PLP chunks (1, 3, 2 bytes) split UTF-16 code units and surrogate pairs, and marks the connection dead"),
    ]

    static func explainLostRow(type: String, label: String) -> String? {
        lostRows.first { $0.type == type && $0.label == label }?.id
    }

    static func explain(type: String, label: String, version: String, expected: String?, freetds: String?) -> Deviation? {
        all.first { $0.explains(type, label, version, expected, freetds) }
    }
}

/// Compares canonical texts: exact, except float and real, which compare numerically.
enum CanonicalComparison {
    static func isFloatType(_ type: String, label: String) -> Bool {
        type == "real" || type == "float" || (type == "sql_variant" && (label == "float" || label == "real"))
    }

    static func same(_ a: String?, _ b: String?, type: String, label: String) -> Bool {
        if a == b { return true }
        guard let a, let b else { return false }
        if isFloatType(type, label: label) {
            if type == "real" || label == "real" {
                guard let x = Float(a), let y = Float(b) else { return false }
                return x == y
            }
            guard let x = Double(a), let y = Double(b) else { return false }
            return x == y
        }
        return false
    }
}

/// The printed report of one oracle run.
struct ConformanceReport {
    var path: SQLClientSide.Path
    var lines: [String] = []
    var failures: [String] = []
    var valuesCompared = 0
    var explained: [String: Int] = [:]
    var versionsSeen: [String] = []
    var typesSeen: Set<String> = []
    var moneyNotes = 0, moneyConverterDiffers = 0
    var moneyExamples: [String] = []

    mutating func compare(fixture: OracleFixtures.Fixture, ours: [SQLClientSide.Batch], freetds: FreeTDSOracle.Output) {
        let version = OracleFixtures.versionName(fixture.version)
        versionsSeen.append(version)
        let where_ = "TDS \(version) \(fixture.format.rawValue.uppercased())"
        var compared = 0, ourMismatches = 0, theirMismatches = 0, theirExplained = 0
        for (b, e) in fixture.expectations.enumerated() {
            let mine = b < ours.count ? ours[b] : SQLClientSide.Batch(error: "missing")
            let theirs = b < freetds.batches.count ? freetds.batches[b] : FreeTDSOracle.Batch(failures: ["missing"])
            if let err = mine.error { failures.append("SQLClient failed on \(e.typeName) at \(where_): \(err)"); continue }
            let outputs = e.kind == .outputParameters
            if outputs {
                if mine.returnStatuses != [0] { failures.append("SQLClient return status at \(where_): \(mine.returnStatuses)") }
                if theirs.returnStatus != [0] { failures.append("FreeTDS return status at \(where_): \(theirs.returnStatus)") }
                let names = theirs.returnValues.map(\.name)
                if names != e.columns { failures.append("FreeTDS output parameter names at \(where_): \(names.prefix(5))…") }
            }
            guard let myRows = outputs ? [mine.returnValues] : mine.results.first else {
                failures.append("SQLClient: no result for \(e.typeName) at \(where_)"); continue
            }
            let theirRows = outputs ? [theirs.returnValues.map(\.value)] : (theirs.results.first?.rows ?? [])
            var lostRowsExplained = false
            if theirRows.count < e.rows.count {
                let lost = e.labels[theirRows.count...]
                let ids = lost.map { FreeTDSDeviations.explainLostRow(type: e.typeName, label: $0) }
                if ids.allSatisfy({ $0 != nil }) {
                    lostRowsExplained = true
                    for id in ids { if let id { explained[id, default: 0] += 1 } }
                }
            }
            if theirRows.count != e.rows.count && !lostRowsExplained {
                failures.append("FreeTDS returned \(theirRows.count) rows for \(e.typeName) at \(where_), expected \(e.rows.count); \(theirs.failures) \(theirs.messages.prefix(3))")
            }
            if myRows.count != e.rows.count {
                failures.append("SQLClient returned \(myRows.count) rows for \(e.typeName) at \(where_), expected \(e.rows.count)")
            }
            if !outputs {
                if let names = mine.columnNames.first, names != e.columns {
                    failures.append("SQLClient column names for \(e.typeName) at \(where_): \(names.prefix(4))")
                }
                if let names = theirs.results.first?.columns, names != e.columns {
                    failures.append("FreeTDS column names for \(e.typeName) at \(where_): \(names.prefix(4))")
                }
            }
            if !outputs, mine.counts.last != UInt64(e.rowCount) {
                failures.append("SQLClient DONE count for \(e.typeName) at \(where_): \(mine.counts), expected \(e.rowCount)")
            }
            if !outputs, theirs.counts.first != e.rowCount && !lostRowsExplained {
                failures.append("FreeTDS DBCOUNT for \(e.typeName) at \(where_): \(theirs.counts), expected \(e.rowCount)")
            }
            for (r, expectedRow) in e.rows.enumerated() {
                let label = r < e.labels.count ? e.labels[r] : "row \(r + 1)"
                for (c, expected) in expectedRow.enumerated() {
                    let type = c < e.columnTypeNames.count ? e.columnTypeNames[c] : e.typeName
                    let valueLabel = outputs ? "RETURNVALUE \(e.columns[c]): \(e.columnLabels?[c] ?? "")"
                        : e.typeName == "all types" ? "\(label), column \(c + 1)" : label
                    typesSeen.insert(type)
                    compared += 1
                    let my: String?? = r < myRows.count && c < myRows[r].count ? .some(myRows[r][c]) : .none
                    let their: String?? = r < theirRows.count && c < theirRows[r].count ? .some(theirRows[r][c]) : .none
                    if let my {
                        if !CanonicalComparison.same(my, expected, type: type, label: label) {
                            ourMismatches += 1
                            let freetdsText = their.map { show($0) } ?? "no value"
                            failures.append("SQLClient decoded \(type) '\(valueLabel)' at \(where_) as \(show(my)), expected \(show(expected)) (FreeTDS: \(freetdsText))")
                        }
                    } else {
                        ourMismatches += 1
                        failures.append("SQLClient lost \(type) '\(valueLabel)' at \(where_)")
                    }
                    if r < (theirs.results.first?.notes.count ?? 0), let note = theirs.results.first?.notes[r][c + 1], let expected {
                        moneyNotes += 1
                        if note != expected {
                            moneyConverterDiffers += 1
                            if moneyExamples.count < 4 { moneyExamples.append("\(expected) -> \"\(note)\"") }
                        }
                    }
                    if let their {
                        if !CanonicalComparison.same(their, expected, type: type, label: label) {
                            theirMismatches += 1
                            if let d = FreeTDSDeviations.explain(type: type, label: label, version: version, expected: expected, freetds: their) {
                                theirExplained += 1
                                explained[d.id, default: 0] += 1
                            } else {
                                failures.append("FreeTDS decoded \(type) '\(valueLabel)' at \(where_) as \(show(their)), expected \(show(expected)) (SQLClient: \(show(my ?? nil)))")
                            }
                        }
                    }
                }
            }
        }
        valuesCompared += compared
        lines.append("\(fixture.fileName): \(fixture.expectations.count) result sets, \(compared) values; "
                     + "SQLClient mismatches \(ourMismatches); FreeTDS differs \(theirMismatches) (\(theirExplained) explained)")
    }

    func show(_ s: String?) -> String {
        guard let s else { return "NULL" }
        let q = "\"" + s + "\""
        return q.count > 80 ? String(q.prefix(77)) + "...\"" : q
    }

    var text: String {
        var out = "=== FreeTDS conformance oracle: SQLClient via \(path.rawValue) ===\n"
        out += lines.joined(separator: "\n") + "\n"
        out += "fixtures: \(lines.count), types: \(typesSeen.count), values compared: \(valuesCompared), "
        out += "failures: \(failures.count)\n"
        for (id, n) in explained.sorted(by: { $0.key < $1.key }) {
            out += "explained FreeTDS deviation \(id): \(n) value(s)\n"
        }
        out += "FreeTDS dbconvert(money -> char), not used for comparison: differs from the exact value in \(moneyConverterDiffers) of \(moneyNotes) money values"
        out += moneyExamples.isEmpty ? "\n" : ", e.g. " + moneyExamples.joined(separator: ", ") + "\n"
        for f in failures.prefix(200) { out += "MISMATCH " + f + "\n" }
        return out
    }
}
