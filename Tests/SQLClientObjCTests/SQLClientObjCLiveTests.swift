import Foundation
import SQLClient
import SQLClientObjC
import XCTest

/// SQLClientObjC against the demo server (pysqlbridge, TLS, Fixtures/demo): the old README's
/// sample, notifications, parameters, two clients at once, calls made during calls, a timeout.
final class SQLClientObjCLiveTests: XCTestCase {
    /// The old README's sample in Swift, with its shape (sharedInstance, connect, execute inside the
    /// connect block, three nested loops printing `column=value`, disconnect inside the execute
    /// block) and no callbackQueue: the blocks arrive on the main queue, which XCTest's wait runs.
    func testOldReadmeSamplePrintsItsRowsOnTheMainQueue() throws {
        try DemoServer.require()
        let printed = LineRecorder()
        @Sendable func print(_ line: String) { printed.append(line) }   // what the sample prints, kept
        let done = expectation(description: "the sample ran")
        let onMain = LineRecorder()

        let client = SQLClient.sharedInstance()
        client.trustServerCertificate = true   // the demo server's certificate is self-signed
        client.connect(DemoServer.host, username: DemoServer.user, password: DemoServer.password, database: nil) { success in
            onMain.append("connect \(Thread.isMainThread)")
            if success {
                client.execute("SELECT * FROM people") { results in
                    onMain.append("execute \(Thread.isMainThread)")
                    for table in results ?? [] {
                        for row in table {
                            for (column, value) in row.sorted(by: { $0.key < $1.key }) {
                                print("\(column)=\(value)")
                            }
                        }
                    }
                    client.disconnect()
                    done.fulfill()
                }
            } else {
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 60)

        XCTAssertEqual(onMain.lines, ["connect true", "execute true"])
        XCTAssertEqual(printed.lines.count, 16)   // 4 people, 4 columns
        XCTAssertEqual(Array(printed.lines.prefix(4)), ["city=Paris", "id=1", "name=Alice", "score=91.5"])
        XCTAssertTrue(printed.lines.contains("city=<null>") || printed.lines.contains("city=null"), "\(printed.lines)")
        XCTAssertTrue(printed.lines.contains("name=Chloé"))
        XCTAssertTrue(SQLClient.sharedInstance() === client)
    }

    /// Values arrive as the old types: NSNumber for int and float, NSString, NSNull.
    func testRowsAreDictionariesOfFoundationValues() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let connected = await client.connectDemo()
        XCTAssertTrue(connected)
        XCTAssertTrue(client.isConnected)
        XCTAssertEqual(client.host, DemoServer.host)
        XCTAssertEqual(client.username, "demo")
        let tables = await client.execute("SELECT id, name, score, city FROM people ORDER BY id; SELECT sku FROM products WHERE sku = 100")
        let people = try XCTUnwrap(tables?.first)
        XCTAssertEqual(tables?.count, 2)
        XCTAssertEqual(people.count, 4)
        XCTAssertEqual(people[0]["id"] as? NSNumber, 1)
        XCTAssertEqual(people[0]["name"] as? String, "Alice")
        XCTAssertEqual((people[0]["score"] as? NSNumber)?.doubleValue, 91.5)
        XCTAssertTrue(people[1]["city"] is NSNull)
        XCTAssertTrue(people[2]["score"] is NSNull)
        XCTAssertEqual(tables?[1].first?["sku"] as? NSNumber, 100)
        client.disconnect()
        let after = await client.execute("SELECT 1 AS one")
        XCTAssertNil(after)
        XCTAssertFalse(client.isConnected)
    }

