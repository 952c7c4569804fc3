/// The one TDS packet framer ([MS-TDS] 2.2.3): cuts a byte stream (as read from a socket, in
/// chunks of any size) into packets and whole messages. Used by the client, by the replay
/// server and by the capture reader.
///
/// Pure and incremental: `append(_:)` bytes, then take packets or messages until the answer
/// is nil ("need more data"). The answer does not depend on how the stream was split into chunks.
/// Three ways to take what is buffered:
/// - ``next()``: each complete packet as soon as its last byte arrived; the packet carrying EOM
///   also returns the whole message.
/// - ``nextMessage()``: whole messages only (every packet to EOM).
/// - ``peekHeader()`` then ``consumePacket(_:)``: the payload handed over straight from the
///   receive buffer (no copy into a ``Packet``), for a reader that streams payloads into a
///   token decoder and never holds a whole message.
///
/// Errors (`.invalidPacket`, with the absolute stream offset of the bad header):
/// - a Length under 8 or over `maximumPacketSize`;
/// - a packet whose type differs from the type of the message it continues;
/// - with ``checksPacketIDs``, a packet whose PacketID is not the previous one's plus 1 (mod 256).
/// `.limitExceeded` when the payloads of one message would pass ``maximumMessageSize``: the
/// packet that crosses the cap is refused before its payload is copied anywhere.
/// At the end of the stream, ``finish()`` throws `.truncated` for a partial packet or a message
/// whose last packet never set EOM.
/// After an error the assembler stays failed: every later call throws the same error.
///
/// TLS records exchanged during the login handshake travel inside PRELOGIN (0x12) packets
/// and are returned like any other packet; the transport reads them from `payload`.
public struct PacketAssembler: Sendable {
    /// One step of output: a complete packet, and, when it carried EOM, the whole message.
    public struct Output: Hashable, Sendable {
        public var packet: Packet
        /// Absolute stream offset of this packet's header.
        public var offset: Int
        /// The completed message when `packet` carried EOM, else nil.
        public var message: TDSMessage?
    }

    /// The largest packet accepted, header included (the negotiated packet size).
    /// Change it after the server's packet-size ENVCHANGE. Defaults to 32767.
    public var maximumPacketSize: Int
    /// The largest message accepted (its payloads added up, headers excluded); nil for no cap.
    /// A cap may be set or changed between messages (for example one for a PRELOGIN response,
    /// another for a login response).
    public var maximumMessageSize: Int?

    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Absolute stream offset of `buffer[0]`.
    private var bufferBase = 0
    /// Bytes received after `buffer`'s, from `queuedStart` on (none when empty): a received
    /// array kept as it came while `buffer` holds the one packet that straddled the two reads
    /// (see ``append(_:)-(Array<UInt8>)``). `queued[queuedStart]` follows `buffer`'s last byte.
    private var queued: [UInt8] = []
    private var queuedStart = 0
    /// The storage of a drained straddling packet, kept to assemble the next one in.
    private var spare: [UInt8] = []
    /// A received array read to its end and replaced by the next (``append(_:)-(Array<UInt8>)``),
    /// kept for ``takeSpent()``: its reader may receive into it again.
    private var spent: [UInt8]?
    /// The message being received (packets without EOM taken so far), when one has started.
    private var current: (type: PacketType, bytes: Int, packets: Int, offset: Int)?
    /// `next()` only: the payload of the current message so far.
    private var partial: TDSMessage?
    private var failure: TDSDecodingError?
    private var lastPacketID: UInt8 = 0
    /// Received bytes the framer copied: packets assembled across two reads, reads appended to
    /// the buffer (tests read it).
    package private(set) var copiedByteCount = 0

    /// Require the packets of a message to be numbered consecutively (PacketID + 1, mod 256),
    /// throwing `.invalidPacket` at a gap. Off by default: [MS-TDS] 2.2.3.1.5 says receivers
    /// currently ignore PacketID.
    public var checksPacketIDs = false

    public init(maximumPacketSize: Int = Packet.maximumNegotiatedSize, maximumMessageSize: Int? = nil) {
        self.maximumPacketSize = maximumPacketSize
        self.maximumMessageSize = maximumMessageSize
    }

