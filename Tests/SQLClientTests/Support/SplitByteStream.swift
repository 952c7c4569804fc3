import Foundation
import SQLClient
import SQLClientTesting

/// A ``ByteStream`` over a socket that hands the client what the server sent in pieces of the
/// sizes its ``Schedule`` gives (one byte at a time, or seeded random sizes), whatever one socket
/// read brought: the client's read path must give the same answer however the bytes arrive.
/// Writes go to the socket as they are.
final class SplitByteStream: ByteStream, @unchecked Sendable {
    /// How many bytes each read hands over (never more than the client asked for).
    enum Schedule: Sendable, CustomStringConvertible {
        /// What each socket read brought (up to 64 KB).
        case asRead
        /// `n` bytes at a time (1: byte by byte).
        case bytes(Int)
        /// Sizes drawn uniformly from `1 ... max` by a generator seeded with `seed`.
        case random(seed: UInt64, max: Int)

        var description: String {
            switch self {
            case .asRead: return "as read from the socket"
            case .bytes(1): return "byte by byte"
            case .bytes(let n): return "\(n) bytes at a time"
            case .random(let seed, let max): return "random pieces of 1...\(max) bytes (seed \(seed))"
            }
        }
    }

    let base: any ByteStream
    let schedule: Schedule
    private let lock = NSLock()
    private var pending: [UInt8] = []
    private var start = 0
    private var random: SeededRandom
    private var _pieces = 0
    private var _delivered = 0

    init(base: any ByteStream, schedule: Schedule) {
        self.base = base
        self.schedule = schedule
        if case .random(let seed, _) = schedule { random = SeededRandom(seed: seed) } else { random = SeededRandom(seed: 0) }
    }

    /// A stream over a new TCP connection to `127.0.0.1:port`.
    static func connect(port: UInt16, schedule: Schedule) async throws -> SplitByteStream {
        SplitByteStream(base: try await SocketStream.connect(host: "127.0.0.1", port: Int(port), timeout: .seconds(10)),
                        schedule: schedule)
    }

    /// Reads handed to the client so far.
    var pieces: Int { lock.withLock { _pieces } }
    /// Bytes handed to the client so far.
    var delivered: Int { lock.withLock { _delivered } }

    func read(maxLength: Int) async throws -> [UInt8] {
        if lock.withLock({ start >= pending.count }) {
            let more = try await base.read(maxLength: 65_536)
            if more.isEmpty { return [] }
            lock.withLock { pending = more; start = 0 }
        }
        return lock.withLock {
            let size: Int
            switch schedule {
            case .asRead: size = pending.count
            case .bytes(let n): size = max(1, n)
            case .random(_, let top): size = Int.random(in: 1 ... max(1, top), using: &random)
            }
            let n = min(size, max(1, maxLength), pending.count - start)
            defer { start += n; _pieces += 1; _delivered += n }
            return Array(pending[start ..< start + n])
        }
    }

    func write(_ bytes: [UInt8]) async throws { try await base.write(bytes) }

    func close() { base.close() }
}
