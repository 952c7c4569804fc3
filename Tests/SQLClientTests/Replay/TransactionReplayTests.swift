import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// A T-SQL `BEGIN TRAN` in a batch is tracked from the server's ENVCHANGE (pysqlbridge reports
/// only Transaction Manager requests; SQL Server reports both): the descriptor is then carried in
/// ALL_HEADERS until the COMMIT's ENVCHANGE.
final class TransactionReplayTests: XCTestCase {
    /// A transaction descriptor the replayed server hands out.
    static let handleDescriptor: [UInt8] = [0x77, 0, 0, 0, 0x12, 0, 0, 0x02]

    /// A Transaction Manager request (any parameters) answered with `response`.
    static func tm(_ type: String, _ response: [[UInt8]]) -> ReplaySession.Exchange {
        ReplaySession.Exchange(request: .transactionManager(type: type, parameters: []),
                               response: response.map { ReplaySession.Segment(bytes: $0) })
    }

    static func env(_ type: EnvChangeType, new: [UInt8], old: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        EnvChange(type: type, newValue: .bytes(new), oldValue: .bytes(old)).encode(into: &w)
        return w.bytes
    }

    /// A connection to `server` whose requests (after the login) `recorder` keeps.
    static func recordedConnection(_ server: ReplayServer) async throws -> (SQLConnection, RecordingStream) {
        let socket = try await SocketStream.connect(host: "127.0.0.1", port: Int(server.port), timeout: .seconds(10))
        let recorder = RecordingStream(socket)
        let connection = try await SQLConnection.connect(RPCReplay.configuration(server), port: Int(server.port), over: recorder)
        recorder.startRecording()
        return (connection, recorder)
    }

