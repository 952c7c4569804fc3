import XCTest
@testable import TDS

final class ByteReaderTests: XCTestCase {
    func testReadsBothEndiannesses() throws {
        var r = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
        XCTAssertEqual(try r.readUInt16LE(), 0x0201)
        XCTAssertEqual(try r.readUInt16BE(), 0x0304)
        XCTAssertEqual(r.remaining, 2)
    }

    func testTruncationIsTypedErrorWithOffset() {
        var r = ByteReader([0x01, 0x02, 0x03], baseOffset: 100)
        _ = try? r.readUInt16LE()
        XCTAssertThrowsError(try r.readUInt32LE()) { error in
            let e = error as? TDSDecodingError
            XCTAssertEqual(e?.code, .truncated)
            XCTAssertEqual(e?.offset, 102)
        }
    }

    func testHugeAndNegativeLengthsDoNotTrap() {
        var r = ByteReader([0x01, 0x02])
        XCTAssertThrowsError(try r.readBytes(Int.max))
        XCTAssertThrowsError(try r.readBytes(-1))
        XCTAssertThrowsError(try r.readUTF16LE(byteCount: Int.max - 1))
        XCTAssertEqual(r.offset, 0)
    }

    func testUTF16SurrogatePairsAndUnpairedSurrogate() throws {
        // U+1F600 as a surrogate pair, then 'A'.
        var ok = ByteReader([0x3D, 0xD8, 0x00, 0xDE, 0x41, 0x00])
        XCTAssertEqual(try ok.readUTF16LE(byteCount: 6), "\u{1F600}A")
        var bad = ByteReader([0x41, 0x00, 0x3D, 0xD8, 0x41, 0x00])
        XCTAssertThrowsError(try bad.readUTF16LE(byteCount: 6)) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .invalidEncoding)
            XCTAssertEqual((error as? TDSDecodingError)?.offset, 2)
        }
    }

    func testWriterRoundTrip() throws {
        var w = ByteWriter()
        w.writeUInt32BE(0x7400_0004)
        w.writeBVarChar("héllo")
        w.writeInt64LE(-2)
        var r = ByteReader(w.bytes)
        XCTAssertEqual(try r.readUInt32BE(), 0x7400_0004)
        XCTAssertEqual(try r.readBVarChar(), "héllo")
        XCTAssertEqual(try r.readInt64LE(), -2)
        XCTAssertTrue(r.isAtEnd)
    }
}
