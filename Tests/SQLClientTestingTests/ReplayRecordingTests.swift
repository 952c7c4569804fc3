import Foundation
import SQLClientTesting
import TDS
import XCTest

/// Recordings of several connections: `=== name` sections in one file.
final class ReplayRecordingTests: XCTestCase {
    static let text = """
        # two connections
        @version 7.3

        === connection 1
        >>> SQL_BATCH
        | SELECT 1
        <<<
        # DONE
        FD 00 00 00 00 00 00 00 00 00 00 00 00

        === connection 2
        @version 7.4
        @packet-size 8192
        >>> ATTENTION
        <<<
        # DONE ATTN
        FD 20 00 00 00 00 00 00 00 00 00 00 00
        """

    func testSectionsTakeThePreambleSettingsAndTheirOwn() throws {
        let recording = try ReplayRecording(text: Self.text)
        XCTAssertEqual(recording.comment, "two connections")
        XCTAssertEqual(recording.sections.map(\.name), ["connection 1", "connection 2"])
        XCTAssertEqual(recording.sections.map(\.version), [.v7_3B, .v7_4])
        XCTAssertEqual(recording.sections.map(\.packetSize), [nil, 8192])
        XCTAssertEqual(recording.sections[1].exchanges.first?.request, .attention)
        XCTAssertEqual(recording.allExchanges.count, 2)
        XCTAssertEqual(try ReplayRecording(text: recording.text), recording)
    }

    func testErrorsNameTheLineOfTheWholeFile() {
        let bad = Self.text.replacingOccurrences(of: "FD 20 00", with: "FD 2X 00")
        XCTAssertThrowsError(try ReplayRecording(text: bad)) { error in
            XCTAssertEqual((error as? ReplaySession.ParseError)?.line, 17, "\(error)")
        }
        let badDefault = Self.text.replacingOccurrences(of: "@version 7.3", with: "@version 9.9")
        XCTAssertThrowsError(try ReplayRecording(text: badDefault)) { error in
            XCTAssertEqual((error as? ReplaySession.ParseError)?.line, 2, "\(error)")
        }
        XCTAssertThrowsError(try ReplayRecording(text: ">>> LOGIN7\n<<<\n=== x\n")) { error in
            XCTAssertEqual((error as? ReplaySession.ParseError)?.line, 1, "\(error)")
        }
    }

    func testASessionReaderSaysToUseTheRecordingReader() {
        XCTAssertThrowsError(try ReplaySession(text: Self.text)) { error in
            XCTAssertTrue("\(error)".contains("read the file with ReplayRecording"), "\(error)")
        }
    }

    func testOneSectionIsAPlainSessionFile() throws {
        let session = try ReplaySession(text: ">>> SQL_BATCH\n| SELECT 1\n<<<\nFD 00 00 00 00 00 00 00 00 00 00 00 00\n")
        let recording = ReplayRecording(comment: "recorded", sections: [session])
        XCTAssertFalse(recording.text.contains("==="))
        let read = try ReplaySession(text: recording.text)
        XCTAssertEqual(read.comment, "recorded")
        XCTAssertEqual(read.exchanges, session.exchanges)
        XCTAssertEqual(try ReplayRecording(text: recording.text).sections.count, 1)
    }
}
