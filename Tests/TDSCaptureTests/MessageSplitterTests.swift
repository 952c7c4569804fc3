import XCTest
import TDS
@testable import TDSCapture

final class MessageSplitterTests: XCTestCase {
    typealias S = SyntheticCapture

    func kinds(_ messages: [CapturedMessage]) -> [String] {
        messages.map { m in
            switch m.content {
            case .tds(let t): return "\(t.type.name):\(t.payload.count)"
            case .tls(let n, let b, let p): return "TLS\(p ? "-PRELOGIN" : ""):\(n)/\(b)"
            case .incomplete(let t, _): return "INCOMPLETE-\(t.type.name):\(t.payload.count)"
            case .skipped(let n, _): return "SKIP:\(n)"
            case .malformed(let e): return "MALFORMED@\(e.offset)"
            }
        }
    }

    func testMultiPacketMessageAndTLS() {
        let login = Packet.encode(message: Array(repeating: 0x41, count: 30), type: .sqlBatch, packetSize: 20)
        let tlsInPrelogin = S.tdsPacket(type: 0x12, body: [0x16, 0x03, 0x01, 0x00, 0x02, 0xAA, 0xBB])
        let rawTLS: [UInt8] = [0x17, 0x03, 0x03, 0x00, 0x03, 1, 2, 3, 0x17, 0x03, 0x03, 0x00, 0x01, 9]
        let prelogin = S.tdsPacket(type: 0x12, body: [0xFF])
        let stream = prelogin + tlsInPrelogin + rawTLS + login
        XCTAssertEqual(kinds(TDSMessageSplitter.split(stream, direction: .client)),
                       ["PRELOGIN:1", "TLS-PRELOGIN:1/7", "TLS:2/14", "SQL_BATCH:30"])
        let messages = TDSMessageSplitter.split(stream, direction: .client)
        XCTAssertEqual(messages.map(\.streamOffset), [0, 9, 24, 38])
    }

    func testStartInsideAPacketAndGaps() {
        let a = S.tdsPacket(type: 0x04, body: Array(repeating: 0xFD, count: 13))
        let b = S.tdsPacket(type: 0x04, body: [0x79, 0, 0, 0, 0])
        // Starts 5 bytes into `a`, then `b` whole, then the first 6 bytes of `a` (capture ends).
        let stream = Array(a[5...]) + b + Array(a[0..<6])
        XCTAssertEqual(kinds(TDSMessageSplitter.split(stream, direction: .server)),
                       ["SKIP:16", "TABULAR_RESULT:5", "INCOMPLETE-TABULAR_RESULT:0"])
        // A gap in the middle of a two-packet message.
        let two = Packet.encode(message: Array(repeating: 7, count: 20), type: .rpc, packetSize: 18)
        let gapStream = Array(two[0..<18]) + Array(two[22...]) + a
        let messages = TDSMessageSplitter.split(gapStream, gaps: [TCPStream.Gap(offset: 18, length: 4)], direction: .client)
        XCTAssertEqual(kinds(messages), ["INCOMPLETE-RPC:10", "SKIP:\(two.count - 22)", "TABULAR_RESULT:13"])
    }

    func testMalformedPacketTypeChangeInsideMessage() {
        let first = [0x01, 0x00, 0x00, 0x0A, 0, 0, 1, 0, 0x41, 0] as [UInt8]
        let second = S.tdsPacket(type: 0x03, body: [1, 2])
        let messages = TDSMessageSplitter.split(first + second, direction: .client)
        XCTAssertEqual(kinds(messages).first, "MALFORMED@10")
    }

