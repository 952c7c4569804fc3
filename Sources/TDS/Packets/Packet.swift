/// [MS-TDS] 2.2.3 Packets: one TDS packet, its header and its payload.
public struct Packet: Hashable, Sendable {
    /// The 8-byte header ([MS-TDS] 2.2.3.1).
    public var header: PacketHeader
    /// The payload: `header.length - 8` bytes.
    public var payload: [UInt8]

    /// A packet from its header and payload (the header's length is not checked against it).
    public init(header: PacketHeader, payload: [UInt8]) {
        self.header = header
        self.payload = payload
    }

    /// The header and the payload, as sent on the wire.
    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: PacketHeader.size + payload.count)
        header.encode(into: &w)
        w.writeBytes(payload)
        return w.bytes
    }

    /// The smallest packet size SQL Server accepts ([MS-TDS] 2.2.6.4 PacketSize; ENVCHANGE 4).
    public static let minimumSize = 512
    /// The largest packet size a client may negotiate.
    public static let maximumNegotiatedSize = 32767
    /// The packet size clients use before the server confirms one in the login response
    /// (4096 bytes, SQL Server's default network packet size).
    public static let defaultSize = 4096

    /// Splits a message into packets of at most `packetSize` bytes (header included), with
    /// ``MessagePacketizer``.
    ///
    /// Packet ids start at `firstPacketID` and increment mod 256; the last packet carries EOM.
    /// `status` bits other than EOM (IGNORE, RESETCONNECTION, RESETCONNECTIONSKIPTRAN) are set on
    /// the first packet only (IGNORE on every packet). An empty message (ATTENTION) is one packet
    /// of 8 bytes. `packetSize` is clamped to 9...65535.
    public static func split(message: [UInt8], type: PacketType, packetSize: Int,
                             status: PacketStatus = [], spid: UInt16 = 0,
                             firstPacketID: UInt8 = 1) -> [Packet] {
        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        framer.append(encode(message: message, type: type, packetSize: packetSize, status: status,
                             spid: spid, firstPacketID: firstPacketID))
        var packets: [Packet] = []
        while let output = try? framer.next() { packets.append(output.packet) }
        return packets
    }

    /// The packets of `message` (see ``split(message:type:packetSize:status:spid:firstPacketID:)``)
    /// as the bytes to write to the socket.
    public static func encode(message: [UInt8], type: PacketType, packetSize: Int,
                              status: PacketStatus = [], spid: UInt16 = 0,
                              firstPacketID: UInt8 = 1) -> [UInt8] {
        var packetizer = MessagePacketizer(type: type, packetSize: packetSize, firstPacketStatus: status,
                                           spid: spid, firstPacketID: firstPacketID)
        var out = packetizer.append(message)
        out.append(contentsOf: packetizer.finish())
        return out
    }
}

/// A whole TDS message: the concatenated payloads of its packets, up to and including EOM.
public struct TDSMessage: Hashable, Sendable {
    /// The packet type of its packets.
    public var type: PacketType
    /// The status of the first packet (RESETCONNECTION bits live there).
    public var firstStatus: PacketStatus
    /// The status of the last packet (EOM, and IGNORE when the sender cancelled the message).
    public var lastStatus: PacketStatus
    /// The SPID of its first packet's header.
    public var spid: UInt16
    /// Number of packets the message arrived in.
    public var packetCount: Int
    /// The message body: every packet's payload, concatenated.
    public var payload: [UInt8]
    /// Absolute stream offset of the first packet's header.
    public var streamOffset: Int

    /// A message from its parts (as ``PacketAssembler`` builds it).
    public init(type: PacketType, firstStatus: PacketStatus, lastStatus: PacketStatus, spid: UInt16,
                packetCount: Int, payload: [UInt8], streamOffset: Int = 0) {
        self.type = type
        self.firstStatus = firstStatus
        self.lastStatus = lastStatus
        self.spid = spid
        self.packetCount = packetCount
        self.payload = payload
        self.streamOffset = streamOffset
    }

    /// The sender asked the receiver to ignore this message (IGNORE on its EOM packet).
    public var isIgnored: Bool { lastStatus.contains(.ignore) }
}
