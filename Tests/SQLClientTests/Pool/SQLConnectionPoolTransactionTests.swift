import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// `pool.withTransaction { tx in … }`: begin, the body's requests with the transaction's
/// descriptor, commit, on one leased connection that goes back to the pool afterwards.
extension SQLConnectionPoolTests {
    func testPoolTransactionCommitsOnOneConnectionAndReturnsIt() async throws {
        let (d, inTran) = (TransactionReplayTests.handleDescriptor, DoneStatus.inTransaction)
        let session = ReplaySession(name: "pool-transaction", exchanges: [
            TransactionReplayTests.tm("TM_BEGIN_XACT", [Self.env(.beginTransaction, new: .bytes(d), old: .bytes([])),
                                 RPCTokens.done(inTran)]),
            RPCTokens.batch("SELECT 1", try Self.selectAnswer(1)),
            TransactionReplayTests.tm("TM_COMMIT_XACT", [Self.env(.commitTransaction, new: .bytes([]), old: .bytes(d)),
                                  RPCTokens.done()]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let pool = try pool(server)
        let value = try await pool.withTransaction { tx -> Int? in
            let open = await tx.isActive
            XCTAssertTrue(open)
            return try await tx.execute("SELECT 1").rows.first?["n"]?.intValue
        }
        XCTAssertEqual(value, 1)
        let metrics = await pool.metrics
        XCTAssertEqual(metrics.leased, 0, "the connection went back")
        XCTAssertEqual(metrics.created, 1)
        await pool.close()
        XCTAssertEqual(server.unmatchedRequests.map(\.description), [])
    }
}
