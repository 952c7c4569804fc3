import Foundation
import XCTest
@testable import TDSCapture

/// `sqlclient decode` on hostile text: a `.hex` file with a word that is not hexadecimal is an
/// error naming the line (never decoded as raw bytes), and control characters from a capture
/// (an ESC sequence in a SQL batch) are escaped in the text output.
extension DecodeCLITests {
    private func temporary(_ name: String, _ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(getpid())-\(name)")
        try Data(text.utf8).write(to: url)
        return url
    }

    func testHexFileWithABadWordIsAnErrorWithItsLine() throws {
        XCTAssertEqual(CaptureFormat.detect(Array("01 01 00 1c zz\n".utf8), fileName: "j.hex"), .hex)
        XCTAssertEqual(CaptureFormat.detect(Array("# a capture\n01 01 00 1c zz\n".utf8)), .hex)
        XCTAssertThrowsError(try CaptureFile(bytes: Array("# c\n01 01 00 1c zz\n".utf8), fileName: "j.hex")) { error in
            let detail = (error as? CaptureError)?.detail ?? ""
            XCTAssertTrue(detail.contains("line 2") && detail.contains("'zz'"), detail)
        }
        let file = try temporary("j.hex", "# test\n01 01 00 1c zz\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try run(["decode", file.path])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.err.contains("hex line 2: 'zz' is not hexadecimal"), r.err)
        XCTAssertEqual(r.out, "")
    }

    func testTextOutputEscapesControlCharacters() throws {
        // A SQL_BATCH packet (ALL_HEADERS with a transaction descriptor) whose text holds ESC and BEL.
        let sql = Array("SELECT '\u{1B}[31mred\u{07}\u{9B}'".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let headers: [UInt8] = [0x16, 0, 0, 0, 0x12, 0, 0, 0, 2, 0] + [UInt8](repeating: 0, count: 8) + [1, 0, 0, 0]
        let body = headers + sql
        let length = 8 + body.count
        let packet: [UInt8] = [1, 1, UInt8(length >> 8), UInt8(length & 0xFF), 0, 0, 1, 0] + body
        let file = try temporary("esc.hex", "# esc\n" + packet.map { String(format: "%02x", $0) }.joined(separator: " ") + "\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try run(["decode", file.path])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertFalse(r.out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B }, r.out)
        XCTAssertTrue(r.out.contains("SELECT '\\e[31mred\\u{7}\\u{9B}'"), r.out)
    }
}
