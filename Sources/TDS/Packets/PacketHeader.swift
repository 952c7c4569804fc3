/// [MS-TDS] 2.2.3.1.2 Status: the status bits of a packet header.
public struct PacketStatus: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01 EOM: the last packet of the message.
    public static let endOfMessage = PacketStatus(rawValue: 0x01)
    /// 0x02 IGNORE: the sender asks the receiver to ignore this message (client to server only).
    public static let ignore = PacketStatus(rawValue: 0x02)
    /// 0x08 RESETCONNECTION: reset the connection before processing this request (first packet only).
    public static let resetConnection = PacketStatus(rawValue: 0x08)
    /// 0x10 RESETCONNECTIONSKIPTRAN: reset the connection but keep the transaction state.
    public static let resetConnectionSkipTransaction = PacketStatus(rawValue: 0x10)

    public var description: String {
        var names: [String] = []
        if contains(.endOfMessage) { names.append("EOM") }
        if contains(.ignore) { names.append("IGNORE") }
        if contains(.resetConnection) { names.append("RESETCONNECTION") }
        if contains(.resetConnectionSkipTransaction) { names.append("RESETCONNECTIONSKIPTRAN") }
        let known: UInt8 = 0x01 | 0x02 | 0x08 | 0x10
        if rawValue & ~known != 0 { names.append("0x" + String(rawValue & ~known, radix: 16, uppercase: true)) }
        return "[" + names.joined(separator: ",") + "]"
    }
}

/// [MS-TDS] 2.2.3.1 Packet Header: the 8 bytes that start every TDS packet.
///
/// Layout: Type (1 byte), Status (1 byte), Length (2 bytes, **big-endian**, the whole packet
/// including these 8 bytes), SPID (2 bytes, big-endian), PacketID (1 byte, incremented mod 256
/// per packet of a message), Window (1 byte, should be 0).
public struct PacketHeader: Hashable, Sendable, CustomStringConvertible {
    /// The size of a packet header in bytes.
    public static let size = 8

    /// The message type.
    public var type: PacketType
    /// The status bits (EOM on a message's last packet).
    public var status: PacketStatus
    /// The length of the whole packet in bytes, header included (8...65535).
    public var length: UInt16
    /// The server process id (the server fills it in; clients send 0).
    public var spid: UInt16
    /// The packet's number within its message, mod 256 (clients start at 1).
    public var packetID: UInt8
    /// Unused; should be 0.
    public var window: UInt8

    /// A header from its fields.
    public init(type: PacketType, status: PacketStatus = .endOfMessage, length: UInt16,
                spid: UInt16 = 0, packetID: UInt8 = 1, window: UInt8 = 0) {
        self.type = type
        self.status = status
        self.length = length
        self.spid = spid
        self.packetID = packetID
        self.window = window
    }

    /// The payload length in bytes (`length - 8`, never negative).
    public var payloadLength: Int { max(Int(length) - PacketHeader.size, 0) }

    /// Decodes 8 header bytes.
    ///
    /// - Throws: `.truncated` when fewer than 8 bytes remain; `.invalidPacket` (at the header's
    ///   offset) when Length is under 8.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> PacketHeader {
        let start = reader.absoluteOffset
        do throws(TDSDecodingError) {
            try reader.require(PacketHeader.size)
            let type = PacketType(rawValue: try reader.readUInt8())
            let status = PacketStatus(rawValue: try reader.readUInt8())
            let length = try reader.readUInt16BE()
            let spid = try reader.readUInt16BE()
            let packetID = try reader.readUInt8()
            let window = try reader.readUInt8()
            guard Int(length) >= PacketHeader.size else {
                throw TDSDecodingError(.invalidPacket, offset: start, context: "PacketHeader",
                                       "packet length \(length) is under the 8-byte header")
            }
            return PacketHeader(type: type, status: status, length: length, spid: spid,
                                packetID: packetID, window: window)
        } catch {
            throw error.withContext("PacketHeader")
        }
    }

    /// Decodes the 8 header bytes at the start of `bytes`.
    public static func decode(from bytes: [UInt8]) throws(TDSDecodingError) -> PacketHeader {
        var reader = ByteReader(bytes)
        return try decode(from: &reader)
    }

    /// Appends the 8 header bytes (length and SPID big-endian).
    public func encode(into writer: inout ByteWriter) {
        writer.writeUInt8(type.rawValue)
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16BE(length)
        writer.writeUInt16BE(spid)
        writer.writeUInt8(packetID)
        writer.writeUInt8(window)
    }

    /// The 8 encoded bytes.
    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: 8)
        encode(into: &w)
        return w.bytes
    }

    public var description: String {
        "\(type) status=\(status) length=\(length) spid=\(spid) packetID=\(packetID)"
    }
}
