import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// How a ``WireRowBlock``'s two arrays grow (issue 43 item 3): geometrically, whether rows come
/// in runs or one at a time from the scan state (``WireRowProgress``); the room asked with
/// ``WireRowBlock/reserveOnAppend(rows:bytesPerRow:)`` is made by the first append that needs it,
/// never for a block that only takes a large value's row. The values stay the token decoder's.
final class WireRowBlockGrowthTests: XCTestCase {
    static let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
                          ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "s")]

    static func values(_ i: Int) -> [SQLValue] { [.int(Int32(i)), i % 7 == 0 ? .null : .string("row \(i)")] }

    static func stream(rows: Int) throws -> [UInt8] {
        var s = ServerTokens.colMetadata(columns, version: .v7_4)
        for i in 0 ..< rows { s += try ServerTokens.row(values(i), columns: columns) }
        return s + ServerTokens.done(version: .v7_4)
    }

    /// Rows fed byte by byte (each read by the scan state, ``WireRowBlock/appendRow(_:)``) or
    /// whole (one run): the capacities the block's offsets and bytes went through.
    static func fill(_ stream: [UInt8], _ split: DecoderVerifier.Split, reserve: (rows: Int, bytesPerRow: Int)? = nil)
        throws -> (block: WireRowBlock, offsetCapacities: Set<Int>, byteCapacities: Set<Int>, before: (Int, Int)) {
        var rng = SeededRandom(seed: 5)
        var decoder = TokenStreamDecoder(version: .v7_4)
        var block: WireRowBlock?
        var offsetCapacities = Set<Int>(), byteCapacities = Set<Int>()
        var before = (0, 0)
        for piece in DecoderVerifier.pieces(of: stream, split, using: &rng) {
            decoder.append(piece)
            while true {
                if block == nil, var b = decoder.makeWireRowBlock() {
                    if let reserve { b.reserveOnAppend(rows: reserve.rows, bytesPerRow: reserve.bytesPerRow) }
                    before = (b.offsets.capacity, b.bytes.capacity)
                    block = b
                }
                if var b = block {
                    let (_, end) = decoder.appendBufferedRows(to: &b, limit: 100_000, byteLimit: 1 << 30)
                    block = b
                    offsetCapacities.insert(b.offsets.capacity)
                    byteCapacities.insert(b.bytes.capacity)
                    if end == .needBytes { break }
                    if end != .otherToken { continue }
                }
                guard try decoder.next() != nil else { break }
            }
        }
        try decoder.finish()
        return (try XCTUnwrap(block), offsetCapacities, byteCapacities, before)
    }

    func testRowsOneAtATimeGrowTheArraysGeometrically() throws {
        let n = 2_000
        let got = try Self.fill(try Self.stream(rows: n), .byteByByte)
        XCTAssertEqual(got.block.rowCount, n)
        for r in 0 ..< n { XCTAssertEqual(got.block.values(row: r), Self.values(r), "row \(r)") }
        // 4,000 offsets: at most a doubling each (was: a reallocation per row).
        XCTAssertLessThanOrEqual(got.offsetCapacities.count, 14, "\(got.offsetCapacities.sorted())")
        XCTAssertLessThanOrEqual(got.byteCapacities.count, 16, "\(got.byteCapacities.sorted())")
    }

    func testTheRoomAskedIsMadeWhenRowsArrive() throws {
        let n = 300
        for split in DecoderVerifier.Split.allCases {
            let got = try Self.fill(try Self.stream(rows: n), split, reserve: (rows: 400, bytesPerRow: 30))
            XCTAssertEqual(got.before.0, 0, "\(split): nothing allocated before a row")
            XCTAssertEqual(got.before.1, 0, "\(split)")
            XCTAssertEqual(got.block.rowCount, n, "\(split)")
            for r in 0 ..< n { XCTAssertEqual(got.block.values(row: r), Self.values(r), "\(split) row \(r)") }
            XCTAssertGreaterThanOrEqual(got.block.offsets.capacity, 800, "\(split)")
            XCTAssertGreaterThanOrEqual(got.block.bytes.capacity, 400 * 30, "\(split)")
            // The room was made once (the first rows' capacities, then the one asked).
            XCTAssertLessThanOrEqual(got.offsetCapacities.count, 3, "\(split): \(got.offsetCapacities.sorted())")
        }
    }

    func testABlockOfOneLargeValueRowReservesNothing() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b")]
        let value = (0 ..< 200_000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        stream += try ServerTokens.row([.binary(value)], columns: columns, chunking: [ServerTokens.PLPChunking(sizes: [8000])])
        stream += ServerTokens.done(version: .v7_4)
        let got = try Self.fill(stream, .random, reserve: (rows: 1_000, bytesPerRow: 4_000))
        XCTAssertEqual(got.block.value(row: 0, column: 0), .binary(value))
        XCTAssertLessThan(got.block.bytes.capacity, 4_000, "only the row's header, not the room asked")
    }
}
