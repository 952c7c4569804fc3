import Foundation
import SQLClientTesting
import TDS
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A bare blocking TDS client for exercising the replay server packet by packet.
final class RawTDSClient {
    let fd: Int32
    var assembler = PacketAssembler()
    var packets: [Packet] = []
    var eof = false

    init(port: UInt16) throws {
        #if canImport(Darwin)
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        #if canImport(Darwin)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        _ = inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw XCTSkip("cannot connect to the replay server") }
    }

    deinit { close(fd) }

    func send(_ type: PacketType, _ message: [UInt8], packetSize: Int = 4096) {
        let bytes = Packet.encode(message: message, type: type, packetSize: packetSize)
        #if canImport(Darwin)
        _ = bytes.withUnsafeBytes { Darwin.send(fd, $0.baseAddress, $0.count, 0) }
        #else
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #endif
    }

    /// Reads until one whole message arrived (nil at EOF first). `timeoutMs` bounds each wait
    /// (nil = block).
    func readMessage(timeoutMs: Int32? = nil) throws -> TDSMessage? {
        while true {
            while let out = try assembler.next() {
                packets.append(out.packet)
                if let m = out.message { return m }
            }
            if let t = timeoutMs {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&p, 1, t) <= 0 { return nil }
            }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { eof = true; return nil }
            assembler.append(buffer[0..<n])
        }
    }

    /// PRELOGIN and LOGIN7 at `version`; returns the login response's tokens.
    func login(version: TDSVersion, packetSize: UInt32 = 4096, utf8: Bool = false) throws -> [Token] {
        send(.prelogin, Prelogin(version: .init(major: 1, minor: 0, build: 0), encryption: .off).encode())
        let pre = try XCTUnwrap(try readMessage())
        let reply = try Prelogin.decode(from: pre.payload)
        XCTAssertEqual(reply.encryption, .notSupported)
        var login = Login7(tdsVersion: version, packetSize: packetSize)
        login.userName = "tester"
        if utf8 { login.featureExt = [Login7Feature(id: Login7Feature.utf8SupportID, data: [])] }
        send(.login7, login.encode(version: version))
        let message = try XCTUnwrap(try readMessage())
        return try Self.tokens(message.payload, version: version)
    }

    static func tokens(_ bytes: [UInt8], version: TDSVersion) throws -> [Token] {
        var decoder = TokenStreamDecoder(version: version)
        decoder.append(bytes)
        var out: [Token] = []
        while let t = try decoder.next() { out.append(t) }
        try decoder.finish()
        return out
    }
}

final class ReplayServerBehaviourTests: XCTestCase {
    func start(_ session: ReplaySession) throws -> (ReplayServer, UInt16) {
        let server = ReplayServer(session: session)
        return (server, try server.start())
    }

    func testGeneratedLoginAcknowledgesTheClientVersion() throws {
        for version in [TDSVersion.v7_1_1, .v7_2, .v7_3B, .v7_4] {
            let (server, port) = try start(ReplaySession(name: "login"))
            defer { server.stop() }
            let client = try RawTDSClient(port: port)
            let tokens = try client.login(version: version, packetSize: 8192)
            let ack = tokens.compactMap { if case .loginAck(let a) = $0 { return a } else { return nil } }
            XCTAssertEqual(ack.first?.tdsVersion, version, "\(version)")
            let sizes = tokens.compactMap { t -> Int? in
                if case .envChange(let e) = t { return e.newPacketSize }
                return nil
            }
            XCTAssertEqual(sizes, [8192], "packet size ENVCHANGE at \(version)")
            XCTAssertEqual(tokens.last?.doneStatus?.status, [])
        }
    }

