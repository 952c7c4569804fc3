import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// Reading responses (`SQLConnection+Responses.swift`): the batch read ahead while a streaming
/// caller takes the last one. At most one batch ahead; one reader of the socket at a time, also
/// when the caller is cancelled, leaves the loop, or the connection is closed while the batch
/// read ahead waits for bytes; errors after rows still come after them.
final class SQLConnectionResponsesTests: XCTestCase {
    typealias R = ReplayConnectionTests

    static func rows(_ n: Int) -> [[UInt8]] {
        (0 ..< n).map { R.row(Int32($0), "row number \($0)") }
    }

    static let small = R.exchange("SELECT id, name FROM small", [R.colMetadata(), R.row(1, "one"), R.done([.count], 1)])

    func start(_ exchanges: [ReplaySession.Exchange]) throws -> ReplayServer {
        let server = ReplayServer(session: ReplaySession(name: "test", exchanges: exchanges))
        _ = try server.start()
        return server
    }

    func connect(_ server: ReplayServer) async throws -> (SQLConnection, MeteredByteStream) {
        let stream = try await MeteredByteStream.connect(port: server.port)
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)),
                                                       user: "u", password: "p", encryption: .notSupported,
                                                       connectTimeout: .seconds(20))
        return (try await SQLConnection.connect(configuration, port: Int(server.port), over: stream), stream)
    }

    /// Reads the rows of `sql` in the caller's isolation (a task, the main actor), checking that
    /// row `i` has id `i`, yielding to `signal` after row `mark`: how many came, and the error the
    /// loop ended with.
    static func readRows(_ connection: SQLConnection, _ sql: SQLQuery = "SELECT id, name FROM big",
                         signal: AsyncStream<Void>.Continuation? = nil, at mark: Int = 0,
                         isolation: isolated (any Actor)? = #isolation) async -> (Int, SQLClientError?) {
        var count = 0
        do {
            for try await row in connection.query(sql) {
                XCTAssertEqual(row[0].intValue, count)
                count += 1
                if count == mark { signal?.yield() }
            }
            return (count, nil)
        } catch {
            return (count, error as? SQLClientError)
        }
    }

    // MARK: - Bounded

    /// While the caller holds the first rows, the connection reads one batch ahead and then
    /// stops: at most one batch of at most 4,096 rows, nobody reading the socket; then every
    /// row comes, in order.
    func testAtMostOneBatchIsReadAheadOfTheCaller() async throws {
        let count = 30_000
        let parts = [R.colMetadata()] + Self.rows(count) + [R.done([.count], UInt64(count))]
        let total = parts.reduce(0) { $0 + $1.count }
        let server = try start([R.exchange("SELECT id, name FROM big", parts)])
        defer { server.stop() }
        let (connection, stream) = try await connect(server)
        let atLogin = stream.delivered
        let serial = await connection.readAheadSerial
        var rows = connection.query("SELECT id, name FROM big").makeAsyncIterator()
        let first = try await rows.next()
        XCTAssertEqual(first?[0].intValue, 0)
        guard let batch = await connection.batchReadAhead() else { return XCTFail("no batch is read ahead") }
        XCTAssertGreaterThan(batch.rowCount, 0)
        XCTAssertLessThanOrEqual(batch.rowCount, SQLConnection.batchRowLimit)
        let socket = await connection.machine.readAhead.socket
        XCTAssertEqual(socket, .free, "the socket is read while the caller holds its rows")
        // Two batches (the one handed out, the one read ahead), each ending within one read of 64 KB.
        let read = stream.delivered - atLogin
        XCTAssertLessThanOrEqual(read, 2 * 65_536 + 2 * SQLConnection.batchRowLimit * 40, "read \(read) of \(total) bytes")
        XCTAssertLessThan(read, total)
        var next = 1
        while let row = try await rows.next() {
            XCTAssertEqual(row[0].intValue, next)
            next += 1
        }
        XCTAssertEqual(next, count)
        XCTAssertEqual(stream.mostReaders, 1)
        let readers = await connection.readAheadSerial - serial
        XCTAssertEqual(readers, 1, "one reader ahead for all the batches of the request")
        await connection.close()
        server.stop()
        XCTAssertEqual(server.connections.first?.attentions, 0)
    }

    // MARK: - Order

    /// An error after rows of several batches comes after every one of them, from a task and
    /// from the main actor, through rows and through events.
    func testAnErrorAfterRowsOfSeveralBatchesComesAfterAllOfThem() async throws {
        let count = 10_000
        let error = ServerTokens.message(token: 0xAA, number: 50000, state: 2, severity: 16, text: "bad", procedure: "",
                                         line: 1, version: .v7_4)
        let parts = [R.colMetadata()] + Self.rows(count) + [R.done([.more, .count], UInt64(count)), error, R.done([.error])]
        let server = try start(Array(repeating: R.exchange("SELECT id, name FROM big; RAISERROR('bad', 16, 2)", parts), count: 4))
        defer { server.stop() }
        let (connection, _) = try await connect(server)
        let sql: SQLQuery = "SELECT id, name FROM big; RAISERROR('bad', 16, 2)"
        func check(_ ids: [Int], _ thrown: SQLClientError?, _ place: String) {
            XCTAssertEqual(ids, Array(0 ..< count), place)
            XCTAssertEqual(thrown?.code, .serverError, place)
            XCTAssertEqual(thrown?.number, 50000, place)
        }
        func check(_ read: (Int, SQLClientError?), _ place: String) { check(Array(0 ..< read.0), read.1, place) }
        check(await Task.detached { await SQLConnectionResponsesTests.readRows(connection, sql) }.value, "query, task")
        let eventsFromTask = await Task.detached { () -> ([Int], SQLClientError?) in
            var ids: [Int] = []
            do {
                for try await event in connection.events(sql) { if case .row(let row) = event { ids.append(row[0].intValue ?? -1) } }
            } catch { return (ids, error as? SQLClientError) }
            return (ids, nil)
        }.value
        check(eventsFromTask.0, eventsFromTask.1, "events, task")
        check(await Task { @MainActor in await SQLConnectionResponsesTests.readRows(connection, sql) }.value, "query, main actor")
        let blocksFromMain = await Self.readBlocksOnTheMainActor(connection, sql)
        check(blocksFromMain.0, blocksFromMain.1, "rowBlocks, main actor")
        await connection.close()
    }

    @MainActor
    static func readBlocksOnTheMainActor(_ connection: SQLConnection, _ sql: SQLQuery) async -> ([Int], SQLClientError?) {
        var ids: [Int] = []
        do {
            for try await block in connection.rowBlocks(sql) { for row in block { ids.append(row[0].intValue ?? -1) } }
        } catch { return (ids, error as? SQLClientError) }
        return (ids, nil)
    }

    // MARK: - execute(): buffered on the connection, nothing read ahead

    /// `execute()` from a task and from the main actor over many batches: every row in order,
    /// the message before them, the count and the return status after; no reader ahead (the
    /// connection collects the batches itself). An error after rows of several batches is
    /// thrown (no partial result), and the connection goes on.
    func testExecuteCollectsEveryBatch() async throws {
        let count = 30_000
        let info = ServerTokens.message(number: 5701, text: "hello", procedure: "", line: 1, version: .v7_4)
        let parts = [info, R.colMetadata()] + Self.rows(count) + [R.done([.more, .count], UInt64(count)),
                                                                   ServerTokens.returnStatus(7), R.done([])]
        let error = ServerTokens.message(token: 0xAA, number: 50000, state: 2, severity: 16, text: "bad", procedure: "",
                                         line: 1, version: .v7_4)
        let failing = [R.colMetadata()] + Self.rows(count) + [R.done([.more, .count], UInt64(count)), error, R.done([.error])]
        let server = try start([R.exchange("SELECT id, name FROM big", parts), R.exchange("SELECT id, name FROM big", parts),
                                R.exchange("SELECT id, name FROM big; RAISERROR('bad', 16, 2)", failing), Self.small])
        defer { server.stop() }
        let (connection, stream) = try await connect(server)
        func check(_ result: SQLResult?, _ place: String) {
            XCTAssertEqual(result?.rows.map { $0[0].intValue ?? -1 }, Array(0 ..< count), place)
            XCTAssertEqual(result?.rows.last?[1].stringValue, "row number \(count - 1)", place)
            XCTAssertEqual(result?.messages.map(\.number), [5701], place)
            XCTAssertEqual(result?.rowCounts, [count], place)
            XCTAssertEqual(result?.returnStatus, 7, place)
        }
        var serial = await connection.readAheadSerial
        let fromTask = await Task.detached { try? await connection.execute("SELECT id, name FROM big") }.value
        check(fromTask, "task")
        var readers = await connection.readAheadSerial - serial
        XCTAssertEqual(readers, 0, "read ahead for a buffered result")
        serial = await connection.readAheadSerial
        let fromMain = await Self.executeOnTheMainActor(connection, "SELECT id, name FROM big")
        check(try? fromMain.get(), "main actor")
        readers = await connection.readAheadSerial - serial
        XCTAssertEqual(readers, 0, "read ahead for a buffered result, main actor")
        let failed = await Task.detached { () -> SQLClientError? in
            do { _ = try await connection.execute("SELECT id, name FROM big; RAISERROR('bad', 16, 2)") } catch {
                return error as? SQLClientError
            }
            return nil
        }.value
        XCTAssertEqual(failed?.number, 50000)
        let next = try await connection.execute("SELECT id, name FROM small")
        XCTAssertEqual(next.rows.first?["name"]?.stringValue, "one")
        let ahead = await connection.readAhead
        XCTAssertNil(ahead, "a batch read ahead is left after the request")
        XCTAssertEqual(stream.mostReaders, 1)
        await connection.close()
    }

    /// `execute()` with INFO messages between the rows of one result set (every 700 rows, so
    /// between and inside batches) and a second result set: each set's rows in order and none
    /// lost where the collection flushes its blocks at a message, the messages in order.
    func testExecuteKeepsRowsInOrderAroundMessagesInsideAResultSet() async throws {
        let count = 20_000
        var parts = [R.colMetadata()]
        for i in 0 ..< count {
            if i % 700 == 0 { parts.append(ServerTokens.message(number: 5701, text: "at \(i)", procedure: "", line: 1, version: .v7_4)) }
            parts.append(R.row(Int32(i), "row number \(i)"))
        }
        parts += [R.done([.more, .count], UInt64(count)), R.colMetadata(), R.row(-1, "second"), R.row(-2, "second"),
                  R.done([.count], 2)]
        let server = try start([R.exchange("SELECT id, name FROM big", parts)])
        defer { server.stop() }
        let (connection, _) = try await connect(server)
        let result = try await connection.execute("SELECT id, name FROM big")
        XCTAssertEqual(result.resultSets.count, 2)
        let ids = result.resultSets.first?.rows.map { $0[0].intValue ?? -1 } ?? []
        XCTAssertTrue(ids == Array(0 ..< count), "\(ids.count) rows, first out of order at \(ids.indices.first { ids[$0] != $0 } ?? -1)")
        XCTAssertEqual(result.resultSets.first?.rows.last?[1].stringValue, "row number \(count - 1)")
        XCTAssertEqual(result.resultSets.last?.rows.map { $0[0].intValue ?? 0 }, [-1, -2])
        XCTAssertEqual(result.rowCounts, [count, 2])
        XCTAssertEqual(result.messages.map(\.message), stride(from: 0, to: count, by: 700).map { "at \($0)" })
        await connection.close()
    }

    @MainActor
    static func executeOnTheMainActor(_ connection: SQLConnection, _ sql: SQLQuery) async -> Result<SQLResult, any Error> {
        do { return .success(try await connection.execute(sql)) } catch { return .failure(error) }
    }

    /// `execute()` whose task is cancelled while its read waits for bytes: `.cancelled`; one
    /// ATTENTION; the next request runs after the drain.
    func testCancellingExecuteWhileItsReadWaitsForBytes() async throws {
        let (server, connection, stream) = try await startStalled()
        defer { server.stop() }
        let call = Task.detached { () -> SQLClientError? in
            do { _ = try await connection.execute("SELECT id, name FROM big") } catch { return error as? SQLClientError }
            return nil
        }
        for await _ in stream.blockedReads { break }
        call.cancel()
        let error = await call.value
        XCTAssertEqual(error?.code, .cancelled, "\(String(describing: error))")
        try await finish(server, connection, stream)
    }

    // MARK: - One reader while the batch read ahead waits for bytes

    /// A server sending 20,000 rows, a connection that gets only about the first 200 (and the
    /// metadata) until `release()`; the next request answered after it.
    func startStalled() async throws -> (ReplayServer, SQLConnection, MeteredByteStream) {
        let parts = [R.colMetadata()] + Self.rows(20_000) + [R.done([.count], 20_000)]
        let server = try start([R.exchange("SELECT id, name FROM big", parts), Self.small])
        let (connection, stream) = try await connect(server)
        // The metadata and 200 rows (and the headers of their packets, at most one per 512 bytes).
        let bytes = parts[0 ... 200].reduce(0) { $0 + $1.count }
        stream.limit(to: bytes + 8 * (bytes / 512 + 1))
        return (server, connection, stream)
    }

    /// The rows received, then the caller waits while the batch read ahead waits for bytes: cancelled
    /// then, it ends with `.cancelled`; one ATTENTION; the next request runs after the drain.
    func testCancellingTheCallerWhileTheBatchReadAheadWaitsForBytes() async throws {
        let (server, connection, stream) = try await startStalled()
        defer { server.stop() }
        let (hundred, signal) = AsyncStream<Void>.makeStream()
        let reader = Task.detached { await SQLConnectionResponsesTests.readRows(connection, signal: signal, at: 100) }
        try await cancelAfterTheHundredthRow(reader, hundred, stream)
        let open = await connection.isOpen
        XCTAssertTrue(open)
        try await finish(server, connection, stream)
    }

    /// As ``testCancellingTheCallerWhileTheBatchReadAheadWaitsForBytes()``, the caller on the main actor.
    func testCancellingAMainActorCallerWhileTheBatchReadAheadWaitsForBytes() async throws {
        let (server, connection, stream) = try await startStalled()
        defer { server.stop() }
        let (hundred, signal) = AsyncStream<Void>.makeStream()
        let reader = Task { @MainActor in await SQLConnectionResponsesTests.readRows(connection, signal: signal, at: 100) }
        try await cancelAfterTheHundredthRow(reader, hundred, stream)
        try await finish(server, connection, stream)
    }

    func cancelAfterTheHundredthRow(_ reader: Task<(Int, SQLClientError?), Never>, _ hundred: AsyncStream<Void>,
                                    _ stream: MeteredByteStream) async throws {
        for await _ in hundred { break }
        for await _ in stream.blockedReads { break }
        reader.cancel()
        let (count, error) = await reader.value
        XCTAssertGreaterThanOrEqual(count, 100)
        XCTAssertLessThanOrEqual(count, 200)
        XCTAssertEqual(error?.code, .cancelled, "\(String(describing: error))")
    }

    /// Bytes arriving 100 at a time, then none (the server stalls after 150 rows): the batch read
    /// ahead goes on reading while the caller takes rows, yet every row received reaches the
    /// caller while it waits for more (what the batch read ahead holds is handed over).
    func testRowsReceivedReachTheCallerWhileTheBatchReadAheadWaitsForMore() async throws {
        let head = [R.colMetadata()] + Self.rows(150)
        let parts = head + Self.rows(1_000) + [R.done([.count], 1_150)]
        let stall = ReplaySession.Exchange(request: .sqlBatch("SELECT id, name FROM big"),
                                           response: parts.map { ReplaySession.Segment(bytes: $0) },
                                           faults: .init(stallAfter: head.reduce(0) { $0 + $1.count }))
        let server = try start([stall])
        defer { server.stop() }
        let (connection, stream) = try await connect(server)
        stream.piece = 100
        let (received, signal) = AsyncStream<Void>.makeStream()
        let reader = Task.detached { await SQLConnectionResponsesTests.readRows(connection, signal: signal, at: 150) }
        for await _ in received { break }
        reader.cancel()
        let (count, error) = await reader.value
        XCTAssertEqual(count, 150)
        XCTAssertEqual(error?.code, .cancelled, "\(String(describing: error))")
        XCTAssertEqual(stream.mostReaders, 1)
        await connection.close()
    }

    /// Leaving the loop (the iterator released) while the batch read ahead waits for bytes: the
    /// drain waits for that read and goes on after it; one ATTENTION; the next request runs.
    func testBreakingOutWhileTheBatchReadAheadWaitsForBytes() async throws {
        try await breakOutAfterTheHundredthRow(readingParts: false)
    }

    /// The same with a response read in parts (``SQLConnection/streamingValues(_:timeout:)``).
    func testBreakingOutOfStreamedPartsWhileTheBatchReadAheadWaitsForBytes() async throws {
        try await breakOutAfterTheHundredthRow(readingParts: true)
    }

    func breakOutAfterTheHundredthRow(readingParts: Bool) async throws {
        let (server, connection, stream) = try await startStalled()
        defer { server.stop() }
        let sql: SQLQuery = "SELECT id, name FROM big"
        let count = await Task.detached { () -> Int in
            var count = 0
            do {
                if readingParts {
                    for try await part in connection.streamingValues(sql) {
                        if case .rowEnd = part { count += 1 }
                        if count == 100 { break }
                    }
                } else {
                    for try await _ in connection.query(sql) {
                        count += 1
                        if count == 100 { break }
                    }
                }
            } catch { XCTFail("\(error)") }
            return count
        }.value
        XCTAssertEqual(count, 100)
        for await _ in stream.blockedReads { break }
        try await finish(server, connection, stream)
    }

    /// Closing the connection while the batch read ahead waits for bytes: the caller, after its
    /// 100 rows, gets `.connectionClosed`, never a clean end.
    func testClosingTheConnectionWhileTheBatchReadAheadWaitsForBytes() async throws {
        let (server, connection, stream) = try await startStalled()
        defer { server.stop() }
        let (hundred, signal) = AsyncStream<Void>.makeStream()
        let reader = Task.detached { await SQLConnectionResponsesTests.readRows(connection, signal: signal, at: 100) }
        for await _ in hundred { break }
        for await _ in stream.blockedReads { break }
        await connection.close()
        let (count, error) = await reader.value
        XCTAssertGreaterThanOrEqual(count, 100)
        XCTAssertLessThanOrEqual(count, 200)
        XCTAssertEqual(error?.code, .connectionClosed, "\(String(describing: error))")
        XCTAssertEqual(stream.mostReaders, 1)
    }

    /// The request cancelled (``SQLConnection/cancel()``, from another task) while its caller
    /// is busy with rows and the batch read ahead waits for bytes: the reader ahead is stopped,
    /// what it held let go of, and its read goes on as the drain. The cursor, which still holds
    /// rows, must then get `.cancelled` (or every row), never a clean end with rows missing.
    /// (It replaces the test that cancelled the reader ahead's own task, which no longer exists:
    /// a task per batch read ahead, never cancelled; the same stop and drain come through here.)
    func testCancellingWhileTheCallerHoldsRowsAndTheReadAheadWaitsForBytesNeverEndsCleanly() async throws {
        let (server, connection, stream) = try await startStalled()
        defer { server.stop() }
        let (hundred, signal) = AsyncStream<Void>.makeStream()
        let (go, resume) = AsyncStream<Void>.makeStream()
        let reader = Task.detached { () -> (Int, SQLClientError?) in
            var count = 0
            do {
                for try await row in connection.query("SELECT id, name FROM big") {
                    XCTAssertEqual(row[0].intValue, count)
                    count += 1
                    if count == 100 {
                        signal.yield()
                        for await _ in go { break }
                    }
                }
                return (count, nil)
            } catch {
                return (count, error as? SQLClientError)
            }
        }
        for await _ in hundred { break }
        for await _ in stream.blockedReads { break }   // the reader ahead waits for bytes
        try await connection.cancel()
        let letGo = await Self.letsGoOfTheReadAhead(connection)   // stopped; its read goes on as the drain
        XCTAssertTrue(letGo)
        stream.release()
        // Queued behind the drained request: once it is answered, that request is over.
        let next = try await Task.detached { try await connection.execute("SELECT id, name FROM small") }.value
        XCTAssertEqual(next.rows.first?["name"]?.stringValue, "one")
        resume.yield()
        let (count, error) = await reader.value
        XCTAssertTrue(error?.code == .cancelled || count == 20_000,
                      "a clean end after \(count) of 20,000 rows (error: \(String(describing: error)))")
        await connection.close()
    }

    /// Lets the rest arrive; the next request runs (after the drain); one ATTENTION, one reader.
    func finish(_ server: ReplayServer, _ connection: SQLConnection, _ stream: MeteredByteStream) async throws {
        stream.release()
        let next = try await connection.execute("SELECT id, name FROM small")
        XCTAssertEqual(next.rows.first?["name"]?.stringValue, "one")
        let ahead = await connection.readAhead
        XCTAssertNil(ahead, "a batch read ahead is left after the request")
        await connection.close()
        server.stop()   // waits for the connection's log
        XCTAssertEqual(server.connections.first?.attentions, 1)
        XCTAssertEqual(stream.mostReaders, 1)
    }

    // MARK: - Another task's request after the batch read ahead holds the end

    /// A server answering request A (`SELECT id, name FROM big`: 2,000 rows, then its DONE, or
    /// with `failing` an error) and then `next`; A's iterator after its first row, once the
    /// batch read ahead for it holds A's end (which lets a request queued behind A run).
    func startWithTheEndReadAhead(failing: Bool = false, next: ReplaySession.Exchange = small) async throws
        -> (ReplayServer, SQLConnection, MeteredByteStream, SQLRowSequence.AsyncIterator) {
        let count = Self.heldCount
        let error = ServerTokens.message(token: 0xAA, number: 50000, state: 2, severity: 16, text: "bad", procedure: "",
                                         line: 1, version: .v7_4)
        let end = failing ? [R.done([.more, .count], UInt64(count)), error, R.done([.error])] : [R.done([.count], UInt64(count))]
        let server = try start([R.exchange("SELECT id, name FROM big", [R.colMetadata()] + Self.rows(count) + end), next])
        let (connection, stream) = try await connect(server)
        var rows = connection.query("SELECT id, name FROM big").makeAsyncIterator()
        let first = try await rows.next()
        XCTAssertEqual(first?[0].intValue, 0)
        let tail = await connection.batchReadAhead()
        XCTAssertTrue(tail?.ended == true || tail?.error != nil, "the batch read ahead holds the end of the response")
        return (server, connection, stream, rows)
    }

    static let heldCount = 2_000

    /// The rows of `sql`, read in a task of its own; -1 when it fails.
    static func rowCount(_ connection: SQLConnection, _ sql: SQLQuery) async -> Int {
        await Task.detached { () -> Int in
            var n = 0
            do { for try await _ in connection.query(sql) { n += 1 } } catch { return -1 }
            return n
        }.value
    }

    /// The batch read ahead reaches the end of request A while A's caller still holds an earlier
    /// batch; that ends A, so another task's request B, queued behind it, runs. B must not take or
    /// drop A's batch: A's caller still gets every row.
    func testAQueuedRequestOfAnotherTaskLeavesTheRowsReadAheadForTheirCaller() async throws {
        var (server, connection, stream, rows) = try await startWithTheEndReadAhead()
        defer { server.stop() }
        let other = await Self.rowCount(connection, "SELECT id, name FROM small")
        XCTAssertEqual(other, 1)
        var seen = 1
        while try await rows.next() != nil { seen += 1 }
        XCTAssertEqual(seen, Self.heldCount, "every row of the first request, also those read ahead")
        await connection.close()
        XCTAssertEqual(stream.mostReaders, 1)
    }

    /// As above with A failing after its rows: A's caller gets the error (not a clean end).
    func testAQueuedRequestOfAnotherTaskLeavesTheErrorReadAheadForTheirCaller() async throws {
        var (server, connection, _, rows) = try await startWithTheEndReadAhead(failing: true)
        defer { server.stop() }
        let other = await Task.detached { try? await connection.execute("SELECT id, name FROM small") }.value
        XCTAssertEqual(other?.resultSets.first?.rows.count, 1)
        var seen = 1
        var thrown: SQLClientError?
        do { while try await rows.next() != nil { seen += 1 } } catch { thrown = error as? SQLClientError }
        XCTAssertEqual(seen, Self.heldCount)
        XCTAssertEqual(thrown?.number, 50000, "the first request's error, after its rows")
        await connection.close()
    }

    /// B streams many batches itself while A's batch read ahead waits for A's caller: B reads
    /// without reading ahead (one batch held at most), A still gets every row, and B gets all of its own.
    func testAStreamingRequestOfAnotherTaskDoesNotReplaceTheBatchHeldForTheFirst() async throws {
        let otherCount = 12_000
        let bigger = R.exchange("SELECT id, name FROM bigger",
                                [R.colMetadata()] + Self.rows(otherCount) + [R.done([.count], UInt64(otherCount))])
        var (server, connection, stream, rows) = try await startWithTheEndReadAhead(next: bigger)
        defer { server.stop() }
        let other = await Self.rowCount(connection, "SELECT id, name FROM bigger")
        XCTAssertEqual(other, otherCount)
        var seen = 1
        while try await rows.next() != nil { seen += 1 }
        XCTAssertEqual(seen, Self.heldCount)
        await connection.close()
        XCTAssertEqual(stream.mostReaders, 1)
    }

    // MARK: - Letting go of what a dropped cursor's request read ahead

    /// Waits (without a clock: the dropped cursor abandons its request from a Task of its own)
    /// until the connection holds nothing read ahead; false if it still does after many turns.
    static func letsGoOfTheReadAhead(_ connection: SQLConnection) async -> Bool {
        for _ in 0 ..< 100_000 {
            if await connection.readAhead == nil { return true }
            await Task.yield()
        }
        return false
    }

    /// A loop left with `break` after the batch read ahead reached the end: the batch nobody will
    /// take is let go (not kept on an idle connection until its next request, which still runs).
    func testABatchReadAheadToTheEndIsLetGoWhenItsCursorIsDropped() async throws {
        let (server, connection, _, _) = try await startWithTheEndReadAhead()   // the iterator is dropped here
        defer { server.stop() }
        let letGo = await Self.letsGoOfTheReadAhead(connection)
        XCTAssertTrue(letGo, "the batch of a dropped cursor is let go")
        let next = try await connection.execute("SELECT id, name FROM small")
        XCTAssertEqual(next.resultSets.first?.rows.count, 1)
        await connection.close()
    }

    /// The connection closed while the reader ahead waits for its batch to be taken (the request
    /// still running, nothing to drain), then the cursor dropped: the batch and its reader are let go.
    func testABatchReadAheadIsLetGoWhenItsCursorIsDroppedAfterClose() async throws {
        let count = 30_000
        let server = try start([R.exchange("SELECT id, name FROM big",
                                           [R.colMetadata()] + Self.rows(count) + [R.done([.count], UInt64(count))])])
        defer { server.stop() }
        let (connection, _) = try await connect(server)
        do {
            var rows = connection.query("SELECT id, name FROM big").makeAsyncIterator()
            _ = try await rows.next()
            let batch = await connection.batchReadAhead()
            XCTAssertEqual(batch?.ended, false, "the batch read ahead is not the last")
            await connection.close()
        }
        let letGo = await Self.letsGoOfTheReadAhead(connection)
        XCTAssertTrue(letGo, "the batch of a dropped cursor is let go after close()")
        let socket = await connection.machine.readAhead.socket
        XCTAssertEqual(socket, .free, "the reader ahead is left holding the socket")
        let waiting = await !connection.aheadTakers.isIdle
        XCTAssertFalse(waiting, "a cursor is left waiting")
    }
}

/// What the tests see of the read-ahead (read from the connection's state; nothing in the
/// connection exists for them).
extension SQLConnection {
    /// The reader ahead, if any.
    var readAhead: ReadAheadStateMachine.Reader? { machine.readAhead.reader }

    /// The number of readers ahead started so far.
    var readAheadSerial: UInt64 { machine.readAhead.serial }

    /// The batch read ahead, once it is read (nil when nothing is read ahead, or it was taken):
    /// what the connection holds while the caller takes the batch before. Looks again after each
    /// turn of the connection's executor (the reader ahead runs on it), no clock involved.
    func batchReadAhead() async -> ResponseBatch? {
        while let reader = machine.readAhead.reader {
            if let ready = machine.readAhead.readyBatch { return ready }
            await Task.yield()
            if machine.readAhead.reader?.serial != reader.serial { return nil }
        }
        return nil
    }
}
