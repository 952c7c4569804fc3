import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// ``SQLConnection/rowBlocks(_:)`` against the replay server: the same rows as
/// ``SQLConnection/query(_:)``, blocks never mixing result sets, messages between rows still
/// delivered, the connection usable afterwards, and an early break cancelling the batch.
final class RowBlockTests: XCTestCase {
    static let columns = [ColumnMetadata(typeInfo: .int, name: "id"), ColumnMetadata(typeInfo: .nvarchar(30), name: "name")]
    static let other = [ColumnMetadata(typeInfo: .bigint, name: "n")]

    static func response(rows: Int) throws -> [ReplaySession.Segment] {
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        for i in 0 ..< rows {
            let values: [SQLValue] = [.int(Int32(i)), i % 7 == 3 ? .null : .string("row \(i)")]
            bytes += values.contains(where: \.isNull) ? try ServerTokens.nbcRow(values, columns: columns)
                                                      : try ServerTokens.row(values, columns: columns)
            if i == rows / 2 {
                bytes += ServerTokens.message(number: 0, text: "halfway", version: .v7_4)
            }
        }
        bytes += ServerTokens.done(status: [.more, .count], rowCount: UInt64(rows), version: .v7_4)
        bytes += ServerTokens.colMetadata(other, version: .v7_4)
        for i in 0 ..< 3 { bytes += try ServerTokens.row([.bigint(Int64(i) << 40)], columns: other) }
        bytes += ServerTokens.done(status: .count, rowCount: 3, version: .v7_4)
        return [ReplaySession.Segment(bytes: bytes)]
    }

    func withServer(rows: Int, _ body: (SQLConnection) async throws -> Void) async throws {
        let session = ReplaySession(name: "blocks", version: .v7_4, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch("SELECT blocks"), response: try Self.response(rows: rows)),
            ReplaySession.Exchange(request: .sqlBatch("SELECT 1"), response: [ReplaySession.Segment(bytes:
                ServerTokens.colMetadata(Self.other, version: .v7_4) + (try ServerTokens.row([.bigint(1)], columns: Self.other))
                + ServerTokens.done(status: .count, rowCount: 1, version: .v7_4))]),
        ])
        let server = ReplayServer(session: session)
        let port = try server.start()
        defer { server.stop() }
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u",
                                                       password: "p", encryption: .notSupported, connectTimeout: .seconds(20),
                                                       packetSize: 4096)
        let connection = try await SQLConnection.connect(configuration)
        try await body(connection)
        await connection.close()
    }

    func testBlocksHoldTheSameRowsAsQueryAndNeverMixResultSets() async throws {
        try await withServer(rows: 20_000) { connection in
            var expected: [[SQLValue]] = []
            for try await row in connection.query("SELECT blocks") { expected.append(row.values) }
            XCTAssertEqual(expected.count, 20_003)

            var got: [[SQLValue]] = []
            var blocks = 0
            for try await block in connection.rowBlocks("SELECT blocks") {
                blocks += 1
                XCTAssertGreaterThan(block.count, 0)
                XCTAssertEqual(block.values.count, block.count * block.columns.count)
                let names = block.columns.map(\.name)
                XCTAssertTrue(names == ["id", "name"] || names == ["n"], "\(names)")
                for i in block.indices {
                    XCTAssertEqual(block[i].count, block.columns.count)
                    got.append(Array(block[i]))
                    XCTAssertEqual(block.row(i).values, Array(block[i]))
                }
            }
            XCTAssertEqual(got, expected)
            XCTAssertGreaterThan(blocks, 2, "20,000 rows arrive in several blocks")
            XCTAssertEqual(got.last, [.bigint(2 << 40)])
            // The connection is ready for the next request.
            var one: [SQLValue] = []
            for try await row in connection.query("SELECT 1") { one += row.values }
            XCTAssertEqual(one, [.bigint(1)])
        }
    }

    func testBreakingOutOfBlocksCancelsTheRestAndTheConnectionGoesOn() async throws {
        try await withServer(rows: 50_000) { connection in
            var seen = 0
            for try await block in connection.rowBlocks("SELECT blocks") {
                seen += block.count
                break
            }
            XCTAssertGreaterThan(seen, 0)
            XCTAssertLessThan(seen, 50_003)
            var one: [SQLValue] = []
            for try await row in connection.query("SELECT 1") { one += row.values }
            XCTAssertEqual(one, [.bigint(1)])
        }
    }
}
