import Foundation
import XCTest
@testable import SQLClient

/// SQLClientError through Foundation's error protocols: `localizedDescription` carries the text
/// and, for a server error, its number, severity, state and line.
final class SQLClientErrorTests: XCTestCase {
    func testLocalizedDescriptionOfAServerErrorNamesNumberSeverityStateAndLine() {
        let m = SQLServerMessage(number: 208, state: 1, severity: 16, message: "Invalid object name 'missing'.",
                                 serverName: "db", procedureName: "", lineNumber: 3, isError: true)
        let error: any Error = SQLClientError(.serverError, m.message, serverMessage: m)
        XCTAssertEqual(error.localizedDescription, "Invalid object name 'missing'. (Msg 208, Level 16, State 1, Line 3)")
        XCTAssertEqual((error as? LocalizedError)?.failureReason, "The server reported an error.")
    }

    func testServerTextIsAddedWhenTheMessageIsOurOwn() {
        let m = SQLServerMessage(number: 18456, state: 8, severity: 14, message: "Login failed for user 'u'.",
                                 procedureName: "p", lineNumber: 1, isError: true)
        let error: any Error = SQLClientError(.loginFailed, "the login failed", serverMessage: m)
        XCTAssertEqual(error.localizedDescription,
                       "the login failed: Login failed for user 'u'. (Msg 18456, Level 14, State 8, Procedure p, Line 1)")
    }

    func testClientErrorsReadAsTheirMessage() {
        let error: any Error = SQLClientError(.timeout, "the request did not finish within 2 seconds")
        XCTAssertEqual(error.localizedDescription, "the request did not finish within 2 seconds")
        XCTAssertFalse(error.localizedDescription.contains("operation could not be completed"))
    }

    func testServerMessageDescriptionIsSqlcmdsForm() {
        let m = SQLServerMessage(number: 50000, state: 1, severity: 16, message: "boom", lineNumber: 2, isError: true)
        XCTAssertEqual(m.description, "Msg 50000, Level 16, State 1, Line 2\nboom")
    }
}
