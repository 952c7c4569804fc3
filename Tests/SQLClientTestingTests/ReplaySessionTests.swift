import Foundation
import SQLClientTesting
import TDS
import XCTest

final class ReplaySessionTests: XCTestCase {
    /// A hand-written 7.4 session: `SELECT 1 AS c` returns one int.
    static let selectOneText = """
    # hand-written: one INT4 column named c, one row, DONE with count 1
    @name select-one
    @version 7.4

    >>> SQL_BATCH
    | SELECT 1 AS c
    <<<
    # COLMETADATA: 1 column, UserType 0, Flags 0x0009 (nullable, updateable unknown), INT4, name "c"
    81 01 00 00 00 00 00 09 00 38 01 63 00
    # ROW: 1
    D1 01 00 00 00
    # DONE: count 1
    FD 10 00 C1 00 01 00 00 00 00 00 00 00
    """

    func testSessionTextRoundTrips() throws {
        let session = try ReplaySession(text: Self.selectOneText)
        XCTAssertEqual(session.name, "select-one")
        XCTAssertEqual(session.version, .v7_4)
        XCTAssertEqual(session.exchanges.count, 1)
        XCTAssertEqual(session.exchanges[0].request, .sqlBatch("SELECT 1 AS c"))
        XCTAssertEqual(session.exchanges[0].response.count, 3)
        XCTAssertEqual(session.exchanges[0].response[1].bytes, [0xD1, 1, 0, 0, 0])
        XCTAssertEqual(session.exchanges[0].response[1].comment, "ROW: 1")
        let again = try ReplaySession(text: session.text)
        XCTAssertEqual(again, session)
    }

    func testRPCParametersRoundTrip() throws {
        var session = ReplaySession(name: "rpc", version: .v7_2, attention: .ignore)
        session.exchanges.append(.init(
            request: .rpc(procedure: "sp_executesql", parameters: [
                .init(name: "@stmt", value: "SELECT @P1 -- \"quoted\"\nline two\u{FEFF}"),
                .init(name: "@P1", value: nil),
                .init(name: "", value: "42"),
            ]),
            response: [.init(comment: "DONE", bytes: ServerTokens.done(version: .v7_2))],
            faults: .init(stallAfter: 5)))
        let text = session.text
        XCTAssertTrue(text.contains("@attention ignore"))
        XCTAssertTrue(text.contains("<<< stall-after=5"))
        XCTAssertEqual(try ReplaySession(text: text), session)
    }

    func testBadHexIsReportedWithLine() {
        XCTAssertThrowsError(try ReplaySession(text: ">>> SQL_BATCH\n| x\n<<<\nZZ\n")) { error in
            XCTAssertEqual((error as? ReplaySession.ParseError)?.line, 4)
        }
    }

    func testCommandLineRejectsBadArguments() {
        XCTAssertEqual(ReplayServer.runCommandLine(arguments: []), 2)
        XCTAssertEqual(ReplayServer.runCommandLine(arguments: ["a.tdssession", "--bogus"]), 2)
        XCTAssertEqual(ReplayServer.runCommandLine(arguments: ["/nonexistent/x.tdssession"]), 1)
    }

    func testCRLFSessionFilesParseLikeLF() throws {
        let crlf = Self.selectOneText.replacingOccurrences(of: "\n", with: "\r\n")
        XCTAssertEqual(try ReplaySession(text: crlf), try ReplaySession(text: Self.selectOneText))
    }
}
