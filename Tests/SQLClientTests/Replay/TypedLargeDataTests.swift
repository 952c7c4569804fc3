import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// A typed read of large binary values as `Data` over a connection (issue 43 item 1): the typed
/// sequence's request has its large binary values assembled as `Data` (kept apart at 64 KiB and
/// more), which the `Data` cells share; the values equal the buffered read's, byte for byte, and
/// the next request on the connection (not typed) reads the same rows as arrays again.
final class TypedLargeDataTests: XCTestCase {
    static let columns = [
        ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "data"),
        ColumnMetadata(flags: [.nullable], typeInfo: .image, name: "img"),
    ]

    static func blob(_ n: Int, seed: Int) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ seed &+ $0 >> 11) } }

    static let rows: [[SQLValue]] = [
        [.int(1), .binary(blob(300_000, seed: 1)), .binary(blob(65_536, seed: 2))],
        [.int(2), .null, .null],
        [.int(3), .binary([]), .binary(blob(10, seed: 3))],
        [.int(4), .binary(blob(70_001, seed: 4)), .binary(blob(65_535, seed: 5))],
        [.int(5), .binary(blob(1_000_000, seed: 6)), .null],
    ]

    func response() throws -> [ReplaySession.Segment] {
        let chunking = [nil, ServerTokens.PLPChunking(sizes: [8000, 1, 5000]), ServerTokens.PLPChunking(sizes: [4000], unknownLength: true)]
        var bytes = ServerTokens.colMetadata(Self.columns, version: .v7_4)
        for (i, row) in Self.rows.enumerated() {
            bytes += try ServerTokens.row(row, columns: Self.columns, chunking: [nil, chunking[i % 3], nil])
        }
        bytes += ServerTokens.done(status: .count, rowCount: UInt64(Self.rows.count), version: .v7_4)
        return [ReplaySession.Segment(bytes: bytes)]
    }

    func testTypedDataEqualsTheBufferedValuesAndTheNextRequestReadsArrays() async throws {
        let session = ReplaySession(name: "typed-data", version: .v7_4, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch("SELECT large"), response: try response()),
            ReplaySession.Exchange(request: .sqlBatch("SELECT large"), response: try response()),
            ReplaySession.Exchange(request: .sqlBatch("SELECT large"), response: try response()),
        ])
        let server = ReplayServer(session: session)
        let port = try server.start()
        defer { server.stop() }
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u",
                                                       password: "p", encryption: .notSupported, connectTimeout: .seconds(20),
                                                       packetSize: 4096)
        let connection = try await SQLConnection.connect(configuration)

        var typed: [(Int32?, Data?, Data?)] = []
        for try await row in connection.query("SELECT large").decode((Int32?, Data?, Data?).self) { typed.append(row) }
        XCTAssertEqual(typed.count, Self.rows.count)
        for (got, expected) in zip(typed, Self.rows) {
            XCTAssertEqual(got.0.map { SQLValue.int($0) } ?? .null, expected[0])
            for (g, e) in [(got.1, expected[1]), (got.2, expected[2])] {
                switch e {
                case .binary(let bytes):
                    let d = try XCTUnwrap(g, "row \(expected[0])")
                    XCTAssertEqual(d.count, bytes.count)
                    XCTAssertTrue(d.elementsEqual(bytes), "row \(expected[0]): byte for byte")
                default: XCTAssertNil(g, "row \(expected[0])")
                }
            }
        }
        // A Data changed by its reader is its own.
        var first = try XCTUnwrap(typed[0].1)
        first[0] &+= 1
        XCTAssertEqual(typed[0].1.map { [UInt8]($0) }, Self.blob(300_000, seed: 1))

        // The next request is not typed: its values are the arrays (and equal).
        var untyped: [[SQLValue]] = []
        for try await row in connection.query("SELECT large") { untyped.append(row.values) }
        XCTAssertEqual(untyped, Self.rows)

        // Rows of a typed read, each also read as SQLValue and [UInt8] (a Data kept apart, copied).
        typealias Mixed = (SQLValue, [UInt8]?, SQLValue)
        var mixed: [[SQLValue]] = []
        for try await (id, data, img) in connection.query("SELECT large").decode(Mixed.self) {
            mixed.append([id, data.map { .binary($0) } ?? .null, img])
        }
        XCTAssertEqual(mixed, Self.rows)
        await connection.close()
    }
}
