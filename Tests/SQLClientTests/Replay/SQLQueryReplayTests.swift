import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// On the bytes the replay server receives: every interpolated value, of every parameter type,
/// travels as an RPC parameter of sp_executesql and never in the SQL text; a literal without
/// interpolations is a SQL batch of exactly its text.
final class SQLQueryReplayTests: XCTestCase {
    static let instant = Date(timeIntervalSince1970: 1_709_212_455.5)   // 2024-02-29 13:14:15.5 UTC

    /// (query, the declared type, the canonical text the server decodes; nil = NULL).
    static func cases() throws -> [(SQLQuery, String, String?)] {
        let uuid = try XCTUnwrap(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF"))
        let evil = "O'Brien'); DROP TABLE people; --"
        let decimal = try XCTUnwrap(Decimal(string: "-12345.6789"))
        return [
            ("SELECT \(Int(4_242_421)) AS v", "bigint", "4242421"),
            ("SELECT \(Int64(9_000_000_001)) AS v", "bigint", "9000000001"),
            ("SELECT \(Int32(424_243)) AS v", "int", "424243"),
            ("SELECT \(Int16(4_244)) AS v", "smallint", "4244"),
            ("SELECT \(UInt8(201)) AS v", "tinyint", "201"),
            ("SELECT \(Int8(-7)) AS v", "smallint", "-7"),
            ("SELECT \(UInt16(60_001)) AS v", "int", "60001"),
            ("SELECT \(UInt32(4_000_000_001)) AS v", "bigint", "4000000001"),
            ("SELECT \(true) AS v", "bit", "1"),
            ("SELECT \(1.25e300) AS v", "float", "1.25e+300"),
            ("SELECT \(Float(3.5)) AS v", "real", "3.5"),
            ("SELECT \(evil) AS v", "nvarchar(4000)", evil),
            ("SELECT \(evil.dropFirst(2)) AS v", "nvarchar(4000)", String(evil.dropFirst(2))),
            ("SELECT \(decimal) AS v", "decimal(9,4)", "-12345.6789"),
            ("SELECT \(instant) AS v", "datetime2(7)", "2024-02-29 13:14:15.5000000"),
            ("SELECT \(uuid) AS v", "uniqueidentifier", "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
            ("SELECT \(Data([0xDE, 0xAD])) AS v", "varbinary(8000)", "0xDEAD"),
            ("SELECT \([UInt8]([0xBE, 0xEF])) AS v", "varbinary(8000)", "0xBEEF"),
            ("SELECT \(nil as Int32?) AS v", "int", nil),
            ("SELECT \(SQLValue.bigint(77)) AS v", "bigint", "77"),
            ("SELECT \(.varchar(evil, length: 50)) AS v", "varchar(50)", evil),
            ("SELECT \(.nvarchar(evil, length: 60)) AS v", "nvarchar(60)", evil),
            ("SELECT \(.char("ab", length: 2)) AS v", "char(2)", "ab"),
            ("SELECT \(.nchar("cd", length: 2)) AS v", "nchar(2)", "cd"),
            ("SELECT \(.decimal(decimal, precision: 18, scale: 4)) AS v", "decimal(18,4)", "-12345.6789"),
            ("SELECT \(.numeric(decimal, precision: 10, scale: 4)) AS v", "numeric(10,4)", "-12345.6789"),
            ("SELECT \(.money(Decimal(string: "922337203685477.5807")!)) AS v", "money", "922337203685477.5807"),
            ("SELECT \(.smallMoney(Decimal(string: "-1.5")!)) AS v", "smallmoney", "-1.5000"),
            ("SELECT \(.datetime2(instant, scale: 3)) AS v", "datetime2(3)", "2024-02-29 13:14:15.500"),
            ("SELECT \(.datetime(instant)) AS v", "datetime", "2024-02-29 13:14:15.500"),
            ("SELECT \(.smallDateTime(instant)) AS v", "smalldatetime", "2024-02-29 13:14:00"),
            ("SELECT \(.date(instant)) AS v", "date", "2024-02-29"),
            ("SELECT \(.time(instant, scale: 1)) AS v", "time(1)", "13:14:15.5"),
            ("SELECT \(.datetimeOffset(instant, offsetMinutes: 120, scale: 0)) AS v", "datetimeoffset(0)",
             "2024-02-29 15:14:16 +02:00"),   // .5 s rounds up at scale 0
            ("SELECT \(.uniqueIdentifier(uuid)) AS v", "uniqueidentifier", "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
            ("SELECT \(.varbinary([1, 2], length: 10)) AS v", "varbinary(10)", "0x0102"),
            ("SELECT \(.binary([3], length: 1)) AS v", "binary(1)", "0x03"),
            ("SELECT \(.xml("<a>'x'</a>")) AS v", "xml", "<a>'x'</a>"),
            ("SELECT \(.null(.bigint)) AS v", "bigint", nil),
        ]
    }

    func testEveryInterpolatedValueIsAnRPCParameterNeverSQLText() async throws {
        let cases = try Self.cases()
        let server = ReplayServer(session: ReplaySession(name: "any", exchanges: []), options: .init(recordsRequestMessages: true))
        _ = try server.start()
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        for (query, _, _) in cases { _ = try await connection.execute(query) }
        _ = try await connection.execute("SELECT 'it''s' AS plain")
        await connection.close()
        server.stop()   // waits for the connection's thread, which files its log

        let messages = try XCTUnwrap(server.connections.last?.requestMessages)
        XCTAssertEqual(messages.count, cases.count + 1)
        for ((query, type, text), message) in zip(cases, messages) {
            XCTAssertEqual(message.type, .rpc, "\(query)")
            let request = try RPCRequest.decode(from: message.payload, version: .v7_4)
            let call = try XCTUnwrap(request.calls.first)
            XCTAssertEqual(call.procedure, .id(.spExecuteSQL))
            XCTAssertEqual(call.parameters.count, 3, "\(query)")
            // The SQL text is exactly the literal with a placeholder: no trace of the value.
            XCTAssertEqual(call.parameters[0].value.stringValue, "SELECT @P1 AS v", "\(query)")
            XCTAssertEqual(call.parameters[1].value.stringValue, "@P1 \(type)", "\(query)")
            XCTAssertEqual(call.parameters[2].name, "@P1")
            XCTAssertEqual(call.parameters[2].value.canonicalText, text, "\(query)")
        }
        let last = try XCTUnwrap(messages.last)
        XCTAssertEqual(last.type, .sqlBatch)
        XCTAssertEqual(try SQLBatch.decode(from: last.payload, version: .v7_4).text, "SELECT 'it''s' AS plain")
    }

    func testListsAndIdentifiersKeepValuesOutOfTheText() async throws {
        let server = ReplayServer(session: ReplaySession(name: "any", exchanges: []), options: .init(recordsRequestMessages: true))
        _ = try server.start()
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        let ids: [Int32] = [31, 41, 59]
        _ = try await connection.execute("SELECT * FROM \(identifier: ["dbo", "t]x"]) WHERE id IN (\(list: ids))")
        await connection.close()
        server.stop()   // waits for the connection's thread, which files its log
        let message = try XCTUnwrap(server.connections.last?.requestMessages.first)
        let call = try XCTUnwrap(try RPCRequest.decode(from: message.payload, version: .v7_4).calls.first)
        XCTAssertEqual(call.parameters[0].value.stringValue, "SELECT * FROM [dbo].[t]]x] WHERE id IN (@P1, @P2, @P3)")
        XCTAssertEqual(call.parameters.dropFirst(2).map(\.value), [.int(31), .int(41), .int(59)])
    }
}
