import Foundation
import SQLClient
import XCTest

/// `import SQLClient` alone (no `import TDS` in this file) reaches the value types a user needs:
/// values, decimals, money, dates, collations, TDS versions, the column types SQLColumn shows,
/// RPC calls. The wire codec (tokens, packets, decoders) is not visible here.
final class SQLClientModuleTests: XCTestCase {
    func testValueTypesAreReachableFromSQLClientAlone() throws {
        let decimal: SQLDecimal = try XCTUnwrap(SQLDecimal("12.50"))
        let values: [SQLValue] = [.int(1), .decimal(decimal), .null, .string("x")]
        XCTAssertEqual(values[1].description, "12.50")
        let version: TDSVersion = .v7_4
        XCTAssertEqual(version, TDSVersion.v7_4)
        let type: TypeInfo = .nvarchar(20)
        let column = SQLColumn(name: "n", typeInfo: type, isNullable: true)
        XCTAssertEqual(column.typeName, "nvarchar(20)")
        let collation: Collation? = nil
        XCTAssertNil(collation)
        let password: RedactedPassword = "secret"
        XCTAssertFalse("\(password)".contains("secret"))
        let call = RPCCall(procedure: .name("dbo.p"))
        XCTAssertEqual(call.parameters.count, 0)
        let date: SQLDate? = nil
        XCTAssertNil(date)
    }
}
