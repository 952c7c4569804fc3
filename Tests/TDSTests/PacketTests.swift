import XCTest
@testable import TDS

final class PacketTests: XCTestCase {
    func testHeaderRoundTripAndBigEndian() throws {
        let h = PacketHeader(type: .sqlBatch, status: [.endOfMessage, .resetConnection], length: 0x1234,
                             spid: 0x0A0B, packetID: 7, window: 0)
        XCTAssertEqual(h.bytes, [0x01, 0x09, 0x12, 0x34, 0x0A, 0x0B, 0x07, 0x00])
        XCTAssertEqual(try PacketHeader.decode(from: h.bytes), h)
        XCTAssertEqual(h.payloadLength, 0x1234 - 8)
    }

    func testStatusBits() {
        XCTAssertEqual(PacketStatus.endOfMessage.rawValue, 0x01)
        XCTAssertEqual(PacketStatus.ignore.rawValue, 0x02)
        XCTAssertEqual(PacketStatus.resetConnection.rawValue, 0x08)
        XCTAssertEqual(PacketStatus.resetConnectionSkipTransaction.rawValue, 0x10)
        XCTAssertEqual(PacketStatus(rawValue: 0x19).description, "[EOM,RESETCONNECTION,RESETCONNECTIONSKIPTRAN]")
    }

    func testHeaderLengthUnder8IsInvalidPacket() {
        for len in 0..<8 {
            XCTAssertThrowsError(try PacketHeader.decode(from: [0x04, 0x01, 0x00, UInt8(len), 0, 0, 1, 0])) { e in
                let e = e as! TDSDecodingError
                XCTAssertEqual(e.code, .invalidPacket)
                XCTAssertEqual(e.offset, 0)
            }
        }
        XCTAssertThrowsError(try PacketHeader.decode(from: [0x04, 0x01, 0x00])) { e in
            XCTAssertEqual((e as! TDSDecodingError).code, .truncated)
        }
    }

    func testSplitIdsEOMAndSizes() {
        let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
        let packets = Packet.split(message: message, type: .sqlBatch, packetSize: 512, status: [.resetConnection])
        XCTAssertEqual(packets.count, 2)  // 504 + 496
        XCTAssertEqual(packets[0].header.length, 512)
        XCTAssertEqual(packets[1].header.length, 8 + 496)
        XCTAssertEqual(packets[0].header.packetID, 1)
        XCTAssertEqual(packets[1].header.packetID, 2)
        XCTAssertEqual(packets[0].header.status, [.resetConnection])
        XCTAssertEqual(packets[1].header.status, [.endOfMessage])
        XCTAssertEqual(packets.flatMap(\.payload), message)
    }

    func testSplitExactMultipleAndEmpty() {
        let message = [UInt8](repeating: 0xAB, count: 24)
        let packets = Packet.split(message: message, type: .rpc, packetSize: 16)
        XCTAssertEqual(packets.map(\.payload.count), [8, 8, 8])
        XCTAssertEqual(packets.map { $0.header.status.contains(.endOfMessage) }, [false, false, true])
        let attention = Packet.split(message: [], type: .attention, packetSize: 4096)
        XCTAssertEqual(attention.count, 1)
        XCTAssertEqual(attention[0].bytes, [0x06, 0x01, 0x00, 0x08, 0x00, 0x00, 0x01, 0x00])
    }

    func testPacketIDsWrapMod256() {
        let message = [UInt8](repeating: 1, count: 300)
        let packets = Packet.split(message: message, type: .sqlBatch, packetSize: 9)
        XCTAssertEqual(packets.count, 300)
        XCTAssertEqual(packets[254].header.packetID, 255)
        XCTAssertEqual(packets[255].header.packetID, 0)
        XCTAssertEqual(packets[256].header.packetID, 1)
        XCTAssertEqual(packets.last?.header.packetID, UInt8(300 % 256))
    }