    func testUTF8SupportIsAcknowledgedOnlyWhenRequestedAndEnabled() throws {
        for (enabled, requested) in [(true, true), (true, false), (false, true)] {
            let (server, port) = try start(ReplaySession(name: "utf8", utf8Support: enabled))
            defer { server.stop() }
            let client = try RawTDSClient(port: port)
            let tokens = try client.login(version: .v7_4, utf8: requested)
            let acked = tokens.contains { if case .featureExtAck = $0 { return true } else { return false } }
            XCTAssertEqual(acked, enabled && requested, "enabled \(enabled) requested \(requested)")
            XCTAssertEqual(server.connections.first?.utf8Requested ?? requested, requested)
        }
    }

    func testRPCIsMatchedByProcedureAndParameterValues() throws {
        let version = TDSVersion.v7_4
        var session = ReplaySession(name: "rpc", version: version)
        session.exchanges.append(.init(
            request: .rpc(procedure: "sp_executesql", parameters: [
                .init(name: "@stmt", value: "SELECT @P1"), .init(name: "@params", value: "@P1 int"), .init(name: "@P1", value: "42"),
            ]),
            response: [.init(comment: "RETURNSTATUS 7", bytes: ServerTokens.returnStatus(7)),
                       .init(comment: "DONEPROC", bytes: ServerTokens.done(token: 0xFE, version: version))]))
        session.exchanges.append(.init(
            request: .rpc(procedure: "dbo.any_params", parameters: []),
            response: [.init(bytes: ServerTokens.returnStatus(1) + ServerTokens.done(token: 0xFE, version: version))]))
        let (server, port) = try start(session)
        defer { server.stop() }
        let client = try RawTDSClient(port: port)
        _ = try client.login(version: version)

        func call(_ procedure: RPCCall.Procedure, _ params: [RPCParameter]) throws -> [Token] {
            let request = RPCRequest(RPCCall(procedure: procedure, parameters: params))
            client.send(.rpc, try request.encode(version: version))
            let m = try XCTUnwrap(try client.readMessage())
            return try RawTDSClient.tokens(m.payload, version: version)
        }
        let stmt = RPCParameter(name: "@stmt", typeInfo: .nvarchar(4000), value: .string("SELECT @P1"))
        let decl = RPCParameter(name: "@params", typeInfo: .nvarchar(4000), value: .string("@P1 int"))
        let hit = try call(.id(.spExecuteSQL), [stmt, decl, RPCParameter(name: "@P1", typeInfo: .int, value: .int(42))])
        XCTAssertEqual(hit.first, .returnStatus(ReturnStatus(value: 7)))
        let miss = try call(.id(.spExecuteSQL), [stmt, decl, RPCParameter(name: "@P1", typeInfo: .int, value: .int(43))])
        XCTAssertEqual(miss.count, 1)
        XCTAssertEqual(miss.first?.doneStatus?.status, [])
        let byName = try call(.name("DBO.ANY_PARAMS"), [RPCParameter(name: "@x", typeInfo: .int, value: .null)])
        XCTAssertEqual(byName.first, .returnStatus(ReturnStatus(value: 1)))
        XCTAssertEqual(server.unmatchedRequests.count, 1)
        if case .rpc(let name, let params)? = server.unmatchedRequests.first {
            XCTAssertEqual(name, "sp_executesql")
            XCTAssertEqual(params.last?.value, "43")
        } else {
            XCTFail("unmatched request not logged: \(server.unmatchedRequests)")
        }
    }

