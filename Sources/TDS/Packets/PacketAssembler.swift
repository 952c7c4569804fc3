/// Cuts a byte stream (as read from a socket, in chunks of any size) into TDS packets and
/// whole messages ([MS-TDS] 2.2.3).
///
/// Pure and incremental: `append(_:)` bytes, then call `next()` until it returns nil ("need
/// more data"). Each complete packet is returned as soon as its last byte arrived; the packet
/// carrying EOM also returns the whole message. The answer does not depend on how the stream
/// was split into chunks.
///
/// Errors (`.invalidPacket`, with the absolute stream offset of the bad header):
/// - a Length under 8 or over `maximumPacketSize`;
/// - a packet whose type differs from the type of the message it continues;
/// - with ``checksPacketIDs``, a packet whose PacketID is not the previous one's plus 1 (mod 256).
/// At the end of the stream, ``finish()`` throws `.truncated` for a partial packet or a message
/// whose last packet never set EOM.
/// After an error the assembler stays failed: every later `next()` throws the same error.
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

    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Absolute stream offset of `buffer[0]`.
    private var bufferBase = 0
    private var partial: TDSMessage?
    private var failure: TDSDecodingError?
    private var lastPacketID: UInt8 = 0

    /// Require the packets of a message to be numbered consecutively (PacketID + 1, mod 256),
    /// throwing `.invalidPacket` at a gap. Off by default: [MS-TDS] 2.2.3.1.5 says receivers
    /// currently ignore PacketID.
    public var checksPacketIDs = false

    public init(maximumPacketSize: Int = Packet.maximumNegotiatedSize) {
        self.maximumPacketSize = maximumPacketSize
    }

    /// Bytes received but not yet returned as part of a packet.
    public var bufferedByteCount: Int { buffer.count - readIndex }
    /// True when a message has started (some packets without EOM were returned).
    public var isInsideMessage: Bool { partial != nil }
    /// Absolute stream offset of the next unread byte.
    public var streamOffset: Int { bufferBase + readIndex }

    /// Adds bytes read from the stream.
    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            bufferBase += readIndex
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete packet (and message, at EOM), or nil when more bytes are needed.
    public mutating func next() throws(TDSDecodingError) -> Output? {
        if let failure { throw failure }
        let available = buffer.count - readIndex
        guard available >= PacketHeader.size else { return nil }
        let headerOffset = bufferBase + readIndex
        var reader = ByteReader(buffer, start: readIndex, end: readIndex + PacketHeader.size, baseOffset: bufferBase)
        let header: PacketHeader
        do throws(TDSDecodingError) {
            header = try PacketHeader.decode(from: &reader)
        } catch {
            failure = error
            throw error
        }
        let length = Int(header.length)
        guard length <= maximumPacketSize else {
            let e = TDSDecodingError(.invalidPacket, offset: headerOffset, context: "PacketHeader",
                                     "packet length \(length) exceeds the packet size \(maximumPacketSize)")
            failure = e
            throw e
        }
        if let partial, partial.type != header.type {
            let e = TDSDecodingError(.invalidPacket, offset: headerOffset, context: "PacketHeader",
                                     "packet type \(header.type) inside a \(partial.type) message")
            failure = e
            throw e
        }
        if checksPacketIDs, partial != nil, header.packetID != lastPacketID &+ 1 {
            let e = TDSDecodingError(.invalidPacket, offset: headerOffset, context: "PacketHeader",
                                     "PacketID \(header.packetID) does not follow \(lastPacketID)")
            failure = e
            throw e
        }
        guard available >= length else { return nil }
        lastPacketID = header.packetID
        let payload = Array(buffer[(readIndex + PacketHeader.size) ..< (readIndex + length)])
        readIndex += length
        let packet = Packet(header: header, payload: payload)

        var message = partial ?? TDSMessage(type: header.type, firstStatus: header.status,
                                            lastStatus: header.status, spid: header.spid,
                                            packetCount: 0, payload: [], streamOffset: headerOffset)
        partial = nil   // drop the stored copy so the payload grows in place (no copy per packet)
        message.packetCount += 1
        message.lastStatus = header.status
        message.payload.append(contentsOf: payload)
        if header.status.contains(.endOfMessage) {
            partial = nil
            return Output(packet: packet, offset: headerOffset, message: message)
        } else {
            partial = message
            return Output(packet: packet, offset: headerOffset, message: nil)
        }
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
        if let partial {
            throw TDSDecodingError(.truncated, offset: partial.streamOffset, context: partial.type.name,
                                   "the stream ended before the message's last packet (EOM) after \(partial.packetCount) packet(s)")
        }
    }

    /// Drains every complete message from the bytes appended so far.
    public mutating func nextMessages() throws(TDSDecodingError) -> [TDSMessage] {
        var out: [TDSMessage] = []
        while let o = try next() {
            if let m = o.message { out.append(m) }
        }
        return out
    }
}
