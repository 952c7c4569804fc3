#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClientTesting
import TDS

/// A TDS server on loopback whose every SQL batch returns a result set that never ends (`id int`,
/// `name nvarchar(20)`): rows keep coming in packets without END OF MESSAGE until the client
/// sends ATTENTION (answered with DONE and DONE_ATTN, the connection stays usable) or goes away.
/// PRELOGIN is answered with ENCRYPT_NOT_SUP: connect without TLS.
final class EndlessRowsServer: @unchecked Sendable {
    private let listener: LoopbackListener
    private let counters: Counters
    var port: Int { listener.port }
    /// Rows sent so far, over every connection.
    var rowsSent: Int { counters.rows }
    /// ATTENTION messages answered.
    var attentions: Int { counters.attentions }

    final class Counters: @unchecked Sendable {
        private let lock = NSLock()
        private var _rows = 0
        private var _attentions = 0
        var rows: Int { lock.withLock { _rows } }
        var attentions: Int { lock.withLock { _attentions } }
        func addRows(_ n: Int) { lock.withLock { _rows += n } }
        func addAttention() { lock.withLock { _attentions += 1 } }
    }

    static let columns = [ColumnMetadata(typeInfo: .int, name: "id"), ColumnMetadata(typeInfo: .nvarchar(20), name: "name")]

    init() throws {
        let counters = Counters()
        self.counters = counters
        listener = try LoopbackListener { fd in
            var connection = Connection(fd: fd, counters: counters)
            connection.serve()
        }
    }

    func stop() { listener.stop() }

    private struct Connection {
        let fd: Int32
        let counters: Counters
        /// Client bytes, cut by the one packet framer.
        var inbox = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        var packetID: UInt8 = 1

        init(fd: Int32, counters: Counters) {
            self.fd = fd
            self.counters = counters
        }

        mutating func serve() {
            while let (type, _) = readMessage(wait: true) {
                switch type {
                case 0x12:   // PRELOGIN
                    sendMessage(Prelogin(version: .init(major: 16, minor: 0, build: 0x1000), encryption: .notSupported,
                                  instanceOption: [0], mars: 0).encode())
                case 0x10:   // LOGIN7
                    sendMessage(ServerTokens.loginResponse(clientVersion: .v7_4, packetSize: 4096, utf8: false).flatMap(\.bytes))
                case 0x01:   // SQL_BATCH
                    guard stream() else { return }
                case 0x06:   // ATTENTION outside a response
                    sendMessage(Self.done(attention: true))
                default:
                    sendMessage(Self.done(attention: false))
                }
            }
        }

        static func done(attention: Bool) -> [UInt8] {
            var w = ByteWriter()
            Done(status: attention ? [.attention] : [], currentCommand: 0xC1, rowCount: 0).encode(into: &w, version: .v7_4)
            return w.bytes
        }

        /// Rows until ATTENTION (true) or until the client is gone (false).
        mutating func stream() -> Bool {
            var w = ByteWriter()
            ColMetadata(columns: EndlessRowsServer.columns).encode(into: &w, version: .v7_4)
            var pending = w.bytes
            var id: Int32 = 0
            while true {
                var rows = ByteWriter()
                for _ in 0 ..< 100 {
                    id &+= 1
                    try? Row(values: [.int(id), .string("row \(id)")]).encode(into: &rows, columns: EndlessRowsServer.columns)
                }
                pending += rows.bytes
                while pending.count >= 4088 {
                    guard sendPacket(Array(pending[0 ..< 4088]), last: false) else { return false }
                    pending.removeFirst(4088)
                }
                counters.addRows(100)
                // ATTENTION arrived? Finish on a token boundary with DONE_ATTN.
                if let (type, _) = readMessage(wait: false), type == 0x06 {
                    counters.addAttention()
                    sendMessage(pending + Self.done(attention: true))
                    return true
                }
                if closed { return false }
            }
        }

        var closed = false

        /// The next whole client message; nil at end of stream (or, without `wait`, when none is complete).
        mutating func readMessage(wait: Bool) -> (UInt8, [UInt8])? {
            while true {
                if let message = cut() { return message }
                if closed { return nil }
                var buffer = [UInt8](repeating: 0, count: 65_536)
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, wait ? 0 : Int32(MSG_DONTWAIT)) }
                if n == 0 { closed = true; return nil }
                if n < 0 {
                    if !wait, errno == EAGAIN || errno == EWOULDBLOCK { return nil }
                    closed = true
                    return nil
                }
                inbox.append(buffer[0 ..< n])
            }
        }

        /// A whole message from `inbox` (packets up to END OF MESSAGE), or nil; malformed packets end the connection.
        mutating func cut() -> (UInt8, [UInt8])? {
            do {
                guard let message = try inbox.nextMessage() else { return nil }
                return (message.type.rawValue, message.payload)
            } catch {
                closed = true
                return nil
            }
        }

        mutating func sendMessage(_ message: [UInt8]) {
            var i = 0
            repeat {
                let end = min(i + 4088, message.count)
                guard sendPacket(Array(message[i ..< end]), last: end == message.count) else { return }
                i = end
            } while i < message.count
        }

        mutating func sendPacket(_ payload: [UInt8], last: Bool) -> Bool {
            let length = payload.count + 8
            var packet: [UInt8] = [0x04, last ? 0x01 : 0x00, UInt8(length >> 8), UInt8(length & 0xFF), 0, 0, packetID, 0]
            packet += payload
            packetID &+= 1
            guard LoopbackListener.writeAll(fd, packet) else {
                closed = true
                return false
            }
            return true
        }
    }
}
