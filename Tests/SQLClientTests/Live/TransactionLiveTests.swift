import Foundation
import XCTest
@testable import SQLClient

/// Transaction Manager requests against the live test server: begin, commit, rollback and
/// savepoints, tracked through the ENVCHANGEs it answers with; the descriptor carried after.
final class TransactionLiveTests: XCTestCase {
    private func assertTranCount(_ c: SQLConnection, _ expected: Int, line: UInt = #line) async throws {
        let n = try await c.execute("SELECT @@TRANCOUNT AS n").resultSets.first?.rows.first?["n"]?.intValue
        XCTAssertEqual(n, expected, "@@TRANCOUNT", line: line)
    }

    func testBeginCommitRollbackAsTransactionManagerRequests() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let notInTransaction = await connection.isInTransaction
        XCTAssertFalse(notInTransaction)
        try await assertTranCount(connection, 0)

        try await connection.beginTransaction(isolationLevel: .readCommitted)
        let inTransaction = await connection.isInTransaction
        let first = await connection.transactionDescriptor
        XCTAssertTrue(inTransaction)
        XCTAssertNotNil(first)
        XCTAssertNotEqual(first, 0)
        try await assertTranCount(connection, 1)
        try await connection.commitTransaction()
        let afterCommit = await connection.transactionDescriptor
        XCTAssertNil(afterCommit)
        try await assertTranCount(connection, 0)

        try await connection.beginTransaction()
        let second = await connection.transactionDescriptor
        XCTAssertNotNil(second)
        XCTAssertNotEqual(second, first, "each BEGIN TRANSACTION ENVCHANGE brings a new descriptor")
        _ = try await connection.execute("SELECT \(Int32(1)) AS one")   // an RPC inside the transaction
        try await connection.rollbackTransaction()
        let afterRollback = await connection.isInTransaction
        XCTAssertFalse(afterRollback)
        try await assertTranCount(connection, 0)

        // A commit with nothing open is the server's error; the connection stays usable.
        do {
            try await connection.commitTransaction()
            XCTFail("expected an error for COMMIT without a transaction")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .serverError)
        }
        try await assertTranCount(connection, 0)
    }

    func testSavepointRollbackKeepsTheTransactionOpen() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        try await connection.beginTransaction(isolationLevel: .serializable)
        try await connection.saveTransaction("sp1")
        try await connection.rollbackTransaction(toSavepoint: "sp1")
        let stillOpen = await connection.isInTransaction
        XCTAssertTrue(stillOpen)
        try await assertTranCount(connection, 1)
        try await connection.rollbackTransaction()
        let closed = await connection.isInTransaction
        XCTAssertFalse(closed)
    }

    struct Boom: Error {}

    func testWithTransactionCommitsOnSuccessAndRollsBackOnThrow() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let inside = try await connection.withTransaction { c in
            try await c.execute("SELECT @@TRANCOUNT AS n").resultSets.first?.rows.first?["n"]?.intValue
        }
        XCTAssertEqual(inside, 1)
        try await assertTranCount(connection, 0)
        let open = await connection.isInTransaction
        XCTAssertFalse(open)

        var sawInside = false
        do {
            try await connection.withTransaction(isolationLevel: .repeatableRead) { c in
                sawInside = await c.isActive
                throw Boom()
            }
            XCTFail("the body's error is rethrown")
        } catch is Boom {}
        XCTAssertTrue(sawInside)
        let afterThrow = await connection.isInTransaction
        XCTAssertFalse(afterThrow)
        try await assertTranCount(connection, 0)
    }

    /// withTransaction inside a transaction nests with a savepoint: a throwing inner body is
    /// rolled back to it and the outer transaction stays open.
    func testNestedWithTransactionUsesASavepoint() async throws {
        let connection = try await LiveServer.connect()
        defer { Task { await connection.close() } }
        let count = try await connection.withTransaction { outer -> Int in
            do {
                try await outer.withSavepoint { inner in
                    let open = await inner.isActive
                    XCTAssertTrue(open)
                    throw Boom()
                }
                XCTFail("the inner error is rethrown")
            } catch is Boom {}
            let stillOpen = await outer.isActive
            XCTAssertTrue(stillOpen, "the inner rollback went to the savepoint only")
            return try await outer.execute("SELECT @@TRANCOUNT AS n").resultSets.first?.rows.first?["n"]?.intValue ?? -1
        }
        XCTAssertEqual(count, 1)
        try await assertTranCount(connection, 0)
    }

    /// The descriptor each BEGIN TRANSACTION ENVCHANGE brings is carried in the ALL_HEADERS of
    /// the requests that follow, and 0 again after the commit (login-only TLS, so the requests
    /// can be read back from the socket and decoded).
    func testDescriptorTravelsInAllHeadersOfLaterRequests() async throws {
        try LiveServer.requirePysqlbridge("reads requests back from a login-only TLS session on a known port")
        let config = LiveServer.configuration(encryption: .off)
        let socket = try await SocketStream.connect(host: LiveServer.host, port: LiveServer.port, timeout: .seconds(10))
        let recorder = RecordingStream(socket)
        let connection = try await SQLConnection.connect(config, port: LiveServer.port, over: recorder)
        defer { Task { await connection.close() } }
        recorder.startRecording()
        _ = try await connection.execute("SELECT 1 AS one")
        try await connection.beginTransaction(isolationLevel: .snapshot)
        let current = await connection.transactionDescriptor
        let descriptor = try XCTUnwrap(current)
        _ = try await connection.execute("SELECT 2 AS two")
        _ = try await connection.execute("SELECT \(Int32(3)) AS three")
        try await connection.saveTransaction("s")
        try await connection.commitTransaction()
        _ = try await connection.execute("SELECT 4 AS four")
        let seen = try recorder.descriptors()
        XCTAssertEqual(seen.map(\.kind), ["batch", "tm 5", "batch", "rpc", "tm 9", "tm 7", "batch"])
        XCTAssertEqual(seen.map(\.descriptor), [0, 0, descriptor, descriptor, descriptor, descriptor, 0])
        // The begin asked for snapshot isolation (ISOLATION_LEVEL 5).
        guard case .transactionManager(let begin) = try recorder.requests()[1] else { return XCTFail("no TM request") }
        XCTAssertEqual(begin.request, .begin(isolationLevel: .snapshot, name: ""))
    }
}
