import Foundation
import XCTest

/// What `sqlclient` does on a terminal only (Sources/sqlclient/Terminal.swift), on a
/// pseudo-terminal: the hidden password prompt when neither -P nor SQLCMDPASSWORD gives one, and
/// sqlcmd's "1>" prompt; neither appears when standard input is a pipe.
final class TerminalTests: XCTestCase {
    func testPasswordPromptHidesWhatIsTypedAndPromptsCountLines() throws {
        try LiveServer.require()
        let (status, screen) = try CLI.onTerminal(CLI.liveArguments, steps: [
            (expect: "Password: ", send: LiveServer.password + "\n"),
            (expect: "1> ", send: "SELECT 41 + 1 AS answer\n"),
            (expect: "2> ", send: "GO\n"),
            (expect: "(1 row affected)", send: ""),
            (expect: "1> ", send: "quit\n"),
        ])
        XCTAssertEqual(status, 0, screen)
        XCTAssertFalse(screen.contains(LiveServer.password), "the password was echoed: \(screen.debugDescription)")
        XCTAssertTrue(screen.contains("answer"), screen)
        XCTAssertTrue(screen.contains("         42"), screen)
    }

    /// A wrong password typed at the prompt: the login fails (exit status 3), nothing echoed.
    func testWrongPasswordAtThePrompt() throws {
        try LiveServer.require()
        let (status, screen) = try CLI.onTerminal(CLI.liveArguments + ["-Q", "SELECT 1"], steps: [
            (expect: "Password: ", send: "Wrong-Secret-7\n"),
        ])
        XCTAssertEqual(status, 3, screen)
        XCTAssertFalse(screen.contains("Wrong-Secret-7"), screen)
        XCTAssertTrue(screen.contains("Msg 18456"), screen)
    }

    /// Standard input a pipe: no "1>" prompt in the output (see the exact outputs in ScriptTests).
    func testNoPromptWhenInputIsAPipe() throws {
        let r = try CLI.live(["-h-1", "-W"], stdin: "SELECT 1 AS a\nGO\nSELECT 2 AS b\n")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "1\n\n(1 row affected)\n\n2\n\n(1 row affected)\n")
    }
}
