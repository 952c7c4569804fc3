#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClientTesting
@testable import SQLClient
import TDS

/// A TDS server on loopback that misbehaves on purpose, one way per instance, to show that the
/// client bounds what it accepts: endless PRELOGIN packets, endless TLS handshake packets, a
/// PLP value declaring an absurd length then endless chunks, endless rows (ATTENTION ignored),
/// HTTP text instead of TDS, ENCRYPT_ON to a client that cannot encrypt; and a slow reader that
/// stops reading a request for a while (then answers IGNORE, ATTENTION and `SELECT 1` as SQL
/// Server does). Each connection is served on its own thread (``LoopbackListener``) with
/// blocking sockets; what the server received is logged, cut by the one packet framer.
final class HostileServer: @unchecked Sendable {
    enum Behaviour: Sendable {
        /// PRELOGIN is answered by TABULAR_RESULT packets that never set EOM, forever.
        case endlessPrelogin
        /// PRELOGIN is answered ENCRYPT_ON; the client's ClientHello by PRELOGIN packets of
        /// TLS-looking bytes that never set EOM, forever.
        case endlessTLSHandshake
        /// A normal login; the batch gets a varbinary(max) column and a row whose PLP total
        /// length is `declared`, then 8,000-byte chunks forever.
        case endlessPLP(declared: UInt64)
        /// A normal login; the batch gets COLMETADATA then rows forever; ATTENTION is never read.
        case endlessRows
        /// A normal login; the batch gets ERROR tokens (severity 16) forever; ATTENTION is never read.
        case endlessErrors
        /// HTTP text instead of the PRELOGIN response; the connection stays open.
        case httpText
        /// A TABULAR_RESULT packet header declaring `length` bytes (outside 8–32,767) instead
        /// of the PRELOGIN response, then silence; the connection stays open.
        case absurdFirstPacket(length: UInt16)
        /// PRELOGIN answered ENCRYPT_ON (to a client that said ENCRYPT_NOT_SUP); anything
        /// after is read and logged (a LOGIN7 must never come).
        case encryptOn
        /// The same with ENCRYPT_REQ.
        case encryptRequired
        /// A normal login; once the next request starts to arrive it is not read for `stall`
        /// seconds. Then: a message
        /// ended with IGNORE gets a DONE, ATTENTION a DONE(DONE_ATTN), `SELECT 1` one row.
        case slowReader(stall: Double)
    }

    /// One message the server received.
    struct Received: Sendable, Equatable {
        var type: PacketType
        var packets: Int
        var bytes: Int
        var lastStatus: PacketStatus
        /// For SQL batches of a few KB, the SQL text.
        var text: String?
    }

    let behaviour: Behaviour
    private var listener: LoopbackListener!
    private let lock = NSLock()
    private var _received: [Received] = []
    private var _readAgainAt: ContinuousClock.Instant?

    init(_ behaviour: Behaviour) throws {
        self.behaviour = behaviour
        let box = WeakBox()
        listener = try LoopbackListener { fd in box.server?.serve(fd) }
        box.server = self
    }

    private final class WeakBox: @unchecked Sendable { weak var server: HostileServer? }

    var port: Int { listener.port }
    /// Every message received so far, on every connection, in order.
    var received: [Received] { lock.withLock { _received } }
    /// When the slow reader started reading again.
    var readAgainAt: ContinuousClock.Instant? { lock.withLock { _readAgainAt } }

    func stop() { listener.stop() }

    // MARK: - Serving

