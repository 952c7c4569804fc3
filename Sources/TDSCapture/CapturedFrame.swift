/// A link-layer type from a pcap global header or a pcapng Interface Description Block
/// (the LINKTYPE_ values of tcpdump.org).
public struct LinkType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// BSD loopback: a 4-byte address family in the capturing host's byte order.
    public static let null = LinkType(rawValue: 0)
    /// IEEE 802.3 Ethernet (optionally with 802.1Q / 802.1ad VLAN tags).
    public static let ethernet = LinkType(rawValue: 1)
    /// Raw IP (no link header), as written by some tools.
    public static let raw = LinkType(rawValue: 101)
    /// OpenBSD loopback: a 4-byte address family in network byte order.
    public static let loop = LinkType(rawValue: 108)
    /// Linux cooked capture v1 (SLL), 16-byte header.
    public static let linuxSLL = LinkType(rawValue: 113)
    /// Raw IPv4.
    public static let ipv4 = LinkType(rawValue: 228)
    /// Raw IPv6.
    public static let ipv6 = LinkType(rawValue: 229)
    /// Linux cooked capture v2 (SLL2), 20-byte header.
    public static let linuxSLL2 = LinkType(rawValue: 276)

    public var description: String {
        switch rawValue {
        case 0: return "NULL"
        case 1: return "ETHERNET"
        case 12, 14, 101: return "RAW"
        case 108: return "LOOP"
        case 113: return "LINUX_SLL"
        case 228: return "IPV4"
        case 229: return "IPV6"
        case 276: return "LINUX_SLL2"
        default: return "LINKTYPE_\(rawValue)"
        }
    }
}

/// One captured link-layer frame, as read from a pcap record or a pcapng packet block.
public struct CapturedFrame: Sendable, Hashable {
    /// Position of the frame in the file, counting from 0.
    public var index: Int
    public var linkType: LinkType
    /// Capture time in seconds since 1970-01-01 UTC (fractional), as recorded by the capturer.
    public var timestamp: Double
    /// The captured bytes (possibly fewer than went on the wire, see `originalLength`).
    public var data: [UInt8]
    /// The length of the frame on the wire, in bytes.
    public var originalLength: Int
    /// Byte offset of `data[0]` in the capture file, for error messages.
    public var fileOffset: Int

    public init(index: Int, linkType: LinkType, timestamp: Double, data: [UInt8], originalLength: Int, fileOffset: Int) {
        self.index = index
        self.linkType = linkType
        self.timestamp = timestamp
        self.data = data
        self.originalLength = originalLength
        self.fileOffset = fileOffset
    }
}
