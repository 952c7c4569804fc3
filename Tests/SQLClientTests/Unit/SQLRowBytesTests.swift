import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// ``SQLRow/withUnsafeBytes(at:_:)`` (issue 43): the bytes of binary, json and vector values lent
/// where the row holds them, the same for a row of wire bytes and a row built by code, and a
/// typed error (never a trap) for a column out of range or of another type.
final class SQLRowBytesTests: XCTestCase {
    static let columns = SQLColumns([
        SQLColumn(name: "id", typeInfo: .int, isNullable: false),
        SQLColumn(name: "small", typeInfo: .varbinary(50), isNullable: true),
        SQLColumn(name: "blob", typeInfo: .varbinary(nil), isNullable: true),
        SQLColumn(name: "doc", typeInfo: .json, isNullable: true),
        SQLColumn(name: "v", typeInfo: .vector(dimensions: 5), isNullable: true),
        SQLColumn(name: "name", typeInfo: .nvarchar(20), isNullable: true),
    ])

    static func values(_ i: Int) -> [SQLValue] {
        // Row 1's blob is 70,000 bytes (kept apart in the block), the others small (in place).
        let blob = [UInt8]((0 ..< (i == 1 ? 70_000 : 300 + i)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) })
        return [.int(Int32(i)),
                i == 2 ? .null : .binary([UInt8](repeating: UInt8(i), count: i + 1)),
                i == 3 ? .null : .binary(blob),
                i == 4 ? .null : .json(#"{"i":\#(i),"t":"é"}"#),
                i == 5 ? .null : .vector(SQLVector([1, -2, 0.5, Float(i), 1e-7])),
                .string("n\(i)")]
    }

    func testWireAndBuiltRowsLendTheSameBytes() throws {
        let rows = (0 ..< 7).map(Self.values)
        for split in [DecoderVerifier.Split.whole, .random] {
            let blocks = try SQLRowDecoderTests.wireBlocks(Self.columns, rows, split: split)
            let wire = blocks.flatMap { Array($0) }
            XCTAssertEqual(wire.count, rows.count)
            for (i, row) in wire.enumerated() {
                let built = SQLRow(columns: Self.columns, values: rows[i])
                for column in 1 ... 4 {
                    let expected = rows[i][column].isNull ? nil : rows[i][column].bytesValue
                    XCTAssertEqual(try row.withUnsafeBytes(at: column) { Array($0) }, expected, "row \(i) column \(column)")
                    XCTAssertEqual(try built.withUnsafeBytes(at: column) { Array($0) }, expected, "built row \(i) column \(column)")
                }
                XCTAssertEqual(try row.withUnsafeBytes(at: 4) { $0.count }, i == 5 ? nil : 8 + 5 * 4, "a vector: header and elements")
            }
        }
    }

    func testOutOfRangeOrAnotherTypeIsATypedError() throws {
        let blocks = try SQLRowDecoderTests.wireBlocks(Self.columns, [Self.values(0)], split: .whole)
        let wire = try XCTUnwrap(blocks.first.flatMap { $0.first })
        let built = SQLRow(columns: Self.columns, values: Self.values(0))
        for row in [wire, built] {
            for position in [-1, Int.min, 6, Int.max] {
                XCTAssertThrowsError(try row.withUnsafeBytes(at: position) { $0.count }) { e in
                    let failure = (e as? SQLClientError)?.decodingFailure
                    XCTAssertEqual(failure?.reason, .noColumn, "position \(position)")
                    XCTAssertEqual(failure?.columnIndex, position)
                }
            }
            for position in [0, 5] {
                XCTAssertThrowsError(try row.withUnsafeBytes(at: position) { $0.count }) { e in
                    XCTAssertEqual((e as? SQLClientError)?.decodingFailure?.reason, .notConvertible, "position \(position)")
                }
            }
            struct Stop: Error {}
            XCTAssertThrowsError(try row.withUnsafeBytes(at: 1) { _ in throw Stop() }) { XCTAssertTrue($0 is Stop) }
        }
    }

    func testVectorAndFloatsDecodeFromTheBlockAsFromTheValue() throws {
        let rows = (0 ..< 7).map(Self.values)
        let block = try XCTUnwrap(SQLRowDecoderTests.wireBlocks(Self.columns, rows, split: .whole).first)
        for (i, row) in block.enumerated() {
            let cell = SQLCell(storage: row.storage, row: row.index, column: 4)
            XCTAssertEqual(try SQLVector.decodeIfPresent(sqlCell: cell), rows[i][4].vectorValue, "row \(i)")
            XCTAssertEqual(try [Float].decodeIfPresent(sqlCell: cell), rows[i][4].vectorValue?.values, "row \(i)")
            if let v = rows[i][4].vectorValue {
                XCTAssertEqual(try SQLVector(sqlCell: cell), v)
                XCTAssertEqual(try [Float](sqlCell: cell), v.values)
            } else {
                XCTAssertThrowsError(try [Float](sqlCell: cell), "NULL as [Float]")
            }
            // Another type: the same error as before (naming SQLVector's read).
            XCTAssertThrowsError(try [Float](sqlCell: SQLCell(storage: row.storage, row: row.index, column: 0)))
        }
    }
}
