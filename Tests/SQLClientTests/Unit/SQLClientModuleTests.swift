import Foundation
import SQLClient
import XCTest

/// `import SQLClient` alone (no `import TDS` in this file) reaches the value types a user needs:
/// values, decimals, money, dates, the column types SQLColumn shows, passwords. The wire codec
/// (tokens, packets, decoders) and the wire-level names (`TDS.TDSVersion`, `TDS.Collation`,
/// `TDS.RPCCall`…, `package` aliases in SQLClient since issue 39) need `import TDS`; the
/// properties that hold them read without naming them.
final class SQLClientModuleTests: XCTestCase {
    func testValueTypesAreReachableFromSQLClientAlone() throws {
        let decimal: SQLDecimal = try XCTUnwrap(SQLDecimal("12.50"))
        let values: [SQLValue] = [.int(1), .decimal(decimal), .null, .string("x")]
        XCTAssertEqual(values[1].description, "12.50")
        let type: TypeInfo = .nvarchar(20)
        let column = SQLColumn(name: "n", typeInfo: type, isNullable: true)
        XCTAssertEqual(column.typeName, "nvarchar(20)")
        let password: RedactedPassword = "secret"
        XCTAssertFalse("\(password)".contains("secret"))
        let session = SQLSessionInfo()
        XCTAssertEqual(session.tdsVersion, .v7_4)
        XCTAssertNil(session.collation)
        let date: SQLDate? = nil
        XCTAssertNil(date)
    }
}
