import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// What the live test server cannot show, on the replay server (which decodes each RPC with the
/// TDS decoders and answers only when procedure and parameter values match the recording):
/// parameters of every other type, stored procedures with OUTPUT values, RETURNSTATUS and
/// counts per statement (DONEINPROC, DONEPROC).
final class RPCReplayTests: XCTestCase {
    static let utc = TimeZone(secondsFromGMT: 0)!

    /// 2024-02-29 13:14:15.1234567 UTC.
    static var instant: Date {
        var c = DateComponents()
        c.year = 2024; c.month = 2; c.day = 29; c.hour = 13; c.minute = 14; c.second = 15
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = utc
        return cal.date(from: c)!.addingTimeInterval(0.1234567)
    }

    func testParametersOfEveryOtherTypeTravelAndComeBack() async throws {
        let uuid = try XCTUnwrap(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF"))
        let blob = (0 ..< 20_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let longText = String(repeating: "Zürich 😀 ", count: 1_000)          // 10,000 characters: nvarchar(max)
        let longAscii = String(repeating: "abc", count: 4_000)               // 12,000 bytes: varchar(max)
        let q: SQLQuery = """
            SELECT \(.date(Self.instant)) AS d, \(.time(Self.instant, scale: 3)) AS t, \(.datetime2(Self.instant)) AS dt2, \
            \(.datetimeOffset(Self.instant, offsetMinutes: 120)) AS dto, \(.decimal(Decimal(string: "-12345.6789")!, precision: 18, scale: 4)) AS dec, \
            \(.money(Decimal(string: "922337203685477.5807")!)) AS m, \(uuid) AS u, \(.binary([0xDE, 0xAD], length: 4)) AS b, \
            \(blob) AS vb, \(longText) AS nv, \(.varchar(longAscii, length: nil)) AS v, \(.smallMoney(Decimal(string: "-1.5")!)) AS sm, \
            \(.datetime(Self.instant)) AS dt, \(.smallDateTime(Self.instant)) AS sdt, \(.xml("<a>ü</a>")) AS x, \
            \(.nvarchar(nil, length: 10)) AS n, \(nil as UUID?) AS nu, \(.datetime2(nil, scale: 2)) AS nd
            """
        let declaration = "@P1 date, @P2 time(3), @P3 datetime2(7), @P4 datetimeoffset(7), @P5 decimal(18,4), @P6 money, "
            + "@P7 uniqueidentifier, @P8 binary(4), @P9 varbinary(max), @P10 nvarchar(max), @P11 varchar(max), @P12 smallmoney, "
            + "@P13 datetime, @P14 smalldatetime, @P15 xml, @P16 nvarchar(10), @P17 uniqueidentifier, @P18 datetime2(2)"
        // What the server must decode from SQLClient's bytes (canonical text, DESIGN.md).
        let expected: [String?] = [
            "2024-02-29", "13:14:15.123", "2024-02-29 13:14:15.1234567", "2024-02-29 15:14:15.1234567 +02:00",
            "-12345.6789", "922337203685477.5807", "6F9619FF-8B86-D011-B42D-00C04FC964FF", "0xDEAD",   // binary(4): the server pads
            SQLValue.hexText(blob), longText, longAscii, "-1.5000", "2024-02-29 13:14:15.123", "2024-02-29 13:14:00",
            "<a>ü</a>", nil, nil, nil,
        ]
        let names = ["d", "t", "dt2", "dto", "dec", "m", "u", "b", "vb", "nv", "v", "sm", "dt", "sdt", "x", "n", "nu", "nd"]
        let types: [TypeInfo] = [.date, .time(scale: 3), .datetime2(scale: 7), .datetimeOffset(scale: 7),
                                 .decimal(precision: 18, scale: 4), .money, .uniqueIdentifier, .binary(4), .varbinary(nil),
                                 .nvarchar(nil), .varchar(nil), .smallMoney, .datetime, .smallDateTime, .xml, .nvarchar(10),
                                 .uniqueIdentifier, .datetime2(scale: 2)]
        let columns = zip(names, types).map { ColumnMetadata(typeInfo: $1, name: $0) }
        // The response echoes the values, as SQL Server would for SELECT @P1 AS d, ...
        let wire = try q.rpcCall(version: .v7_4).parameters.dropFirst(2).map(\.value)
        let session = ReplaySession(name: "rpc-types", exchanges: [
            RPCTokens.rpc("sp_executesql", [("", q.sql), ("", declaration)] + zip(1..., expected).map { ("@P\($0)", $1) },
                          [RPCTokens.colMetadata(columns), try RPCTokens.row(Array(wire), columns), RPCTokens.done([.count], count: 1)]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        let result = try await connection.execute(q)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
        let row = try XCTUnwrap(result.rows.first)
        XCTAssertEqual(row.values.count, expected.count)
        for (i, (got, want)) in zip(row.values, expected).enumerated() {
            XCTAssertTrue(got.canonicalText == want, "column \(names[i]): \(String((got.canonicalText ?? "NULL").prefix(80)))")
        }
        XCTAssertEqual(row["dto"]?.dateValue(), Self.instant.addingTimeInterval(0))
        XCTAssertEqual(row["u"]?.uuidValue, uuid)
        XCTAssertEqual(row["vb"]?.bytesValue, blob)
        XCTAssertEqual(result.resultSets.first?.rowsAffected, 1)
    }

    func testStoredProcedureWithOutputsReturnStatusAndCountsPerStatement() async throws {
        try await storedProcedure(packetSize: nil)
    }

    /// The same in 512-byte packets: the RETURNVALUE with a 30,000-byte PLP value spans ~60 packets.
    func testStoredProcedureInSmallPackets() async throws {
        try await storedProcedure(packetSize: 512)
    }

    func storedProcedure(packetSize: Int?) async throws {
        let columns = [ColumnMetadata(typeInfo: .int, name: "id"), ColumnMetadata(typeInfo: .nvarchar(20), name: "name")]
        let response: [[UInt8]] = [
            RPCTokens.colMetadata(columns),
            try RPCTokens.row([.int(1), .string("Alice")], columns),
            try RPCTokens.row([.int(2), .null], columns),
            RPCTokens.doneInProc([.more, .count], count: 2, command: 0xC1),     // SELECT: 2 rows
            RPCTokens.doneInProc([.more, .count], count: 3, command: 0xC5),     // UPDATE: 3 rows
            RPCTokens.doneInProc([.more], command: 0xC3),                       // SET: no count
            RPCTokens.returnStatus(-7),
            try RPCTokens.returnValue(ordinal: 3, name: "@balance", .money, .money(SQLMoney(units: 875_000))),
            try RPCTokens.returnValue(ordinal: 4, name: "@note", .nvarchar(nil), .string(String(repeating: "ok ✓ ", count: 3000))),
            try RPCTokens.returnValue(ordinal: 5, name: "@when", .datetime2(scale: 3), .null),
            RPCTokens.doneProc(),
        ]
        let session = ReplaySession(name: "rpc-transfer", packetSize: packetSize, exchanges: [
            RPCTokens.rpc("dbo.transfer", [("@from", "1"), ("@to", "2"), ("@amount", "12.50"), ("@balance", nil),
                                           ("@note", "start"), ("@when", nil), ("@flag", nil)], response),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        if let packetSize {
            let negotiated = await connection.session.packetSize
            XCTAssertEqual(negotiated, packetSize)
        }
        defer { Task { await connection.close() } }
        let result = try await connection.callProcedure("dbo.transfer", parameters: [
            .input("from", Int32(1)), .input("@to", Int32(2)),
            .input("@amount", .decimal(Decimal(string: "12.5")!, precision: 10, scale: 2)),
            .output("@balance", type: .money), .inputOutput("@note", .nvarchar("start", length: nil)),
            .output("@when", type: .datetime2(scale: 3)), .useDefault("@flag", type: .bit),
        ], options: .withRecompile)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
        XCTAssertEqual(result.resultSets.count, 1)
        XCTAssertEqual(result.rows.map { $0["name"]?.stringValue }, ["Alice", nil])
        XCTAssertEqual(result.rowCounts.compactMap { $0 }, [2, 3])
        XCTAssertEqual(result.returnStatus, -7)
        XCTAssertEqual(result.output("balance"), .money(SQLMoney(units: 875_000)))
        XCTAssertEqual(result.output("@balance")?.decimalValue, Decimal(string: "87.5"))
        XCTAssertEqual(result.output("@NOTE")?.stringValue, String(repeating: "ok ✓ ", count: 3000))
        XCTAssertEqual(result.output("@when"), .null)
        XCTAssertEqual(result.outputs.map(\.ordinal), [3, 4, 5])
        XCTAssertEqual(result.outputs.map(\.typeInfo.sqlTypeName), ["money", "nvarchar(max)", "datetime2(3)"])
        XCTAssertNil(result.output("nope"))
        // The connection answers the next request (the RPC response ended with DONEPROC).
        let again = try await connection.callProcedure("dbo.transfer", parameters: [
            .input("from", Int32(1)), .input("@to", Int32(2)),
            .input("@amount", .decimal(Decimal(string: "12.5")!, precision: 10, scale: 2)),
            .output("@balance", type: .money), .inputOutput("@note", .nvarchar("start", length: nil)),
            .output("@when", type: .datetime2(scale: 3)), .useDefault("@flag", type: .bit),
        ])
        XCTAssertEqual(again.returnStatus, -7)
    }

    /// sp_prepare / sp_execute / sp_unprepare by ProcID: the handle comes back as an OUTPUT value.
    func testPreparedStatementByWellKnownProcIDs() async throws {
        let columns = [ColumnMetadata(typeInfo: .int, name: "n")]
        let session = ReplaySession(name: "rpc-prepare", exchanges: [
            RPCTokens.rpc("sp_prepare", [("", nil), ("", "@P1 int"), ("", "SELECT @P1 + 1 AS n"), ("", "1")],
                          [try RPCTokens.returnValue(ordinal: 0, name: "", .int, .int(17)), RPCTokens.doneProc()]),
            RPCTokens.rpc("sp_execute", [("", "17"), ("@P1", "41")],
                          [RPCTokens.colMetadata(columns), try RPCTokens.row([.int(42)], columns),
                           RPCTokens.doneInProc([.more, .count], count: 1), RPCTokens.returnStatus(0), RPCTokens.doneProc()]),
            RPCTokens.rpc("sp_unprepare", [("", "17")], [RPCTokens.returnStatus(0), RPCTokens.doneProc()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        let statement = try await connection.prepare("SELECT \(Int32(0)) + 1 AS n")
        XCTAssertEqual(statement.handle, 17)
        let r = try await connection.executePrepared(statement, parameters: [Int32(41)])
        XCTAssertEqual(r.rows.first?["n"]?.intValue, 42)
        XCTAssertEqual(r.returnStatus, 0)
        try await connection.unprepare(statement)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
    }

    /// sp_prepexec (ProcID 13): prepared and run at once, the handle taken from the first OUTPUT value.
    func testPrepareAndExecute() async throws {
        let columns = [ColumnMetadata(typeInfo: .nvarchar(10), name: "s")]
        let session = ReplaySession(name: "rpc-prepexec", exchanges: [
            RPCTokens.rpc("sp_prepexec", [("", nil), ("", "@P1 nvarchar(4000)"), ("", "SELECT @P1 AS s"), ("@P1", "a")],
                          [RPCTokens.colMetadata(columns), try RPCTokens.row([.string("a")], columns),
                           RPCTokens.doneInProc([.more, .count], count: 1), RPCTokens.returnStatus(0),
                           try RPCTokens.returnValue(ordinal: 0, name: "", .int, .int(3)), RPCTokens.doneProc()]),
            RPCTokens.rpc("sp_execute", [("", "3"), ("@P1", "b")],
                          [RPCTokens.colMetadata(columns), try RPCTokens.row([.string("b")], columns),
                           RPCTokens.doneInProc([.more, .count], count: 1), RPCTokens.returnStatus(0), RPCTokens.doneProc()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        let (statement, first) = try await connection.prepareAndExecute("SELECT \("a") AS s")
        XCTAssertEqual(statement.handle, 3)
        XCTAssertEqual(first.rows.first?["s"]?.stringValue, "a")
        XCTAssertEqual(first.outputs.count, 0, "the handle is not an output of the query")
        let again = try await connection.executePrepared(statement, parameters: ["b"])
        XCTAssertEqual(again.rows.first?["s"]?.stringValue, "b")
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
    }

    /// An OUTPUT parameter through sp_executesql from a SQLQuery: declared `output`, value from RETURNVALUE.
    func testExecuteSQLOutputParameterFromAQuery() async throws {
        let q: SQLQuery = "SET \(SQLParameter.output("@o", type: .int)) = \(Int32(21)) * 2"
        XCTAssertEqual(q.sql, "SET @o = @P2 * 2")
        let session = ReplaySession(name: "rpc-executesql-output", exchanges: [
            RPCTokens.rpc("sp_executesql", [("", "SET @o = @P2 * 2"), ("", "@o int output, @P2 int"), ("@o", nil), ("@P2", "21")], [
                RPCTokens.doneInProc([.more]), RPCTokens.returnStatus(0),
                try RPCTokens.returnValue(ordinal: 2, name: "@o", .int, .int(42)), RPCTokens.doneProc(),
            ]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        let result = try await connection.execute(q)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(300) ?? ""))
        XCTAssertEqual(result.output("@o"), .int(42))
        XCTAssertEqual(result.returnStatus, 0)
        XCTAssertEqual(result.rowCounts.compactMap { $0 }, [])
    }
}
