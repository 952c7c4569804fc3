import Foundation
import XCTest
@testable import SQLClient
import TDS

/// SQLQuery interpolation and SQLParameter conversion, down to the RPC bytes decoded back with
/// the TDS module's decoder (no server).
final class RPCQueryTests: XCTestCase {
    private func decodeBack(_ call: RPCCall, _ version: TDSVersion = .v7_4) throws -> RPCCall {
        let bytes = try RPCRequest(call).encode(version: version)
        let decoded = try RPCRequest.decode(from: bytes, version: version)
        XCTAssertEqual(decoded.calls.count, 1)
        return try XCTUnwrap(decoded.calls.first)
    }

    func testInterpolatedValuesBecomeParametersNeverSQLText() throws {
        let evil = "x'; DROP TABLE people; --"
        let missing: Double? = nil
        let q: SQLQuery = "SELECT * FROM people WHERE id = \(Int32(2)) AND name = \(evil) AND score = \(missing) AND ok = \(true)"
        XCTAssertEqual(q.sql, "SELECT * FROM people WHERE id = @P1 AND name = @P2 AND score = @P3 AND ok = @P4")
        XCTAssertFalse(q.sql.contains("DROP"))
        let call = try decodeBack(try q.rpcCall(version: .v7_4))
        XCTAssertEqual(call.procedure, .id(.spExecuteSQL))
        XCTAssertEqual(call.parameters.count, 6)
        XCTAssertEqual(call.parameters[0].value, .string(q.sql))
        XCTAssertEqual(call.parameters[0].typeInfo.sqlTypeName, "nvarchar(4000)")
        XCTAssertEqual(call.parameters[1].value, .string("@P1 int, @P2 nvarchar(4000), @P3 float, @P4 bit"))
        XCTAssertEqual(call.parameters[2...].map(\.name), ["@P1", "@P2", "@P3", "@P4"])
        XCTAssertEqual(call.parameters[2...].map(\.value), [.int(2), .string(evil), .null, .bit(true)])
        XCTAssertEqual(call.parameters[4].typeInfo.sqlTypeName, "float")   // NULL keeps the Optional's type
        XCTAssertTrue(call.parameters.allSatisfy { $0.status.isEmpty })
    }

    func testSwiftTypesInferTheirSQLTypes() throws {
        let uuid = UUID()
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let q: SQLQuery = """
            SELECT \(42), \(Int64(-1)), \(Int32(1)), \(Int16(2)), \(UInt8(3)), \(1.5), \(Float(2.5)), \("s"), \
            \(Decimal(string: "-12.340")!), \(date), \(uuid), \(Data([1, 2])), \([UInt8]([3])), \(SQLValue.money(SQLMoney(units: 5))), \
            \(String(repeating: "w", count: 5000))
            """
        let call = try decodeBack(try q.rpcCall(version: .v7_4))
        let types = call.parameters[2...].map(\.typeInfo.sqlTypeName)
        XCTAssertEqual(types, ["bigint", "bigint", "int", "smallint", "tinyint", "float", "real", "nvarchar(4000)",
                               "decimal(4,2)", "datetime2(7)", "uniqueidentifier", "varbinary(8000)", "varbinary(8000)",
                               "money", "nvarchar(max)"])
        let texts = call.parameters[2...].map { $0.value.canonicalText ?? "NULL" }
        XCTAssertEqual(Array(texts.prefix(14)), ["42", "-1", "1", "2", "3", "1.5", "2.5", "s", "-12.34",   // Foundation keeps no trailing zeros
                                                 "2023-11-14 22:13:20.2500000", uuid.uuidString.uppercased(), "0x0102", "0x03", "0.0005"])
        XCTAssertEqual(call.parameters[1].value.stringValue?.hasSuffix("@P15 nvarchar(max)"), true)
    }

    func testNarrowAndUnsignedIntegersWidenToAFittingType() throws {
        let q: SQLQuery = "SELECT \(Int8(-128)), \(UInt16.max), \(UInt32.max), \(nil as UInt32?)"
        let call = try decodeBack(try q.rpcCall(version: .v7_4))
        XCTAssertEqual(call.parameters[2...].map(\.typeInfo.sqlTypeName), ["smallint", "int", "bigint", "bigint"])
        XCTAssertEqual(call.parameters[2...].map(\.value), [.smallint(-128), .int(65_535), .bigint(4_294_967_295), .null])
    }

