import Foundation
import SQLClient
import SQLClientObjC
import SQLClientTesting
import TDS
import XCTest

/// SQLClientObjC on the replay server, for what the demo server cannot send: money, datetime2
/// (native at TDS 7.4, nvarchar text at TDS 7.1), a true varchar(max), INFO and ERROR tokens
/// with their numbers, a login that hangs, SET TEXTSIZE on the wire.
final class SQLClientObjCReplayTests: XCTestCase {
    private let v74 = TDSVersion.v7_4

    /// money and smallmoney keep four decimal places (the old library lost two), at their extremes.
    func testMoneyKeepsFourDigits() async throws {
        let columns = [ColumnMetadata(typeInfo: .money, name: "m"), ColumnMetadata(typeInfo: .smallMoney, name: "s")]
        let response = ServerTokens.colMetadata(columns, version: v74)
            + (try ServerTokens.row([.money(SQLMoney(units: Int64.max)), .smallMoney(SQLMoney(units: Int64(Int32.max)))], columns: columns))
            + (try ServerTokens.row([.money(SQLMoney(units: -12_345)), .smallMoney(SQLMoney(units: 1))], columns: columns))
            + ServerTokens.done(status: .count, rowCount: 2, version: v74)
        let (server, client, host) = try replayClient(try session([("SELECT m, s FROM t", response, "")], version: v74))
        defer { server.stop() }
        let connected = await client.connect(host, username: "u", password: "p", database: nil)
        XCTAssertTrue(connected)
        let tables = await client.execute("SELECT m, s FROM t")
        let rows = try XCTUnwrap(tables?.first)
        let m0 = try XCTUnwrap(rows[0]["m"] as? NSDecimalNumber)
        XCTAssertEqual(m0.decimalValue, Decimal(string: "922337203685477.5807"))
        XCTAssertEqual(m0.stringValue, "922337203685477.5807")
        XCTAssertEqual((rows[0]["s"] as? NSDecimalNumber)?.stringValue, "214748.3647")
        XCTAssertEqual((rows[1]["m"] as? NSDecimalNumber)?.stringValue, "-1.2345")
        XCTAssertEqual((rows[1]["s"] as? NSDecimalNumber)?.stringValue, "0.0001")
        client.disconnect()
    }

    /// A datetime2(7) is an NSDate at TDS 7.4 (the native type) and at TDS 7.1 (where SQL Server
    /// sends it as nvarchar(27) text), the same instant both ways; so are date, time and
    /// datetimeoffset at 7.1, while an nvarchar of another length holding date-like text stays text.
    func testDatetime2IsADateAtTDS71AndTDS74() async throws {
        let expected = try XCTUnwrap(ISO8601DateFormatter().date(from: "2024-02-29T13:14:15Z")).addingTimeInterval(0.1234567)
        let dt2 = SQLDateTime2(date: try XCTUnwrap(SQLDate(year: 2024, month: 2, day: 29)),
                               time: try XCTUnwrap(SQLTime(hour: 13, minute: 14, second: 15, fraction: 1_234_567, scale: 7)))

        // TDS 7.4: DATETIME2N.
        let native = [ColumnMetadata(typeInfo: .datetime2(scale: 7), name: "d")]
        let response74 = ServerTokens.colMetadata(native, version: v74) + (try ServerTokens.row([.datetime2(dt2)], columns: native))
            + ServerTokens.done(status: .count, rowCount: 1, version: v74)
        let (server74, client74, host74) = try replayClient(try session([("SELECT d FROM t", response74, "")], version: v74))
        defer { server74.stop() }
        let ok74 = await client74.connect(host74, username: "u", password: "p", database: nil)
        XCTAssertTrue(ok74)
        let tables74 = await client74.execute("SELECT d FROM t")
        let at74 = try XCTUnwrap(tables74?.first?.first?["d"] as? Date)
        XCTAssertEqual(at74.timeIntervalSince1970, expected.timeIntervalSince1970, accuracy: 1e-6)
        client74.disconnect()
        _ = await client74.execute("SELECT 1")   // after the disconnect
        server74.stop()                          // waits for the connection's log
        XCTAssertEqual(server74.connections.first?.ackedVersion, .v7_4)

        // TDS 7.1: the same values as SQL Server sends them to a 7.1 client.
        let v71 = TDSVersion.v7_1
        let text = [ColumnMetadata(typeInfo: .nvarchar(27), name: "d"), ColumnMetadata(typeInfo: .nvarchar(10), name: "day"),
                    ColumnMetadata(typeInfo: .nvarchar(16), name: "t"), ColumnMetadata(typeInfo: .nvarchar(34), name: "o"),
                    ColumnMetadata(typeInfo: .nvarchar(20), name: "plain")]
        let values: [SQLValue] = [.string("2024-02-29 13:14:15.1234567"), .string("2024-02-29"), .string("13:14:15.1234567"),
                                  .string("2024-02-29 14:14:15.1234567 +01:00"), .string("2024-02-29")]
        let response71 = ServerTokens.colMetadata(text, version: v71) + (try ServerTokens.row(values, columns: text))
            + ServerTokens.done(status: .count, rowCount: 1, version: v71)
        let (server71, client71, host71) = try replayClient(try session([("SELECT d FROM t", response71, "")], version: v71),
                                                            version: v71)
        defer { server71.stop() }
        let ok71 = await client71.connect(host71, username: "u", password: "p", database: nil)
        XCTAssertTrue(ok71)
        let tables71 = await client71.execute("SELECT d FROM t")
        let row = try XCTUnwrap(tables71?.first?.first)
        let at71 = try XCTUnwrap(row["d"] as? Date, "\(String(describing: row["d"]))")
        XCTAssertEqual(at71.timeIntervalSince1970, expected.timeIntervalSince1970, accuracy: 1e-6)
        let midnight = ISO8601DateFormatter().date(from: "2024-02-29T00:00:00Z")
        XCTAssertEqual(row["day"] as? Date, midnight)
        let timeOfDay: Double = 13 * 3600 + 14 * 60 + 15.1234567
        let t = try XCTUnwrap(row["t"] as? Date)
        XCTAssertEqual(t.timeIntervalSince1970, -2_208_988_800 + timeOfDay, accuracy: 1e-6)   // on 1900-01-01, as before
        XCTAssertEqual(try XCTUnwrap(row["o"] as? Date).timeIntervalSince1970, expected.timeIntervalSince1970, accuracy: 1e-6)
        XCTAssertEqual(row["plain"] as? String, "2024-02-29")
        client71.disconnect()
        _ = await client71.execute("SELECT 1")
        server71.stop()
        XCTAssertEqual(server71.connections.first?.clientVersion, .v7_1)
    }