    /// A session with one big response of many segments.
    func bigSession(attention: ReplaySession.AttentionPolicy, packetSize: Int? = nil, faults: ReplaySession.Faults = .init()) -> ReplaySession {
        let version = TDSVersion.v7_4
        let column = ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(100), name: "b")
        var segments: [ReplaySession.Segment] = [.init(comment: "COLMETADATA", bytes: ServerTokens.colMetadata([column], version: version))]
        for i in 0..<2000 {
            segments.append(.init(bytes: (try? ServerTokens.row([.binary(Array(repeating: UInt8(i & 0xFF), count: 100))], columns: [column])) ?? []))
        }
        segments.append(.init(bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 2000, version: version)))
        return ReplaySession(name: "big", version: version, packetSize: packetSize, attention: attention,
                             exchanges: [.init(request: .sqlBatch("SELECT big"), response: segments, faults: faults),
                                         .init(request: .sqlBatch("SELECT 1"), response: [.init(bytes: ServerTokens.done(status: .count, rowCount: 1, version: version))])])
    }

    func testAttentionIsAcknowledgedWithDoneAttn() throws {
        let (server, port) = try start(bigSession(attention: .acknowledge, packetSize: 512))
        defer { server.stop() }
        let client = try RawTDSClient(port: port)
        _ = try client.login(version: .v7_4, packetSize: 512)
        client.send(.sqlBatch, SQLBatch(text: "SELECT big").encode(version: .v7_4))
        client.send(.attention, [])
        // Read until a DONE with DONE_ATTN; every message before it must decode cleanly (the
        // response was cut on a token boundary).
        var sawAttention = false
        var messages = 0
        while !sawAttention, let m = try client.readMessage() {
            messages += 1
            let tokens = try RawTDSClient.tokens(m.payload, version: .v7_4)
            sawAttention = tokens.contains { $0.doneStatus?.status.contains(.attention) == true }
        }
        XCTAssertTrue(sawAttention)
        XCTAssertLessThanOrEqual(messages, 2)
        XCTAssertTrue(client.packets.allSatisfy { $0.bytes.count <= 512 })
        // The connection is usable afterwards.
        client.send(.sqlBatch, SQLBatch(text: "SELECT 1").encode(version: .v7_4))
        let next = try XCTUnwrap(try client.readMessage())
        XCTAssertEqual(try RawTDSClient.tokens(next.payload, version: .v7_4).first?.doneStatus?.rowCount, 1)
        XCTAssertEqual(server.connections.count, 0, "still connected")
    }

    func testIgnoredAttentionIsNeverAnswered() throws {
        let (server, port) = try start(bigSession(attention: .ignore))
        defer { server.stop() }
        let client = try RawTDSClient(port: port)
        _ = try client.login(version: .v7_4)
        client.send(.attention, [])
        client.send(.sqlBatch, SQLBatch(text: "SELECT 1").encode(version: .v7_4))
        // Messages are answered in order: the first reply is the batch's, not an attention acknowledgement.
        let m = try XCTUnwrap(try client.readMessage())
        let tokens = try RawTDSClient.tokens(m.payload, version: .v7_4)
        XCTAssertEqual(tokens.count, 1)
        XCTAssertEqual(tokens.first?.doneStatus?.rowCount, 1)
        XCTAssertFalse(tokens.first?.doneStatus?.status.contains(.attention) ?? true)
    }

    func testCloseAfterSendsExactlyThatManyBytesThenCloses() throws {
        let (server, port) = try start(bigSession(attention: .acknowledge, faults: .init(closeAfter: 1000)))
        defer { server.stop() }
        let client = try RawTDSClient(port: port)
        _ = try client.login(version: .v7_4)
        let before = client.packets.count
        client.send(.sqlBatch, SQLBatch(text: "SELECT big").encode(version: .v7_4))
        XCTAssertNil(try client.readMessage())
        XCTAssertTrue(client.eof)
        let payload = client.packets[before...].reduce(0) { $0 + $1.payload.count }
        XCTAssertEqual(payload, 1000)
        XCTAssertFalse(client.packets.last?.header.status.contains(.endOfMessage) ?? true)
    }

    func testStallAfterSendsThatManyBytesThenNothing() throws {
        let (server, port) = try start(bigSession(attention: .acknowledge, faults: .init(stallAfter: 700)))
        defer { server.stop() }
        let client = try RawTDSClient(port: port)
        _ = try client.login(version: .v7_4)
        let before = client.packets.count
        client.send(.sqlBatch, SQLBatch(text: "SELECT big").encode(version: .v7_4))
        XCTAssertNil(try client.readMessage(timeoutMs: 300))
        XCTAssertFalse(client.eof, "a stalled server keeps the connection open")
        let payload = client.packets[before...].reduce(0) { $0 + $1.payload.count }
        XCTAssertEqual(payload, 700)
    }
}
