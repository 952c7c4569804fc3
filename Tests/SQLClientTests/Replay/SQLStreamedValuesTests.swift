import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// ``SQLConnection/streamingValues(_:timeout:)`` against the replay server: the values the parts
/// make equal what ``SQLConnection/query(_:)`` reads buffered, events in their place, a large
/// value in chunks past ``SQLConnectionConfiguration/maximumValueSize``, and an early break
/// cancelling the rest with the connection going on. (Splits of the bytes: TokenStreamDecoderTests.)
final class SQLStreamedValuesTests: XCTestCase {
    static let columns = [
        ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "data"),
        ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(nil), name: "note"),
    ]
    static let other = [ColumnMetadata(typeInfo: .bigint, name: "n")]

    static func blob(_ n: Int, seed: Int) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &+ $0 >> 9) } }

    static let rows: [[SQLValue]] = [
        [.int(1), .binary(blob(300_000, seed: 1)), .string(String(repeating: "ä€😀 ", count: 2000))],
        [.int(2), .null, .null],
        [.int(3), .binary([]), .string("")],
        [.int(4), .binary(blob(70_001, seed: 4)), .string("last")],
    ]

    static func response() throws -> [ReplaySession.Segment] {
        let chunking = [nil, ServerTokens.PLPChunking(sizes: [8000, 1, 5000]), ServerTokens.PLPChunking(sizes: [4000], unknownLength: true)]
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        for (i, row) in rows.enumerated() {
            bytes += i == 1 ? try ServerTokens.nbcRow(row, columns: columns, chunking: chunking)
                            : try ServerTokens.row(row, columns: columns, chunking: chunking)
            if i == 1 { bytes += ServerTokens.message(number: 0, text: "halfway", version: .v7_4) }
        }
        bytes += ServerTokens.done(status: [.more, .count], rowCount: UInt64(rows.count), version: .v7_4)
        bytes += ServerTokens.colMetadata(other, version: .v7_4)
        bytes += try ServerTokens.row([.bigint(7)], columns: other)
        bytes += ServerTokens.done(status: .count, rowCount: 1, version: .v7_4)
        return [ReplaySession.Segment(bytes: bytes)]
    }

    func withServer(maximumValueSize: Int? = nil, _ body: (SQLConnection) async throws -> Void) async throws {
        let one = [ReplaySession.Segment(bytes: ServerTokens.colMetadata(Self.other, version: .v7_4)
            + (try ServerTokens.row([.bigint(1)], columns: Self.other)) + ServerTokens.done(status: .count, rowCount: 1, version: .v7_4))]
        let session = ReplaySession(name: "streamed", version: .v7_4, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch("SELECT large"), response: try Self.response()),
            ReplaySession.Exchange(request: .sqlBatch("SELECT 1"), response: one),
        ])
        let server = ReplayServer(session: session)
        let port = try server.start()
        defer { server.stop() }
        var configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u",
                                                       password: "p", encryption: .notSupported, connectTimeout: .seconds(20),
                                                       packetSize: 4096)
        if let maximumValueSize { configuration.maximumValueSize = maximumValueSize }
        let connection = try await SQLConnection.connect(configuration)
        try await body(connection)
        await connection.close()
    }

    /// The rows the parts make (chunks concatenated, UTF-16LE text decoded), the events' kinds
    /// in order, and the largest chunk.
    static func collect(_ parts: SQLStreamedPartSequence) async throws -> (rows: [[SQLValue]], events: [String], largest: Int) {
        var rows: [[SQLValue]] = [], events: [String] = []
        var columns: SQLColumns?
        var row: [Int: SQLValue] = [:]
        var large: [Int: [UInt8]] = [:]
        var largest = 0
        for try await part in parts {
            switch part {
            case .event(let e):
                switch e {
                case .columns(let c): columns = c; events.append("columns")
                case .statementDone: events.append("done")
                case .message: events.append("message")
                default: events.append("other")
                }
            case .value(let c, let v):
                XCTAssertNil(row[c]); row[c] = v
            case .chunk(let c, let b):
                XCTAssertFalse(b.isEmpty)
                largest = max(largest, b.count)
                large[c, default: []] += b
            case .valueEnd(let c):
                let b = large.removeValue(forKey: c) ?? []
                if columns?[c].typeInfo.type == .nvarchar {
                    row[c] = .string(String(decoding: stride(from: 0, to: b.count, by: 2).map { UInt16(b[$0]) | UInt16(b[$0 + 1]) << 8 }, as: UTF16.self))
                } else {
                    row[c] = .binary(b)
                }
            case .rowEnd:
                let n = columns?.count ?? 0
                XCTAssertEqual(row.count, n, "every column gave a part")
                rows.append((0 ..< n).map { row[$0] ?? .null })
                row = [:]
            }
        }
        return (rows, events, largest)
    }

    func testPartsMakeTheValuesQueryReadsBufferedWithEventsInTheirPlace() async throws {
        try await withServer { connection in
            var expected: [[SQLValue]] = []
            for try await row in connection.query("SELECT large") { expected.append(row.values) }
            XCTAssertEqual(expected, Self.rows + [[.bigint(7)]])

            let got = try await Self.collect(connection.streamingValues("SELECT large"))
            XCTAssertEqual(got.rows, expected)
            XCTAssertEqual(got.events, ["columns", "message", "done", "columns", "done"])
            XCTAssertLessThanOrEqual(got.largest, 65_536, "a chunk is at most what one read brought")

            var one: [SQLValue] = []
            for try await row in connection.query("SELECT 1") { one += row.values }
            XCTAssertEqual(one, [.bigint(1)])
        }
    }

    func testChunksOfOneColumnConcatenateToItsValues() async throws {
        try await withServer { connection in
            var bytes: [UInt8] = []
            for try await chunk in connection.streamingValues("SELECT large").chunks(ofColumn: 1) { bytes += chunk }
            XCTAssertEqual(bytes, Self.blob(300_000, seed: 1) + Self.blob(70_001, seed: 4))
        }
    }

    func testAValuePastMaximumValueSizeIsStreamedButRefusedBuffered() async throws {
        try await withServer(maximumValueSize: 100_000) { connection in
            let got = try await Self.collect(connection.streamingValues("SELECT large"))
            XCTAssertEqual(got.rows, Self.rows + [[.bigint(7)]])
            // Buffered, the value passes the cap: the server sent more than the client accepts.
            do {
                for try await _ in connection.query("SELECT large") {}
                XCTFail("a 300,000-byte value passes the 100,000-byte cap")
            } catch let error as SQLClientError {
                XCTAssertTrue("\(error)".contains("maximum value size"), "\(error)")
            }
        }
    }

    func testBreakingOutAfterTheFirstChunkCancelsTheRestAndTheConnectionGoesOn() async throws {
        try await withServer { connection in
            var chunks = 0
            for try await part in connection.streamingValues("SELECT large") {
                if case .chunk = part { chunks += 1; break }
            }
            XCTAssertEqual(chunks, 1)
            var one: [SQLValue] = []
            for try await row in connection.query("SELECT 1") { one += row.values }
            XCTAssertEqual(one, [.bigint(1)])
        }
    }
}
