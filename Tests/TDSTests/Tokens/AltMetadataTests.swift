import XCTest
@testable import TDS
import SQLClientTesting

/// ALTMETADATA ([MS-TDS] 2.2.7.1) decoded as its bytes arrive (``AltMetadataProgress``): the same
/// token and errors whole, byte by byte and split at random, in linear work.
final class AltMetadataTests: XCTestCase {
    /// An ALTMETADATA (token byte included) of `columns` aggregate columns (int, nvarchar and text,
    /// in turn) with `by` BY columns, for `version` (UserType and TableName differ before 7.2).
    func token(columns: Int, by: Int, version: TDSVersion) -> (bytes: [UInt8], value: AltMetadata) {
        let long = version.hasLongRowCounts
        var w = ByteWriter()
        w.writeUInt8(0x88)
        w.writeUInt16LE(UInt16(columns)); w.writeUInt16LE(7); w.writeUInt8(UInt8(by))
        let byColumns = (0 ..< by).map { UInt16($0 + 1) }
        for b in byColumns { w.writeUInt16LE(b) }
        var cols: [AltMetadata.Column] = []
        for i in 0 ..< columns {
            let info: TypeInfo = [TypeInfo.int, .nvarchar(30), .text()][i % 3]
            let table: [String]? = info.type == .text ? (long ? ["dbo", "t\(i)"] : ["dbo.t\(i)"]) : nil
            let meta = ColumnMetadata(userType: UInt32(i % 2), flags: [.nullable], typeInfo: info, tableName: table, name: "agg_\(i)")
            cols.append(AltMetadata.Column(op: 0x4D, operand: UInt16(i % 5 + 1), metadata: meta))
            w.writeUInt8(0x4D); w.writeUInt16LE(UInt16(i % 5 + 1))
            if long { w.writeUInt32LE(meta.userType) } else { w.writeUInt16LE(UInt16(meta.userType)) }
            w.writeUInt16LE(meta.flags.rawValue)
            info.encode(into: &w, version: version)
            if let table {
                if long { w.writeUInt8(UInt8(table.count)) }
                for p in table { w.writeUSVarChar(p) }
            }
            w.writeBVarChar(meta.name)
        }
        return (w.bytes, AltMetadata(id: 7, byColumns: byColumns, columns: cols))
    }

    func testALargeTokenIsTheSameWholeByteByByteAndSplitAtRandom() throws {
        for version in [TDSVersion.v7_1_1, .v7_4] {
            let (bytes, value) = token(columns: 500, by: 40, version: version)
            XCTAssertGreaterThan(bytes.count, 15_000)
            let tokens = try DecoderVerifier.verify(bytes, version: version, randomSplits: 12, seed: 88)
            XCTAssertEqual(tokens, [.altMetadata(value)])
        }
    }

    /// One byte at a time, each attempt re-reads at most one unit (Count, Id and ByCols; Op and
    /// Operand; a column's UserType, Flags and TYPE_INFO): linear work, where decoding from the
    /// token's first byte on every byte (as before) was quadratic.
    func testByteByByteWorkIsLinearInTheTokensLength() throws {
        let (bytes, value) = token(columns: 600, by: 10, version: .v7_4)
        XCTAssertGreaterThan(bytes.count, 20_000)
        let (tokens, examined) = try examinedBytes(bytes)
        XCTAssertEqual(tokens, [.altMetadata(value)])
        XCTAssertLessThanOrEqual(examined, 6 * bytes.count)
        let (_, whole) = try examinedBytes(bytes, piece: bytes.count)
        XCTAssertEqual(whole, bytes.count)
    }

    func testErrorsAreTheSameHoweverTheBytesArrive() throws {
        var (bytes, _) = token(columns: 30, by: 2, version: .v7_4)
        // Column 2's TYPE_INFO (text, 0x23): an unknown type byte instead.
        let at = try XCTUnwrap(bytes.firstIndex(of: 0x23))
        bytes[at] = 0x01
        let out = try DecoderVerifier.outcome(bytes, version: .v7_4, randomSplits: 12, seed: 8)
        XCTAssertEqual(out.error?.code, .unknownType)
        XCTAssertEqual(out.error?.context, "ALTMETADATA")
        XCTAssertEqual(out.error?.offset, at)
        let (whole, _) = token(columns: 30, by: 2, version: .v7_4)
        let truncated = try DecoderVerifier.outcome(Array(whole.dropLast(1)), version: .v7_4, randomSplits: 12, seed: 9)
        XCTAssertEqual(truncated.error?.code, .truncated)
        XCTAssertEqual(truncated.error?.context, "ALTMETADATA")
        XCTAssertEqual(truncated.error?.offset, 0)
        XCTAssertEqual(truncated.error?.detail, "the message ended inside the token: \(whole.count - 1) byte(s) of it received")
        var r = ByteReader(Array(whole.dropLast(1)), start: 1)
        XCTAssertThrowsError(try AltMetadata.decode(from: &r, version: .v7_4)) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.offset, whole.count - 2 * "agg_29".utf16.count)
        }
    }
}