    /// Bytes received but not yet returned as part of a packet.
    public var bufferedByteCount: Int { buffer.count - readIndex + queued.count - queuedStart }
    /// True when a message has started (some packets without EOM were returned).
    public var isInsideMessage: Bool { current != nil }
    /// Payload bytes of the current message taken so far (0 between messages).
    public var currentMessageSize: Int { current?.bytes ?? 0 }
    /// ``next()`` only: the message whose packets without EOM were returned so far (nil between
    /// messages), for a reader that must report a message cut short (a capture with a gap).
    public var partialMessage: TDSMessage? { partial }
    /// Absolute stream offset of the next unread byte.
    public var streamOffset: Int { bufferBase + readIndex }
    /// The first byte not yet taken, if any (to recognise a peer that does not speak TDS
    /// before a whole header has arrived).
    public var firstBufferedByte: UInt8? { readIndex < buffer.count ? buffer[readIndex] : nil }
    /// The Length field (header included) of the next packet once its first 4 bytes are
    /// buffered, before the packet is whole (to refuse an absurd first packet at once).
    public var nextPacketLength: Int? {
        guard bufferedByteCount >= 4 else { return nil }
        return Int(unreadByte(2)) << 8 | Int(unreadByte(3))
    }

    /// Adds bytes read from the stream, copying as few as it can: when everything before was
    /// consumed, the array itself becomes the buffer; when a partial packet is left and `bytes`
    /// completes it, `bytes` is kept as it came, after the buffer: the packet straddles the two
    /// arrays until it is taken, and is assembled only for a reader that needs it in one piece
    /// (``consumePacket(_:)``; ``consumePacket(into:)`` hands its two parts to the decoder where
    /// they are). Otherwise the bytes are appended to the buffer. The packets cut do not depend
    /// on which.
    public mutating func append(_ bytes: [UInt8]) {
        if bytes.isEmpty { return }
        if !queued.isEmpty { flatten() }
        if readIndex == buffer.count {
            bufferBase += buffer.count
            retire(buffer)
            buffer = bytes
            readIndex = 0
            return
        }
        queued = bytes
        queuedStart = 0
        if straddlingPart() != nil { return }
        queued = []
        compact()
        copiedByteCount &+= bytes.count
        buffer.append(contentsOf: bytes)
        retire(bytes)
    }

    /// Byte `k` of the unread stream: the buffer's rest, then the queued array's.
    private func unreadByte(_ k: Int) -> UInt8 {
        let left = buffer.count - readIndex
        return k < left ? buffer[readIndex + k] : queued[queuedStart + k - left]
    }

    /// When the packet at `readIndex` begins in the buffer and ends in `queued`: its bytes
    /// there (else nil).
    private func straddlingPart() -> Int? {
        let left = buffer.count - readIndex
        guard !queued.isEmpty, left > 0, bufferedByteCount >= 4 else { return nil }
        let length = Int(unreadByte(2)) << 8 | Int(unreadByte(3))
        let need = length - left
        return length >= PacketHeader.size && need > 0 && need <= queued.count - queuedStart ? need : nil
    }

    /// A reader of the next packet's header (its 8 bytes buffered, in one array or across two).
    private func headerReader() -> ByteReader {
        if buffer.count - readIndex >= PacketHeader.size {
            return ByteReader(buffer, start: readIndex, end: readIndex + PacketHeader.size, baseOffset: bufferBase)
        }
        let header = (0 ..< PacketHeader.size).map(unreadByte)
        return ByteReader(header, start: 0, end: PacketHeader.size, baseOffset: bufferBase + readIndex)
    }

    /// Assembles the packet that straddles `buffer` and `queued` in one array (the buffer): at
    /// most one packet copied, `queued` kept for the packets after it.
    private mutating func joinStraddlingPacket() {
        guard let need = straddlingPart() else { return }
        var packet: [UInt8] = []
        swap(&packet, &spare)
        packet.removeAll(keepingCapacity: true)
        packet.reserveCapacity(buffer.count - readIndex + need)
        packet.append(contentsOf: buffer[readIndex...])
        packet.append(contentsOf: queued[queuedStart ..< queuedStart + need])
        copiedByteCount &+= packet.count
        bufferBase += readIndex
        retire(buffer)
        buffer = packet
        readIndex = 0
        queuedStart += need
        if queuedStart == queued.count {
            queued = []
            queuedStart = 0
        }
    }