    /// A varchar(max) of 100 KB in 8,000-byte PLP chunks arrives whole; the login sent
    /// `SET TEXTSIZE -1` (no limit), `maxTextSize` sends its own limit, and a change while
    /// connected is applied before the next query.
    func testVarcharMaxArrivesWholeAndMaxTextSizeIsSent() async throws {
        let large = String(repeating: "abcdefghij", count: 10_240)
        let columns = [ColumnMetadata(typeInfo: .varchar(nil), name: "v")]
        let response = ServerTokens.colMetadata(columns, version: v74)
            + (try ServerTokens.row([.string(large)], columns: columns, chunking: [ServerTokens.PLPChunking(sizes: [8000])]))
            + ServerTokens.done(status: .count, rowCount: 1, version: v74)
        let (server, client, host) = try replayClient(try session([("SELECT v FROM t", response, "")], version: v74))
        defer { server.stop() }
        let connected = await client.connect(host, username: "u", password: "p", database: nil)
        XCTAssertTrue(connected)
        let value = await client.execute("SELECT v FROM t")?.first?.first?["v"] as? String
        XCTAssertEqual(value?.utf8.count, 102_400)
        XCTAssertEqual(value, large)
        client.maxTextSize = 4096
        _ = await client.execute("SELECT v FROM t")
        client.disconnect()
        _ = await client.execute("SELECT 1")   // runs after the disconnect

        // Set before connecting, the limit goes out with the login.
        let limited = SQLClient()
        limited.callbackQueue = testQueue("limited")
        limited.configurationHandler = { $0.encryption = .notSupported }
        limited.maxTextSize = 100
        let ok = await limited.connect(host, username: "u", password: "p", database: nil)
        XCTAssertTrue(ok)
        limited.disconnect()
        _ = await limited.execute("SELECT 1")
        server.stop()   // waits for the connections' logs
        XCTAssertEqual(server.connections.first?.requests,
                       [.login7, .sqlBatch("SET TEXTSIZE -1"), .sqlBatch("SELECT v FROM t"),
                        .sqlBatch("SET TEXTSIZE 4096"), .sqlBatch("SELECT v FROM t")])
        XCTAssertEqual(server.connections.last?.requests, [.login7, .sqlBatch("SET TEXTSIZE 100")])
    }

    /// INFO (PRINT) and ERROR tokens post a message and an error notification with their number,
    /// text and severity, in arrival order, before `completion(nil)`.
    func testMessageAndErrorNotificationsCarryCodeMessageAndSeverity() async throws {
        let response = ServerTokens.message(token: 0xAB, number: 0, severity: 0, text: "hello from PRINT", version: v74)
            + ServerTokens.done(status: .more, version: v74)
            + ServerTokens.message(token: 0xAB, number: 50_000, state: 1, severity: 10, text: "progress 50%", version: v74)
            + ServerTokens.done(status: .more, version: v74)
            + ServerTokens.message(token: 0xAA, number: 208, state: 1, severity: 16, text: "Invalid object name 'missing'.", version: v74)
            + ServerTokens.done(status: .error, version: v74)
        let sql = "PRINT 'hello from PRINT'; RAISERROR('progress 50%', 10, 1); SELECT * FROM missing"
        let (server, client, host) = try replayClient(try session([(sql, response, "")], version: v74))
        defer { server.stop() }
        let recorder = NotificationRecorder(client)
        let connected = await client.connect(host, username: "u", password: "p", database: nil)
        XCTAssertTrue(connected)
        let failed = await withCheckedContinuation { (c: CheckedContinuation<Results, Never>) in
            client.execute(sql) { results in
                recorder.append(.init(name: "completion"))
                c.resume(returning: Results(tables: results))
            }
        }
        XCTAssertNil(failed.tables)
        let entries = recorder.entries
        XCTAssertEqual(entries.map(\.name), [SQLClientMessageNotification, SQLClientMessageNotification,
                                             SQLClientErrorNotification, "completion"])
        XCTAssertEqual(entries[0].code, 0)
        XCTAssertEqual(entries[0].message, "hello from PRINT")
        XCTAssertEqual(entries[0].severity, 0)
        XCTAssertEqual(entries[1].code, 50_000)
        XCTAssertEqual(entries[1].severity, 10)
        XCTAssertEqual(entries[2].code, 208)
        XCTAssertEqual(entries[2].message, "Invalid object name 'missing'.")
        XCTAssertEqual(entries[2].severity, 16)
        XCTAssertTrue(client.isConnected)
        client.disconnect()
    }

