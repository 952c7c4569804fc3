import TDS

/// The container formats `sqlclient decode` reads.
public enum CaptureFormat: String, Sendable, Hashable {
    /// Classic libpcap.
    case pcap
    /// pcapng.
    case pcapng
    /// The `.hex` text format of `../shared/captures` (see ``HexCapture``).
    case hex
    /// Bytes as they are: TDS packets, a message body or a bare token stream.
    case raw

    /// The format of `bytes`: by magic number (pcap, pcapng), then by the `.hex` extension or
    /// content, otherwise raw.
    public static func detect(_ bytes: [UInt8], fileName: String? = nil) -> CaptureFormat {
        if PcapReader.matches(bytes) { return .pcap }
        if PcapNGReader.matches(bytes) { return .pcapng }
        if let name = fileName?.lowercased(), name.hasSuffix(".hex") || name.hasSuffix(".txt") {
            return HexCapture.matches(bytes) ? .hex : .raw
        }
        return HexCapture.matches(bytes) ? .hex : .raw
    }
}

/// A capture file read into memory.
public struct CaptureFile: Sendable {
    public var format: CaptureFormat
    /// The frames of a pcap or pcapng file (empty for `.hex` and raw).
    public var frames: [CapturedFrame]
    /// For `.hex`, the comment lines.
    public var comments: [String]
    /// For `.hex` and raw, the bytes.
    public var bytes: [UInt8]

    /// Reads `bytes` in the given format (detected when nil).
    /// - Throws: ``CaptureError`` for a malformed pcap, pcapng or `.hex` file.
    public init(bytes: [UInt8], fileName: String? = nil, format: CaptureFormat? = nil) throws(CaptureError) {
        let format = format ?? CaptureFormat.detect(bytes, fileName: fileName)
        self.format = format
        self.frames = []
        self.comments = []
        self.bytes = []
        switch format {
        case .pcap: frames = try PcapReader.frames(from: bytes)
        case .pcapng: frames = try PcapNGReader.frames(from: bytes)
        case .hex:
            let hex = try HexCapture.parse(bytes)
            self.comments = hex.comments
            self.bytes = hex.bytes
        case .raw: self.bytes = bytes
        }
    }

    /// True for pcap and pcapng.
    public var isPacketCapture: Bool { format == .pcap || format == .pcapng }

    /// Every TCP conversation in the capture, reassembled, with roles decided using
    /// `serverPorts` (see ``TCPReassembler``).
    /// - Throws: ``CaptureError`` for a malformed link, IP or TCP header.
    public func tcpConversations(serverPorts: Set<UInt16> = [TDSDetection.defaultPort]) throws(CaptureError) -> [TCPConversation] {
        var segments: [FrameDissector.Result] = []
        for frame in frames {
            if let r = try FrameDissector.dissect(frame) { segments.append(r) }
        }
        return TCPReassembler.conversations(from: segments, serverPorts: serverPorts)
    }

    /// The conversations that carry TDS: on a server port (1433 and `port` when given), or
    /// starting with TDS packet headers on any port.
    public func tdsConversations(port: UInt16? = nil) throws(CaptureError) -> [TCPConversation] {
        var ports: Set<UInt16> = [TDSDetection.defaultPort]
        if let port { ports.insert(port) }
        return try tcpConversations(serverPorts: ports).filter { TDSDetection.isTDS($0, serverPorts: ports) }
    }
}
