#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClientTesting
@testable import SQLClient
import TDS

/// A small TDS server on loopback that closes connections at random, for the pool's recovery
/// tests: PRELOGIN (answered ENCRYPT_NOT_SUP), LOGIN7 (a generated login response), then each
/// SQL batch `SELECT <integer>` answered with that integer in one row. Before answering a batch
/// it draws from a seeded generator: with probability ``closeProbability`` it closes the
/// connection before answering, after half of the answer, or right after the answer (the client
/// learns at its next request). Each connection is served on its own thread.
final class FlakyServer: @unchecked Sendable {
    /// How a connection was cut.
    enum Cut: String, Sendable { case beforeAnswer, midAnswer, afterAnswer }

    private var listener: LoopbackListener!
    private let lock = NSLock()
    private var generator: SplitMix64
    private var _closeProbability: Double
    private var _open: Set<Int32> = []
    private var _accepted = 0
    private var _mostOpen = 0
    private var _cuts: [Cut: Int] = [:]
    private var _answered = 0

    init(seed: UInt64, closeProbability: Double) throws {
        generator = SplitMix64(seed: seed)
        _closeProbability = closeProbability
        let box = WeakBox()
        listener = try LoopbackListener { fd in box.server?.serve(fd) }
        box.server = self
    }

    private final class WeakBox: @unchecked Sendable { weak var server: FlakyServer? }

    var port: Int { listener.port }
    /// The chance (0…1) that a batch ends its connection; 0 stops the chaos.
    var closeProbability: Double {
        get { lock.withLock { _closeProbability } }
        set { lock.withLock { _closeProbability = newValue } }
    }
    /// Connections accepted so far.
    var accepted: Int { lock.withLock { _accepted } }
    /// Connections open now.
    var openConnections: Int { lock.withLock { _open.count } }
    /// The most connections open at once.
    var mostOpenAtOnce: Int { lock.withLock { _mostOpen } }
    /// Connections cut, by how.
    var cuts: [Cut: Int] { lock.withLock { _cuts } }
    /// Batches answered in full.
    var answered: Int { lock.withLock { _answered } }

    /// Stops accepting and cuts every open connection.
    func stop() {
        listener.stop()
        for fd in lock.withLock({ _open }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func draw() -> Cut? {
        lock.withLock {
            let roll = Double(generator.next() % 1_000_000) / 1_000_000
            guard roll < _closeProbability else { return nil }
            return [Cut.beforeAnswer, .midAnswer, .afterAnswer][Int(generator.next() % 3)]
        }
    }

    private func serve(_ fd: Int32) {
        lock.withLock {
            _accepted += 1
            _open.insert(fd)
            _mostOpen = max(_mostOpen, _open.count)
        }
        defer { lock.withLock { _ = _open.remove(fd) } }
        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        func nextMessage() -> TDSMessage? {
            var packets: [Packet] = []
            while true {
                do {
                    while let output = try framer.next() {
                        packets.append(output.packet)
                        if output.packet.header.status.contains(.endOfMessage) {
                            return TDSMessage(type: packets[0].header.type, firstStatus: packets[0].header.status,
                                              lastStatus: output.packet.header.status, spid: 0, packetCount: packets.count,
                                              payload: packets.flatMap(\.payload))
                        }
                    }
                } catch {
                    return nil
                }
                let more = LoopbackListener.readSome(fd)
                if more.isEmpty { return nil }
                framer.append(more)
            }
        }
        func send(_ payload: [UInt8]) -> Bool {
            LoopbackListener.writeAll(fd, Packet.encode(message: payload, type: .tabularResult, packetSize: 4096))
        }
        guard nextMessage()?.type == .prelogin,
              send(HostileServer.preloginResponse(.notSupported)),
              nextMessage()?.type == .login7,
              send(ServerTokens.loginResponse(clientVersion: .v7_4, packetSize: 4096, utf8: false).flatMap(\.bytes))
        else { return }
        while let message = nextMessage() {
            switch message.type {
            case .attention:
                guard send(ServerTokens.done(status: .attention, version: .v7_4)) else { return }
                continue
            case .sqlBatch:
                break
            default:
                guard send(ServerTokens.done(version: .v7_4)) else { return }
                continue
            }
            let text = (try? SQLBatch.decode(from: message.payload, version: .v7_4))?.text ?? ""
            let value = Int32(text.dropFirst("SELECT ".count).trimmingCharacters(in: .whitespaces)) ?? 0
            let answer = Self.answer(value)
            let cut = draw()
            if let cut { lock.withLock { _cuts[cut, default: 0] += 1 } }
            switch cut {
            case .beforeAnswer?:
                return
            case .midAnswer?:
                let bytes = Packet.encode(message: answer, type: .tabularResult, packetSize: 4096)
                LoopbackListener.writeAll(fd, Array(bytes.prefix(bytes.count / 2)))
                return
            case .afterAnswer?:
                _ = send(answer)
                return
            case nil:
                guard send(answer) else { return }
                lock.withLock { _answered += 1 }
            }
        }
    }

    /// `SELECT value`'s answer: an int column `n`, one row, DONE with a count of 1.
    static func answer(_ value: Int32) -> [UInt8] {
        let columns = [ColumnMetadata(typeInfo: .int, name: "n")]
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
        try? Row(values: [.int(value)]).encode(into: &w, columns: columns)
        Done(status: [.count], currentCommand: 0xC1, rowCount: 1).encode(into: &w, version: .v7_4)
        return w.bytes
    }
}

/// A seeded generator (SplitMix64), so a random schedule can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
