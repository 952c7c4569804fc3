import XCTest
import TDS
@testable import TDSCapture

/// The same TDS byte stream cut into TCP segments at random, delivered in random order with
/// random retransmissions (whole or overlapping), must reassemble to the same bytes and the
/// same messages.
final class ResegmentationTests: XCTestCase {
    typealias S = SyntheticCapture

    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    func testRandomSegmentationReordersAndRetransmissions() throws {
        let batch = Packet.encode(message: Array("SELECT name FROM sys.databases -- padding padding".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }),
                                  type: .sqlBatch, packetSize: 40)
        let rpc = Packet.encode(message: [0xFF, 0xFF, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x26, 0x04, 0x04, 0x2A, 0, 0, 0], type: .rpc, packetSize: 512)
        let stream = batch + rpc + [0x17, 0x03, 0x03, 0x00, 0x04, 1, 2, 3, 4]
        let expected = TDSMessageSplitter.split(stream, direction: .client).map(\.content)
        XCTAssertEqual(expected.count, 3)
        for seed in 0..<200 {
            var rng = SeededGenerator(state: UInt64(seed))
            var cuts: [Int] = [0]
            while let last = cuts.last, last < stream.count { cuts.append(min(stream.count, last + Int.random(in: 1...25, using: &rng))) }
            var segments: [(seq: Int, bytes: ArraySlice<UInt8>)] = []
            for i in 0..<(cuts.count - 1) { segments.append((cuts[i], stream[cuts[i]..<cuts[i + 1]])) }
            // Retransmissions: a copy of a segment, or a segment spanning two.
            let originalCount = segments.count
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                let i = Int.random(in: 0..<originalCount, using: &rng)
                if i + 1 < originalCount, Bool.random(using: &rng) {
                    segments.append((segments[i].seq, stream[segments[i].seq ..< segments[i + 1].seq + segments[i + 1].bytes.count]))
                } else {
                    segments.append(segments[i])
                }
            }
            // Keep the first segment first (the stream starts mid-connection: no SYN), shuffle the rest.
            let first = segments.removeFirst()
            segments.shuffle(using: &rng)
            segments.insert(first, at: 0)
            let isn = UInt32.random(in: 0...UInt32.max, using: &rng)
            let frames = segments.map { s in
                S.ethernet(S.ipv4(src: S.clientV4, dst: S.serverV4,
                                  tcp: S.tcp(srcPort: 51000, dstPort: 1433, seq: isn &+ UInt32(s.seq), flags: 0x18, payload: Array(s.bytes))))
            }
            let conversation = try XCTUnwrap(try CaptureFile(bytes: S.pcap(frames)).tdsConversations().first, "seed \(seed)")
            XCTAssertEqual(conversation.clientStream.bytes, stream, "seed \(seed)")
            XCTAssertEqual(conversation.clientStream.gaps, [], "seed \(seed)")
            XCTAssertEqual(TDSMessageSplitter.split(conversation.clientStream, direction: .client).map(\.content), expected, "seed \(seed)")
        }
    }
}
