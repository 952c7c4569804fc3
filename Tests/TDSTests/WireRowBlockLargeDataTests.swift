import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// Large binary values assembled as `Data` for a typed read (issue 43 item 1,
/// ``TokenStreamDecoder/assemblesLargeBinaryAsData``): the same values as the array form, whole,
/// byte by byte and split at random; a value kept apart is the block's `Data`, shared with the
/// typed read, and neither a change to the `Data` read nor the block's reuse changes the other.
final class WireRowBlockLargeDataTests: XCTestCase {
    typealias L = WireRowBlockLargeValueTests

    /// A typed read's value (nil for NULL or another type).
    static func got<V>(_ v: WireTypedValue<V>) -> V? {
        if case .value(let x) = v { return x }
        return nil
    }

    func testValuesAsDataEqualTheArrayFormUnderEverySplit() throws {
        let n = 12
        let stream = try L.stream(rows: n)
        let expected = (0 ..< n).map(L.rowValues)
        for split in DecoderVerifier.Split.allCases {
            let got = L.drain(stream, split, assemblesData: true)
            XCTAssertNil(got.error, "\(split)")
            XCTAssertEqual(got.rows, expected, "\(split)")
            XCTAssertEqual(got.blockRows, n, "\(split)")
            var r0 = 0
            var keptAsData = 0
            for b in got.blocks {
                for r in 0 ..< b.rowCount {
                    let values = expected[r0 + r]
                    for c in 0 ..< b.columnCount {
                        XCTAssertEqual(b.value(row: r, column: c), values[c], "\(split) row \(r0 + r) col \(c)")
                    }
                    for c in [4, 6, 10] {   // varbinary(max), UDT, image
                        let e: [UInt8]?
                        switch values[c] {
                        case .binary(let v), .udt(let v): e = v
                        default: e = nil
                        }
                        switch (b.bytes(row: r, column: c), b.data(row: r, column: c)) {
                        case (.value(let bytes), .value(let data)):
                            XCTAssertEqual(bytes, e, "\(split) row \(r0 + r) col \(c)")
                            XCTAssertEqual(data, e.map { Data($0) }, "\(split) row \(r0 + r) col \(c)")
                            // Byte by byte, as the typed read lends them.
                            if let e { data.withUnsafeBytes { XCTAssertTrue($0.elementsEqual(e)) } }
                        case (.null, .null): XCTAssertNil(e)
                        case (.other, .other): XCTAssertEqual(c, 6, "UDT has no typed binary read")
                        default: XCTFail("\(split) row \(r0 + r) col \(c): typed read")
                        }
                    }
                }
                for v in b.separate { if case .data = v { keptAsData += 1 } }
                r0 += b.rowCount
            }
            XCTAssertEqual(keptAsData, 1, "\(split): row 5's 150,000-byte varbinary(max) kept apart as Data")
        }
    }

    func testTheDataReadIsTheBlocksAndStaysItsOwn() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .image, name: "i")]
        let value = (0 ..< 200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let image = (0 ..< 70_000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        for chunking in [nil, ServerTokens.PLPChunking(sizes: [4096, 1, 777]), ServerTokens.PLPChunking(sizes: [8000], unknownLength: true)] {
            stream += try ServerTokens.row([.binary(value), .binary(image)], columns: columns, chunking: [chunking, nil])
        }
        stream += ServerTokens.done(version: .v7_4)
        for split in DecoderVerifier.Split.allCases {
            let got = L.drain(stream, split, assemblesData: true)
            XCTAssertNil(got.error, "\(split)")
            XCTAssertEqual(got.rows, Array(repeating: [.binary(value), .binary(image)], count: 3), "\(split)")
            for var b in got.blocks {
                for r in 0 ..< b.rowCount {
                    guard case .value(var data) = b.data(row: r, column: 0), case .value(let again) = b.data(row: r, column: 0),
                          case .value(let img) = b.data(row: r, column: 1) else { return XCTFail("\(split): typed Data") }
                    XCTAssertEqual(data, Data(value))
                    XCTAssertEqual(img, Data(image))
                    // A change to the Data read is its own (copy on write): the block, and a second read, keep the value.
                    data[0] &+= 1
                    data.append(9)
                    XCTAssertEqual(again, Data(value))
                    XCTAssertEqual(b.value(row: r, column: 0), .binary(value))
                    XCTAssertEqual(Self.got(b.bytes(row: r, column: 0)), value)
                }
                // The block reused: the Data read before stays whole.
                guard case .value(let kept) = b.data(row: 0, column: 0) else { return XCTFail("typed Data") }
                b.removeAll()
                XCTAssertTrue(b.separate.isEmpty)
                XCTAssertEqual(kept, Data(value), "\(split)")
            }
        }
    }

    func testTheArrayFormIsSharedByTheTypedBytesRead() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b")]
        let value = (0 ..< 100_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        stream += try ServerTokens.row([.binary(value)], columns: columns, chunking: [ServerTokens.PLPChunking(sizes: [8000])])
        stream += ServerTokens.done(version: .v7_4)
        let got = L.drain(stream, .whole)
        let b = try XCTUnwrap(got.blocks.first)
        guard case .array(let kept)? = b.separate.first else { return XCTFail("kept apart as an array") }
        XCTAssertEqual(kept, value)
        XCTAssertEqual(Self.got(b.bytes(row: 0, column: 0)), value)
        XCTAssertEqual(Self.got(b.data(row: 0, column: 0)), Data(value))
    }
}
