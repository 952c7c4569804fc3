import Foundation
import XCTest
@testable import TDS
import SQLClientTesting
import TDS

/// TYPE_INFO and values from real SQL Server bytes in ../shared/captures or SQLCLIENT_CAPTURES
/// (read at test time, never copied; skipped when absent). A minimal COLMETADATA/ROW walk lives here only to reach the TYPE_INFOs and
/// values; the real token decoders are tested in the tokens tests.
final class TypesCaptureTests: XCTestCase {
    static func capturesDirectory() -> URL? {
        SharedCaptures.directory(packageRoot: SharedCaptures.packageRoot(from: #filePath))
    }

    /// The bytes of a `.hex` capture (comment lines skipped).
    func hexBytes(_ name: String) throws -> [UInt8] {
        guard let dir = Self.capturesDirectory() else { throw XCTSkip("../shared/captures is absent (or SQLCLIENT_CAPTURES names no folder)") }
        let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
        var out: [UInt8] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            for token in line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }) {
                out.append(try XCTUnwrap(UInt8(token, radix: 16)))
            }
        }
        return out
    }

    /// COLMETADATA body after 0x81 (TDS 7.2+): count, then UserType(4) Flags(2) TYPE_INFO [TableName] ColName.
    func columns(_ r: inout ByteReader, cekTableCount: Bool = false) throws -> [(name: String, info: TypeInfo)] {
        let count = Int(try r.readUInt16LE())
        if cekTableCount { try r.skip(2) }
        var cols: [(String, TypeInfo)] = []
        for _ in 0 ..< count {
            try r.skip(4 + 2)
            let info = try TypeInfo.decode(from: &r, version: .v7_4)
            if info.type == .text || info.type == .ntext || info.type == .image {
                let parts = try r.readUInt8()
                for _ in 0 ..< parts { _ = try r.readUSVarChar() }
            }
            cols.append((try r.readBVarChar(), info))
        }
        return cols
    }

    func row(_ r: inout ByteReader, _ cols: [(name: String, info: TypeInfo)], nullBitmap: [UInt8]? = nil) throws -> [String?] {
        var out: [String?] = []
        for (i, c) in cols.enumerated() {
            if let bm = nullBitmap, bm[i / 8] & (1 << (i % 8)) != 0 { out.append(nil); continue }
            out.append(try c.info.decodeValue(from: &r).canonicalText)
        }
        return out
    }

    func testPacketbeatTypesResponse() throws {
        let bytes = try hexBytes("packetbeat/packetbeat_test_16x_typesResponse_1.hex")
        var r = ByteReader(bytes, start: 8)          // after the packet header
        XCTAssertEqual(try r.readUInt8(), 0x81)
        let cols = try columns(&r)
        XCTAssertEqual(cols.map(\.info.sqlTypeName), ["int", "ntext", "nchar(1)", "char(1)", "text", "varchar(1)", "numeric(18,0)", "float"])
        XCTAssertEqual(cols[1].info.collation?.codePage, 1252)
        XCTAssertEqual(try r.readUInt8(), 0xD1)
        // numeric(18,0) arrives with a 5-byte value (shorter than precision 18's 9): accepted.
        XCTAssertEqual(try row(&r, cols), ["10", "text 1", "a", "b", "text 4", "c", "43", "3.14"])
        XCTAssertEqual(try r.readUInt8(), 0xD1)
        XCTAssertEqual(try row(&r, cols), ["15", "ex 1", "x", "y", "ex 4", "z", "500", "0.25"])
        XCTAssertEqual(try r.readUInt8(), 0xFD)     // DONE follows
    }

    func testPacketbeatDateTimeResponse() throws {
        let bytes = try hexBytes("packetbeat/packetbeat_test_16x_datetimeResponse_1.hex")
        var r = ByteReader(bytes, start: 8)
        XCTAssertEqual(try r.readUInt8(), 0x81)
        let cols = try columns(&r)
        XCTAssertEqual(cols.map(\.info.sqlTypeName), ["int", "datetime"])
        XCTAssertEqual(try r.readUInt8(), 0xD1)
        XCTAssertEqual(try row(&r, cols), ["32", "2022-08-07 20:57:45.927"])
    }

    func testPacketbeatNBCRowVarchars() throws {
        let bytes = try hexBytes("packetbeat/packetbeat_test_16x_nullColsResponse_1.hex")
        var r = ByteReader(bytes, start: 8)
        XCTAssertEqual(try r.readUInt8(), 0x81)
        let cols = try columns(&r)
        XCTAssertEqual(cols.count, 16)
        XCTAssertTrue(cols.allSatisfy { $0.info.sqlTypeName == "varchar(1)" })
        XCTAssertEqual(try r.readUInt8(), 0xD2)
        let bitmap = try r.readBytes(2)
        let values = try row(&r, cols, nullBitmap: bitmap)
        XCTAssertEqual(values.compactMap { $0 }, ["A", "G", "H"])
        XCTAssertEqual(values.filter { $0 == nil }.count, 13)
    }

    func testR2dbcRowMoneyGuidFloatReal() throws {
        let bytes = try hexBytes("r2dbc-mssql/server-tokens/RowTokenUnitTests_shouldDecodeRow.hex")
        var r = ByteReader(bytes)
        XCTAssertEqual(try r.readUInt8(), 0x81)
        let cols = try columns(&r, cekTableCount: true)   // this fragment carries the 2-byte CEK table count
        XCTAssertEqual(cols.map(\.info.sqlTypeName),
                       ["tinyint", "nvarchar(50)", "varchar(50)", "money", "uniqueidentifier", "float", "real"])
        XCTAssertEqual(try r.readUInt8(), 0xD1)
        XCTAssertEqual(try row(&r, cols), ["1", "paluch", "mark", "50.0000", "C70D7BF1-E5C7-40C5-98C7-A12F7E686724",
                                            "11344.554", "11344.554"])
        XCTAssertTrue(r.isAtEnd)
    }

    func testCapturedValuesTruncateCleanly() throws {
        // Every prefix of the types response's first row gives .truncated.
        let bytes = try hexBytes("packetbeat/packetbeat_test_16x_typesResponse_1.hex")
        var r = ByteReader(bytes, start: 9)
        let cols = try columns(&r)
        let rowStart = r.offset + 1
        for cut in rowStart ..< rowStart + 60 {
            var p = ByteReader(bytes, start: rowStart, end: cut)
            XCTAssertThrowsError(try row(&p, cols), "cut \(cut)") { e in
                XCTAssertEqual((e as? TDSDecodingError)?.code, .truncated, "cut \(cut)")
            }
        }
    }
}
