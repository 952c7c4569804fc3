/// Any message a client sends ([MS-TDS] 2.2.1 client messages), decoded by its packet type.
///
/// Used to read captures and by a replay server. Packet types whose bodies this module does not
/// interpret (bulk load, pre-TDS7 login, unknown types) are kept raw.
/// PRELOGIN packets that carry TLS handshake records (during the login's TLS negotiation) are
/// recognised by the TLS record header and returned as `.tlsPayload`.
public enum ClientRequest: Hashable, Sendable {
    /// [MS-TDS] 2.2.6.5 PRELOGIN (0x12).
    case prelogin(Prelogin)
    /// TLS records carried in PRELOGIN packets (the bytes are opaque to TDS).
    case tlsPayload([UInt8])
    /// [MS-TDS] 2.2.6.4 LOGIN7 (0x10).
    case login7(Login7)
    /// [MS-TDS] 2.2.6.7 SQL batch (0x01).
    case sqlBatch(SQLBatch)
    /// [MS-TDS] 2.2.6.6 RPC request (0x03).
    case rpc(RPCRequest)
    /// [MS-TDS] 2.2.1.7 ATTENTION (0x06), no body.
    case attention
    /// [MS-TDS] 2.2.6.9 Transaction Manager request (0x0E).
    case transactionManager(TransactionManagerRequest)
    /// [MS-TDS] 2.2.6.8 SSPI message (0x11): the SSPI/GSS-API token, raw.
    case sspi([UInt8])
    /// [MS-TDS] 2.2.6.3 FEDAUTH_TOKEN (0x08).
    case fedAuthToken(FedAuthTokenMessage)
    /// BULK_LOAD (0x07), PRE_TDS7_LOGIN (0x02) or an unknown type.
    case raw(type: PacketType, payload: [UInt8])

    /// Whether `payload` starts like a TLS record (content type 20–23, major version 3).
    public static func looksLikeTLSRecord(_ payload: [UInt8]) -> Bool {
        payload.count >= 5 && (0x14...0x17).contains(payload[0]) && payload[1] == 0x03
    }

    /// Decodes a whole client message (for example a ``TDSMessage`` from ``PacketAssembler``).
    ///
    /// - Parameters:
    ///   - version: the connection's TDS version (decides ALL_HEADERS and TYPE_INFO rules).
    ///   - allHeaders: overrides the ALL_HEADERS rule for SQL_BATCH, RPC and TRANSACTION_MANAGER.
    /// - Throws: the message decoder's `TDSDecodingError`.
    public static func decode(type: PacketType, payload: [UInt8], version: TDSVersion,
                              allHeaders: Bool? = nil) throws(TDSDecodingError) -> ClientRequest {
        switch type {
        case .prelogin:
            if looksLikeTLSRecord(payload) { return .tlsPayload(payload) }
            return .prelogin(try Prelogin.decode(from: payload, version: version))
        case .login7:
            return .login7(try Login7.decode(from: payload, version: version))
        case .sqlBatch:
            return .sqlBatch(try SQLBatch.decode(from: payload, version: version, allHeaders: allHeaders))
        case .rpc:
            return .rpc(try RPCRequest.decode(from: payload, version: version, allHeaders: allHeaders))
        case .attention:
            _ = try Attention.decode(from: payload, version: version)
            return .attention
        case .transactionManager:
            return .transactionManager(try TransactionManagerRequest.decode(from: payload, version: version, allHeaders: allHeaders))
        case .sspi:
            return .sspi(payload)
        case .federatedAuthToken:
            return .fedAuthToken(try FedAuthTokenMessage.decode(from: payload, version: version))
        default:
            return .raw(type: type, payload: payload)
        }
    }

    /// Decodes a whole client message by its packet type (see ``decode(type:payload:version:allHeaders:)``).
    public static func decode(_ message: TDSMessage, version: TDSVersion, allHeaders: Bool? = nil) throws(TDSDecodingError) -> ClientRequest {
        try decode(type: message.type, payload: message.payload, version: version, allHeaders: allHeaders)
    }

    /// The packet type this request travels in.
    public var packetType: PacketType {
        switch self {
        case .prelogin, .tlsPayload: return .prelogin
        case .login7: return .login7
        case .sqlBatch: return .sqlBatch
        case .rpc: return .rpc
        case .attention: return .attention
        case .transactionManager: return .transactionManager
        case .sspi: return .sspi
        case .fedAuthToken: return .federatedAuthToken
        case .raw(let type, _): return type
        }
    }

    /// Encodes the message body for `version`.
    ///
    /// - Throws: `.invalidValue` when an RPC parameter value does not fit its TYPE_INFO.
    public func encode(version: TDSVersion) throws(TDSDecodingError) -> [UInt8] {
        switch self {
        case .prelogin(let m): return m.encode(version: version)
        case .tlsPayload(let bytes): return bytes
        case .login7(let m): return m.encode(version: version)
        case .sqlBatch(let m): return m.encode(version: version)
        case .rpc(let m): return try m.encode(version: version)
        case .attention: return Attention().encode(version: version)
        case .transactionManager(let m): return m.encode(version: version)
        case .sspi(let bytes): return bytes
        case .fedAuthToken(let m): return m.encode(version: version)
        case .raw(_, let payload): return payload
        }
    }

    /// Encodes the message and splits it into packets of `packetSize` bytes.
    public func packets(version: TDSVersion, packetSize: Int, status: PacketStatus = []) throws(TDSDecodingError) -> [UInt8] {
        Packet.encode(message: try encode(version: version), type: packetType, packetSize: packetSize, status: status)
    }
}

extension AllHeaders {
    /// Whether `body` (a SQL_BATCH, RPC or TRANSACTION_MANAGER body) plausibly starts with
    /// ALL_HEADERS: a TotalLength that fits, filled exactly by well-formed headers of types 1–3.
    /// For captures whose TDS version is unknown (a connection recorded mid-stream).
    public static func isLikelyPresent(in body: [UInt8]) -> Bool {
        var r = ByteReader(body)
        guard let total = try? r.readUInt32LE(), total >= 4 + 6, Int(total) <= body.count else { return false }
        var offset = 4
        while offset < Int(total) {
            var h = ByteReader(body, start: offset, end: Int(total))
            guard let length = try? h.readUInt32LE(), let type = try? h.readUInt16LE(),
                  length >= 6, Int(length) <= Int(total) - offset, (1...3).contains(type) else { return false }
            if type == transactionDescriptorType && length != 18 { return false }
            offset += Int(length)
        }
        return offset == Int(total)
    }
}