    func testBeginTranInABatchIsTrackedAndCarried() async throws {
        let d: [UInt8] = [0x5A, 0, 0, 0, 0x33, 0, 0, 0x01]
        let inTran = DoneStatus.inTransaction
        let session = ReplaySession(name: "rpc-tsql-transaction", exchanges: [
            RPCTokens.batch("BEGIN TRAN", [Self.env(.beginTransaction, new: d, old: []), RPCTokens.done(inTran)]),
            RPCTokens.batch("SELECT 1", [RPCTokens.done([inTran, .count], count: 1)]),
            RPCTokens.rpc("sp_executesql", [], [RPCTokens.done(inTran)]),
            RPCTokens.batch("COMMIT", [Self.env(.commitTransaction, new: [], old: d), RPCTokens.done()]),
            RPCTokens.batch("SELECT 2", [RPCTokens.done([.count], count: 1)]),
            RPCTokens.batch("BEGIN TRAN; ROLLBACK", [Self.env(.beginTransaction, new: d, old: []),
                                                    Self.env(.rollbackTransaction, new: [], old: d), RPCTokens.done()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let (connection, recorder) = try await Self.recordedConnection(server)
        defer { Task { await connection.close() } }
        _ = try await connection.execute("BEGIN TRAN")
        let began = await connection.isInTransaction
        let descriptor = await connection.transactionDescriptor
        XCTAssertTrue(began)
        XCTAssertEqual(descriptor, 0x0100_0033_0000_005A)
        _ = try await connection.execute("SELECT 1")
        _ = try await connection.execute("SELECT \(Int32(5))")
        _ = try await connection.execute("COMMIT")
        let ended = await connection.isInTransaction
        XCTAssertFalse(ended)
        _ = try await connection.execute("SELECT 2")
        _ = try await connection.execute("BEGIN TRAN; ROLLBACK")
        let afterRollback = await connection.isInTransaction
        XCTAssertFalse(afterRollback)
        let seen = try recorder.descriptors()
        XCTAssertEqual(seen.map(\.kind), ["batch", "batch", "rpc", "batch", "batch", "batch"])
        XCTAssertEqual(seen.map(\.descriptor), [0, 0x0100_0033_0000_005A, 0x0100_0033_0000_005A, 0x0100_0033_0000_005A, 0, 0])
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
    }

    /// Before TDS 7.2 the transaction API sends T-SQL batches (names bracket-quoted) and still
    /// tracks the server's ENVCHANGEs.
    func testTDS71FallsBackToTSQL() async throws {
        let v = TDSVersion.v7_1_1
        let d: [UInt8] = [9, 0, 0, 0, 0, 0, 0, 0]
        func done() -> [UInt8] { ServerTokens.done(version: v) }
        let session = ReplaySession(name: "rpc-transaction-7.1", version: v, exchanges: [
            RPCTokens.batch("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; BEGIN TRANSACTION [t]]x]",
                            [Self.env(.beginTransaction, new: d, old: []), done()]),
            RPCTokens.batch("SAVE TRANSACTION [s]", [done()]),
            RPCTokens.batch("ROLLBACK TRANSACTION [s]", [done()]),
            RPCTokens.batch("COMMIT TRANSACTION", [Self.env(.commitTransaction, new: [], old: d), done()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server) { $0.tdsVersion = .v7_1 }
        defer { Task { await connection.close() } }
        try await connection.beginTransaction(isolationLevel: .serializable, name: "t]x")
        let began = await connection.transactionDescriptor
        XCTAssertEqual(began, 9)
        try await connection.saveTransaction("s")
        try await connection.rollbackTransaction(toSavepoint: "s")
        let still = await connection.isInTransaction
        XCTAssertTrue(still)
        try await connection.commitTransaction()
        let ended = await connection.isInTransaction
        XCTAssertFalse(ended)
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
    }

    /// withTransaction holds the connection: a request another task sends while the body runs
    /// waits, then runs after the commit, outside the transaction (descriptor 0 in ALL_HEADERS).
    func testWithTransactionMakesOtherTasksWaitUntilTheCommit() async throws {
        let (d, descriptor, inTran) = (Self.handleDescriptor, OutgoingRequest.descriptor(from: Self.handleDescriptor), DoneStatus.inTransaction)
        let session = ReplaySession(name: "with-transaction", exchanges: [
            Self.tm("TM_BEGIN_XACT", [Self.env(.beginTransaction, new: d, old: []), RPCTokens.done(inTran)]),
            RPCTokens.batch("UPDATE accounts SET balance = 0", [RPCTokens.done([inTran, .count], count: 1)]),
            RPCTokens.batch("UPDATE accounts SET balance = 1", [RPCTokens.done([inTran, .count], count: 1)]),
            Self.tm("TM_COMMIT_XACT", [Self.env(.commitTransaction, new: [], old: d), RPCTokens.done()]),
            RPCTokens.batch("SELECT 'other task'", [RPCTokens.done([.count], count: 1)]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let (connection, recorder) = try await Self.recordedConnection(server)
        defer { Task { await connection.close() } }
        let other = try await connection.withTransaction { tx -> Task<Bool, any Error> in
            _ = try await tx.execute("UPDATE accounts SET balance = 0")
            // Another task (detached: no inherited reservation) sends a request on the connection now…
            let other = Task.detached { () -> Bool in
                _ = try await connection.execute("SELECT 'other task'")
                return await connection.isInTransaction
            }
            // …and waits in the queue (the connection is idle: only the reservation holds it).
            var queued = false
            for _ in 0 ..< 200_000 where !queued {   // bounded: without the reservation it would never queue
                queued = await !connection.machine.queuedRequests.isEmpty
                if !queued { await Task.yield() }
            }
            XCTAssertTrue(queued, "the other task's request waits for the transaction")
            _ = try await tx.execute("UPDATE accounts SET balance = 1")   // the body goes on first
            return other
        }
        let otherSawTransaction = try await other.value
        XCTAssertFalse(otherSawTransaction)
        let seen = try recorder.descriptors()
        XCTAssertEqual(seen.map(\.kind), ["tm 5", "batch", "batch", "tm 7", "batch"], "\(seen)")
        XCTAssertEqual(seen.map(\.descriptor), [0, descriptor, descriptor, descriptor, 0],
                       "the other task's request ran after the commit, outside the transaction")
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
    }

    /// Identity from the handle: a request made through the transaction from a detached task
    /// (no inherited task-local, no relation to the closure's task) runs inside it, with the
    /// transaction's descriptor; a nested `withSavepoint` rolls back to its savepoint only.
    func testRequestsThroughTheHandleRunInsideWhicheverTaskMakesThem() async throws {
        let (d, descriptor, inTran) = (Self.handleDescriptor, OutgoingRequest.descriptor(from: Self.handleDescriptor), DoneStatus.inTransaction)
        let session = ReplaySession(name: "transaction-handle", exchanges: [
            Self.tm("TM_BEGIN_XACT", [Self.env(.beginTransaction, new: d, old: []), RPCTokens.done(inTran)]),
            RPCTokens.batch("SELECT 'detached'", [RPCTokens.done([inTran, .count], count: 1)]),
            Self.tm("TM_SAVE_XACT", [RPCTokens.done(inTran)]),
            RPCTokens.batch("DELETE FROM accounts", [RPCTokens.done([inTran, .count], count: 3)]),
            Self.tm("TM_ROLLBACK_XACT", [RPCTokens.done(inTran)]),
            Self.tm("TM_COMMIT_XACT", [Self.env(.commitTransaction, new: [], old: d), RPCTokens.done()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let (connection, recorder) = try await Self.recordedConnection(server)
        defer { Task { await connection.close() } }
        struct Planned: Error {}
        try await connection.withTransaction { tx in
            let detached = Task.detached { try await tx.execute("SELECT 'detached'").rowsAffected }
            let affected = try await detached.value
            XCTAssertEqual(affected, 1)
            do {
                try await tx.withSavepoint { inner in
                    _ = try await inner.execute("DELETE FROM accounts")
                    throw Planned()
                }
                XCTFail("the savepoint's body threw")
            } catch is Planned {}
            let active = await tx.isActive
            XCTAssertTrue(active)
        }
        let seen = try recorder.descriptors()
        XCTAssertEqual(seen.map(\.kind), ["tm 5", "batch", "tm 9", "batch", "tm 8", "tm 7"], "\(seen)")
        XCTAssertEqual(seen.map(\.descriptor), [0, descriptor, descriptor, descriptor, descriptor, descriptor])
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
        let inTransaction = await connection.isInTransaction
        XCTAssertFalse(inTransaction)
    }
}

extension TransactionReplayTests {
    /// A transaction handle kept past its closure: its requests fail with `.invalidState`
    /// (nothing is sent), buffered and streamed alike; the connection stays usable.
    func testAHandleKeptPastItsClosureFails() async throws {
        let (d, inTran) = (Self.handleDescriptor, DoneStatus.inTransaction)
        let session = ReplaySession(name: "transaction-kept", exchanges: [
            Self.tm("TM_BEGIN_XACT", [Self.env(.beginTransaction, new: d, old: []), RPCTokens.done(inTran)]),
            Self.tm("TM_COMMIT_XACT", [Self.env(.commitTransaction, new: [], old: d), RPCTokens.done()]),
            RPCTokens.batch("SELECT 'after'", [RPCTokens.done([.count], count: 1)]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        let kept = try await connection.withTransaction { tx in tx }
        do {
            _ = try await kept.execute("SELECT 'kept'")
            XCTFail("a request through an ended transaction ran")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .invalidState, "\(error)")
        }
        do {
            for try await _ in kept.query("SELECT 'kept'") {}
            XCTFail("a stream through an ended transaction ran")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .invalidState, "\(error)")
        }
        let after = try await connection.execute("SELECT 'after'")
        XCTAssertEqual(after.rowsAffected, 1)
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
    }
}

extension TransactionReplayTests {
    /// A task waiting for the connection's reservation (another transaction holds it) and then
    /// cancelled throws `.cancelled`, sends nothing, and leaves the queue: the holder commits and
    /// the next request runs.
    func testCancellingATransactionWaitingForTheConnection() async throws {
        let (d, inTran) = (Self.handleDescriptor, DoneStatus.inTransaction)
        let session = ReplaySession(name: "transaction-waiting-cancelled", exchanges: [
            Self.tm("TM_BEGIN_XACT", [Self.env(.beginTransaction, new: d, old: []), RPCTokens.done(inTran)]),
            Self.tm("TM_COMMIT_XACT", [Self.env(.commitTransaction, new: [], old: d), RPCTokens.done()]),
            RPCTokens.batch("SELECT 'after'", [RPCTokens.done([.count], count: 1)]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        try await connection.withTransaction { _ in
            let waiting = Task.detached { try await connection.withTransaction { _ in XCTFail("granted while held") } }
            while await connection.reservations.count == 0 { await Task.yield() }
            waiting.cancel()
            do {
                try await waiting.value
                XCTFail("the waiting transaction was not cancelled")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .cancelled, "\(error)")
            }
            let left = await connection.reservations.count
            XCTAssertEqual(left, 0)
        }
        let after = try await connection.execute("SELECT 'after'")
        XCTAssertEqual(after.rowsAffected, 1)
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
    }
}