    private func assemble(_ stream: [UInt8], chunks: [Int], maxSize: Int = 32767) throws -> ([Packet], [TDSMessage]) {
        var a = PacketAssembler(maximumPacketSize: maxSize)
        var packets: [Packet] = []
        var messages: [TDSMessage] = []
        var i = 0
        var ci = 0
        while i < stream.count {
            let n = min(chunks.isEmpty ? stream.count : max(chunks[ci % chunks.count], 1), stream.count - i)
            ci += 1
            a.append(stream[i..<(i + n)])
            i += n
            while let o = try a.next() {
                packets.append(o.packet)
                if let m = o.message { messages.append(m) }
            }
        }
        XCTAssertEqual(a.bufferedByteCount, 0)
        return (packets, messages)
    }

    func testAssemblerWholeByteByByteAndRandomSplits() throws {
        let m1 = (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let m2: [UInt8] = []
        let m3 = [UInt8](repeating: 0x42, count: 100)
        var stream = Packet.encode(message: m1, type: .tabularResult, packetSize: 512, spid: 55)
        stream += Packet.encode(message: m2, type: .attention, packetSize: 512)
        stream += Packet.encode(message: m3, type: .prelogin, packetSize: 512)
        let (wholeP, whole) = try assemble(stream, chunks: [])
        XCTAssertEqual(wholeP.count, 6 + 1 + 1)
        XCTAssertEqual(whole.map(\.type), [.tabularResult, .attention, .prelogin])
        XCTAssertEqual(whole[0].payload, m1)
        XCTAssertEqual(whole[0].packetCount, 6)
        XCTAssertEqual(whole[0].spid, 55)
        XCTAssertEqual(whole[1].payload, m2)
        XCTAssertEqual(whole[2].payload, m3)
        XCTAssertEqual(whole[2].streamOffset, stream.count - 108)
        let (_, bytewise) = try assemble(stream, chunks: [1])
        XCTAssertEqual(bytewise, whole)
        var rng = SplitMix64(seed: 42)
        for _ in 0..<20 {
            let chunks = (0..<50).map { _ in Int.random(in: 1...700, using: &rng) }
            let (p, m) = try assemble(stream, chunks: chunks)
            XCTAssertEqual(m, whole)
            XCTAssertEqual(p, wholeP)
        }
    }

    /// Arrays appended as a socket returns them (the `[UInt8]` path, which keeps a received array
    /// as it came and assembles only the packet that straddles two of them): the same packets,
    /// offsets, buffered counts and remaining bytes as the whole stream, for chunks smaller and
    /// larger than a packet, whether packets are taken after each chunk or after several.
    func testAssemblerArrayChunksGiveTheSamePacketsAndOffsets() throws {
        var stream: [UInt8] = []
        for (i, size) in [0, 1, 503, 504, 505, 3000, 9000].enumerated() {
            stream += Packet.encode(message: (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }, type: .tabularResult, packetSize: 512)
        }
        func packets(_ chunks: [Int], takeEvery: Int) throws -> [TDSMessage] {
            var a = PacketAssembler(maximumPacketSize: 512)
            var messages: [TDSMessage] = []
            var i = 0, ci = 0, consumed = 0
            while i < stream.count {
                let n = min(max(chunks[ci % chunks.count], 1), stream.count - i)
                ci += 1
                a.append(Array(stream[i ..< i + n]))
                i += n
                XCTAssertEqual(a.bufferedByteCount, i - consumed)
                guard ci % takeEvery == 0 || i == stream.count else { continue }
                while let o = try a.next() {
                    XCTAssertEqual(o.offset, consumed)
                    XCTAssertEqual(Array(stream[o.offset + 8 ..< o.offset + Int(o.packet.header.length)]), o.packet.payload)
                    consumed += Int(o.packet.header.length)
                    XCTAssertEqual(a.streamOffset, consumed)
                    XCTAssertEqual(a.bufferedByteCount, i - consumed)
                    if let m = o.message { messages.append(m) }
                }
                if consumed < i {
                    XCTAssertEqual(a.firstBufferedByte, stream[consumed])
                    if i - consumed >= 4 { XCTAssertEqual(a.nextPacketLength, Int(stream[consumed + 2]) << 8 | Int(stream[consumed + 3])) }
                }
            }
            XCTAssertEqual(consumed, stream.count)
            XCTAssertNoThrow(try a.finish())
            return messages
        }
        let whole = try packets([stream.count], takeEvery: 1)
        XCTAssertEqual(whole.count, 7)
        var rng = SplitMix64(seed: 12)
        for round in 0 ..< 60 {
            let top = [20, 600, 1100, 2500][round % 4]
            let chunks = (0 ..< 40).map { _ in Int.random(in: 1 ... top, using: &rng) }
            XCTAssertEqual(try packets(chunks, takeEvery: 1 + round % 3), whole, "chunks \(chunks)")
        }
        // What is left, taken whole after a straddling packet was assembled.
        var a = PacketAssembler(maximumPacketSize: 512)
        a.append(Array(stream[0 ..< 700]))
        var taken = 0
        while let o = try a.next() { taken += Int(o.packet.header.length) }
        XCTAssertLessThan(taken, 700)
        a.append(Array(stream[700 ..< 2000]))
        XCTAssertEqual(a.takeRemaining(), Array(stream[taken ..< 2000]))
        XCTAssertEqual(a.streamOffset, 2000)
    }

    /// A bad header in an array kept after a straddling packet is reported at its stream offset.
    func testAssemblerBadHeaderAfterAStraddlingPacket() throws {
        let good = Packet.encode(message: [UInt8](repeating: 5, count: 1000), type: .tabularResult, packetSize: 512)
        var a = PacketAssembler(maximumPacketSize: 512)
        a.append(Array(good[0 ..< 600]))
        XCTAssertNotNil(try a.next())
        a.append(Array(good[600...]) + [0x04, 0x01, 0x00, 0x05, 0, 0, 1, 0])
        XCTAssertEqual(try a.next()?.message?.payload.count, 1000)
        XCTAssertThrowsError(try a.next()) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .invalidPacket)
            XCTAssertEqual((e as? TDSDecodingError)?.offset, good.count)
        }
    }

    /// The client's way of taking packets (``PacketAssembler/peekHeader()`` then
    /// ``PacketAssembler/consumePacket(_:)``) over hostile streams: valid messages followed by a
    /// header that is bad (Length under 8, over the packet size, a message over the cap, another
    /// type inside a message) or by random bytes, fed whole, byte by byte and in random arrays
    /// (also mixed with slices, the generic path): the same payloads at the same offsets, then the
    /// same error (code and offset) or the same `finish()` answer, whatever the split.
    func testAssemblerPeekAndConsumeOverHostileStreamsDoNotDependOnTheSplit() throws {
        enum Outcome: Equatable { case error(TDSDecodingError.Code, Int), finished(TDSDecodingError.Code?, Int) }
        func run(_ stream: [UInt8], _ chunks: [Int], slices: Bool) -> ([[UInt8]], [Int], Outcome) {
            var a = PacketAssembler(maximumPacketSize: 600, maximumMessageSize: 4000)
            var payloads: [[UInt8]] = [], offsets: [Int] = []
            var i = 0, ci = 0
            while true {
                do {
                    while let header = try a.peekHeader() {
                        let offset = a.streamOffset
                        let payload = a.consumePacket { h, p -> [UInt8] in
                            XCTAssertEqual(h, header)
                            return Array(p)
                        }
                        guard let payload else { XCTFail("peeked, not consumed"); break }
                        payloads.append(payload)
                        offsets.append(offset)
                        XCTAssertEqual(a.streamOffset, offset + Int(header.length))
                        XCTAssertEqual(a.bufferedByteCount, i - a.streamOffset)
                    }
                } catch {
                    return (payloads, offsets, .error(error.code, error.offset))
                }
                if i == stream.count {
                    do { try a.finish(); return (payloads, offsets, .finished(nil, a.streamOffset)) } catch {
                        return (payloads, offsets, .finished(error.code, error.offset))
                    }
                }
                let n = min(max(chunks[ci % chunks.count], 1), stream.count - i)
                ci += 1
                if slices, ci % 3 == 0 { a.append(stream[i ..< i + n]) } else { a.append(Array(stream[i ..< i + n])) }
                i += n
                XCTAssertEqual(a.bufferedByteCount, i - a.streamOffset)
            }
        }
        var rng = SplitMix64(seed: 0xA55E)
        let body = (0 ..< 2500).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let valid = Packet.encode(message: Array(body[..<1300]), type: .tabularResult, packetSize: 600)
            + Packet.encode(message: [], type: .tabularResult, packetSize: 600)
            + Packet.encode(message: Array(body[..<599]), type: .tabularResult, packetSize: 600)
        let notEOM: [UInt8] = [0x04, 0x00, 0x00, 0x0C, 0, 0, 1, 0, 1, 2, 3, 4]
        let tails: [[UInt8]] = [
            [],
            [0x04, 0x01, 0x00, 0x07, 0, 0, 1, 0],                                   // Length 7
            [0x04, 0x01, 0x00, 0x00, 0, 0, 1, 0],                                   // Length 0
            [0x04, 0x01, 0x02, 0x59, 0, 0, 1, 0] + [UInt8](repeating: 1, count: 593), // Length 601 > 600
            [0x04, 0x01, 0xFF, 0xFF, 0, 0, 1, 0] + [UInt8](repeating: 1, count: 100), // Length 65535, cut
            notEOM + [0x12, 0x01, 0x00, 0x09, 0, 0, 1, 0, 9],                        // PRELOGIN inside a result
            Packet.encode(message: [UInt8](repeating: 3, count: 4001), type: .tabularResult, packetSize: 600), // over the cap
            Packet.encode(message: Array(body[..<900]), type: .tabularResult, packetSize: 600).dropLast(5).map { $0 }, // truncated
            notEOM,                                                                 // no EOM at the end
        ]
        for (t, tail) in tails.enumerated() {
            for variant in 0 ..< 4 {
                var stream = valid + tail
                if variant == 3 { stream += (0 ..< 700).map { _ in UInt8.random(in: 0 ... 255, using: &rng) } }
                let whole = run(stream, [stream.count], slices: false)
                XCTAssertEqual(run(stream, [1], slices: false).2, whole.2, "tail \(t) byte by byte")
                XCTAssertEqual(run(stream, [1], slices: false).0, whole.0, "tail \(t) byte by byte")
                for round in 0 ..< 25 {
                    let top = [9, 300, 700, 1500][round % 4]
                    let chunks = (0 ..< 30).map { _ in Int.random(in: 1 ... top, using: &rng) }
                    let split = run(stream, chunks, slices: round % 2 == 1)
                    XCTAssertEqual(split.0, whole.0, "tail \(t) chunks \(chunks)")
                    XCTAssertEqual(split.1, whole.1, "tail \(t) chunks \(chunks)")
                    XCTAssertEqual(split.2, whole.2, "tail \(t) chunks \(chunks)")
                }
            }
        }
    }

    func testAssemblerYieldsPacketBeforeMessageEnds() throws {
        let stream = Packet.encode(message: [UInt8](repeating: 9, count: 20), type: .sqlBatch, packetSize: 18)
        var a = PacketAssembler()
        a.append(stream.prefix(18))
        let first = try XCTUnwrap(try a.next())
        XCTAssertNil(first.message)
        XCTAssertEqual(first.packet.payload.count, 10)
        XCTAssertTrue(a.isInsideMessage)
        XCTAssertNil(try a.next())
        a.append(stream.dropFirst(18))
        let second = try XCTUnwrap(try a.next())
        XCTAssertEqual(second.message?.payload.count, 20)
        XCTAssertFalse(a.isInsideMessage)
    }

    func testAssemblerRejectsHostileHeaders() {
        // Length under 8, at stream offset 8 (after one good packet).
        var a = PacketAssembler()
        a.append(Packet.encode(message: [], type: .attention, packetSize: 512))
        a.append([0x04, 0x01, 0x00, 0x07, 0, 0, 1, 0])
        XCTAssertNotNil(try a.next())
        XCTAssertThrowsError(try a.next()) { e in
            let e = e as! TDSDecodingError
            XCTAssertEqual(e.code, .invalidPacket)
            XCTAssertEqual(e.offset, 8)
        }
        // And it stays failed.
        XCTAssertThrowsError(try a.next())

        // Over the negotiated size: reported from the header alone, before the payload arrives.
        var b = PacketAssembler(maximumPacketSize: 4096)
        b.append([0x04, 0x01, 0x10, 0x01, 0, 0, 1, 0])
        XCTAssertThrowsError(try b.next()) { e in
            XCTAssertEqual((e as! TDSDecodingError).code, .invalidPacket)
        }
        var b2 = PacketAssembler(maximumPacketSize: 4096)
        b2.append([0x04, 0x01, 0x10, 0x00, 0, 0, 1, 0])
        XCTAssertNil(try b2.next())  // exactly 4096: fine, needs more bytes

        // Type change inside a message.
        var c = PacketAssembler()
        c.append([0x01, 0x00, 0x00, 0x09, 0, 0, 1, 0, 0xAA])
        c.append([0x03, 0x01, 0x00, 0x09, 0, 0, 2, 0, 0xBB])
        XCTAssertNotNil(try c.next())
        XCTAssertThrowsError(try c.next()) { e in
            let e = e as! TDSDecodingError
            XCTAssertEqual(e.code, .invalidPacket)
            XCTAssertEqual(e.offset, 9)
        }
    }

    /// The message cap: an endless message (packets that never set EOM) is refused at the header
    /// of the packet that would pass the cap, before that packet's payload has arrived.
    func testAssemblerMessageCap() throws {
        var a = PacketAssembler(maximumPacketSize: 4096, maximumMessageSize: 10_000)
        let packet = Packet(header: PacketHeader(type: .prelogin, status: [], length: 4096), payload: [UInt8](repeating: 1, count: 4088))
        var taken = 0
        var failure: TDSDecodingError?
        for _ in 0 ..< 10 {
            a.append(packet.header.bytes)   // the header alone: over the cap is known from it
            do {
                if let header = try a.peekHeader() { XCTFail("whole packet reported from a header: \(header)") }
            } catch {
                failure = error as? TDSDecodingError
                break
            }
            a.append(packet.payload)
            XCTAssertNotNil(try a.next())
            taken += 1
        }
        XCTAssertEqual(taken, 2, "two 4,088-byte payloads fit in 10,000 bytes, a third does not")
        XCTAssertEqual(failure?.code, .limitExceeded)
        XCTAssertEqual(failure?.offset, 2 * 4096)
        XCTAssertEqual(failure?.context, "PRELOGIN")
        // A message under the cap, then the next message counts from zero.
        var b = PacketAssembler(maximumMessageSize: 100)
        b.append(Packet.encode(message: [UInt8](repeating: 2, count: 100), type: .tabularResult, packetSize: 64))
        b.append(Packet.encode(message: [UInt8](repeating: 3, count: 100), type: .tabularResult, packetSize: 64))
        XCTAssertEqual(try b.nextMessages().map(\.payload.count), [100, 100])
        XCTAssertEqual(b.currentMessageSize, 0)
    }

    /// The packet-level path (peekHeader, consumePacket) cuts the same packets as next().
    func testAssemblerConsumePacketMatchesNext() throws {
        let message = (0 ..< 3000).map { UInt8(truncatingIfNeeded: $0) }
        let stream = Packet.encode(message: message, type: .tabularResult, packetSize: 512)
        var a = PacketAssembler()
        var payload: [UInt8] = []
        var statuses: [PacketStatus] = []
        for chunk in stride(from: 0, to: stream.count, by: 700) {
            a.append(Array(stream[chunk ..< min(chunk + 700, stream.count)]))
            while let header = try a.peekHeader() {
                a.consumePacket { h, p in
                    XCTAssertEqual(h, header)
                    payload += p
                }
                statuses.append(header.status)
            }
        }
        XCTAssertEqual(payload, message)
        XCTAssertEqual(statuses.last, .endOfMessage)
        XCTAssertFalse(a.isInsideMessage)
        XCTAssertNoThrow(try a.finish())
    }

    func testAssemblerNeverTrapsOnRandomBytes() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<200 {
            var a = PacketAssembler(maximumPacketSize: Int.random(in: 0...70000, using: &rng))
            let n = Int.random(in: 0...300, using: &rng)
            a.append((0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) })
            var steps = 0
            while steps < 400, (try? a.next()) != nil { steps += 1 }
        }
    }

    func testTLSRecordsInsidePreloginPackets() throws {
        // A TLS handshake record (content type 0x16) carried in PRELOGIN packets, split over two.
        let record: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]
        let stream = Packet.encode(message: record, type: .prelogin, packetSize: 14)
        let (packets, messages) = try assemble(stream, chunks: [3])
        XCTAssertEqual(packets.count, 2)
        XCTAssertEqual(messages.count, 1)
        XCTAssertEqual(messages[0].type, .prelogin)
        XCTAssertEqual(messages[0].payload, record)
    }

    func testSpecAttentionPacket() throws {
        let (header, payload) = try MessageFixtures.packet("ms-tds-spec/10-attention-request.hex")
        XCTAssertEqual(header.type, .attention)
        XCTAssertEqual(header.status, .endOfMessage)
        XCTAssertEqual(header.length, 8)
        XCTAssertEqual(header.packetID, 1)
        XCTAssertEqual(payload, [])
    }
}

