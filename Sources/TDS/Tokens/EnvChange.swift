/// The Type byte of an ENVCHANGE token ([MS-TDS] 2.2.7.9).
public struct EnvChangeType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 1: the current database changed (USE, login).
    public static let database = EnvChangeType(rawValue: 1)
    /// 2: the session language changed.
    public static let language = EnvChangeType(rawValue: 2)
    /// 3: the character set changed (TDS 7.0 servers).
    public static let charset = EnvChangeType(rawValue: 3)
    /// 4: the packet size the server uses from now on (text, in bytes).
    public static let packetSize = EnvChangeType(rawValue: 4)
    /// Unicode data sorting local id.
    public static let unicodeSortLocale = EnvChangeType(rawValue: 5)
    /// Unicode data sorting comparison flags.
    public static let unicodeSortFlags = EnvChangeType(rawValue: 6)
    /// 7: the session's default collation (5 bytes).
    public static let sqlCollation = EnvChangeType(rawValue: 7)
    /// 8: a transaction began; NewValue is its 8-byte descriptor.
    public static let beginTransaction = EnvChangeType(rawValue: 8)
    /// 9: the transaction committed; OldValue is its descriptor.
    public static let commitTransaction = EnvChangeType(rawValue: 9)
    /// 10: the transaction rolled back; OldValue is its descriptor.
    public static let rollbackTransaction = EnvChangeType(rawValue: 10)
    /// 11: enlisted in a distributed (DTC) transaction.
    public static let enlistDTCTransaction = EnvChangeType(rawValue: 11)
    /// 12: defected from a distributed transaction.
    public static let defectTransaction = EnvChangeType(rawValue: 12)
    /// Real-time log shipping / database mirroring partner.
    public static let mirrorPartner = EnvChangeType(rawValue: 13)
    /// 15: the transaction was promoted to a distributed one (DTC token).
    public static let promoteTransaction = EnvChangeType(rawValue: 15)
    /// 16: the transaction manager's address.
    public static let transactionManagerAddress = EnvChangeType(rawValue: 16)
    /// 17: the transaction ended (for example a batch-level rollback).
    public static let transactionEnded = EnvChangeType(rawValue: 17)
    /// RESETCONNECTION / RESETCONNECTIONSKIPTRAN completion acknowledgement.
    public static let resetConnectionAck = EnvChangeType(rawValue: 18)
    /// The user instance name sent back after a login to a user instance.
    public static let userInstance = EnvChangeType(rawValue: 19)
    /// 20: redirect the client to another server (Azure SQL).
    public static let routing = EnvChangeType(rawValue: 20)

    /// The type's name as [MS-TDS] lists it (`Database`, `PacketSize`…), or `0xNN`.
    public var name: String {
        switch rawValue {
        case 1: return "Database"
        case 2: return "Language"
        case 3: return "Character set"
        case 4: return "Packet size"
        case 5: return "Unicode data sorting local id"
        case 6: return "Unicode data sorting comparison flags"
        case 7: return "SQL Collation"
        case 8: return "Begin Transaction"
        case 9: return "Commit Transaction"
        case 10: return "Rollback Transaction"
        case 11: return "Enlist DTC Transaction"
        case 12: return "Defect Transaction"
        case 13: return "Real Time Log Shipping"
        case 15: return "Promote Transaction"
        case 16: return "Transaction Manager Address"
        case 17: return "Transaction ended"
        case 18: return "RESETCONNECTION/RESETCONNECTIONSKIPTRAN Completion Acknowledgement"
        case 19: return "User Instance"
        case 20: return "Routing"
        default: return "type \(rawValue)"
        }
    }
    public var description: String { name }

    /// How this type's NewValue and OldValue are encoded.
    enum Shape { case text, bytes, longBytesNew, routing, unknown }
    var shape: Shape {
        switch rawValue {
        case 1...6, 13, 19: return .text
        case 7...12, 16, 17, 18: return .bytes
        case 15: return .longBytesNew
        case 20: return .routing
        default: return .unknown
        }
    }
}

/// [MS-TDS] 2.2.7.9 ENVCHANGE — a change of an environment setting (token 0xE3).
///
/// Wire shape after the token byte: Length USHORT, Type BYTE, NewValue, OldValue, where the
/// value encodings depend on the type: B_VARCHAR for database, language, charset, packet size,
/// Unicode sort locale/flags, mirror partner and user instance; B_VARBYTE for SQL collation
/// (5 bytes) and transaction descriptors (8 bytes); L_VARBYTE for the promote-transaction DTC
/// token; for routing a USHORT-length structure (Protocol BYTE, ProtocolProperty USHORT port,
/// AlternateServer US_VARCHAR) and a 2-byte zero OldValue. An empty value (a 0x00 length) is
/// `.text("")` or `.bytes([])`. A type [MS-TDS] does not define keeps its raw body as
/// `newValue = .bytes(body)`, `oldValue = .bytes([])`.
public struct EnvChange: Hashable, Sendable {
    /// The routing target sent in a type 20 ENVCHANGE (Azure SQL redirection).
    public struct Routing: Hashable, Sendable {
        /// 0 = TCP.
        public var `protocol`: UInt8
        /// The TCP port.
        public var port: UInt16
        /// The server to connect to instead.
        public var server: String
        /// A routing target (protocol 0 = TCP).
        public init(protocol: UInt8 = 0, port: UInt16, server: String) { self.protocol = `protocol`; self.port = port; self.server = server }
    }

    /// One NewValue or OldValue.
    public enum Value: Hashable, Sendable {
        /// A B_VARCHAR value (database, language, packet size…).
        case text(String)
        /// A B_VARBYTE value (collation, transaction descriptor…).
        case bytes([UInt8])
        /// A routing value (type 20); nil when empty.
        case routing(Routing?)

