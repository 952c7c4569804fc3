import TDS

/// One unit cut out of a direction of a TDS conversation: a whole TDS message, a run of TLS
/// records, or bytes that could not be cut into TDS packets.
public struct CapturedMessage: Sendable, Hashable {
    /// What the bytes were.
    public enum Content: Sendable, Hashable {
        /// A whole TDS message: its packets' payloads concatenated ([MS-TDS] 2.2.3).
        case tds(TDSMessage)
        /// TLS carrying the login or the whole session: `recordCount` records, `byteCount`
        /// bytes. `inPrelogin` is true for a TLS handshake carried inside TDS packets: PRELOGIN
        /// (0x12) packets ([MS-TDS] 3.2.5.2), or TABULAR_RESULT (0x04) packets as SQL Server 2000
        /// answered it (``CapturedMessage/packetType`` says which); false for TLS records sent
        /// directly on TCP (the encrypted login or session).
        case tls(recordCount: Int, byteCount: Int, inPrelogin: Bool)
        /// A message whose end was not captured (the capture stops, or a TCP gap, inside it).
        case incomplete(TDSMessage, reason: String)
        /// Bytes skipped while looking for a packet header (a stream captured from the middle
        /// of a packet, or the bytes after a TCP gap).
        case skipped(byteCount: Int, reason: String)
        /// Bytes that do not form valid TDS packets.
        case malformed(TDSDecodingError)
    }

    public var direction: TDSDirection
    public var content: Content
    /// Offset of the first byte in the reassembled stream of its direction.
    public var streamOffset: Int
    /// The captured frame that carried the first byte, when known (0-based).
    public var frameIndex: Int?
    /// Capture time of that frame, seconds since 1970 (0 when unknown).
    public var timestamp: Double
    /// For `.tls(inPrelogin: true)`: the type of the TDS packets that carried the TLS records
    /// (PRELOGIN, or TABULAR_RESULT from SQL Server 2000); nil otherwise.
    public var packetType: PacketType?

    public init(direction: TDSDirection, content: Content, streamOffset: Int, frameIndex: Int? = nil, timestamp: Double = 0) {
        self.direction = direction
        self.content = content
        self.streamOffset = streamOffset
        self.frameIndex = frameIndex
        self.timestamp = timestamp
    }

    /// The TDS message, for `.tds`.
    public var message: TDSMessage? {
        if case .tds(let m) = content { return m }
        return nil
    }
}

/// Cuts one direction's reassembled bytes into ``CapturedMessage``s, using the
/// ``PacketAssembler`` of the TDS module for the packets themselves.
///
/// - TLS records sent directly on TCP (after the PRELOGIN exchange) become `.tls`; PRELOGIN
///   messages whose payload is a TLS record become `.tls(inPrelogin: true)`.
/// - A stream that does not start at a packet header (captured mid-packet) and the bytes after
///   a TCP gap are scanned for the next plausible packet header; what is passed over becomes
///   `.skipped`.
/// - A message cut by a gap or by the end of the capture becomes `.incomplete`.
public enum TDSMessageSplitter {
    /// Splits `stream`.
    public static func split(_ stream: TCPStream, direction: TDSDirection) -> [CapturedMessage] {
        split(stream.bytes, gaps: stream.gaps, direction: direction, locate: { offset in
            let frame = stream.frameIndex(at: offset)
            let time = stream.chunks.last { $0.offset <= offset }?.timestamp ?? 0
            return (frame, time)
        })
    }

