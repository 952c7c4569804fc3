/// A FeatureId of LOGIN7 FeatureExt and FEATUREEXTACK ([MS-TDS] 2.2.6.4, 2.2.7.11).
public struct FeatureID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// SESSIONRECOVERY (0x01): connection resiliency.
    public static let sessionRecovery = FeatureID(rawValue: 0x01)
    /// FEDAUTH (0x02): federated authentication.
    public static let fedAuth = FeatureID(rawValue: 0x02)
    /// COLUMNENCRYPTION (0x04): Always Encrypted.
    public static let columnEncryption = FeatureID(rawValue: 0x04)
    /// GLOBALTRANSACTIONS (0x05).
    public static let globalTransactions = FeatureID(rawValue: 0x05)
    /// AZURESQLSUPPORT (0x08).
    public static let azureSQLSupport = FeatureID(rawValue: 0x08)
    /// DATACLASSIFICATION (0x09).
    public static let dataClassification = FeatureID(rawValue: 0x09)
    /// UTF8_SUPPORT (0x0A).
    public static let utf8Support = FeatureID(rawValue: 0x0A)
    /// AZURESQLDNSCACHING (0x0B).
    public static let azureSQLDNSCaching = FeatureID(rawValue: 0x0B)
    /// JSONSUPPORT (0x0D): the json data type.
    public static let jsonSupport = FeatureID(rawValue: 0x0D)
    /// VECTORSUPPORT (0x0E): the vector data type.
    public static let vectorSupport = FeatureID(rawValue: 0x0E)
    /// FEATUREEXT_TERMINATOR.
    public static let terminator = FeatureID(rawValue: 0xFF)

    /// The [MS-TDS] name (`SESSIONRECOVERY`, `FEDAUTH`…), or the hex value for another id.
    public var name: String {
        switch rawValue {
        case 0x01: return "SESSIONRECOVERY"
        case 0x02: return "FEDAUTH"
        case 0x04: return "COLUMNENCRYPTION"
        case 0x05: return "GLOBALTRANSACTIONS"
        case 0x08: return "AZURESQLSUPPORT"
        case 0x09: return "DATACLASSIFICATION"
        case 0x0A: return "UTF8_SUPPORT"
        case 0x0B: return "AZURESQLDNSCACHING"
        case 0x0D: return "JSONSUPPORT"
        case 0x0E: return "VECTORSUPPORT"
        case 0xFF: return "TERMINATOR"
        default: return "0x" + TokenType.hex(rawValue)
        }
    }
    public var description: String { name }
}

/// [MS-TDS] 2.2.7.11 FEATUREEXTACK — the server's acknowledgement of LOGIN7 feature
/// extensions (token 0xAE).
///
/// Wire shape after the token byte (no token length): repeated FeatureId BYTE,
/// FeatureAckDataLen DWORD, FeatureAckData; ended by FeatureId 0xFF (TERMINATOR).
public struct FeatureExtAck: Hashable, Sendable {
    /// One acknowledged feature: FeatureId and FeatureAckData.
    public struct Feature: Hashable, Sendable {
        /// FeatureId.
        public var id: FeatureID
        /// FeatureAckData (its length was FeatureAckDataLen).
        public var data: [UInt8]
        /// A feature from its id and data.
        public init(id: FeatureID, data: [UInt8]) { self.id = id; self.data = data }
    }

    /// The acknowledged features in wire order (the terminator is not included).
    public var features: [Feature]
    /// An acknowledgement of `features`, in wire order.
    public init(features: [Feature]) { self.features = features }

    /// The acknowledgement data for `id`, if acknowledged.
    public func data(for id: FeatureID) -> [UInt8]? { features.first { $0.id == id }?.data }

    /// COLUMNENCRYPTION acknowledged: COLMETADATA then carries a CEK table.
    public var columnEncryptionVersion: UInt8? { data(for: .columnEncryption)?.first }
    /// DATACLASSIFICATION acknowledged: its version (1 or 2; 2 adds sensitivity ranks).
    public var dataClassificationVersion: UInt8? { data(for: .dataClassification)?.first }
    /// UTF8_SUPPORT acknowledged and enabled.
    public var utf8Supported: Bool { data(for: .utf8Support)?.first.map { $0 != 0 } ?? false }

    /// Checks the acknowledgement against the features the client asked for in LOGIN7: a server
    /// MUST NOT acknowledge a feature the client did not request ([MS-TDS] 2.2.7.11).
    /// - Throws: `.unexpectedToken` naming the first unrequested feature.
    public func validate(requested: Set<FeatureID>) throws(TDSDecodingError) {
        if let extra = features.first(where: { !requested.contains($0.id) }) {
            throw TDSDecodingError(.unexpectedToken, offset: 0,
                                   "FEATUREEXTACK acknowledges \(extra.id), which the client did not request")
        }
    }

    /// Decodes the token's data after its type byte, up to and including the terminator.
    /// - Throws: ``TDSDecodingError`` naming FEATUREEXTACK, with the offset, when the bytes end
    ///   early (a FeatureAckDataLen longer than what is left, a missing terminator).
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> FeatureExtAck {
        var progress = FeatureExtAckProgress()
        guard let token = try progress.advance(&reader) else {
            throw (progress.truncation ?? reader.truncated(1)).inToken("FEATUREEXTACK")
        }
        return token
    }

    /// Writes the token byte 0xAE, the features and the terminator.
    public func encode(into writer: inout ByteWriter) {
        writer.writeUInt8(TokenType.featureExtAck.rawValue)
        for f in features {
            writer.writeUInt8(f.id.rawValue)
            writer.writeUInt32LE(UInt32(truncatingIfNeeded: f.data.count))
            writer.writeBytes(f.data)
        }
        writer.writeUInt8(FeatureID.terminator.rawValue)
    }
}

/// A FEATUREEXTACK being decoded as its bytes arrive, one feature at a time (each kept once
/// read), so a token that spans many packets is decoded once, in linear time.
struct FeatureExtAckProgress: Sendable {
    private var features: [FeatureExtAck.Feature] = []
    /// Where the last attempt ran out of bytes.
    private(set) var truncation: TDSDecodingError?

    init() {}

    /// Reads the features `reader` holds; the token once its terminator is read, nil when more
    /// bytes are needed (`reader` is left after the last whole feature).
    mutating func advance(_ reader: inout ByteReader) throws(TDSDecodingError) -> FeatureExtAck? {
        while true {
            let start = reader.offset
            do throws(TDSDecodingError) {
                let id = FeatureID(rawValue: try reader.readUInt8())
                if id == .terminator { return FeatureExtAck(features: features) }
                let len = Int(try reader.readUInt32LE())
                features.append(FeatureExtAck.Feature(id: id, data: try reader.readBytes(len)))
            } catch {
                guard error.code == .truncated else { throw error.inToken("FEATUREEXTACK") }
                reader.offset = start
                truncation = error
                return nil
            }
        }
    }
}
