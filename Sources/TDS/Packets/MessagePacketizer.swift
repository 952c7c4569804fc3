/// Cuts one outgoing message into packets ([MS-TDS] 2.2.3) while its body is still being
/// produced: the one packet writer (``Packet/split(message:type:packetSize:status:spid:firstPacketID:)``
/// and ``Packet/encode(message:type:packetSize:status:spid:firstPacketID:)`` use it too).
///
/// Feed body bytes with ``append(_:)`` (whole packets come back as soon as they are full; the
/// last, possibly partial, packet is held back because only the end of the body says it
/// carries EOM), then end the message with ``finish()`` (the last packet, with EOM) or, to
/// abandon a message already partly sent, with ``cancel()`` (the held-back bytes in a last
/// packet with EOM|IGNORE: the server discards the whole message, [MS-TDS] 2.2.3.1.2).
///
/// `firstPacketStatus` bits (RESETCONNECTION 0x08, RESETCONNECTIONSKIPTRAN 0x10) go on the
/// first packet only; IGNORE, when given, on every packet. Packet ids start at
/// `firstPacketID` and increment mod 256. An empty message is one 8-byte packet with EOM.
public struct MessagePacketizer: Sendable {
    /// The message's packet type (every packet's Type byte).
    public let type: PacketType
    /// Packet size, header included (clamped to 9…65535).
    public let packetSize: Int
    /// The SPID written in every header (0 from a client).
    public let spid: UInt16
    private let firstStatus: PacketStatus
    private let ignoreAll: Bool
    private var pending: [UInt8] = []
    private var nextID: UInt8
    private var packetsEmitted = 0
    /// True once finish() or cancel() ended the message.
    public private(set) var isFinished = false

    /// A packetizer for one message of `type` in packets of `packetSize` bytes (clamped to
    /// 9…65,535), the first carrying `firstPacketStatus`, ids from `firstPacketID`.
    public init(type: PacketType, packetSize: Int, firstPacketStatus: PacketStatus = [], spid: UInt16 = 0,
                firstPacketID: UInt8 = 1) {
        self.type = type
        self.packetSize = min(max(packetSize, PacketHeader.size + 1), Int(UInt16.max))
        self.spid = spid
        self.firstStatus = firstPacketStatus.subtracting(.endOfMessage)
        self.ignoreAll = firstPacketStatus.contains(.ignore)
        self.nextID = firstPacketID
    }

    /// Payload bytes per packet.
    public var chunkSize: Int { packetSize - PacketHeader.size }
    /// Packets produced so far.
    public var packetCount: Int { packetsEmitted }

    /// Adds body bytes; returns the bytes of the packets now full (possibly none).
    public mutating func append<C: Collection>(_ body: C) -> [UInt8] where C.Element == UInt8 {
        precondition(!isFinished, "append after the message ended")
        pending.append(contentsOf: body)
        var out: [UInt8] = []
        let chunk = chunkSize
        guard pending.count > chunk else { return out }
        // Whole packets while more than one packet's worth is held (the last is kept back).
        let full = (pending.count - 1) / chunk
        out.reserveCapacity(full * packetSize)
        for i in 0 ..< full {
            writePacket(pending[(i * chunk) ..< ((i + 1) * chunk)], status: [], into: &out)
        }
        pending.removeFirst(full * chunk)
        return out
    }

    /// Ends the message: the held-back bytes in its last packet, with EOM.
    public mutating func finish() -> [UInt8] {
        precondition(!isFinished, "finish after the message ended")
        isFinished = true
        var out: [UInt8] = []
        writePacket(pending[...], status: .endOfMessage, into: &out)
        pending = []
        return out
    }

    /// Ends a message some of whose packets were sent: the held-back bytes in a last packet with
    /// EOM|IGNORE, so that the server ignores the whole message ([MS-TDS] 2.2.3.1.2).
    public mutating func cancel() -> [UInt8] {
        precondition(!isFinished, "cancel after the message ended")
        isFinished = true
        var out: [UInt8] = []
        writePacket(pending[...], status: [.endOfMessage, .ignore], into: &out)
        pending = []
        return out
    }

    private mutating func writePacket(_ payload: ArraySlice<UInt8>, status: PacketStatus, into out: inout [UInt8]) {
        var st = status
        if packetsEmitted == 0 { st.formUnion(firstStatus) }
        if ignoreAll { st.insert(.ignore) }
        let length = PacketHeader.size + payload.count
        out.append(type.rawValue)
        out.append(st.rawValue)
        out.append(UInt8(truncatingIfNeeded: length >> 8))
        out.append(UInt8(truncatingIfNeeded: length))
        out.append(UInt8(truncatingIfNeeded: spid >> 8))
        out.append(UInt8(truncatingIfNeeded: spid))
        out.append(nextID)
        out.append(0)
        out.append(contentsOf: payload)
        nextID &+= 1
        packetsEmitted += 1
    }
}
