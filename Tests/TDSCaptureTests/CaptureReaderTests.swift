import XCTest
@testable import TDSCapture

final class CaptureReaderTests: XCTestCase {
    typealias S = SyntheticCapture

    /// A request (SQL_BATCH) of 3 segments and a response of one, client port 50000.
    func conversationFrames(serverPort: UInt16 = 1433, v6: Bool = false, includeSYN: Bool = true,
                            order: [Int]? = nil, duplicate: Int? = nil, link: (([UInt8]) -> [UInt8])? = nil) -> ([[UInt8]], [UInt8], [UInt8]) {
        let request = S.tdsPacket(type: 0x01, body: Array("SELECT 1 -- some padding text".utf8))
        let response = S.tdsPacket(type: 0x04, body: [0xFD, 0, 0, 0xC1, 0, 1, 0, 0, 0, 0, 0, 0, 0])
        let c = v6 ? S.clientV6 : S.clientV4, s = v6 ? S.serverV6 : S.serverV4
        func frame(_ fromClient: Bool, seq: UInt32, flags: UInt8, _ payload: [UInt8]) -> [UInt8] {
            let t = S.tcp(srcPort: fromClient ? 50000 : serverPort, dstPort: fromClient ? serverPort : 50000,
                          seq: seq, flags: flags, payload: payload)
            let ip = v6 ? S.ipv6(src: fromClient ? c : s, dst: fromClient ? s : c, tcp: t, withExtensionHeader: true)
                        : S.ipv4(src: fromClient ? c : s, dst: fromClient ? s : c, tcp: t)
            return link?(ip) ?? S.ethernet(ip, v6: v6)
        }
        // Client ISN near the 32-bit wrap, to exercise sequence arithmetic.
        let isn: UInt32 = 0xFFFF_FFF0
        var data: [[UInt8]] = [
            frame(true, seq: isn &+ 1, flags: 0x18, Array(request[0..<10])),
            frame(true, seq: isn &+ 11, flags: 0x18, Array(request[10..<20])),
            frame(true, seq: isn &+ 21, flags: 0x18, Array(request[20...])),
        ]
        if let order { data = order.map { data[$0] } }
        if let duplicate { data.append(data[duplicate]) }
        var frames: [[UInt8]] = []
        if includeSYN {
            frames.append(frame(true, seq: isn, flags: 0x02, []))
            frames.append(frame(false, seq: 1000, flags: 0x12, []))
        }
        frames += data
        frames.append(frame(false, seq: 1001, flags: 0x18, response))
        return (frames, request, response)
    }

    func testPcapEthernetIPv4WithHandshake() throws {
        let (frames, request, response) = conversationFrames()
        let file = try CaptureFile(bytes: S.pcap(frames))
        XCTAssertEqual(file.format, .pcap)
        XCTAssertEqual(file.frames.count, 6)
        let conversations = try file.tdsConversations()
        XCTAssertEqual(conversations.count, 1)
        let conv = try XCTUnwrap(conversations.first)
        XCTAssertEqual(conv.client.description, "192.168.1.10:50000")
        XCTAssertEqual(conv.server.description, "192.168.1.20:1433")
        XCTAssertEqual(conv.clientStream.bytes, request)
        XCTAssertEqual(conv.serverStream.bytes, response)
        XCTAssertTrue(conv.clientStream.sawSYN)
        XCTAssertEqual(conv.clientStream.gaps, [])
        XCTAssertEqual(conv.roleEvidence, .port)
    }

    func testBigEndianPcap() throws {
        let (frames, request, _) = conversationFrames()
        let file = try CaptureFile(bytes: S.pcap(frames, bigEndian: true))
        XCTAssertEqual(try file.tdsConversations().first?.clientStream.bytes, request)
        XCTAssertEqual(file.frames[0].timestamp, 1_700_000_000)
    }

    func testOutOfOrderAndRetransmittedSegments() throws {
        let (frames, request, _) = conversationFrames(order: [2, 0, 1], duplicate: 1)
        let conv = try XCTUnwrap(try CaptureFile(bytes: S.pcap(frames)).tdsConversations().first)
        XCTAssertEqual(conv.clientStream.bytes, request)
        XCTAssertEqual(conv.clientStream.duplicateBytes, 10)
        XCTAssertEqual(conv.clientStream.gaps, [])
    }

    func testOverlappingRetransmissionKeepsEachByteOnce() throws {
        // A retransmission that covers the second half of segment 1 and all of segment 2.
        let payload = Array(0..<40).map { UInt8($0) }
        var frames: [[UInt8]] = []
        for (seq, range) in [(100, 0..<20), (120, 20..<30), (110, 10..<30), (130, 30..<40)] {
            let t = S.tcp(srcPort: 40000, dstPort: 1433, seq: UInt32(seq), flags: 0x18, payload: Array(payload[range]))
            frames.append(S.ethernet(S.ipv4(src: S.clientV4, dst: S.serverV4, tcp: t)))
        }
        let conv = try XCTUnwrap(try CaptureFile(bytes: S.pcap(frames)).tdsConversations().first)
        XCTAssertEqual(conv.clientStream.bytes, payload)
        XCTAssertEqual(conv.clientStream.duplicateBytes, 20)
    }