    func testTypedParametersOverrideInference() throws {
        let date = Date(timeIntervalSince1970: 86_400 * 365 + 0.123456789)
        let q: SQLQuery = """
            SELECT \(.varchar("abc", length: 10)), \(.decimal(Decimal(string: "1.005")!, precision: 10, scale: 2)), \
            \(.datetime2(date, scale: 3)), \(.money(Decimal(string: "12.34565")!)), \(.nvarchar(nil, length: nil)), \
            \(.time(date, scale: 0)), \(.datetimeOffset(date, offsetMinutes: -300, scale: 4)), \(.date(date)), \
            \(.uniqueIdentifier(nil)), \(.binary([1, 2], length: 4)), \(.varbinary(nil, length: nil)), \(.char("z", length: 3)), \
            \(.smallMoney(Decimal(1))), \(.datetime(date)), \(.smallDateTime(date)), \(.numeric(Decimal(7), precision: 3, scale: 1)), \
            \(.xml("<r/>")), \(.nchar("n", length: 2))
            """
        let call = try decodeBack(try q.rpcCall(version: .v7_4))
        XCTAssertEqual(call.parameters[1].value.stringValue,
                       "@P1 varchar(10), @P2 decimal(10,2), @P3 datetime2(3), @P4 money, @P5 nvarchar(max), @P6 time(0), "
                       + "@P7 datetimeoffset(4), @P8 date, @P9 uniqueidentifier, @P10 binary(4), @P11 varbinary(max), @P12 char(3), "
                       + "@P13 smallmoney, @P14 datetime, @P15 smalldatetime, @P16 numeric(3,1), @P17 xml, @P18 nchar(2)")
        let texts = call.parameters[2...].map { $0.value.canonicalText ?? "NULL" }
        XCTAssertEqual(texts, ["abc", "1.01", "1971-01-01 00:00:00.123", "12.3457", "NULL", "00:00:00",
                               "1970-12-31 19:00:00.1235 -05:00", "1971-01-01", "NULL", "0x0102", "NULL", "z",
                               "1.0000", "1971-01-01 00:00:00.123", "1971-01-01 00:00:00", "7.0", "<r/>", "n"])
    }

    /// Typed parameters of types an older TDS version lacks travel in the form SQL Server converts.
    func testTypedParametersOnOlderTDSVersions() throws {
        let date = Date(timeIntervalSince1970: 1_000_000_000.5)
        let params: [(SQLParameter, TDSVersion, String, String?)] = [
            (.datetime2(date, scale: 1), .v7_2, "nvarchar(4000)", "2001-09-09 01:46:40.5"),
            (.datetimeOffset(date, offsetMinutes: 60, scale: 0), .v7_2, "nvarchar(4000)", "2001-09-09 02:46:41 +01:00"),
            (.date(nil), .v7_2, "nvarchar(4000)", nil),
            (.datetime2(date, scale: 1), .v7_3B, "datetime2(1)", "2001-09-09 01:46:40.5"),
            (.varchar("v", length: nil), .v7_1_1, "text", "v"),
            (.nvarchar("n", length: nil), .v7_1_1, "ntext", "n"),
            (.varbinary([1], length: nil), .v7_1_1, "image", "0x01"),
            (.xml("<x/>"), .v7_1_1, "ntext", "<x/>"),
            (.varchar(nil, length: nil), .v7_1_1, "text", nil),
            (.nvarchar("n", length: nil), .v7_2, "nvarchar(max)", "n"),
        ]
        for (p, version, typeName, text) in params {
            let wire = try p.named("@p").rpcParameter(version: version)
            XCTAssertEqual(wire.typeInfo.sqlTypeName, typeName, "\(p) in \(version)")
            let headers: AllHeaders? = AllHeaders.isPresent(in: version) ? .transaction() : nil
            let bytes = try RPCRequest(RPCCall(procedure: .name("p"), parameters: [wire]), allHeaders: headers).encode(version: version)
            let back = try RPCRequest.decode(from: bytes, version: version).calls[0].parameters[0]
            XCTAssertEqual(back.value.canonicalText, text, "\(p) in \(version)")
        }
    }

