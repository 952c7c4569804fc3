import Foundation
import SQLClientTesting
import TDS
import XCTest

final class FreeTDSReplayServerTests: XCTestCase {
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
}
