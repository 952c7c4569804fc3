import Foundation
import SQLClientTesting
import TDS
import XCTest

final class ReplayServerTests: XCTestCase {
    /// A hand-written 7.4 session: `SELECT 1 AS c` returns one int.
    static let selectOneText = """
    # hand-written: one INT4 column named c, one row, DONE with count 1
    @name select-one
    @version 7.4

    >>> SQL_BATCH
    | SELECT 1 AS c
    <<<
    # COLMETADATA: 1 column, UserType 0, Flags 0x0009 (nullable, updateable unknown), INT4, name "c"
    81 01 00 00 00 00 00 09 00 38 01 63 00
    # ROW: 1
    D1 01 00 00 00
    # DONE: count 1
    FD 10 00 C1 00 01 00 00 00 00 00 00 00
    """

    func testSessionTextRoundTrips() throws {
        let session = try ReplaySession(text: Self.selectOneText)
        XCTAssertEqual(session.name, "select-one")
        XCTAssertEqual(session.version, .v7_4)
        XCTAssertEqual(session.exchanges.count, 1)
        XCTAssertEqual(session.exchanges[0].request, .sqlBatch("SELECT 1 AS c"))
        XCTAssertEqual(session.exchanges[0].response.count, 3)
        XCTAssertEqual(session.exchanges[0].response[1].bytes, [0xD1, 1, 0, 0, 0])
        XCTAssertEqual(session.exchanges[0].response[1].comment, "ROW: 1")
        let again = try ReplaySession(text: session.text)
        XCTAssertEqual(again, session)
    }

    func testRPCParametersRoundTrip() throws {
        var session = ReplaySession(name: "rpc", version: .v7_2, attention: .ignore)
        session.exchanges.append(.init(
            request: .rpc(procedure: "sp_executesql", parameters: [
                .init(name: "@stmt", value: "SELECT @P1 -- \"quoted\"\nline two\u{FEFF}"),
                .init(name: "@P1", value: nil),
                .init(name: "", value: "42"),
            ]),
            response: [.init(comment: "DONE", bytes: ServerTokens.done(version: .v7_2))],
            faults: .init(stallAfter: 5)))
        let text = session.text
        XCTAssertTrue(text.contains("@attention ignore"))
        XCTAssertTrue(text.contains("<<< stall-after=5"))
        XCTAssertEqual(try ReplaySession(text: text), session)
    }

    func testBadHexIsReportedWithLine() {
        XCTAssertThrowsError(try ReplaySession(text: ">>> SQL_BATCH\n| x\n<<<\nZZ\n")) { error in
            XCTAssertEqual((error as? ReplaySession.ParseError)?.line, 4)
        }
    }

    func testFreeTDSReadsReplayedSelect() throws {
        let session = try ReplaySession(text: Self.selectOneText)
        let server = ReplayServer(session: session)
        let port = try server.start()
        defer { server.stop() }
        let out: FreeTDSOracle.Output
        do { out = try FreeTDSOracle.query(port: port, version: "7.4", batches: ["SELECT 1 AS c", "SELECT 2"]) }
        catch let e as FreeTDSOracle.Unavailable { throw XCTSkip(e.description) }
        XCTAssertTrue(out.ended, out.raw)
        XCTAssertEqual(out.batches.count, 2, out.raw)
        XCTAssertEqual(out.batches.first?.results.first?.columns, ["c"], out.raw)
        XCTAssertEqual(out.batches.first?.results.first?.rows, [["1"]], out.raw)
        XCTAssertEqual(out.batches.first?.counts, [1], out.raw)
        // The unrecorded batch gets an empty DONE: no result set, no count.
        XCTAssertEqual(out.batches.last?.results.count, 0, out.raw)
        XCTAssertEqual(server.unmatchedRequests, [.sqlBatch("SELECT 2")])
        let log = try XCTUnwrap(server.connections.first)
        XCTAssertEqual(log.clientVersion?.generation, 0x74)
        XCTAssertEqual(log.ackedVersion, .v7_4)
    }

    func testCommandLineRejectsBadArguments() {
        XCTAssertEqual(ReplayServer.runCommandLine(arguments: []), 2)
        XCTAssertEqual(ReplayServer.runCommandLine(arguments: ["a.tdssession", "--bogus"]), 2)
        XCTAssertEqual(ReplayServer.runCommandLine(arguments: ["/nonexistent/x.tdssession"]), 1)
    }

    /// `oracle --bench` converts every value natively and reports rows and values per batch
    /// (used by the benchmarks to measure FreeTDS on the same replayed bytes).
    func testFreeTDSBenchModeConvertsEveryValue() throws {
        let fixture = try OracleFixtures.fixture(version: .v7_4, format: .nbcrow)
        let server = ReplayServer(session: fixture.session)
        let port = try server.start()
        defer { server.stop() }
        let out: FreeTDSOracle.Output
        do { out = try FreeTDSOracle.query(port: port, version: "7.4", batches: fixture.expectations.map(\.sql), bench: true) }
        catch let e as FreeTDSOracle.Unavailable { throw XCTSkip(e.description) }
        XCTAssertTrue(out.ended, out.raw)
        XCTAssertEqual(out.batches.count, fixture.expectations.count)
        for (b, e) in zip(out.batches, fixture.expectations) where !e.typeName.hasPrefix("nvarchar(max)") && e.kind == .resultSet {
            XCTAssertEqual(b.benchRows, e.rows.count, e.typeName)
            XCTAssertEqual(b.benchValues, e.rows.count * e.columns.count, e.typeName)
            XCTAssertTrue(b.results.first?.rows.isEmpty ?? true, "bench mode prints no values")
        }
        // FreeTDS reconnects after the nvarchar(max) row it cannot read: count every connection.
        let recorded = fixture.session.exchanges.filter { $0.request != .sqlBatch(OracleFixtures.sql(for: OracleFixtures.typeCases().first { $0.name == "nvarchar(max)" }!)) }
            .reduce(0) { $0 + $1.responseBytes.count }
        XCTAssertGreaterThan(server.connections.reduce(0) { $0 + $1.responseBytesSent }, recorded)
        XCTAssertGreaterThan(server.connections.reduce(0) { $0 + $1.responseSeconds }, 0)
    }

    func testCRLFSessionFilesParseLikeLF() throws {
        let crlf = Self.selectOneText.replacingOccurrences(of: "\n", with: "\r\n")
        XCTAssertEqual(try ReplaySession(text: crlf), try ReplaySession(text: Self.selectOneText))
    }
}