    /// Keeps `old`, a received array the framer is done with, for ``takeSpent()`` when it is
    /// large enough to receive into again (64 KiB).
    private mutating func retire(_ old: [UInt8]) {
        if old.capacity >= 64 << 10 { spent = old }
    }

    /// The last received array of 64 KiB or more that was read to its end (once; nil when none):
    /// storage for a later read, whose pages are already touched.
    public mutating func takeSpent() -> [UInt8]? {
        var taken: [UInt8]?
        swap(&taken, &spent)
        return taken
    }

    /// Adds bytes read from the stream.
    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if !queued.isEmpty { flatten() }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Makes `buffer` hold every unread byte (the queued ones appended to it).
    private mutating func flatten() {
        guard !queued.isEmpty else { return }
        compact()
        buffer.append(contentsOf: queued[queuedStart...])
        queued = []
        queuedStart = 0
    }

    /// After `buffer` was read to its end: the queued bytes become the buffer.
    private mutating func promoteQueued() {
        guard readIndex == buffer.count, !queued.isEmpty else { return }
        bufferBase += buffer.count - queuedStart   // the offset of queued[0]
        swap(&spare, &buffer)
        buffer = queued
        readIndex = queuedStart
        queued = []
        queuedStart = 0
    }

    private mutating func compact() {
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            bufferBase += readIndex
            readIndex = 0
        }
    }

    /// The header of the next packet when the whole packet is buffered (nothing is consumed),
    /// nil when more bytes are needed. Checks everything ``next()`` checks.
    public mutating func peekHeader() throws(TDSDecodingError) -> PacketHeader? {
        if let failure { throw failure }
        guard bufferedByteCount >= PacketHeader.size else { return nil }
        let headerOffset = bufferBase + readIndex
        var reader = headerReader()
        let header: PacketHeader
        do throws(TDSDecodingError) {
            header = try PacketHeader.decode(from: &reader)
        } catch {
            throw fail(error)
        }
        let length = Int(header.length)
        guard length <= maximumPacketSize else {
            throw fail(TDSDecodingError(.invalidPacket, offset: headerOffset, context: "PacketHeader",
                                        "packet length \(length) exceeds the packet size \(maximumPacketSize)"))
        }
        if let current, current.type != header.type {
            throw fail(TDSDecodingError(.invalidPacket, offset: headerOffset, context: "PacketHeader",
                                        "packet type \(header.type) inside a \(current.type) message"))
        }
        if checksPacketIDs, current != nil, header.packetID != lastPacketID &+ 1 {
            throw fail(TDSDecodingError(.invalidPacket, offset: headerOffset, context: "PacketHeader",
                                        "PacketID \(header.packetID) does not follow \(lastPacketID)"))
        }
        if let cap = maximumMessageSize, (current?.bytes ?? 0) + header.payloadLength > cap {
            throw fail(TDSDecodingError(.limitExceeded, offset: headerOffset, context: (current?.type ?? header.type).name,
                                        "the message is longer than the cap of \(cap) bytes"))
        }
        guard bufferedByteCount >= length else { return nil }
        return header
    }

    /// Consumes the packet whose header ``peekHeader()`` just returned, handing its payload to
    /// `body` as a slice of the receive buffer (valid only during the call).
    public mutating func consumePacket<R>(_ body: (PacketHeader, ArraySlice<UInt8>) throws -> R) rethrows -> R? {
        joinStraddlingPacket()
        guard let (header, payload) = takePacket() else { return nil }
        defer { promoteQueued() }
        return try body(header, buffer[payload])
    }

    /// Consumes the packet whose header ``peekHeader()`` just returned, appending its payload to
    /// `decoder` straight from the receive buffers (``TokenStreamDecoder/append(packetPayload:of:)``:
    /// a large value's bytes read where they are). A packet that straddles two received arrays
    /// is handed over in its two parts, never assembled.
    public mutating func consumePacket(into decoder: inout TokenStreamDecoder) {
        if let need = straddlingPart() {
            var reader = headerReader()
            guard let header = try? PacketHeader.decode(from: &reader) else { return }
            let left = buffer.count - readIndex
            record(header, offset: bufferBase + readIndex)
            if left > PacketHeader.size { decoder.append(packetPayload: (readIndex + PacketHeader.size) ..< buffer.count, of: buffer) }
            // The buffer is read to its end: the queued array goes on from the packet's rest.
            let payloadStart = queuedStart + Swift.max(0, PacketHeader.size - left)
            bufferBase += buffer.count - queuedStart
            retire(buffer)
            buffer = queued
            readIndex = queuedStart + need
            queued = []
            queuedStart = 0
            if payloadStart < readIndex { decoder.append(packetPayload: payloadStart ..< readIndex, of: buffer) }
            return
        }
        guard let (_, payload) = takePacket() else { return }
        if !payload.isEmpty { decoder.append(packetPayload: payload, of: buffer) }
        promoteQueued()
    }

    /// Takes the next whole packet: its header and where its payload is in `buffer`.
    private mutating func takePacket() -> (header: PacketHeader, payload: Range<Int>)? {
        guard failure == nil, buffer.count - readIndex >= PacketHeader.size else { return nil }
        var reader = ByteReader(buffer, start: readIndex, end: readIndex + PacketHeader.size, baseOffset: bufferBase)
        guard let header = try? PacketHeader.decode(from: &reader) else { return nil }
        let length = Int(header.length)
        guard buffer.count - readIndex >= length else { return nil }
        let start = readIndex
        readIndex += length
        record(header, offset: bufferBase + start)
        return (header, (start + PacketHeader.size) ..< (start + length))
    }

    /// Bookkeeping for a consumed packet: the current message's size, type and packet count.
    private mutating func record(_ header: PacketHeader, offset: Int) {
        lastPacketID = header.packetID
        if header.status.contains(.endOfMessage) {
            current = nil
        } else if var c = current {
            c.bytes += header.payloadLength
            c.packets += 1
            current = c
        } else {
            current = (header.type, header.payloadLength, 1, offset)
        }
    }

    /// The next complete packet (and message, at EOM), or nil when more bytes are needed.
    public mutating func next() throws(TDSDecodingError) -> Output? {
        guard let header = try peekHeader() else { return nil }
        let headerOffset = streamOffset
        let packet = consumePacket { header, payload in Packet(header: header, payload: Array(payload)) }
            ?? Packet(header: header, payload: [])
        var message = partial ?? TDSMessage(type: header.type, firstStatus: header.status,
                                            lastStatus: header.status, spid: header.spid,
                                            packetCount: 0, payload: [], streamOffset: headerOffset)
        partial = nil   // drop the stored copy so the payload grows in place (no copy per packet)
        message.packetCount += 1
        message.lastStatus = header.status
        message.payload.append(contentsOf: packet.payload)
        if header.status.contains(.endOfMessage) {
            return Output(packet: packet, offset: headerOffset, message: message)
        }
        partial = message
        return Output(packet: packet, offset: headerOffset, message: nil)
    }

    /// The next whole message (every packet up to EOM), or nil when more bytes are needed.
    /// Throws as ``next()`` does; `.limitExceeded` past ``maximumMessageSize``.
    public mutating func nextMessage() throws(TDSDecodingError) -> TDSMessage? {
        while let output = try next() {
            if let message = output.message { return message }
        }
        return nil
    }

    /// Drains every complete message from the bytes appended so far.
    public mutating func nextMessages() throws(TDSDecodingError) -> [TDSMessage] {
        var out: [TDSMessage] = []
        while let m = try nextMessage() { out.append(m) }
        return out
    }

    /// Takes the bytes not yet cut into packets (for example TLS records after the handshake).
    public mutating func takeRemaining() -> [UInt8] {
        flatten()
        let rest = Array(buffer[readIndex...])
        bufferBase += buffer.count
        buffer = []
        readIndex = 0
        return rest
    }

    /// Ends the stream (the connection closed or the capture ended).
    ///
    /// - Throws: the assembler's earlier error; `.truncated` at the header offset of a partial
    ///   packet, or at the first header of a message whose last packet never set EOM.
    public func finish() throws(TDSDecodingError) {
        if let failure { throw failure }
        if bufferedByteCount > 0 {
            throw TDSDecodingError(.truncated, offset: streamOffset, context: "PacketHeader",
                                   "the stream ended inside a packet: \(bufferedByteCount) byte(s) of it received")
        }
        if let current {
            throw TDSDecodingError(.truncated, offset: current.offset, context: current.type.name,
                                   "the stream ended before the message's last packet (EOM) after \(current.packets) packet(s)")
        }
    }

    private mutating func fail(_ error: TDSDecodingError) -> TDSDecodingError {
        failure = error
        return error
    }
}
