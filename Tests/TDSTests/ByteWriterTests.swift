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
}