    /// Splits bytes that are known to be one direction of a conversation (for example a raw
    /// file of TDS packets).
    public static func split(_ bytes: [UInt8], gaps: [TCPStream.Gap] = [], direction: TDSDirection,
                             locate: (Int) -> (Int?, Double) = { _ in (nil, 0) }) -> [CapturedMessage] {
        var out: [CapturedMessage] = []
        var pos = 0
        var gapIndex = 0
        var assembler = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        var messageStart: Int?
        var resync = false
        var tlsRun: (start: Int, records: Int, bytes: Int)?

        func emit(_ content: CapturedMessage.Content, at offset: Int, packetType: PacketType? = nil) {
            let (frame, time) = locate(offset)
            var message = CapturedMessage(direction: direction, content: content, streamOffset: offset, frameIndex: frame, timestamp: time)
            message.packetType = packetType
            out.append(message)
        }
        func flushTLS() {
            if let run = tlsRun {
                emit(.tls(recordCount: run.records, byteCount: run.bytes, inPrelogin: false), at: run.start)
                tlsRun = nil
            }
        }
        func nextGapOffset() -> Int { gapIndex < gaps.count ? gaps[gapIndex].offset : Int.max }
        /// True when a packet header at `p` is followed by another header, a TLS record, a gap or the end.
        /// When `strict`, the packet must also end within the captured bytes (used when
        /// searching for a header inside arbitrary bytes).
        func plausiblePacket(at p: Int, strict: Bool = false) -> Bool {
            guard TDSDetection.isPacketHeader(bytes, at: p) else { return false }
            let length = Int(bytes[p + 2]) << 8 | Int(bytes[p + 3])
            let end = p + length
            if end == bytes.count || end == nextGapOffset() { return true }
            let limit = min(bytes.count, nextGapOffset())
            if end > limit { return !strict }
            if limit - end < PacketHeader.size { return true } // too few bytes left to judge
            return TDSDetection.isPacketHeader(bytes, at: end) || TDSDetection.isTLSRecord(bytes, at: end)
        }
        func dropPartial(_ reason: String, extra: ArraySlice<UInt8> = []) {
            if let start = messageStart {
                var message = assembler.partialMessage
                    ?? TDSMessage(type: PacketType(rawValue: bytes[start]), firstStatus: [], lastStatus: [],
                                  spid: 0, packetCount: 0, payload: [], streamOffset: start)
                message.streamOffset = start
                message.payload.append(contentsOf: extra)
                emit(.incomplete(message, reason: reason), at: start)
            }
            messageStart = nil
            assembler = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        }

        if !(plausiblePacket(at: 0) || TDSDetection.isTLSRecord(bytes, at: 0)) { resync = true }
        while pos < bytes.count {
            if pos >= nextGapOffset() {
                flushTLS()
                dropPartial("a TCP gap of \(gaps[gapIndex].length) byte(s) was not captured")
                gapIndex += 1
                resync = !(plausiblePacket(at: pos) || TDSDetection.isTLSRecord(bytes, at: pos))
                continue
            }
            let limit = min(bytes.count, nextGapOffset())
            if resync {
                var p = pos + 1
                while p < limit, !(plausiblePacket(at: p, strict: true) || TDSDetection.isTLSRecord(bytes, at: p)) { p += 1 }
                emit(.skipped(byteCount: p - pos, reason: pos == 0 ? "the capture starts inside a TDS packet" : "no TDS packet header here"), at: pos)
                pos = p
                resync = false
                continue
            }
            if messageStart == nil, TDSDetection.isTLSRecord(bytes, at: pos) {
                let length = 5 + (Int(bytes[pos + 3]) << 8 | Int(bytes[pos + 4]))
                let available = min(length, limit - pos)
                if tlsRun == nil { tlsRun = (pos, 0, 0) }
                tlsRun?.records += 1
                tlsRun?.bytes += available
                pos += available
                continue
            }
            flushTLS()
            if limit - pos >= PacketHeader.size, !TDSDetection.isPacketHeader(bytes, at: pos) {
                // Not a packet header where one must be: what follows is not TDS (or the
                // stream lost its place); look for the next header.
                if messageStart != nil { dropPartial("the next packet header is missing") }
                resync = true
                continue
            }
            guard limit - pos >= PacketHeader.size else {
                if messageStart == nil {
                    emit(.incomplete(TDSMessage(type: PacketType(rawValue: bytes[pos]), firstStatus: [], lastStatus: [], spid: 0,
                                                packetCount: 0, payload: [], streamOffset: pos),
                                     reason: "the capture ends inside a packet header"), at: pos)
                } else {
                    dropPartial("the capture ends inside a packet header")
                }
                pos = limit
                continue
            }
            let length = Int(bytes[pos + 2]) << 8 | Int(bytes[pos + 3])
            if length > limit - pos, length >= PacketHeader.size {
                let held = limit - pos
                let reason = (limit == bytes.count ? "the capture ends inside the packet" : "a TCP gap falls inside the packet")
                    + ": its header gives \(length) bytes, \(held) are there (\(length - held) missing)"
                if messageStart == nil { messageStart = pos }
                dropPartial(reason, extra: bytes[min(pos + PacketHeader.size, limit) ..< limit])
                pos = limit
                continue
            }
            assembler.append(bytes[pos ..< min(pos + max(length, PacketHeader.size), limit)])
            do throws(TDSDecodingError) {
                if messageStart == nil { messageStart = pos }
                guard let output = try assembler.next() else {
                    // Cannot happen for a whole packet; treat as malformed rather than loop.
                    emit(.malformed(TDSDecodingError(.invalidPacket, offset: pos, context: "PacketHeader", "packet could not be cut")), at: pos)
                    assembler = PacketAssembler(maximumPacketSize: Int(UInt16.max))
                    messageStart = nil
                    resync = true
                    continue
                }
                pos += Int(output.packet.header.length)
                if var message = output.message, let start = messageStart {
                    message.streamOffset = start
                    // A TLS handshake inside TDS packets: PRELOGIN (0x12) packets ([MS-TDS] 3.2.5.2),
                    // or TABULAR_RESULT (0x04) packets, in which SQL Server 2000 answered it.
                    if message.type == .prelogin || message.type == .tabularResult, TDSDetection.isTLSRecord(message.payload) {
                        emit(.tls(recordCount: countTLSRecords(message.payload), byteCount: message.payload.count, inPrelogin: true),
                             at: start, packetType: message.type)
                    } else {
                        emit(.tds(message), at: start)
                    }
                    messageStart = nil
                }
            } catch {
                var e = error
                e.offset = pos
                emit(.malformed(e), at: pos)
                assembler = PacketAssembler(maximumPacketSize: Int(UInt16.max))
                messageStart = nil
                resync = true
                pos += 1
            }
        }
        flushTLS()
        if messageStart != nil { dropPartial("the capture ends inside the message") }
        return out
    }

    static func countTLSRecords(_ bytes: [UInt8]) -> Int {
        var p = 0, n = 0
        while TDSDetection.isTLSRecord(bytes, at: p) {
            n += 1
            p += 5 + (Int(bytes[p + 3]) << 8 | Int(bytes[p + 4]))
        }
        return max(n, 1)
    }
}
