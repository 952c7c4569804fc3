import XCTest
import Foundation
@testable import TDS

final class ByteWriterTests: XCTestCase {
    /// The UTF-16LE of `s`, unit by unit.
    func utf16LE(_ s: String) -> [UInt8] {
        s.utf16.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
    }

    /// writeUTF16LE appends after what is there: ASCII (its own path), non-ASCII, surrogate
    /// pairs, empty, a bridged (non-contiguous) string, a long one.
    func testUTF16LEIsEachCodeUnitLittleEndianAfterTheBytesBefore() {
        let strings = ["", "a", "row 17", "héllo", "漢字テキスト", "a😀b", "\u{0}\u{7F}\u{80}\u{FFFF}",
                       String(repeating: "x", count: 10_000), String(repeating: "é", count: 3_000),
                       NSString(string: "bridged ñ").description, NSString(string: "bridged ascii").description]
        for s in strings {
            var w = ByteWriter()
            w.writeUInt8(0xEE)
            w.writeUTF16LE(s)
            w.writeUInt8(0xFF)
            XCTAssertEqual(w.bytes, [0xEE] + utf16LE(s) + [0xFF], s)
        }
    }

    /// B_VARCHAR and US_VARCHAR cut at their unit limits without splitting a surrogate pair: the
    /// written text reads back as valid UTF-16.
    func testVarCharCutsKeepSurrogatePairsWhole() throws {
        var w = ByteWriter()
        w.writeBVarChar(String(repeating: "a", count: 254) + "😀")
        XCTAssertEqual(w.bytes[0], 254)
        var r = ByteReader(w.bytes)
        XCTAssertEqual(try r.readBVarChar(), String(repeating: "a", count: 254))
        XCTAssertEqual(ByteWriter.utf16Prefix("a😀", maxUnits: 3), Array("a😀".utf16))
        XCTAssertEqual(ByteWriter.utf16Prefix("a😀", maxUnits: 2), Array("a".utf16))
        XCTAssertEqual(ByteWriter.utf16Prefix("abc", maxUnits: -1), [])
    }
}