        /// The text of a ``text(_:)`` value.
        public var text: String? { if case .text(let s) = self { return s }; return nil }
        /// The bytes of a ``bytes(_:)`` value.
        public var bytes: [UInt8]? { if case .bytes(let b) = self { return b }; return nil }
    }

    /// What changed.
    public var type: EnvChangeType
    /// The new value.
    public var newValue: Value
    /// The old value (often empty).
    public var oldValue: Value

    /// An ENVCHANGE of `type` from `oldValue` to `newValue`.
    public init(type: EnvChangeType, newValue: Value, oldValue: Value) {
        self.type = type; self.newValue = newValue; self.oldValue = oldValue
    }

    /// For `.packetSize`: the new packet size in bytes, parsed from its decimal text.
    public var newPacketSize: Int? {
        guard type == .packetSize, let t = newValue.text else { return nil }
        return Int(t)
    }

    /// For `.database`, `.language`, `.charset` and other text types: the new value.
    public var newText: String? { newValue.text }

    /// For `.sqlCollation`: the new collation (nil when absent or not 5 bytes).
    public var newCollation: Collation? {
        guard type == .sqlCollation, let b = newValue.bytes, b.count == 5 else { return nil }
        var r = ByteReader(b)
        return try? Collation.decode(from: &r)
    }

    /// For `.routing`: the routing target.
    public var routing: Routing? { if case .routing(let r) = newValue { return r }; return nil }

    /// For begin/commit/rollback/… transaction types: the 8-byte transaction descriptor
    /// (NewValue for begin, OldValue for commit, rollback, enlist and transaction ended).
    public var transactionDescriptor: [UInt8]? {
        switch type.rawValue {
        case 8, 12: return newValue.bytes
        case 9, 10, 11, 17: return oldValue.bytes
        default: return nil
        }
    }

    /// Decodes the body after the 0xE3 byte. Throws `.truncated` until the declared length is
    /// present, `.invalidLength` if the values do not fit it.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> EnvChange {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody16()
            return try decodeBounded("ENVCHANGE") { () throws(TDSDecodingError) -> EnvChange in
                let type = EnvChangeType(rawValue: try body.readUInt8())
                let result: EnvChange
                switch type.shape {
                case .text:
                    result = EnvChange(type: type, newValue: .text(try body.readBVarChar()), oldValue: .text(try body.readBVarChar()))
                case .bytes:
                    result = EnvChange(type: type, newValue: .bytes(try body.readBVarByte()), oldValue: .bytes(try body.readBVarByte()))
                case .longBytesNew:
                    let n = Int(try body.readUInt32LE())
                    let new = try body.readBytes(n)
                    result = EnvChange(type: type, newValue: .bytes(new), oldValue: .bytes(try body.readBVarByte()))
                case .routing:
                    let len = Int(try body.readUInt16LE())
                    var route = try body.subReader(len)
                    var routing: Routing?
                    if len > 0 {
                        let proto = try route.readUInt8()
                        let port = try route.readUInt16LE()
                        let server = try route.readUSVarChar()
                        try route.requireConsumed("ENVCHANGE")
                        routing = Routing(protocol: proto, port: port, server: server)
                    }
                    // OldValue is 0x0000 from SQL Server; some encoders (r2dbc-mssql) end the
                    // token after NewValue: a declared length that stops there means no OldValue.
                    let oldLen = body.isAtEnd ? 0 : Int(try body.readUInt16LE())
                    var old = try body.subReader(oldLen)
                    var oldRouting: Routing?
                    if oldLen > 0 {
                        let proto = try old.readUInt8()
                        let port = try old.readUInt16LE()
                        let server = try old.readUSVarChar()
                        oldRouting = Routing(protocol: proto, port: port, server: server)
                    }
                    result = EnvChange(type: type, newValue: .routing(routing), oldValue: .routing(oldRouting))
                case .unknown:
                    result = EnvChange(type: type, newValue: .bytes(try body.readBytes(body.remaining)), oldValue: .bytes([]))
                }
                try body.requireConsumed("ENVCHANGE")
                return result
            }
        } catch { throw error.inToken("ENVCHANGE") }
    }

    /// Writes the token byte 0xE3, the length and the body.
    public func encode(into writer: inout ByteWriter) {
        var body = ByteWriter()
        body.writeUInt8(type.rawValue)
        func put(_ v: Value, long: Bool) {
            switch v {
            case .text(let s): body.writeBVarChar(s)
            case .bytes(let b):
                if long { body.writeUInt32LE(UInt32(truncatingIfNeeded: b.count)) } else { body.writeUInt8(UInt8(truncatingIfNeeded: b.count)) }
                body.writeBytes(b)
            case .routing(let r):
                guard let r else { body.writeUInt16LE(0); return }
                var inner = ByteWriter()
                inner.writeUInt8(r.protocol)
                inner.writeUInt16LE(r.port)
                inner.writeUSVarChar(r.server)
                body.writeUInt16LE(UInt16(truncatingIfNeeded: inner.count))
                body.writeBytes(inner.bytes)
            }
        }
        if type.shape == .unknown, case .bytes(let raw) = newValue {
            body.writeBytes(raw)
        } else {
            put(newValue, long: type.shape == .longBytesNew)
            put(oldValue, long: false)
        }
        writer.writeUInt8(TokenType.envChange.rawValue)
        writer.writeUInt16LE(UInt16(truncatingIfNeeded: body.count))
        writer.writeBytes(body.bytes)
    }
}
