import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// BulkLoadBody: a batch's BULKLOAD body in packet-sized pieces, a row at a time.
final class BulkCopyRunTests: XCTestCase {
    func body(rows: Int, batchSize: Int = .max, bad: Int? = nil) -> (BulkLoadBody, [BulkLoadColumn]) {
        let columns = [BulkLoadColumn(name: "id", type: .int), BulkLoadColumn(name: "s", type: .nvarchar(40))]
        var i = 1
        let source = BulkRowSource.sync { _ in
            guard i < rows else { return nil }
            i += 1
            return [.int(Int32(i)), .string(i == bad ? String(repeating: "x", count: 41) : "row \(i) " + String(repeating: "·", count: i % 30))]
        }
        return (BulkLoadBody(encoder: BulkLoadEncoder(columns: columns, version: .v7_4), first: [.int(1), .string("row 1")],
                             source: source, batchSize: batchSize, chunkSize: 504), columns)
    }

    func testPiecesArePacketSizedAndDecodeToTheRows() async throws {
        let (b, _) = body(rows: 1000)
        var pieces: [[UInt8]] = []
        while let p = try await b.next() { pieces.append(p) }
        XCTAssertTrue(b.exhausted)
        XCTAssertEqual(b.rowCount, 1000)
        XCTAssertGreaterThan(pieces.count, 50)
        // Each piece stops at the first row that reaches a packet's payload: at most one row more.
        XCTAssertTrue(pieces.dropLast().allSatisfy { (504 ..< 504 + 100).contains($0.count) }, "\(pieces.map(\.count))")
        var reader = BulkLoadReader(version: .v7_4)
        var rows = 0
        for p in pieces {
            reader.append(p)
            while let item = try reader.next() { if case .row = item { rows += 1 } }
        }
        try reader.finish()
        XCTAssertEqual(rows, 1000)
        XCTAssertTrue(reader.endedWithDone)
    }

    func testABatchStopsAtItsSizeAndABadRowThrowsWithItsNumber() async throws {
        let (b, _) = body(rows: 10, batchSize: 4)
        while try await b.next() != nil {}
        XCTAssertEqual(b.rowCount, 4)
        XCTAssertFalse(b.exhausted)
        XCTAssertEqual(b.nextRowNumber, 5)
        let (bad, _) = body(rows: 10, bad: 7)
        do {
            while try await bad.next() != nil {}
            XCTFail("expected an error")
        } catch let e as BulkLoadValueError {
            XCTAssertEqual(e.row, 7)
            XCTAssertEqual(e.columnName, "s")
        }
    }
}
