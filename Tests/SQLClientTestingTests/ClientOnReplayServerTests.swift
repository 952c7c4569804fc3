import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// SQLClient's integration-style behaviour with no SQL Server present: the replay server plays
/// the server, including cancellation (ATTENTION) and a server that never acknowledges it.
final class ClientOnReplayServerTests: XCTestCase {
    static let version = TDSVersion.v7_4

    /// "SELECT big": 20,000 rows of varbinary(100) (about 2 MB, more than the one batch a streaming
    /// read reads ahead, so a loop left early still has rows to cancel) in 512-byte packets;
    /// "SELECT 1 AS c": one int.
    static func session(attention: ReplaySession.AttentionPolicy, faults: ReplaySession.Faults = .init()) throws -> ReplaySession {
        let column = ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(100), name: "b")
        var big: [ReplaySession.Segment] = [.init(comment: "COLMETADATA", bytes: ServerTokens.colMetadata([column], version: version))]
        for i in 0..<20_000 {
            big.append(.init(bytes: try ServerTokens.row([.binary(Array(repeating: UInt8(i & 0xFF), count: 100))], columns: [column])))
        }
        big.append(.init(bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 20_000, version: version)))
        let c = ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "c")
        let one: [ReplaySession.Segment] = [
            .init(bytes: ServerTokens.colMetadata([c], version: version)),
            .init(bytes: try ServerTokens.row([.int(1)], columns: [c])),
            .init(bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 1, version: version)),
        ]
        return ReplaySession(name: "cancel", version: version, packetSize: 512, attention: attention, exchanges: [
            .init(request: .sqlBatch("SELECT big"), response: big, faults: faults),
            .init(request: .sqlBatch("SELECT 1 AS c"), response: one),
        ])
    }

    static func configuration(port: UInt16) -> SQLConnectionConfiguration {
        SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
                                   encryption: .notSupported, connectTimeout: .seconds(10), tdsVersion: version)
    }

    func testBreakingOutOfARowLoopCancelsAndTheConnectionStaysUsable() async throws {
        let server = ReplayServer(session: try Self.session(attention: .acknowledge))
        let port = try server.start()
        defer { server.stop() }
        let connection = try await SQLConnection.connect(Self.configuration(port: port))
        var seen = 0
        for try await row in connection.query("SELECT big") {
            XCTAssertEqual(row.values.first, .binary(Array(repeating: UInt8(seen & 0xFF), count: 100)))
            seen += 1
            if seen == 10 { break }
        }
        XCTAssertEqual(seen, 10)
        let next = try await connection.execute("SELECT 1 AS c")
        XCTAssertEqual(next.resultSets.first?.rows.first?.values, [.int(1)])
        await connection.close()
        server.stop()
        XCTAssertEqual(server.connections.first?.attentions, 1, "one ATTENTION sent and acknowledged")
        XCTAssertEqual(server.connections.first?.packetSize, 512)
    }

    func testAnUnacknowledgedAttentionTimesOutAndClosesTheConnection() async throws {
        // The server sends 3,000 bytes of the result, then nothing, and ignores ATTENTION.
        let server = ReplayServer(session: try Self.session(attention: .ignore, faults: .init(stallAfter: 3000)))
        let port = try server.start()
        defer { server.stop() }
        var config = Self.configuration(port: port)
        config.queryTimeout = .milliseconds(500)
        config.cancelTimeout = .milliseconds(500)
        let connection = try await SQLConnection.connect(config)
        do {
            _ = try await connection.execute("SELECT big")
            XCTFail("a stalled query must time out")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
        }
        let open = await connection.isOpen
        XCTAssertFalse(open, "a connection whose ATTENTION was never acknowledged is closed, not reused")
    }
}
