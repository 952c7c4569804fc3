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

    /// Takes the bytes not yet cut into packets (for example TLS records after the handshake).
    mutating func takeRemaining() -> [UInt8] {
        let rest = Array(buffer[readIndex...])
        bufferBase += buffer.count
        buffer = []
        readIndex = 0
        return rest
    }
}
