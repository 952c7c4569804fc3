import Foundation
import XCTest
@testable import SQLClient
import TDS

/// SQLResult as the fold of streamed events: statements in order, counts, messages, status, outputs.
final class SQLResultTests: XCTestCase {
    let columns = SQLColumns([SQLColumn(name: "id", typeInfo: .int, isNullable: false)])
    func row(_ v: Int32) -> SQLRow { SQLRow(columns: columns, values: [.int(v)]) }
    let info = SQLServerMessage(number: 0, state: 1, severity: 0, message: "hello", isError: false)
    let error = SQLServerMessage(number: 547, state: 0, severity: 16, message: "conflict", isError: true)

    func testEventsFoldIntoStatementsInOrder() {
        var result = SQLResult()
        let events: [SQLResponseEvent] = [
            .columns(columns), .row(row(1)), .row(row(2)), .statementDone(rowsAffected: 2),
            .message(info), .statementDone(rowsAffected: 5),      // UPDATE: count only
            .statementDone(rowsAffected: nil),                     // SET NOCOUNT ON: nothing
            .columns(columns), .statementDone(rowsAffected: 0),    // an empty result set
            .message(error), .statementDone(rowsAffected: 3), .returnStatus(4),
        ]
        for e in events { result.append(e) }
        result.finish()
        XCTAssertEqual(result.statements.count, 4)
        XCTAssertEqual(result.resultSets.map(\.rows.count), [2, 0])
        XCTAssertEqual(result.rows.map { $0[0] }, [.int(1), .int(2)])
        XCTAssertEqual(result.rowCounts, [2, 5, 0, 3])
        XCTAssertEqual(result.rowsAffected, 8, "count-only statements only")
        XCTAssertEqual(result.messages.map(\.message), ["hello", "conflict"])
        XCTAssertEqual(result.errors.map(\.number), [547])
        XCTAssertEqual(result.returnStatus, 4)
        XCTAssertEqual(result.description, "SQLResult(4 statements, 2 result sets, 2 messages, return status 4)")
    }

    func testUnterminatedResultSetAndRowWithoutColumnsAreKept() throws {
        var result = SQLResult()
        result.append(.row(row(9)))
        result.append(.columns(columns))
        result.append(.row(row(10)))
        result.finish()
        XCTAssertEqual(result.resultSets.map(\.rows.count), [1, 1])
        XCTAssertEqual(result.rowCounts, [nil, nil])
        XCTAssertEqual(result.rowsAffected, 0)
        XCTAssertNil(result.returnStatus)
        struct Item: Decodable, Equatable { let id: Int }
        XCTAssertEqual(try result.decode(Item.self), [Item(id: 9), Item(id: 10)])
    }

    func testOutputsByNameAndOrdinal() {
        let result = SQLResult(outputs: [SQLOutputValue(name: "@Balance", ordinal: 2, typeInfo: .int, value: .int(7))])
        XCTAssertEqual(result.output("balance"), .int(7))
        XCTAssertEqual(result.output("@BALANCE"), .int(7))
        XCTAssertEqual(result.output(ordinal: 2), .int(7))
        XCTAssertNil(result.output("other"))
        XCTAssertNil(result.output(ordinal: 0))
    }
}