    func testStreamStartingMidConnectionOnAnyPortIsFoundByItsHeaders() throws {
        let (frames, request, response) = conversationFrames(serverPort: 5000, includeSYN: false, order: [1, 0, 2])
        let file = try CaptureFile(bytes: S.pcap(frames))
        let conversations = try file.tdsConversations()
        XCTAssertEqual(conversations.count, 1)
        let conv = try XCTUnwrap(conversations.first)
        XCTAssertEqual(conv.roleEvidence, .content)
        XCTAssertEqual(conv.server.port, 5000)
        XCTAssertEqual(conv.clientStream.bytes, request)
        XCTAssertEqual(conv.serverStream.bytes, response)
        XCTAssertFalse(conv.clientStream.sawSYN)
    }

    func testNonTDSConversationOnOtherPortIsIgnoredUnlessPortGiven() throws {
        let t1 = S.tcp(srcPort: 40000, dstPort: 8080, seq: 1, flags: 0x18, payload: Array("GET / HTTP/1.1\r\n".utf8))
        let file = try CaptureFile(bytes: S.pcap([S.ethernet(S.ipv4(src: S.clientV4, dst: S.serverV4, tcp: t1))]))
        XCTAssertEqual(try file.tdsConversations().count, 0)
        XCTAssertEqual(try file.tcpConversations().count, 1)
        let withPort = try file.tdsConversations(port: 8080)
        XCTAssertEqual(withPort.count, 1)
        XCTAssertEqual(withPort.first?.server.port, 8080)
        XCTAssertEqual(withPort.first?.roleEvidence, .port)
    }

    func testGapIsRecorded() throws {
        var frames: [[UInt8]] = []
        for (seq, bytes) in [(1, [UInt8](repeating: 1, count: 10)), (21, [UInt8](repeating: 2, count: 5))] {
            let t = S.tcp(srcPort: 40000, dstPort: 1433, seq: UInt32(seq), flags: 0x18, payload: bytes)
            frames.append(S.ethernet(S.ipv4(src: S.clientV4, dst: S.serverV4, tcp: t)))
        }
        let conv = try XCTUnwrap(try CaptureFile(bytes: S.pcap(frames)).tdsConversations().first)
        XCTAssertEqual(conv.clientStream.bytes.count, 15)
        XCTAssertEqual(conv.clientStream.gaps, [TCPStream.Gap(offset: 10, length: 10)])
        XCTAssertEqual(conv.clientStream.frameIndex(at: 12), 1)
        XCTAssertEqual(conv.clientStream.frameIndex(at: 3), 0)
    }

    func testPcapngIPv6WithExtensionHeaderBothByteOrders() throws {
        for bigEndian in [false, true] {
            let (frames, request, response) = conversationFrames(v6: true, order: [0, 2, 1])
            let file = try CaptureFile(bytes: S.pcapng(frames, bigEndian: bigEndian))
            XCTAssertEqual(file.format, .pcapng)
            XCTAssertEqual(file.frames.count, 6)
            XCTAssertEqual(file.frames[1].timestamp, 1_700_000_001, accuracy: 1e-6)
            let conv = try XCTUnwrap(try file.tdsConversations().first)
            XCTAssertEqual(conv.client.description, "[2001:db8::a]:50000")
            XCTAssertEqual(conv.server.description, "[2001:db8::14]:1433")
            XCTAssertEqual(conv.clientStream.bytes, request)
            XCTAssertEqual(conv.serverStream.bytes, response)
        }
    }

    func testLinuxCookedCaptureAndVLAN() throws {
        let (sllFrames, request, _) = conversationFrames(link: { S.sll($0) })
        let sll = try CaptureFile(bytes: S.pcap(sllFrames, linkType: 113))
        XCTAssertEqual(try sll.tdsConversations().first?.clientStream.bytes, request)
        let (vlanFrames, request2, _) = conversationFrames(link: { S.ethernet($0, vlan: true) })
        XCTAssertEqual(try CaptureFile(bytes: S.pcap(vlanFrames)).tdsConversations().first?.clientStream.bytes, request2)
    }

    func testNewSYNOnSameFourTupleStartsNewConversation() throws {
        var frames: [[UInt8]] = []
        for (seq, flags, payload) in [(UInt32(10), UInt8(0x02), [UInt8]()), (11, 0x18, [1, 2, 3]), (500, 0x02, []), (501, 0x18, [9, 9])] {
            let t = S.tcp(srcPort: 40000, dstPort: 1433, seq: seq, flags: flags, payload: payload)
            frames.append(S.ethernet(S.ipv4(src: S.clientV4, dst: S.serverV4, tcp: t)))
        }
        let conversations = try CaptureFile(bytes: S.pcap(frames)).tdsConversations()
        XCTAssertEqual(conversations.map(\.clientStream.bytes), [[1, 2, 3], [9, 9]])
    }

