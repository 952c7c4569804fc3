import TDS

/// Which side of a TDS conversation sent some bytes.
public enum TDSDirection: String, Sendable, Hashable, CustomStringConvertible {
    case client, server
    public var description: String { rawValue }
}

/// Heuristics that recognise TDS in a TCP stream on any port, tell a client stream from a
/// server stream, and recognise Sybase TDS 5.0 so that it can be refused.
///
/// A TDS packet header ([MS-TDS] 2.2.3) is 8 bytes: type, status, length (big-endian,
/// including the header), SPID (big-endian), packet id, window.
public enum TDSDetection {
    /// Packet types a client sends ([MS-TDS] 2.2.3.1.1), plus the pre-TDS 7 login (0x02) and
    /// Sybase's TDS 5.0 "normal" packet (0x0F), which are recognised in order to be refused.
    public static let clientPacketTypes: Set<UInt8> = [0x01, 0x02, 0x03, 0x06, 0x07, 0x08, 0x0E, 0x0F, 0x10, 0x11, 0x12]
    /// Packet types a server sends: TABULAR_RESULT (0x04). (A server's PRELOGIN answer is a
    /// TABULAR_RESULT packet; only its TLS handshake travels in PRELOGIN (0x12) packets.)
    public static let serverPacketTypes: Set<UInt8> = [0x04, 0x12]
    /// `clientPacketTypes` and `serverPacketTypes` as a bit mask (bit n = type n), for
    /// ``isPacketHeader(_:at:)``, which runs on every byte a resynchronising scan passes over:
    /// no hashing there.
    @inline(__always) static var packetTypeMask: UInt32 {
        1 << 0x01 | 1 << 0x02 | 1 << 0x03 | 1 << 0x04 | 1 << 0x06 | 1 << 0x07 | 1 << 0x08 | 1 << 0x0E | 1 << 0x0F | 1 << 0x10 | 1 << 0x11 | 1 << 0x12
    }
    /// The port SQL Server listens on by default.
    public static let defaultPort: UInt16 = 1433

    /// True when `bytes[offset...]` starts with a plausible TDS packet header: a known type,
    /// only defined status bits, a length between 8 and 32,768, and a zero Window byte.
    public static func isPacketHeader(_ bytes: [UInt8], at offset: Int = 0) -> Bool {
        guard offset >= 0, bytes.count - offset >= 8 else { return false }
        let type = bytes[offset]
        let status = bytes[offset + 1]
        let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
        guard type < 32, packetTypeMask & (1 << UInt32(type)) != 0 else { return false }
        guard status & 0xE0 == 0, bytes[offset + 7] == 0 else { return false }
        return length >= 8 && length <= 32_768
    }

    /// True when `bytes[offset...]` starts with a TLS record header (content type 20–23,
    /// version 3.x, length ≤ 18,432 + 2,048).
    public static func isTLSRecord(_ bytes: [UInt8], at offset: Int = 0) -> Bool {
        guard offset >= 0, bytes.count - offset >= 5 else { return false }
        let type = bytes[offset]
        guard (0x14...0x17).contains(type), bytes[offset + 1] == 0x03, bytes[offset + 2] <= 0x04 else { return false }
        let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
        return length > 0 && length <= 18_432 + 2_048
    }

    /// True when the stream starts with a TDS packet header whose successor (if the stream holds
    /// more bytes than the first packet) is again a TDS header or a TLS record.
    public static func startsWithTDSPackets(_ bytes: [UInt8]) -> Bool {
        guard isPacketHeader(bytes) else { return false }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        if bytes.count > length {
            return isPacketHeader(bytes, at: length) || isTLSRecord(bytes, at: length)
        }
        return true
    }

    /// The role the first bytes of a stream suggest: a TABULAR_RESULT header means server, a
    /// request header means client, anything else nil.
    public static func role(_ bytes: [UInt8]) -> TDSDirection? {
        guard startsWithTDSPackets(bytes) else { return nil }
        if bytes[0] == 0x04 { return .server }
        if bytes[0] == 0x12 { return nil }
        return .client
    }

    /// True when a conversation carries TDS: a server port from `serverPorts`, or TDS packet
    /// headers at the start of either direction.
    public static func isTDS(_ conversation: TCPConversation, serverPorts: Set<UInt16>) -> Bool {
        if serverPorts.contains(conversation.server.port) { return true }
        let c = conversation.clientStream, s = conversation.serverStream
        return (c.gaps.first?.offset != 0 && startsWithTDSPackets(c.bytes))
            || (s.gaps.first?.offset != 0 && startsWithTDSPackets(s.bytes))
    }

    /// Why a client stream is Sybase TDS 5.0 (or an older TDS 4.x login), or nil when it is not:
    /// its first packet is a pre-TDS 7 LOGIN (0x02) or a TDS 5.0 normal packet (0x0F). Such a
    /// conversation must be refused: this project speaks TDS 7.x only.
    public static func legacyTDSReason(clientStream bytes: [UInt8]) -> String? {
        guard isPacketHeader(bytes) else { return nil }
        switch bytes[0] {
        case 0x02:
            return "the client's first packet is a pre-TDS 7 LOGIN (type 0x02), as Sybase TDS 5.0 and TDS 4.2 clients send"
        case 0x0F:
            return "the client's first packet has type 0x0F, a Sybase TDS 5.0 normal packet"
        default:
            return nil
        }
    }
}
