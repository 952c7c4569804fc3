import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// The one write path's entry points for other parts of the client: a request body produced
/// piece by piece (as bulk copy sends BULKLOAD), a producer that fails mid-message (the message
/// ends with EOM|IGNORE, then ATTENTION), and RESETCONNECTION on the next request's first packet.
final class RequestWriterTests: XCTestCase {
    static let sql = "SELECT id, name FROM streamed"

    func start() throws -> ReplayServer {
        let exchange = ReplayConnectionTests.exchange(Self.sql, [
            ReplayConnectionTests.colMetadata(), ReplayConnectionTests.row(1, "one"), ReplayConnectionTests.done([.count], 1),
        ])
        let server = ReplayServer(session: ReplaySession(name: "writer", exchanges: [exchange]))
        _ = try server.start()
        return server
    }

    func connect(_ server: ReplayServer) async throws -> (SQLConnection, RecordingStream) {
        let config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)),
                                                user: "u", password: "p", encryption: .notSupported,
                                                connectTimeout: .seconds(20), packetSize: 512)
        let stream = RecordingStream(try await SocketStream.connect(host: "127.0.0.1", port: Int(server.port), timeout: .seconds(5)))
        let connection = try await SQLConnection.connect(config, over: stream)
        stream.startRecording()
        return (connection, stream)
    }

    /// A SQL batch produced in pieces of 37 bytes: cut into 512-byte packets as they come, the
    /// server sees one whole message and answers it.
    func testBodyProducedPieceByPiece() async throws {
        let server = try start()
        defer { server.stop() }
        let (connection, stream) = try await connect(server)
        let body = SQLBatch(text: Self.sql + String(repeating: " ", count: 2000)).encode(version: .v7_4)
        let pieces = PieceSource(body, size: 37)
        let result = try await connection.sendStreamed(type: .sqlBatch, body: { pieces.next() })
        XCTAssertEqual(result.rows.map { $0[0] }, [.int(1)])
        let requests = try stream.requests()
        XCTAssertEqual(requests.count, 1)
        if case .sqlBatch(let batch)? = requests.first {
            XCTAssertEqual(batch.text.trimmingCharacters(in: .whitespaces), Self.sql)
        } else {
            XCTFail("not a SQL batch: \(requests)")
        }
        XCTAssertEqual(stream.packetStatuses().count, (body.count + 503) / 504, "full 512-byte packets")
    }

    /// A producer that throws after some packets went out: the message ends with EOM|IGNORE and
    /// ATTENTION follows; the call throws the producer's error once the server answered both
    /// (the connection is idle then); the connection runs the next request.
    func testProducerFailureEndsTheMessageWithIgnore() async throws {
        let server = try start()
        defer { server.stop() }
        let (connection, stream) = try await connect(server)
        let body = SQLBatch(text: Self.sql + String(repeating: " ", count: 4000)).encode(version: .v7_4)
        let pieces = PieceSource(body, size: 1500, failAfter: 3)
        do {
            _ = try await connection.sendStreamed(type: .sqlBatch, body: { try pieces.nextOrThrow() })
            XCTFail("the producer's error was swallowed")
        } catch is PieceSource.Failure {
        }
        let running = await connection.machine.request
        XCTAssertNil(running, "the ignored message's DONE and the ATTENTION acknowledgement were read before the call threw")
        let rows = try await connection.execute(SQLQuery(unsafeSQL: Self.sql)).resultSets.first?.rows
        XCTAssertEqual(rows?.first?[0], .int(1))
        let statuses = stream.packetStatuses()
        let cut = try XCTUnwrap(statuses.firstIndex { $0.status.contains(.ignore) })
        XCTAssertEqual(statuses[cut].status, [.endOfMessage, .ignore])
        XCTAssertTrue(statuses[..<cut].allSatisfy { $0.type == .sqlBatch && $0.status.isEmpty }, "\(statuses)")
        XCTAssertEqual(statuses[cut + 1].type, .attention, "ATTENTION after the ignored message, never inside it")
        XCTAssertEqual(statuses.last?.type, .sqlBatch)
        XCTAssertEqual(server.unmatchedRequests, [], "the ignored batch is not run")
    }

    /// A producer that throws on its first call, before any packet went out: the message is still
    /// begun and ended (one header-only packet with EOM|IGNORE, then ATTENTION), so that a
    /// BULKLOAD announced by INSERT BULK is always ended; the call throws once the server answered.
    func testProducerFailingAtOnceSendsAnEmptyIgnoredMessage() async throws {
        let server = try start()
        defer { server.stop() }
        let (connection, stream) = try await connect(server)
        let pieces = PieceSource(SQLBatch(text: Self.sql).encode(version: .v7_4), size: 100, failAfter: 0)
        do {
            _ = try await connection.sendStreamed(type: .sqlBatch, body: { try pieces.nextOrThrow() })
            XCTFail("the producer's error was swallowed")
        } catch is PieceSource.Failure {
        }
        let running = await connection.machine.request
        XCTAssertNil(running, "the connection is idle when the call throws")
        let statuses = stream.packetStatuses()
        XCTAssertEqual(statuses.map(\.type), [.sqlBatch, .attention])
        XCTAssertEqual(statuses.first?.status, [.endOfMessage, .ignore])
        XCTAssertEqual(Array(stream.recordedBytes[2 ..< 4]), [0, 8], "a header-only packet")
        let rows = try await connection.execute(SQLQuery(unsafeSQL: Self.sql)).resultSets.first?.rows
        XCTAssertEqual(rows?.first?[0], .int(1))
        XCTAssertEqual(server.unmatchedRequests, [])
    }

    /// RESETCONNECTION (0x08) on the first packet of the next request only; SKIPTRAN (0x10) on request.
    func testResetConnectionOnTheNextRequestsFirstPacket() async throws {
        let server = try start()
        defer { server.stop() }
        let (connection, stream) = try await connect(server)
        await connection.resetConnectionBeforeNextRequest()
        _ = try await connection.execute(SQLQuery(unsafeSQL: Self.sql + String(repeating: " ", count: 1000)))   // five 512-byte packets
        _ = try await connection.execute(SQLQuery(unsafeSQL: Self.sql))
        await connection.resetConnectionBeforeNextRequest(keepingTransaction: true)
        _ = try await connection.execute(SQLQuery(unsafeSQL: Self.sql))
        let statuses = stream.packetStatuses().map(\.status)
        XCTAssertEqual(statuses, [[.resetConnection], [], [], [], [.endOfMessage], [.endOfMessage],
                                  [.endOfMessage, .resetConnectionSkipTransaction]])
    }
}

/// Hands out a body in pieces (optionally failing after some).
final class PieceSource: @unchecked Sendable {
    struct Failure: Error {}
    private let lock = NSLock()
    private let bytes: [UInt8]
    private let size: Int
    private let failAfter: Int?
    private var offset = 0
    private var handed = 0

    init(_ bytes: [UInt8], size: Int, failAfter: Int? = nil) {
        self.bytes = bytes
        self.size = size
        self.failAfter = failAfter
    }

    func next() -> [UInt8]? {
        lock.withLock {
            guard offset < bytes.count else { return nil }
            let end = min(offset + size, bytes.count)
            defer { offset = end; handed += 1 }
            return Array(bytes[offset ..< end])
        }
    }

    func nextOrThrow() throws -> [UInt8]? {
        if let failAfter, lock.withLock({ handed >= failAfter }) { throw Failure() }
        return next()
    }
}

extension RecordingStream {
    /// The type and status of every recorded packet, in order.
    func packetStatuses() -> [(type: PacketType, status: PacketStatus)] {
        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        framer.append(recordedBytes)
        var out: [(PacketType, PacketStatus)] = []
        while let o = try? framer.next() { out.append((o.packet.header.type, o.packet.header.status)) }
        return out
    }
}
