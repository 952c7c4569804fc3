import Foundation
import SQLClient
@testable import SQLClientObjC
import TDS
import XCTest

/// The conversions, without a server: SQL values to Foundation objects, app values to
/// parameters, settings to timeouts, errors to notification fields.
final class SQLClientObjCValueTests: XCTestCase {
    func testEveryValueMapsToItsFoundationType() throws {
        let utcNoon = try XCTUnwrap(ISO8601DateFormatter().date(from: "2001-02-03T12:00:00Z"))
        let day = try XCTUnwrap(SQLDate(year: 2001, month: 2, day: 3))
        let noon = try XCTUnwrap(SQLTime(hour: 12, minute: 0, second: 0, scale: 0))
        let uuid = try XCTUnwrap(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF"))
        let v: (SQLValue) -> Any = SQLClient.foundationValue
        XCTAssertTrue(v(.null) is NSNull)
        XCTAssertEqual(v(.bit(true)) as? NSNumber, NSNumber(value: true))
        XCTAssertEqual(v(.tinyint(255)) as? NSNumber, 255)
        XCTAssertEqual(v(.smallint(-32_768)) as? NSNumber, -32_768)
        XCTAssertEqual(v(.int(Int32.min)) as? NSNumber, NSNumber(value: Int32.min))
        XCTAssertEqual((v(.bigint(Int64.max)) as? NSNumber)?.int64Value, Int64.max)   // whole, not through a double
        XCTAssertEqual((v(.real(1.5)) as? NSNumber)?.floatValue, 1.5)
        XCTAssertEqual((v(.float(0.1)) as? NSNumber)?.doubleValue, 0.1)
        XCTAssertEqual((v(.money(SQLMoney(units: 12_345))) as? NSDecimalNumber)?.stringValue, "1.2345")
        XCTAssertEqual((v(.date(day)) as? Date), ISO8601DateFormatter().date(from: "2001-02-03T00:00:00Z"))
        XCTAssertEqual((v(.datetime2(SQLDateTime2(date: day, time: noon))) as? Date), utcNoon)
        XCTAssertEqual((v(.datetimeOffset(SQLDateTimeOffset(local: SQLDateTime2(date: day, time: noon), offsetMinutes: 60))) as? Date),
                       utcNoon.addingTimeInterval(-3600))
        XCTAssertEqual((v(.time(noon)) as? Date)?.timeIntervalSince1970, -2_208_988_800 + 43_200)
        XCTAssertEqual(v(.string(" ")) as? String, " ")
        XCTAssertEqual(v(.xml("<a/>")) as? String, "<a/>")
        XCTAssertEqual(v(.binary([1, 2, 3])) as? Data, Data([1, 2, 3]))
        XCTAssertEqual(v(.udt([0xE6, 0x10])) as? Data, Data([0xE6, 0x10]))
        XCTAssertEqual(v(.uniqueIdentifier(uuid)) as? UUID, uuid)
        let variant = SQLValue.variant(SQLVariant(baseType: .money, value: .money(SQLMoney(units: 10_000))))
        XCTAssertEqual((v(variant) as? NSDecimalNumber)?.stringValue, "1")
    }

    func testDownlevelDateTextIsReadOnlyAtItsOwnLength() throws {
        let read = SQLClient.downlevelDate
        XCTAssertNotNil(read("2024-02-29", 10))
        XCTAssertNil(read("2023-02-29", 10))                      // no such day
        XCTAssertNil(read("2024-02-29", 12))                      // another length: an nvarchar(12) column
        XCTAssertNotNil(read("23:59:59", 8))
        XCTAssertNotNil(read("23:59:59.1", 10))
        XCTAssertNil(read("24:00:00", 8))
        XCTAssertNotNil(read("2024-02-29 23:59:59", 19))
        XCTAssertNotNil(read("2024-02-29 23:59:59.123", 23))
        XCTAssertNil(read("2024-02-29 23:59:59.123", 27))
        XCTAssertNil(read("2024-02-29T23:59:59.123", 23))
        XCTAssertNotNil(read("2024-02-29 23:59:59 -05:30", 26))
        XCTAssertNil(read("2024-02-29 23:59:59 +15:00", 26))
        XCTAssertNil(read("2024-02-29 23:59:59 x05:30", 26))
        XCTAssertNil(read("", 0))
        XCTAssertNil(read("ab", 2))
        XCTAssertNil(read("2024-02-29 23:59:59.12345678", 28))   // eight fraction digits: not SQL Server's text
        let offset = try XCTUnwrap(read("2024-02-29 23:59:59 -05:30", 26))
        XCTAssertEqual(offset, ISO8601DateFormatter().date(from: "2024-03-01T05:29:59Z"))
    }

    func testParametersFromFoundationAndSwiftValues() throws {
        func type(_ value: Any) -> String? {
            SQLClient.parameter(value).map { $0.typeInfo(version: .v7_4).sqlTypeName }
        }
        XCTAssertEqual(type(NSNumber(value: true)), "bit")
        XCTAssertEqual(type(true), "bit")
        XCTAssertEqual(type(NSNumber(value: 42)), "bigint")
        XCTAssertEqual(type(42), "bigint")
        XCTAssertEqual(SQLClient.parameter(NSNumber(value: UInt64.max))?.value.decimalValue, Decimal(string: "18446744073709551615"))
        XCTAssertEqual(type(NSNumber(value: 1.5)), "float")
        XCTAssertEqual(type(2.5), "float")
        XCTAssertTrue(type(NSDecimalNumber(string: "1.25"))?.hasPrefix("decimal") ?? false)
        XCTAssertEqual(type("x"), "nvarchar(4000)")
        XCTAssertEqual(type(NSString(string: "x")), "nvarchar(4000)")
        XCTAssertEqual(type(NSNull()), "nvarchar(4000)")
        XCTAssertEqual(type(Optional<Int>.none as Any), "nvarchar(4000)")
        XCTAssertEqual(type(Date()), "datetime2(7)")
        XCTAssertEqual(type(UUID()), "uniqueidentifier")
        XCTAssertEqual(type(Data([1])), "varbinary(8000)")
        XCTAssertEqual(type(SQLParameter.money(1)), "money")
        XCTAssertNil(type(NSObject()))
        XCTAssertNil(type([1, 2]))
        XCTAssertEqual(SQLClient.parameter(NSNumber(value: 7))?.value, .bigint(7))
        XCTAssertEqual(SQLClient.parameter(NSNumber(value: false))?.value, .bit(false))
    }

    /// A parameter that has no SQL Server type fails the call before anything is sent.
    func testUnsupportedParameterFailsTheCall() async throws {
        let client = SQLClient()
        client.callbackQueue = testQueue("unsupported")
        let recorder = NotificationRecorder(client)
        let result = await client.execute("SELECT @P1", parameters: [1, NSObject()])
        XCTAssertNil(result)
        XCTAssertEqual(recorder.errors.first?.code, 20000)
        XCTAssertEqual(recorder.errors.first?.severity, 7)
        XCTAssertTrue(recorder.errors.first?.message?.contains("@P2") ?? false)
        XCTAssertFalse(client.isExecuting)
    }

    /// On a concurrent OperationQueue, notifications and completions still arrive in the order
    /// they happened: each failed call's error notification, then its completion, call after call.
    func testDeliveriesKeepTheirOrderOnAConcurrentQueue() async throws {
        let client = SQLClient()
        let queue = OperationQueue()   // concurrent: maxConcurrentOperationCount is the default
        client.callbackQueue = queue
        let recorder = NotificationRecorder(client)
        let gate = AsyncGate()
        for i in 1 ... 40 {
            client.execute("SELECT \(i)") { results in
                recorder.append(.init(name: "completion \(i) \(results == nil ? "nil" : "rows")"))
                if i == 40 { gate.open() }
            }
        }
        await gate.wait()
        let expected = (1 ... 40).flatMap { [SQLClientErrorNotification, "completion \($0) nil"] }
        XCTAssertEqual(recorder.entries.map(\.name), expected)
        XCTAssertEqual(Set(recorder.errors.map(\.code)), [20047])
    }

    /// No value of `timeout` or `maxTextSize` traps.
    func testSettingsNeverTrap() {
        XCTAssertNil(SQLClient.duration(seconds: 0))
        XCTAssertNil(SQLClient.duration(seconds: -1))
        XCTAssertNil(SQLClient.duration(seconds: .nan))
        XCTAssertNil(SQLClient.duration(seconds: -.infinity))
        XCTAssertEqual(SQLClient.duration(seconds: .infinity), SQLConnectionConfiguration.maximumTimeout)
        XCTAssertEqual(SQLClient.duration(seconds: 1e300), SQLConnectionConfiguration.maximumTimeout)
        XCTAssertEqual(SQLClient.duration(seconds: .greatestFiniteMagnitude), SQLConnectionConfiguration.maximumTimeout)
        XCTAssertEqual(SQLClient.duration(seconds: 5), .seconds(5))
        XCTAssertEqual(SQLClient.duration(seconds: 0.0001), .milliseconds(1))
        XCTAssertEqual(SQLClient.textSize(0), -1)
        XCTAssertEqual(SQLClient.textSize(-5), -1)
        XCTAssertEqual(SQLClient.textSize(4096), 4096)
        XCTAssertEqual(SQLClient.textSize(Int.max), Int(Int32.max))
        let client = SQLClient()
        client.timeout = .nan
        client.maxTextSize = Int.min
        XCTAssertTrue(client.timeout.isNaN)
        XCTAssertEqual(client.charset, "UTF-8")
        XCTAssertEqual(SQLClient().timeout, 5)
    }

    func testErrorFieldsFollowDbLibNumbers() {
        let f = SQLClient.errorFields
        XCTAssertTrue(f(SQLClientError(.timeout, "t"), .execute) == (20003, 6, "t"))
        XCTAssertTrue(f(SQLClientError(.timeout, "t"), .connect) == (20003, 6, "t"))
        XCTAssertTrue(f(SQLClientError(.hostNotFound, "h"), .connect) == (20009, 9, "h"))
        XCTAssertTrue(f(SQLClientError(.connectionFailed, "c"), .connect) == (20009, 9, "c"))
        XCTAssertTrue(f(SQLClientError(.tlsFailed, "tls"), .connect) == (20002, 9, "tls"))
        XCTAssertTrue(f(SQLClientError(.connectionClosed, "lost"), .execute) == (20004, 9, "lost"))
        XCTAssertTrue(f(SQLClientError(.connectionClosed, "no"), .notConnected) == (20047, 9, "no"))
        XCTAssertTrue(f(SQLClientError(.invalidConfiguration, "bad host"), .connect) == (20000, 7, "bad host"))
        let server = SQLServerMessage(number: 18456, state: 1, severity: 14, message: "Login failed for user 'x'.",
                                      isError: true)
        XCTAssertTrue(f(SQLClientError(.loginFailed, "login failed", serverMessage: server), .connect)
                      == (18456, 14, "Login failed for user 'x'."))
    }
}
