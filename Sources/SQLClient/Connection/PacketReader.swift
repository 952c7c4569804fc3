/// Cuts received bytes into TDS packets one at a time ([MS-TDS] 2.2.3), without keeping the
/// whole message: each packet's payload goes straight to the token decoder, so a large result
/// is held in memory one packet at a time. Headers are decoded by ``PacketHeader``.
struct PacketReader: Sendable {
    /// The largest packet accepted, header included.
    var maximumPacketSize: Int = Int(UInt16.max)
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Absolute stream offset of `buffer[0]`, for error offsets.
    private var bufferBase = 0

    var bufferedByteCount: Int { buffer.count - readIndex }

    mutating func append(_ bytes: [UInt8]) {
        if readIndex == buffer.count {
            // Everything was consumed: keep the received array itself (no copy).
            bufferBase += buffer.count
            buffer = bytes
            readIndex = 0
            return
        }
        if readIndex > 0 && readIndex == buffer.count {
            bufferBase += buffer.count
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex >= 65_536 {
            buffer.removeFirst(readIndex)
            bufferBase += readIndex
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole packet, or nil when more bytes are needed.
    /// - Throws: ``TDSDecodingError`` `.invalidPacket` for a length under 8 or over the maximum.
    mutating func next() throws(TDSDecodingError) -> Packet? {
        guard buffer.count - readIndex >= PacketHeader.size else { return nil }
        var reader = ByteReader(buffer, start: readIndex, end: readIndex + PacketHeader.size, baseOffset: bufferBase)
        let header = try PacketHeader.decode(from: &reader)
        let length = Int(header.length)
        guard length >= PacketHeader.size, length <= maximumPacketSize else {
            throw TDSDecodingError(.invalidPacket, offset: bufferBase + readIndex, context: "PacketHeader",
                                   "packet length \(length) is outside 8…\(maximumPacketSize)")
        }
        guard buffer.count - readIndex >= length else { return nil }
        let payload = Array(buffer[(readIndex + PacketHeader.size) ..< (readIndex + length)])
        readIndex += length
        return Packet(header: header, payload: payload)
    }

    /// The header of the next packet when the whole packet is buffered (nothing is consumed),
    /// nil when more bytes are needed; ``consumePayload(into:)`` then hands its payload to a
    /// token decoder. Throws as ``next()``.
    mutating func peekHeader() throws(TDSDecodingError) -> PacketHeader? {
        guard buffer.count - readIndex >= PacketHeader.size else { return nil }
        var reader = ByteReader(buffer, start: readIndex, end: readIndex + PacketHeader.size, baseOffset: bufferBase)
        let header = try PacketHeader.decode(from: &reader)
        let length = Int(header.length)
        guard length >= PacketHeader.size, length <= maximumPacketSize else {
            throw TDSDecodingError(.invalidPacket, offset: bufferBase + readIndex, context: "PacketHeader",
                                   "packet length \(length) is outside 8…\(maximumPacketSize)")
        }
        guard buffer.count - readIndex >= length else { return nil }
        return header
    }

    /// Appends the payload of the packet whose header ``peekHeader()`` just returned to `decoder`
    /// straight from the receive buffer (no payload array), and consumes the packet.
    mutating func consumePayload(into decoder: inout TokenStreamDecoder) {
        guard buffer.count - readIndex >= PacketHeader.size else { return }
        let length = Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
        guard length >= PacketHeader.size, buffer.count - readIndex >= length else { return }
        if length > PacketHeader.size {
            decoder.append(contentsOf: buffer[(readIndex + PacketHeader.size) ..< (readIndex + length)])
        }
        readIndex += length
    }

    /// Takes the bytes not yet cut into packets (for example TLS records after the handshake).
    mutating func takeRemaining() -> [UInt8] {
        let rest = Array(buffer[readIndex...])
        bufferBase += buffer.count
        buffer = []
        readIndex = 0
        return rest
    }
}