/// The one packet writer: a body fed in pieces of any size gives the same packets as the whole
/// body; cancel() ends a message with EOM|IGNORE; RESETCONNECTION goes on the first packet only.
final class MessagePacketizerTests: XCTestCase {
    func testPiecesGiveTheSamePacketsAsTheWholeBody() {
        for size in [0, 1, 503, 504, 505, 1008, 5000] {
            let body = (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let whole = Packet.encode(message: body, type: .bulkLoad, packetSize: 512, status: [.resetConnection])
            for piece in [1, 13, 504, 4096] {
                var p = MessagePacketizer(type: .bulkLoad, packetSize: 512, firstPacketStatus: [.resetConnection])
                var out: [UInt8] = []
                var i = 0
                while i < body.count {
                    out += p.append(body[i ..< min(i + piece, body.count)])
                    i += piece
                }
                out += p.finish()
                XCTAssertEqual(out, whole, "body \(size), pieces of \(piece)")
            }
        }
    }

    func testCancelEndsWithIgnoreAndResetIsOnTheFirstPacketOnly() throws {
        var p = MessagePacketizer(type: .sqlBatch, packetSize: 512, firstPacketStatus: [.resetConnection])
        let sent = p.append([UInt8](repeating: 1, count: 1200))
        let end = p.cancel()
        var framer = PacketAssembler()
        framer.append(sent + end)
        var statuses: [PacketStatus] = []
        var ids: [UInt8] = []
        while let o = try framer.next() {
            statuses.append(o.packet.header.status)
            ids.append(o.packet.header.packetID)
        }
        XCTAssertEqual(statuses, [[.resetConnection], [], [.endOfMessage, .ignore]])
        XCTAssertEqual(ids, [1, 2, 3])
        XCTAssertTrue(p.isFinished)
        XCTAssertEqual(try framer.nextMessage(), nil)
    }
}

extension PacketTests {
    /// A received array of 64 KiB or more that the framer is done with is handed back once
    /// (``PacketAssembler/takeSpent()``), so that the reader can receive into it again (issue 43):
    /// read to its end and replaced, cut before a straddling packet, or appended to the buffer.
    /// The packets are the same whatever is handed back, and a small array is not.
    func testAReceivedArrayTheFramerIsDoneWithIsHandedBackOnce() throws {
        let message = (0 ..< 400_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let stream = Packet.encode(message: message, type: .tabularResult, packetSize: 32_767)
        func address(_ a: [UInt8]) -> UInt? { a.withUnsafeBufferPointer { $0.baseAddress.map(UInt.init(bitPattern:)) } }
        for cut in [65_536, 100_000, 131_072] {
            var a = PacketAssembler(maximumPacketSize: 32_767)
            var payload: [UInt8] = []
            var handedBack = 0
            var received: [UInt?] = []
            var i = 0
            while i < stream.count {
                let piece = Array(stream[i ..< min(i + cut, stream.count)])
                received.append(address(piece))
                i += piece.count
                a.append(piece)
                if let spent = a.takeSpent() {
                    handedBack += 1
                    XCTAssertTrue(received.contains(address(spent)), "cut \(cut): handed back an array it was not given")
                    XCTAssertNil(a.takeSpent(), "cut \(cut): handed back twice")
                }
                while let o = try a.next() { payload += o.packet.payload }
            }
            XCTAssertEqual(payload, message, "cut \(cut)")
            XCTAssertGreaterThan(handedBack, 0, "cut \(cut): nothing handed back")
        }
        var small = PacketAssembler(maximumPacketSize: 32_767)
        for start in stride(from: 0, to: 40_000, by: 4_000) {
            small.append(Array(stream[start ..< start + 4_000]))
            XCTAssertNil(small.takeSpent(), "a 4 KB array handed back")
            while try small.next() != nil {}
        }
    }
}
