/// Cuts the TCP segment out of a captured frame: link layer (Ethernet with VLAN tags, Linux
/// cooked capture SLL and SLL2, BSD/OpenBSD loopback, raw IP), then IPv4 or IPv6 (with
/// extension headers), then TCP.
///
/// Frames that carry something else (ARP, UDP, ICMP, IP fragments after the first) give `nil`.
/// A header that claims more bytes than it has, or an impossible header length, throws a
/// ``CaptureError`` at its file offset. A payload cut short by the capture's snap length is
/// returned with `missingBytes` set so the reassembler records a gap.
public enum FrameDissector {
    /// A TCP segment and the number of its payload bytes the capture did not keep.
    public struct Result: Sendable, Hashable {
        public var segment: TCPSegment
        /// Payload bytes announced by the IP header but not captured (snap length).
        public var missingBytes: Int
    }

    static let etherTypeIPv4: UInt16 = 0x0800
    static let etherTypeIPv6: UInt16 = 0x86DD

    /// The TCP segment in `frame`, or nil when the frame holds no TCP.
    /// - Throws: ``CaptureError`` for a malformed link, IP or TCP header.
    public static func dissect(_ frame: CapturedFrame) throws(CaptureError) -> Result? {
        let f = FrameBytes(bytes: frame.data, fileOffset: frame.fileOffset)
        var offset = 0
        var etherType: UInt16
        switch frame.linkType.rawValue {
        case LinkType.ethernet.rawValue:
            etherType = try f.u16(12, "Ethernet header")
            offset = 14
            while etherType == 0x8100 || etherType == 0x88A8 || etherType == 0x9100 {
                etherType = try f.u16(offset + 2, "802.1Q VLAN tag")
                offset += 4
            }
        case LinkType.linuxSLL.rawValue:
            etherType = try f.u16(14, "Linux cooked capture (SLL) header")
            offset = 16
        case LinkType.linuxSLL2.rawValue:
            etherType = try f.u16(0, "Linux cooked capture v2 (SLL2) header")
            try f.require(0, 20, "Linux cooked capture v2 (SLL2) header")
            offset = 20
        case LinkType.null.rawValue, LinkType.loop.rawValue:
            try f.require(0, 4, "loopback header")
            // The family is 2 for IPv4 and 24/28/30 for IPv6, in either byte order.
            let family = frame.data[0] == 0 ? frame.data[3] : frame.data[0]
            etherType = family == 2 ? etherTypeIPv4 : (family == 24 || family == 28 || family == 30 ? etherTypeIPv6 : 0)
            offset = 4
        case LinkType.raw.rawValue, 12, 14, LinkType.ipv4.rawValue, LinkType.ipv6.rawValue:
            let version = try f.u8(0, "IP header") >> 4
            etherType = version == 4 ? etherTypeIPv4 : (version == 6 ? etherTypeIPv6 : 0)
        default:
            throw CaptureError(offset: frame.fileOffset, "frame \(frame.index + 1): unsupported link type \(frame.linkType)")
        }
        switch etherType {
        case etherTypeIPv4: return try ipv4(f, at: offset, frame: frame)
        case etherTypeIPv6: return try ipv6(f, at: offset, frame: frame)
        default: return nil
        }
    }

    private static func ipv4(_ f: FrameBytes, at start: Int, frame: CapturedFrame) throws(CaptureError) -> Result? {
        let versionIHL = try f.u8(start, "IPv4 header")
        guard versionIHL >> 4 == 4 else {
            throw CaptureError(offset: f.fileOffset + start, "frame \(frame.index + 1): IPv4 header has version \(versionIHL >> 4)")
        }
        let headerLength = Int(versionIHL & 0x0F) * 4
        guard headerLength >= 20 else {
            throw CaptureError(offset: f.fileOffset + start, "frame \(frame.index + 1): IPv4 header length \(headerLength) is below 20")
        }
        try f.require(start, headerLength, "IPv4 header")
        let totalLength = Int(try f.u16(start + 2, "IPv4 total length"))
        guard totalLength >= headerLength else {
            throw CaptureError(offset: f.fileOffset + start + 2,
                               "frame \(frame.index + 1): IPv4 total length \(totalLength) is below its header length \(headerLength)")
        }
        let fragment = try f.u16(start + 6, "IPv4 fragment field")
        let proto = try f.u8(start + 9, "IPv4 protocol")
        guard proto == 6 else { return nil }
        // Fragments other than a whole datagram are not reassembled: skip them.
        if fragment & 0x1FFF != 0 || fragment & 0x2000 != 0 { return nil }
        let source = try addressBytes(f, start + 12, 4)
        let destination = try addressBytes(f, start + 16, 4)
        return try tcp(f, at: start + headerLength, ipPayloadLength: totalLength - headerLength,
                       source: source, destination: destination, frame: frame)
    }