    // MARK: hostile input

    func testTruncatedPcapRecordIsACaptureErrorWithOffset() throws {
        let (frames, _, _) = conversationFrames()
        let good = S.pcap(frames)
        let cut = Array(good[0 ..< 24 + 16 + 10])
        XCTAssertThrowsError(try CaptureFile(bytes: cut)) { error in
            let e = error as? CaptureError
            XCTAssertEqual(e?.offset, 40)
            XCTAssertTrue(e?.detail.contains("pcap record 1") ?? false, "\(String(describing: e))")
        }
        XCTAssertThrowsError(try CaptureFile(bytes: Array(good[0 ..< 20]), format: .pcap)) { error in
            XCTAssertEqual((error as? CaptureError)?.offset, 0)
        }
    }

    func testEveryPrefixAndMutationOfAPcapDoesNotTrap() {
        let (frames, _, _) = conversationFrames(v6: true)
        for file in [S.pcap(frames), S.pcapng(frames)] {
            for length in 0...file.count {
                _ = try? CaptureFile(bytes: Array(file[0..<length])).tdsConversations()
            }
            var rng = SystemRandomNumberGenerator()
            for _ in 0..<2000 {
                var m = file
                for _ in 0..<3 { m[Int.random(in: 0..<m.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
                _ = try? CaptureFile(bytes: m).tdsConversations()
            }
        }
    }

    func testBadIPv4HeaderLengthIsACaptureError() throws {
        let t = S.tcp(srcPort: 40000, dstPort: 1433, seq: 1, flags: 0x18, payload: [1])
        var frame = S.ethernet(S.ipv4(src: S.clientV4, dst: S.serverV4, tcp: t))
        frame[14] = 0x43 // IHL 3 words
        let file = try CaptureFile(bytes: S.pcap([frame]))
        XCTAssertThrowsError(try file.tdsConversations()) { error in
            XCTAssertEqual((error as? CaptureError)?.offset, 24 + 16 + 14)
        }
    }

    func testPcapngBadBlockLength() throws {
        let (frames, _, _) = conversationFrames()
        var file = S.pcapng(frames)
        // The IDB starts after the 28-byte SHB; make its length not a multiple of 4.
        file[28 + 4] = 0x15
        XCTAssertThrowsError(try CaptureFile(bytes: file)) { error in
            XCTAssertEqual((error as? CaptureError)?.offset, 32)
        }
    }

    // MARK: .hex and detection

    func testHexFormat() throws {
        let text = "# origin: test; a whole TDS packet\n01 01 00 0a\n\n  00 00 01 00 41 00 \n# trailing comment\n"
        let file = try CaptureFile(bytes: Array(text.utf8), fileName: "x.hex")
        XCTAssertEqual(file.format, .hex)
        XCTAssertEqual(file.bytes, [1, 1, 0, 0x0A, 0, 0, 1, 0, 0x41, 0])
        XCTAssertEqual(file.comments, ["origin: test; a whole TDS packet", "trailing comment"])
        XCTAssertThrowsError(try HexCapture.parse(Array("# c\n01 0g\n".utf8))) { error in
            XCTAssertEqual((error as? CaptureError)?.offset, 7)
            XCTAssertTrue((error as? CaptureError)?.detail.contains("line 2") ?? false)
        }
    }

    func testRawDetection() throws {
        let packet = S.tdsPacket(type: 0x01, body: [0x41, 0])
        let file = try CaptureFile(bytes: packet)
        XCTAssertEqual(file.format, .raw)
        XCTAssertEqual(file.bytes, packet)
    }

    func testTDSDetectionHelpers() {
        XCTAssertTrue(TDSDetection.startsWithTDSPackets(S.tdsPacket(type: 0x12, body: [0, 1, 2])))
        XCTAssertFalse(TDSDetection.isPacketHeader(Array("GET / HTTP/1.1".utf8)))
        XCTAssertEqual(TDSDetection.role(S.tdsPacket(type: 0x04, body: [0xFD])), .server)
        XCTAssertEqual(TDSDetection.role(S.tdsPacket(type: 0x03, body: [0xFF])), .client)
        XCTAssertTrue(TDSDetection.isTLSRecord([0x17, 0x03, 0x03, 0x00, 0x20]))
        XCTAssertNotNil(TDSDetection.legacyTDSReason(clientStream: S.tdsPacket(type: 0x02, status: 0, body: [0, 0])))
        XCTAssertNil(TDSDetection.legacyTDSReason(clientStream: S.tdsPacket(type: 0x10, body: [0, 0])))
    }
}
