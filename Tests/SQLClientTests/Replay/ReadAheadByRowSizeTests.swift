import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// Whether a batch is read ahead of its cursor depends on where the caller runs and on the rows
/// (``ReadAheadStateMachine/Caller``): a caller off any actor reads large plain rows (vector,
/// binary) itself, and has small rows read ahead; a caller on an actor has both read ahead. The
/// values are the same either way. The connection's reader-ahead serial counts the readers
/// started.
final class ReadAheadByRowSizeTests: XCTestCase {
    static let vectorSQL = "SELECT id, v FROM embeddings"
    static let narrowSQL = "SELECT a, b FROM pairs"
    static let vectorRows = 400, narrowRows = 20_000

    static func vector(_ id: Int) -> [Float] { (0 ..< 1998).map { Float(id) + Float($0) / 4 } }

    /// 400 rows of (int, vector(1998)), about 3.2 MB, several batches; 20,000 rows of (int, int).
    func start() throws -> ReplayServer {
        let vectorColumns = [ColumnMetadata(flags: [], typeInfo: .int, name: "id"),
                             ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 1998), name: "v")]
        var vectors = ServerTokens.colMetadata(vectorColumns, version: .v7_4)
        for id in 0 ..< Self.vectorRows {
            vectors += try ServerTokens.row([.int(Int32(id)), .vector(SQLVector(Self.vector(id)))], columns: vectorColumns)
        }
        vectors += ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(Self.vectorRows), version: .v7_4)
        let narrowColumns = [ColumnMetadata(flags: [], typeInfo: .int, name: "a"), ColumnMetadata(flags: [], typeInfo: .int, name: "b")]
        var narrow = ServerTokens.colMetadata(narrowColumns, version: .v7_4)
        for a in 0 ..< Self.narrowRows { narrow += try ServerTokens.row([.int(Int32(a)), .int(Int32(a * 2))], columns: narrowColumns) }
        narrow += ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(Self.narrowRows), version: .v7_4)
        var session = ReplaySession(name: "read-ahead-by-row-size", version: .v7_4, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch(Self.vectorSQL), response: [ReplaySession.Segment(bytes: vectors)]),
            ReplaySession.Exchange(request: .sqlBatch(Self.narrowSQL), response: [ReplaySession.Segment(bytes: narrow)]),
            ReplaySession.Exchange(request: .sqlBatch(Self.vectorSQL), response: [ReplaySession.Segment(bytes: vectors)]),
        ])
        session.vectorSupport = 1
        let server = ReplayServer(session: session)
        _ = try server.start()
        return server
    }

    func connect(_ server: ReplayServer) async throws -> SQLConnection {
        let configuration = SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "u", password: "p",
            encryption: .notSupported, connectTimeout: .seconds(30), tdsVersion: .v7_4)
        return try await SQLConnection.connect(configuration)
    }

    /// Reads the vector rows in blocks: (blocks, rows), every value checked.
    static func readVectors(_ connection: SQLConnection, isolation: isolated (any Actor)? = #isolation) async throws -> (Int, Int) {
        var blocks = 0, rows = 0
        for try await block in connection.rowBlocks(SQLQuery(unsafeSQL: vectorSQL)) {
            blocks += 1
            for row in block {
                let (id, v) = try row.decode((Int32, [Float]).self)
                XCTAssertEqual(Int(id), rows)
                XCTAssertEqual(v, vector(rows), "row \(rows)")
                rows += 1
            }
        }
        return (blocks, rows)
    }

    func testACallerOffAnyActorReadsLargePlainRowsItselfAndHasSmallRowsReadAhead() async throws {
        let server = try start()
        defer { server.stop() }
        let connection = try await connect(server)
        let before = await connection.machine.readAhead.serial

        let (blocks, rows) = try await Self.readVectors(connection)
        XCTAssertEqual(rows, Self.vectorRows)
        XCTAssertGreaterThan(blocks, 2, "several batches")
        let afterVectors = await connection.machine.readAhead.serial
        XCTAssertEqual(afterVectors, before, "no reader ahead for 7.9 KiB plain rows, from a task")

        var sum = 0, count = 0
        for try await row in connection.query(SQLQuery(unsafeSQL: Self.narrowSQL)) {
            let (a, b) = try row.decode((Int32, Int32).self)
            XCTAssertEqual(Int(b), 2 * Int(a))
            sum += Int(a)
            count += 1
        }
        XCTAssertEqual(count, Self.narrowRows)
        XCTAssertEqual(sum, Self.narrowRows * (Self.narrowRows - 1) / 2)
        let afterNarrow = await connection.machine.readAhead.serial
        XCTAssertGreaterThan(afterNarrow, afterVectors, "small rows are read ahead")

        // From the main actor the same rows are read ahead (its hops cross threads anyway).
        let (_, again) = try await Self.readOnMain(connection)
        XCTAssertEqual(again, Self.vectorRows)
        let afterMain = await connection.machine.readAhead.serial
        XCTAssertGreaterThan(afterMain, afterNarrow, "read ahead for a caller on an actor")
        await connection.close()
    }

    @MainActor
    static func readOnMain(_ connection: SQLConnection) async throws -> (Int, Int) {
        try await readVectors(connection)
    }
}