    /// The old README's host form `server\\instance:port`: with a port, the instance name needs no
    /// SQL Server Browser lookup and the port is used as given.
    func testInstanceAndPortHostForm() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let connected = await client.connect("127.0.0.1\\SQLEXPRESS:\(DemoServer.port)", username: DemoServer.user,
                                             password: DemoServer.password, database: nil)
        XCTAssertTrue(connected)
        let rows = await client.execute("SELECT name FROM people WHERE id = 4")
        XCTAssertEqual(rows?.first?.first?["name"] as? String, "Dmitri")
        client.disconnect()
    }

    /// " " stays " " (FreeTDS gave the old library ""), and text of 100 KB arrives whole.
    func testSingleSpaceAndLargeTextArriveWhole() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let connected = await client.connectDemo()
        XCTAssertTrue(connected)
        let space = await client.execute("SELECT N' ' AS s")
        XCTAssertEqual(space?.first?.first?["s"] as? String, " ")
        let large = String(repeating: "0123456789", count: 10_240)   // 100 KB
        let echoed = await client.execute("SELECT @P1 AS v", parameters: [large])
        XCTAssertEqual((echoed?.first?.first?["v"] as? String)?.count, 102_400)
        XCTAssertEqual(echoed?.first?.first?["v"] as? String, large)
        client.disconnect()
    }

    /// `execute(_:parameters:)` binds NSNumber, NSString, NSNull… as @P1, @P2…
    func testParametersAreBound() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let connected = await client.connectDemo()
        XCTAssertTrue(connected)
        let byID = await client.execute("SELECT name FROM people WHERE id = @P1", parameters: [NSNumber(value: 2)])
        XCTAssertEqual(byID?.first?.first?["name"] as? String, "Bob")
        let quoted = await client.execute("SELECT name FROM people WHERE name = @P1", parameters: ["O'Brien'; DROP TABLE people; --"])
        XCTAssertEqual(quoted?.first?.count, 0)
        let many = await client.execute("SELECT @P1 AS a, @P2 AS b, @P3 AS c", parameters: [7, "x", NSNull()])
        XCTAssertEqual(many?.first?.first?["a"] as? NSNumber, 7)
        XCTAssertEqual(many?.first?.first?["b"] as? String, "x")
        XCTAssertTrue(many?.first?.first?["c"] is NSNull)
        client.disconnect()
    }

    /// A refused login: an error notification with the server's number (18456), its message and
    /// its severity, then `completion(false)`.
    func testRefusedLoginPostsTheServerError() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let recorder = NotificationRecorder(client)
        let connected = await client.connect(DemoServer.host, username: "demo", password: "wrong", database: nil)
        XCTAssertFalse(connected)
        XCTAssertFalse(client.isConnected)
        let error = try XCTUnwrap(recorder.errors.first)
        XCTAssertEqual(error.code, 18456)
        XCTAssertEqual(error.severity, 14)
        XCTAssertTrue(error.message?.contains("demo") ?? false, error.message ?? "")
        XCTAssertFalse(error.message?.contains("wrong") ?? true)   // never the password
        XCTAssertEqual(error.error?.code, .loginFailed)
    }

    /// A server error (RAISERROR at 16): its number, message and severity in the notification,
    /// posted before `completion(nil)`; the connection stays usable.
    func testServerErrorNotificationComesBeforeNilCompletion() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let recorder = NotificationRecorder(client)
        let connected = await client.connectDemo()
        XCTAssertTrue(connected)
        let failed = await withCheckedContinuation { (c: CheckedContinuation<Results, Never>) in
            client.execute("RAISERROR('boom', 16, 1)") { results in
                recorder.append(.init(name: "completion"))
                c.resume(returning: Results(tables: results))
            }
        }
        XCTAssertNil(failed.tables)
        XCTAssertEqual(recorder.entries.map(\.name), [SQLClientErrorNotification, "completion"])
        XCTAssertEqual(recorder.errors.first?.code, 50000)
        XCTAssertEqual(recorder.errors.first?.message, "boom")
        XCTAssertEqual(recorder.errors.first?.severity, 16)
        let next = await client.execute("SELECT 1 AS one")
        XCTAssertEqual(next?.first?.first?["one"] as? NSNumber, 1)
        client.disconnect()
    }

    /// Two clients connected at once, running at the same time; each one's notifications name it.
    func testTwoClientsAtOnce() async throws {
        try DemoServer.require()
        let a = SQLClient.forDemo("a"), b = SQLClient.forDemo("b")
        let recordA = NotificationRecorder(a), recordB = NotificationRecorder(b)
        async let connectA = a.connectDemo()
        async let connectB = b.connect("127.0.0.1,\(DemoServer.port)", username: DemoServer.user,
                                       password: DemoServer.password, database: nil)   // the comma form too
        let (okA, okB) = await (connectA, connectB)
        XCTAssertTrue(okA && okB)
        XCTAssertTrue(a.isConnected && b.isConnected)
        async let people = a.execute("SELECT name FROM people ORDER BY id")
        async let products = b.execute("SELECT title FROM products ORDER BY sku")
        async let failing = b.execute("RAISERROR('only b', 16, 1)")
        let (p, q, f) = await (people, products, failing)
        XCTAssertEqual(p?.first?.compactMap { $0["name"] as? String }, ["Alice", "Bob", "Chloé", "Dmitri"])
        XCTAssertEqual(q?.first?.first?["title"] as? String, "Keyboard")
        XCTAssertNil(f)
        XCTAssertEqual(recordA.errors.count, 0)
        XCTAssertEqual(recordB.errors.map(\.message), ["only b"])
        a.disconnect()
        b.disconnect()
    }

    /// Calls made one after another without waiting (connect, three executes, disconnect, an
    /// execute after it): each waits its turn, none is refused, completions come in call order.
    func testCallsDuringCallsWaitTheirTurn() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let recorder = NotificationRecorder(client)
        let order = LineRecorder()
        let finished = AsyncGate()
        client.connect(DemoServer.host, username: DemoServer.user, password: DemoServer.password, database: nil) {
            order.append("connect \($0)")
        }
        for id in 1 ... 3 {
            client.execute("SELECT name FROM people WHERE id = \(id)") { results in
                order.append("execute \(id) \(results?.first?.first?["name"] as? String ?? "nil")")
            }
        }
        XCTAssertTrue(client.isExecuting)
        client.disconnect()
        client.execute("SELECT 1 AS one") { results in
            order.append("after disconnect \(results == nil ? "nil" : "rows")")
            finished.open()
        }
        await finished.wait()
        XCTAssertEqual(order.lines, ["connect true", "execute 1 Alice", "execute 2 Bob", "execute 3 Chloé", "after disconnect nil"])
        XCTAssertFalse(client.isExecuting)
        XCTAssertEqual(recorder.errors.map(\.code), [20047])   // the execute after disconnect: not connected
    }

    /// A query timeout: ATTENTION is sent, an error notification with code 20003 (SYBETIME) and
    /// severity 6 comes before `completion(nil)`, and the next call on the same connection works.
    /// The query is a large cross join, which pysqlbridge takes far longer than 50 ms to stream.
    /// The next call is made while the slow one runs (with the timeout it had then): it waits.
    func testQueryTimeoutFiresAndTheClientStaysUsable() async throws {
        try DemoServer.require()
        let client = SQLClient.forDemo()
        let recorder = NotificationRecorder(client)
        let connected = await client.connectDemo()
        XCTAssertTrue(connected)
        let finished = AsyncGate()
        let slow = LineRecorder()
        client.timeout = 0.05
        client.execute("SELECT a.name, b.name AS n2, c.name AS n3, d.name AS n4, e.name AS n5, f.name AS n6, g.name AS n7 "
                       + "FROM people a, people b, people c, people d, people e, people f, people g") { results in
            recorder.append(.init(name: "slow \(results == nil ? "nil" : "rows")"))
        }
        client.timeout = 5
        client.execute("SELECT name FROM people WHERE id = 1") { results in
            slow.append(results?.first?.first?["name"] as? String ?? "nil")
            recorder.append(.init(name: "next"))
            finished.open()
        }
        XCTAssertTrue(client.isExecuting)
        await finished.wait()
        XCTAssertEqual(recorder.entries.map(\.name), [SQLClientErrorNotification, "slow nil", "next"])
        XCTAssertEqual(recorder.errors.first?.code, 20003)
        XCTAssertEqual(recorder.errors.first?.severity, 6)
        XCTAssertEqual(recorder.errors.first?.error?.code, .timeout)
        XCTAssertEqual(slow.lines, ["Alice"])
        XCTAssertTrue(client.isConnected)
        XCTAssertFalse(client.isExecuting)
        client.disconnect()
    }
}

/// Lines recorded from any thread.
final class LineRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var _lines: [String] = []
    func append(_ line: String) { lock.withLock { _lines.append(line) } }
    var lines: [String] { lock.withLock { _lines } }
}

/// Opened once from any thread; awaited from a test.
final class AsyncGate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func open() {
        let resumed: [CheckedContinuation<Void, Never>] = lock.withLock {
            isOpen = true
            defer { waiters = [] }
            return waiters
        }
        for w in resumed { w.resume() }
    }
    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now: Bool = lock.withLock {
                if isOpen { return true }
                waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}