    private func serve(_ fd: Int32) {
        var c = Connection(fd: fd, log: { m in self.lock.withLock { self._received.append(m) } })
        switch behaviour {
        case .endlessPrelogin:
            guard c.nextMessage() != nil else { return }
            let packet = Self.packet(type: .tabularResult, status: [], payload: [UInt8](repeating: 0x20, count: 4088))
            while c.send(packet) {}
        case .endlessTLSHandshake:
            guard c.nextMessage() != nil else { return }
            guard c.send(Self.message(Self.preloginResponse(.on))) else { return }
            guard c.nextMessage() != nil else { return }   // ClientHello
            // A TLS handshake record header then bytes, in packets that never end the message.
            var payload: [UInt8] = [0x16, 0x03, 0x03, 0x40, 0x00]
            payload += [UInt8](repeating: 0x0B, count: 4083)
            let packet = Self.packet(type: .prelogin, status: [], payload: payload)
            while c.send(packet) {}
        case .endlessPLP(let declared):
            guard c.login(), c.nextMessage() != nil else { return }
            let column = ColumnMetadata(typeInfo: .varbinary(nil), name: "v")
            var w = ByteWriter()
            ColMetadata(columns: [column]).encode(into: &w, version: .v7_4)
            w.writeUInt8(0xD1)
            w.writeUInt64LE(declared)
            guard c.send(Self.packet(type: .tabularResult, status: [], payload: w.bytes)) else { return }
            var chunk = ByteWriter()
            chunk.writeUInt32LE(8000)
            chunk.writeBytes([UInt8](repeating: 0xAB, count: 8000))
            let packet = Self.packet(type: .tabularResult, status: [], payload: chunk.bytes)
            while c.send(packet) {}
        case .endlessRows:
            guard c.login(), c.nextMessage() != nil else { return }
            let columns = [ColumnMetadata(typeInfo: .int, name: "id"), ColumnMetadata(typeInfo: .nvarchar(50), name: "name")]
            var head = ByteWriter()
            ColMetadata(columns: columns).encode(into: &head, version: .v7_4)
            guard c.send(Self.packet(type: .tabularResult, status: [], payload: head.bytes)) else { return }
            var rows = ByteWriter()
            while rows.count < 4000 {
                try? Row(values: [.int(Int32(rows.count)), .string("an endless row")]).encode(into: &rows, columns: columns)
            }
            let packet = Self.packet(type: .tabularResult, status: [], payload: rows.bytes)
            while c.send(packet) {}
        case .endlessErrors:
            guard c.login(), c.nextMessage() != nil else { return }
            var errors = ByteWriter()
            while errors.count < 4000 {
                ErrorToken(ServerMessage(number: 50000, state: 1, severity: 16, message: String(repeating: "e", count: 200),
                                         serverName: "hostile", lineNumber: 1)).encode(into: &errors, version: .v7_4)
            }
            let packet = Self.packet(type: .tabularResult, status: [], payload: errors.bytes)
            while c.send(packet) {}
        case .httpText:
            guard c.nextMessage() != nil else { return }
            let text = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\nBad Request"
            guard c.send(Array(text.utf8)) else { return }
            while c.nextMessage() != nil {}
        case .absurdFirstPacket(let length):
            guard c.nextMessage() != nil else { return }
            guard c.send([PacketType.tabularResult.rawValue, 0x01, UInt8(length >> 8), UInt8(length & 0xFF), 0, 0, 1, 0]) else {
                return
            }
            while c.nextMessage() != nil {}
        case .encryptOn, .encryptRequired:
            guard c.nextMessage() != nil else { return }
            let answer: Prelogin.Encryption = if case .encryptOn = behaviour { .on } else { .required }
            guard c.send(Self.message(Self.preloginResponse(answer))) else { return }
            while c.nextMessage() != nil {}
        case .slowReader(let stall):
            guard c.login() else { return }
            // Stop reading once the next request starts to arrive, however long the client takes
            // to encode it (60 MB in a debug build on a loaded machine can take over 30 s): with a
            // cap on the wait, the stall could pass before the request came, and the request would
            // be read at full speed and finish within its query timeout. poll also returns when
            // the client closes the connection.
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&ready, 1, -1) < 0, errno == EINTR {}
            Thread.sleep(forTimeInterval: stall)
            lock.withLock { _readAgainAt = ContinuousClock.now }
            while let m = c.nextMessage() {
                if m.lastStatus.contains(.ignore) {
                    guard c.send(Self.message(ServerTokens.done(status: [.error], version: .v7_4))) else { return }
                } else if m.type == .attention {
                    guard c.send(Self.message(ServerTokens.done(status: .attention, version: .v7_4))) else { return }
                } else if m.type == .sqlBatch {
                    guard c.send(Self.message(Self.selectOne())) else { return }
                }
            }
        }
    }

    /// One served connection.
    private struct Connection {
        let fd: Int32
        let log: (Received) -> Void
        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))

        /// The next whole message (logged), nil at end of stream or on bad framing.
        mutating func nextMessage() -> Received? {
            var packets = 0
            var bytes = 0
            var type = PacketType.sqlBatch
            var payload: [UInt8] = []
            while true {
                let output: PacketAssembler.Output?
                do { output = try framer.next() } catch { return nil }
                if let output {
                    packets += 1
                    bytes += output.packet.payload.count
                    type = output.packet.header.type
                    if payload.count < 65_536 { payload += output.packet.payload }
                    if output.packet.header.status.contains(.endOfMessage) {
                        var text: String?
                        if type == .sqlBatch, bytes < 65_536, let batch = try? SQLBatch.decode(from: payload, version: .v7_4) {
                            text = batch.text
                        }
                        let m = Received(type: type, packets: packets, bytes: bytes,
                                         lastStatus: output.packet.header.status, text: text)
                        log(m)
                        return m
                    }
                    continue
                }
                let more = LoopbackListener.readSome(fd)
                if more.isEmpty { return nil }
                framer.append(more)
            }
        }

        /// Sends all of `bytes`; false once the client is gone.
        func send(_ bytes: [UInt8]) -> Bool { LoopbackListener.writeAll(fd, bytes) }

        /// PRELOGIN (answered ENCRYPT_NOT_SUP), LOGIN7, the login response.
        mutating func login() -> Bool {
            guard nextMessage() != nil, send(HostileServer.message(HostileServer.preloginResponse(.notSupported))),
                  let login = nextMessage(), login.type == .login7 else { return false }
            let response = ServerTokens.loginResponse(clientVersion: .v7_4, packetSize: 4096, utf8: false).flatMap(\.bytes)
            return send(HostileServer.message(response))
        }
    }

    // MARK: - Messages

    static func preloginResponse(_ encryption: Prelogin.Encryption) -> [UInt8] {
        Prelogin(version: .init(major: 16, minor: 0, build: 0x1000), encryption: encryption,
                 instanceOption: [0], mars: 0).encode()
    }

    static func message(_ payload: [UInt8]) -> [UInt8] {
        Packet.encode(message: payload, type: .tabularResult, packetSize: 4096)
    }

    static func packet(type: PacketType, status: PacketStatus, payload: [UInt8]) -> [UInt8] {
        Packet(header: PacketHeader(type: type, status: status, length: UInt16(8 + payload.count)), payload: payload).bytes
    }

    /// `SELECT 1`'s response: an int column, one row, DONE with a count of 1.
    static func selectOne() -> [UInt8] {
        let columns = [ColumnMetadata(typeInfo: .int, name: "n")]
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
        try? Row(values: [.int(1)]).encode(into: &w, columns: columns)
        Done(status: [.count], currentCommand: 0xC1, rowCount: 1).encode(into: &w, version: .v7_4)
        return w.bytes
    }
}