    /// A server that accepts the connection and never answers: the login times out after
    /// `timeout` with code 20003 (SYBETIME), severity 6, and `completion(false)`.
    func testLoginTimeout() async throws {
        let silent = try SilentListener()
        let client = SQLClient()
        client.callbackQueue = testQueue("silent")
        client.timeout = 0.3
        let recorder = NotificationRecorder(client)
        let connected = await client.connect("127.0.0.1:\(silent.port)", username: "u", password: "p", database: nil)
        XCTAssertFalse(connected)
        XCTAssertEqual(recorder.errors.first?.code, 20003)
        XCTAssertEqual(recorder.errors.first?.severity, 6)
        XCTAssertEqual(recorder.errors.first?.error?.code, .timeout)
    }

    /// An IPv6 host (`[::1]:port`, the old forms' IPv6 spelling): the client reaches the server
    /// (a silent one, so the login times out with 20003 rather than failing to connect with 20009).
    func testIPv6Host() async throws {
        let silent = try SilentListener(ipv6: true)
        let client = SQLClient()
        client.callbackQueue = testQueue("ipv6")
        client.timeout = 0.3
        let recorder = NotificationRecorder(client)
        let connected = await client.connect("[::1]:\(silent.port)", username: "u", password: "p", database: nil)
        XCTAssertFalse(connected)
        XCTAssertEqual(recorder.errors.map(\.code), [20003])
    }

    /// A host that is not one: nothing is sent, code 20000 (the call itself is wrong), `completion(false)`.
    func testMalformedHostFailsTheConnect() async throws {
        let client = SQLClient()
        client.callbackQueue = testQueue("malformed")
        let recorder = NotificationRecorder(client)
        for host in ["", "server:notaport", "server:99999"] {
            let connected = await client.connect(host, username: "u", password: "secret-pw", database: nil)
            XCTAssertFalse(connected, host)
        }
        XCTAssertEqual(recorder.errors.map(\.code), [20000, 20000, 20000])
        XCTAssertFalse(recorder.errors.contains { $0.message?.contains("secret-pw") ?? false })
        XCTAssertFalse(client.isConnected)
    }

    /// A port nobody listens on: code 20009 (SYBECONN), severity 9.
    func testUnreachableServer() async throws {
        let port = try SilentListener().port   // closed again at once
        let client = SQLClient()
        client.callbackQueue = testQueue("closed")
        let recorder = NotificationRecorder(client)
        let connected = await client.connect("127.0.0.1:\(port)", username: "u", password: "p", database: "db")
        XCTAssertFalse(connected)
        XCTAssertEqual(recorder.errors.first?.code, 20009)
        XCTAssertEqual(recorder.errors.first?.severity, 9)
        XCTAssertEqual(client.database, "db")
    }

    /// A connect while connected is refused with a message notification; the connection stays.
    func testConnectWhileConnectedKeepsTheConnection() async throws {
        let columns = [ColumnMetadata(typeInfo: .int, name: "c")]
        let response = ServerTokens.colMetadata(columns, version: v74) + (try ServerTokens.row([.int(1)], columns: columns))
            + ServerTokens.done(status: .count, rowCount: 1, version: v74)
        let (server, client, host) = try replayClient(try session([("SELECT 1 AS c", response, "")], version: v74))
        defer { server.stop() }
        let recorder = NotificationRecorder(client)
        let first = await client.connect(host, username: "u", password: "p", database: nil)
        let second = await client.connect(host, username: "u", password: "p", database: nil)
        XCTAssertTrue(first)
        XCTAssertFalse(second)
        XCTAssertEqual(recorder.messages.map(\.message), ["Attempting to connect while a connection is active."])
        let rows = await client.execute("SELECT 1 AS c")
        XCTAssertEqual(rows?.first?.first?["c"] as? NSNumber, 1)
        client.disconnect()
        _ = await client.execute("SELECT 1")
        server.stop()
        XCTAssertEqual(server.connections.count, 1)
    }
}
