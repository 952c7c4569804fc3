/// An IP address (4 bytes for IPv4, 16 for IPv6) and a TCP port.
public struct IPEndpoint: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// Address bytes in network order: 4 (IPv4) or 16 (IPv6).
    public var address: [UInt8]
    public var port: UInt16

    public init(address: [UInt8], port: UInt16) {
        self.address = address
        self.port = port
    }

    public var isIPv6: Bool { address.count == 16 }

    /// `10.0.0.1:1433` or `[2001:db8::1]:1433`.
    public var description: String {
        if address.count == 4 {
            return address.map(String.init).joined(separator: ".") + ":\(port)"
        }
        var groups: [UInt16] = []
        var i = 0
        while i + 1 < address.count { groups.append(UInt16(address[i]) << 8 | UInt16(address[i + 1])); i += 2 }
        // Compress the longest run of zero groups (RFC 5952).
        var bestStart = -1, bestLength = 0, runStart = -1
        for k in 0...groups.count {
            let g: UInt16 = k < groups.count ? groups[k] : 1
            if g == 0 { if runStart < 0 { runStart = k } } else if runStart >= 0 {
                if k - runStart > bestLength && k - runStart > 1 { bestStart = runStart; bestLength = k - runStart }
                runStart = -1
            }
        }
        var text = ""
        var k = 0
        while k < groups.count {
            if k == bestStart {
                text += k == 0 ? "::" : ":"
                k += bestLength
                continue
            }
            text += String(groups[k], radix: 16)
            if k < groups.count - 1 { text += ":" }
            k += 1
        }
        return "[\(text)]:\(port)"
    }

    public static func < (a: IPEndpoint, b: IPEndpoint) -> Bool {
        if a.address != b.address { return a.address.lexicographicallyPrecedes(b.address) }
        return a.port < b.port
    }
}

/// A TCP segment cut out of a captured frame.
public struct TCPSegment: Sendable, Hashable {
    public var source: IPEndpoint
    public var destination: IPEndpoint
    /// Sequence number of the first payload byte (of the SYN when `syn`).
    public var sequenceNumber: UInt32
    public var acknowledgementNumber: UInt32
    /// TCP flags byte: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10.
    public var flags: UInt8
    public var payload: [UInt8]
    /// Index of the frame it came from.
    public var frameIndex: Int
    /// Byte offset of the payload in the capture file.
    public var fileOffset: Int
    public var timestamp: Double

    public init(source: IPEndpoint, destination: IPEndpoint, sequenceNumber: UInt32, acknowledgementNumber: UInt32,
                flags: UInt8, payload: [UInt8], frameIndex: Int, fileOffset: Int, timestamp: Double) {
        self.source = source
        self.destination = destination
        self.sequenceNumber = sequenceNumber
        self.acknowledgementNumber = acknowledgementNumber
        self.flags = flags
        self.payload = payload
        self.frameIndex = frameIndex
        self.fileOffset = fileOffset
        self.timestamp = timestamp
    }

    public var syn: Bool { flags & 0x02 != 0 }
    public var fin: Bool { flags & 0x01 != 0 }
    public var rst: Bool { flags & 0x04 != 0 }
    public var ack: Bool { flags & 0x10 != 0 }
}