    private static func ipv6(_ f: FrameBytes, at start: Int, frame: CapturedFrame) throws(CaptureError) -> Result? {
        try f.require(start, 40, "IPv6 header")
        let version = try f.u8(start, "IPv6 header") >> 4
        guard version == 6 else {
            throw CaptureError(offset: f.fileOffset + start, "frame \(frame.index + 1): IPv6 header has version \(version)")
        }
        var payloadLength = Int(try f.u16(start + 4, "IPv6 payload length"))
        var next = try f.u8(start + 6, "IPv6 next header")
        let source = try addressBytes(f, start + 8, 16)
        let destination = try addressBytes(f, start + 24, 16)
        var offset = start + 40
        // Walk extension headers: hop-by-hop 0, routing 43, fragment 44, destination options 60.
        var guardCount = 0
        while next == 0 || next == 43 || next == 44 || next == 60 {
            guardCount += 1
            guard guardCount < 16 else { return nil }
            let headerNext = try f.u8(offset, "IPv6 extension header")
            let length: Int
            if next == 44 {
                let fragment = try f.u16(offset + 2, "IPv6 fragment header")
                if fragment & 0xFFF9 != 0 { return nil } // a fragment: not reassembled
                length = 8
            } else {
                length = (Int(try f.u8(offset + 1, "IPv6 extension header length")) + 1) * 8
            }
            try f.require(offset, length, "IPv6 extension header")
            guard payloadLength >= length else {
                throw CaptureError(offset: f.fileOffset + offset, "frame \(frame.index + 1): IPv6 extension header exceeds the payload length")
            }
            payloadLength -= length
            offset += length
            next = headerNext
        }
        guard next == 6 else { return nil }
        return try tcp(f, at: offset, ipPayloadLength: payloadLength, source: source, destination: destination, frame: frame)
    }

    private static func addressBytes(_ f: FrameBytes, _ offset: Int, _ count: Int) throws(CaptureError) -> [UInt8] {
        try f.require(offset, count, "IP address")
        return Array(f.bytes[offset ..< offset + count])
    }

    private static func tcp(_ f: FrameBytes, at start: Int, ipPayloadLength: Int, source: [UInt8], destination: [UInt8],
                            frame: CapturedFrame) throws(CaptureError) -> Result? {
        try f.require(start, 20, "TCP header")
        let sourcePort = try f.u16(start, "TCP source port")
        let destinationPort = try f.u16(start + 2, "TCP destination port")
        let seq = try f.u32(start + 4, "TCP sequence number")
        let ack = try f.u32(start + 8, "TCP acknowledgement number")
        let dataOffset = Int(try f.u8(start + 12, "TCP data offset") >> 4) * 4
        let flags = try f.u8(start + 13, "TCP flags")
        guard dataOffset >= 20, dataOffset <= ipPayloadLength else {
            throw CaptureError(offset: f.fileOffset + start + 12,
                               "frame \(frame.index + 1): TCP header length \(dataOffset) is invalid (IP payload \(ipPayloadLength) bytes)")
        }
        try f.require(start, dataOffset, "TCP header")
        let payloadStart = start + dataOffset
        let declared = ipPayloadLength - dataOffset
        let available = max(0, min(declared, f.bytes.count - payloadStart))
        let payload = Array(f.bytes[payloadStart ..< payloadStart + available])
        let segment = TCPSegment(source: IPEndpoint(address: source, port: sourcePort),
                                 destination: IPEndpoint(address: destination, port: destinationPort),
                                 sequenceNumber: seq, acknowledgementNumber: ack, flags: flags, payload: payload,
                                 frameIndex: frame.index, fileOffset: f.fileOffset + payloadStart, timestamp: frame.timestamp)
        return Result(segment: segment, missingBytes: declared - available)
    }
}
