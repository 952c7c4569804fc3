import XCTest
@testable import TDS

final class MessageTVPTests: XCTestCase {
    func testSpecTVPInsertStatement() throws {
        let (header, body) = try MessageFixtures.packet("ms-tds-spec/14-tvp-insert-statement.hex")
        XCTAssertEqual(header.type, .rpc)
        let r = try RPCRequest.decode(from: body, version: .v7_3B)
        XCTAssertEqual(r.calls.count, 1)
        XCTAssertEqual(r.calls[0].procedure, .name("foo"))
        let p = try XCTUnwrap(r.calls[0].parameters.first)
        XCTAssertEqual(p.name, "")
        XCTAssertEqual(p.typeInfo.type.rawValue, 0xF3)
        let t = try XCTUnwrap(p.table)
        XCTAssertEqual(t.databaseName, "")
        XCTAssertEqual(t.schemaName, "dbo")
        XCTAssertEqual(t.typeName, "tvptype")
        XCTAssertEqual(t.columns?.count, 1)
        XCTAssertEqual(t.columns?.first?.typeInfo.type, .intN)
        XCTAssertEqual(t.columns?.first?.typeInfo.length, 1)
        XCTAssertEqual(t.rows, [[.tinyint(2)]])
        XCTAssertEqual(try r.encode(version: .v7_3B), body)
    }

    func testTVPRoundTripWithOptionalTokensDefaultsAndLOBs() throws {
        let table = TableValuedParameter(
            schemaName: "dbo", typeName: "Items",
            columns: [
                .init(typeInfo: .int),
                .init(flags: [.nullable, .defaultValue], typeInfo: .int),
                .init(typeInfo: .nvarchar(nil)),
                .init(typeInfo: .ntext()),
                .init(typeInfo: .varbinary(50)),
            ],
            orderUnique: [.init(column: 1, flags: 0x05)], columnOrdering: [1, 3],
            rows: [
                [.int(1), .string("one"), .string("text one"), .binary([1])],
                [.null, .null, .null, .null],
                [.int(3), .string(String(repeating: "x", count: 9000)), .string(""), .binary([])],
            ])
        let request = RPCRequest(RPCCall(procedure: .name("dbo.ins"), parameters: [
            RPCParameter(name: "@items", table: table),
            RPCParameter(name: "@n", typeInfo: .int, value: .int(3)),
        ]))
        let bytes = try request.encode(version: .v7_4)
        let decoded = try RPCRequest.decode(from: bytes, version: .v7_4)
        XCTAssertEqual(decoded, request)
        XCTAssertEqual(decoded.calls[0].parameters[0].table?.rows.count, 3)
        XCTAssertEqual(decoded.calls[0].parameters[1].value, .int(3))
        // Empty (NULL-metadata) table.
        let empty = RPCRequest(RPCCall(procedure: .name("p"), parameters: [
            RPCParameter(name: "@t", status: [.defaultValue], table: TableValuedParameter(schemaName: "", typeName: "T", columns: nil))]))
        XCTAssertEqual(try RPCRequest.decode(from: try empty.encode(version: .v7_4), version: .v7_4), empty)
        // A row with the wrong number of values is refused when encoding.
        var bad = table
        bad.rows = [[.int(1)]]
        XCTAssertThrowsError(try RPCRequest(RPCCall(procedure: .name("p"), parameters: [RPCParameter(table: bad)])).encode(version: .v7_4))
        // Every prefix throws.
        for cut in 41..<bytes.count - 13 {  // 40: the call without parameters; last 13: "@n"
            XCTAssertThrowsError(try RPCRequest.decode(from: Array(bytes.prefix(cut)), version: .v7_4), "cut \(cut)")
        }
    }
}