    func testValuesThatDoNotFitFailWithInvalidParameter() throws {
        let cases: [SQLQuery] = [
            "SELECT \(.decimal(Decimal(12345), precision: 3, scale: 0))",
            "SELECT \(.smallMoney(Decimal(1_000_000)))",
            "SELECT \(.datetime(Date(timeIntervalSince1970: -7_000_000_000_000)))",
            "SELECT \(Decimal.nan)",
        ]
        for q in cases {
            XCTAssertThrowsError(try q.rpcCall(version: .v7_4), q.description) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .invalidParameter, "\(error)")
            }
        }
        // A value the typed constructor accepted but the TYPE_INFO cannot carry fails at encoding.
        let q: SQLQuery = "SELECT \(.varchar("日本", length: 10))"
        XCTAssertThrowsError(try OutgoingRequest.rpc([try q.rpcCall(version: .v7_4)]).encode(descriptor: 0, version: .v7_4)) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .invalidParameter)
        }
    }

    func testProcedureParametersDirectionsAndDefaults() throws {
        let params: [SQLParameter] = [
            .input("a", Int32(1)), .output("@b", type: .decimal(precision: 9, scale: 2)),
            .inputOutput("@c", "x"), .useDefault("@d"), SQLParameter(.int(5)),
        ]
        let wire = try params.map { try $0.rpcParameter(version: .v7_4) }
        let call = try decodeBack(RPCCall(procedure: .name("dbo.p"), options: .withRecompile, parameters: wire))
        XCTAssertEqual(call.procedure, .name("dbo.p"))
        XCTAssertEqual(call.options, .withRecompile)
        XCTAssertEqual(call.parameters.map(\.name), ["@a", "@b", "@c", "@d", ""])
        XCTAssertEqual(call.parameters.map(\.status), [[], [.byRefValue], [.byRefValue], [.defaultValue], []])
        XCTAssertEqual(call.parameters.map(\.value), [.int(1), .null, .string("x"), .null, .int(5)])
        XCTAssertEqual(call.parameters[1].typeInfo.sqlTypeName, "decimal(9,2)")
    }

    func testQueryWithoutParametersIsABatchAndRawSplicingIsExplicit() throws {
        let table = "people"
        let q: SQLQuery = "SELECT * FROM \(unsafeRaw: table) WHERE id = \(Int32(1))"
        XCTAssertEqual(q.sql, "SELECT * FROM people WHERE id = @P1")
        let plain: SQLQuery = "SELECT 1"
        guard case .sqlBatch(let text) = try plainRequest(plain) else { return XCTFail("expected a SQL batch") }
        XCTAssertEqual(text, "SELECT 1")
    }

    func testIdentifiersAreBracketQuotedAndNeverParameters() throws {
        let column = "we]ird; DROP TABLE t --"
        let q: SQLQuery = "SELECT \(identifier: column) FROM \(identifier: ["dbo", "my table"]) WHERE id = \(Int32(1))"
        XCTAssertEqual(q.sql, "SELECT [we]]ird; DROP TABLE t --] FROM [dbo].[my table] WHERE id = @P1")
        XCTAssertEqual(q.parameters.count, 1)
        let onlyNames: SQLQuery = "SELECT * FROM \(identifier: "people")"
        XCTAssertTrue(onlyNames.isBatch, "identifiers alone leave a plain batch")
        XCTAssertEqual(SQLQuery.quotedIdentifier(""), "[]")
    }

    func testUnsafeSQLSaysSoAndKeepsTheTextAsIs() throws {
        let text = "SELECT 'it''s' AS x"
        let q = SQLQuery(unsafeSQL: text)
        XCTAssertEqual(q.sql, text)
        XCTAssertTrue(q.isBatch)
        let withParameters = SQLQuery(unsafeSQL: "SELECT @P1", parameters: [SQLParameter(.int(5))])
        XCTAssertFalse(withParameters.isBatch)
        let call = try decodeBack(try withParameters.rpcCall(version: .v7_4))
        XCTAssertEqual(call.parameters[0].value.stringValue, "SELECT @P1")
        XCTAssertEqual(call.parameters[2].name, "@P1")
        XCTAssertEqual(call.parameters[2].value, .int(5))
    }

    func testListInterpolationForInClauses() throws {
        let ids: [Int32] = [3, 1, 4]
        let q: SQLQuery = "SELECT * FROM t WHERE id IN (\(list: ids)) AND name = \("x") AND k IN (\(list: [String]()))"
        XCTAssertEqual(q.sql, "SELECT * FROM t WHERE id IN (@P1, @P2, @P3) AND name = @P4 AND k IN (NULL)")
        let call = try decodeBack(try q.rpcCall(version: .v7_4))
        XCTAssertEqual(call.parameters[1].value.stringValue, "@P1 int, @P2 int, @P3 int, @P4 nvarchar(4000)")
        XCTAssertEqual(call.parameters[2...].map(\.value), [.int(3), .int(1), .int(4), .string("x")])
    }

    private func plainRequest(_ q: SQLQuery) throws -> OutgoingRequest {
        q.parameters.isEmpty ? .sqlBatch(q.sql) : .rpc([try q.rpcCall(version: .v7_4)])
    }

    /// ALL_HEADERS carries the transaction descriptor of the session in every request kind.
    func testAllHeadersCarryTheTransactionDescriptor() throws {
        let descriptor = OutgoingRequest.descriptor(from: [1, 2, 3, 4, 5, 6, 7, 8])
        XCTAssertEqual(descriptor, 0x0807_0605_0403_0201)
        let requests: [OutgoingRequest] = [.sqlBatch("SELECT 1"), .rpc([RPCCall(procedure: .name("p"))]),
                                           .transactionManager(.commit(name: "", thenBegin: nil))]
        for r in requests {
            let (type, body) = try r.encode(descriptor: descriptor, version: .v7_4)
            let decoded = try ClientRequest.decode(type: type, payload: XCTUnwrap(body.wholeBytes), version: .v7_4)
            let headers: AllHeaders?
            switch decoded {
            case .sqlBatch(let b): headers = b.allHeaders
            case .rpc(let rpc): headers = rpc.allHeaders
            case .transactionManager(let tm): headers = tm.allHeaders
            default: headers = nil
            }
            XCTAssertEqual(headers?.transactionDescriptor?.descriptor, descriptor, "\(type)")
            XCTAssertEqual(headers?.transactionDescriptor?.outstandingRequestCount, 1)
        }
        XCTAssertEqual(OutgoingRequest.descriptor(from: nil), 0)
        XCTAssertEqual(OutgoingRequest.descriptor(from: [1, 2]), 0)
        // Transaction Manager requests: begin with isolation level, commit/rollback, savepoints.
        let tm: [(TransactionManagerRequest.Request, UInt16)] = [
            (.begin(isolationLevel: SQLIsolationLevel.serializable.wireValue, name: ""), 5),
            (.commit(name: "", thenBegin: nil), 7), (.rollback(name: "sp1", thenBegin: nil), 8), (.save(name: "sp1"), 9),
        ]
        for (request, type) in tm {
            let (_, body) = try OutgoingRequest.transactionManager(request).encode(descriptor: 9, version: .v7_4)
            let back = try TransactionManagerRequest.decode(from: XCTUnwrap(body.wholeBytes), version: .v7_4)
            XCTAssertEqual(back.request, request)
            XCTAssertEqual(back.request.type, type)
        }
        XCTAssertEqual(SQLIsolationLevel.allCases.map(\.wireValue.rawValue), [1, 2, 3, 4, 5])
    }

    func testTableValuedParametersThroughTheParameterAPI() throws {
        let rows: [[SQLValue]] = [[.int(1), .string("a")], [.int(2), .null]]
        let ids = SQLParameter.table("dbo.IdList", columns: [.int, .nvarchar(10)], rows: rows)
        let q: SQLQuery = "SELECT t.id FROM \(ids) AS t WHERE t.id > \(Int32(0))"
        XCTAssertEqual(q.sql, "SELECT t.id FROM @P1 AS t WHERE t.id > @P2")
        let call = try decodeBack(try q.rpcCall(version: .v7_4))
        XCTAssertEqual(call.parameters[1].value, .string("@P1 [dbo].[IdList] READONLY, @P2 int"))
        let table = try XCTUnwrap(call.parameters[2].table)
        XCTAssertEqual(call.parameters[2].name, "@P1")
        XCTAssertEqual(table.schemaName, "dbo")
        XCTAssertEqual(table.typeName, "IdList")
        XCTAssertEqual(table.columns?.map(\.typeInfo), [.int, .nvarchar(10)])
        XCTAssertEqual(table.rows, rows)
        XCTAssertEqual(call.parameters[3].value, .int(0))
        // As a procedure argument, and empty.
        let p = try SQLParameter.input("@people", SQLParameter.table("IdList", columns: [.int], rows: [])).rpcParameter(version: .v7_3B)
        XCTAssertEqual(p.name, "@people")
        XCTAssertEqual(p.table?.schemaName, "")
        XCTAssertEqual(p.table?.rows, [])
        XCTAssertEqual(SQLParameter.input("@t", ids).description, "@t TABLE dbo.IdList (2 rows)")
        // Refused before anything is sent.
        for (bad, message) in [
            (SQLParameter.table("a.b.c", columns: [.int], rows: []), "is not a table type name"),
            (SQLParameter.table("T", columns: [], rows: []), "at least one column"),
            (SQLParameter.table("T", columns: [.int], rows: [[.int(1), .int(2)]]), "row 1 has 2 value(s) for 1 column(s)"),
        ] {
            XCTAssertThrowsError(try bad.rpcParameter(version: .v7_4)) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .invalidParameter)
                XCTAssertTrue("\(error)".contains(message), "\(error)")
            }
        }
        XCTAssertThrowsError(try ids.rpcParameter(version: .v7_2)) { XCTAssertTrue("\($0)".contains("TDS 7.3"), "\($0)") }
        let wrong = SQLParameter.table("T", columns: [.int], rows: [[.string("x")]])
        XCTAssertThrowsError(try RPCRequest(try SQLQuery(unsafeSQL: "SELECT 1", parameters: [wrong]).rpcCall(version: .v7_4)).encode(version: .v7_4))
    }

    // MARK: - What does not compile

    func testAStringVariableIsNotAQuery() throws {
        // The control: the snippet setup compiles when it should.
        let ok = try SwiftTypecheck.check("""
            import SQLClient
            let id = 7
            let q: SQLQuery = "SELECT name FROM people WHERE id = \\(id)"
            let raw = SQLQuery(unsafeSQL: "SELECT 1")
            func use(_ c: SQLConnection, text: String) async throws {
                _ = try await c.execute("SELECT name FROM people WHERE id = \\(id)", timeout: .seconds(5))
                _ = try await c.execute(SQLQuery(unsafeSQL: text))
                for try await _ in c.query("SELECT 1") {}
                for try await _ in c.events("SELECT 1") {}
                for try await _ in c.rowBlocks("SELECT 1") {}
            }
            """)
        XCTAssertEqual(ok.status, 0, ok.diagnostics)
        let bad = try SwiftTypecheck.check("""
            import SQLClient
            let text = "SELECT name FROM people WHERE id = 7"
            let q: SQLQuery = text
            """)
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.diagnostics.contains("cannot convert value of type 'String' to specified type 'SQLQuery'"),
                      bad.diagnostics)
        // Every request method refuses a String variable: the value could only become SQL text.
        for call in ["c.execute(text)", "c.query(text)", "c.events(text)", "c.rowBlocks(text)", "c.executeBatch(text)"] {
            let r = try SwiftTypecheck.check("""
                import SQLClient
                func use(_ c: SQLConnection, text: String) async throws { _ = try await \(call) }
                """)
            XCTAssertNotEqual(r.status, 0, "\(call) compiled")
            XCTAssertTrue(r.diagnostics.contains("cannot convert value of type 'String' to expected argument type 'SQLQuery'")
                          || r.diagnostics.contains("'executeBatch' has been renamed to 'execute(_:timeout:)'"), r.diagnostics)
        }
    }
}
