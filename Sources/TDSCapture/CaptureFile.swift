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

    /// The format of `bytes`: by magic number (pcap, pcapng), then `.hex` for a file named
    /// `*.hex` (whatever it holds: a word that is not hexadecimal is then an error with its line
    /// number, never raw bytes) or for text that looks like it (``HexCapture/matches(_:)``, or
    /// printable text whose first line is a `#` comment), otherwise raw.
    public static func detect(_ bytes: [UInt8], fileName: String? = nil) -> CaptureFormat {
        if PcapReader.matches(bytes) { return .pcap }
        if PcapNGReader.matches(bytes) { return .pcapng }
        if let name = fileName?.lowercased(), name.hasSuffix(".hex") { return .hex }
        if HexCapture.matches(bytes) { return .hex }
        if bytes.first == UInt8(ascii: "#"),
           bytes.prefix(4096).allSatisfy({ (0x20 ... 0x7E).contains($0) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return .hex
        }
        return .raw
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