    func testHostileStreamsDoNotTrap() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let n = Int.random(in: 0..<80, using: &rng)
            var bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if n > 4, Bool.random(using: &rng) { bytes[0] = 0x04; bytes[1] = 1; bytes[2] = 0 }
            _ = TDSMessageSplitter.split(bytes, gaps: n > 10 ? [TCPStream.Gap(offset: n / 2, length: 3)] : [], direction: .server)
        }
    }

    func testVersionInferenceHelpers() {
        XCTAssertTrue(TDSVersionInference.startsWithAllHeaders([0x16, 0, 0, 0, 0x12, 0, 0, 0, 2, 0] + Array(repeating: 0, count: 12) + [0x41, 0]))
        XCTAssertFalse(TDSVersionInference.startsWithAllHeaders(Array("S\0E\0L\0".utf8)))
        XCTAssertEqual(TDSVersionInference.doneOnlyRowCountWidth([0xFD, 0x10, 0, 0xC1, 0, 1, 0, 0, 0]), 4)
        XCTAssertEqual(TDSVersionInference.doneOnlyRowCountWidth([0xFD, 0x10, 0, 0xC1, 0, 1, 0, 0, 0, 0, 0, 0, 0]), 8)
        XCTAssertNil(TDSVersionInference.doneOnlyRowCountWidth([0x79, 0, 0, 0, 0]))
    }
}

final class DecodeRobustnessTests: XCTestCase {
    typealias S = SyntheticCapture

    /// A synthetic session: PRELOGIN, TLS handshake in PRELOGIN packets, then bytes that are
    /// neither TDS packets nor TLS records: the session is reported as encrypted.
    func testNonTDSBytesAfterTheHandshakeAreEncrypted() throws {
        let prelogin = S.tdsPacket(type: 0x12, body: [0x00, 0x00, 0x06, 0x00, 0x01, 0xFF, 0x01])
        let hello = S.tdsPacket(type: 0x12, body: [0x16, 0x03, 0x01, 0x00, 0x02, 0x01, 0x00])
        let noise: [UInt8] = [0x9A, 0x33, 0x71, 0xC4, 0x05, 0xEE, 0x10, 0x42, 0x42, 0x42, 0x01, 0x02]
        var frames: [[UInt8]] = []
        var seq: UInt32 = 1
        for payload in [prelogin, hello, noise] {
            let t = S.tcp(srcPort: 40000, dstPort: 1433, seq: seq, flags: 0x18, payload: payload)
            frames.append(S.ethernet(S.ipv4(src: S.clientV4, dst: S.serverV4, tcp: t)))
            seq &+= UInt32(payload.count)
        }
        let report = CaptureDecoder.decode(bytes: S.pcap(frames))
        XCTAssertEqual(report.failures.map(\.description), [])
        XCTAssertEqual(report.records.map(\.type), ["PRELOGIN", "PRELOGIN", "TLS"])
        XCTAssertEqual(report.records[1]["tls"]?.stringValue, "handshake")
        XCTAssertEqual(report.records[2]["encrypted"], .bool(true))
        XCTAssertEqual(report.records[2]["bytes"], .int(12))
    }

    func testHostileInputsNeverTrap() {
        var rng = SystemRandomNumberGenerator()
        let packet = S.tdsPacket(type: 0x04, body: [0xFD, 0x10, 0, 0xC1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x79, 0, 0, 0, 0])
        for _ in 0..<3000 {
            var m = packet
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                m[Int.random(in: 0..<m.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            m = Array(m.prefix(Int.random(in: 0...m.count, using: &rng)))
            _ = CaptureDecoder.decode(bytes: m)
            _ = CaptureDecoder.decode(bytes: m, options: DecodeOptions(tokensOnly: true))
        }
    }

    func testJSONEscaping() {
        let v = JSONValue.object([("k\"ey", .string("a\"b\\c\n\u{01}é\u{2028}")), ("n", .null), ("u", .uint(UInt64.max))])
        // An integer beyond 2^53 - 1 is a string by default (exact for any JSON reader), a number by rule .numbers.
        XCTAssertEqual(v.serialized(), #"{"k\"ey":"a\"b\\c\n\u0001é\u2028","n":null,"u":"18446744073709551615"}"#)
        XCTAssertEqual(v.serialized(.numbers), #"{"k\"ey":"a\"b\\c\n\u0001é\u2028","n":null,"u":18446744073709551615}"#)
    }
}
