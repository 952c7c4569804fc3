/// [MS-TDS] 2.2.6.4 LOGIN7 FeatureExt: one feature extension the client asks for.
///
/// On the wire: FeatureId (1 byte), FeatureDataLen (4 bytes, little-endian), FeatureData.
/// The list ends with the terminator 0xFF. Features this module does not interpret are kept raw.
public struct Login7Feature: Hashable, Sendable, CustomStringConvertible, CustomReflectable {
    public var id: UInt8
    public var data: [UInt8]

    public init(id: UInt8, data: [UInt8] = []) {
        self.id = id
        self.data = data
    }

    public static let sessionRecoveryID: UInt8 = 0x01
    public static let fedAuthID: UInt8 = 0x02
    public static let columnEncryptionID: UInt8 = 0x04
    public static let globalTransactionsID: UInt8 = 0x05
    public static let azureSQLSupportID: UInt8 = 0x08
    public static let dataClassificationID: UInt8 = 0x09
    public static let utf8SupportID: UInt8 = 0x0A
    public static let azureSQLDNSCachingID: UInt8 = 0x0B
    public static let terminator: UInt8 = 0xFF

    /// UTF8_SUPPORT (0x0A), no data: the client accepts UTF-8 collations.
    public static let utf8Support = Login7Feature(id: utf8SupportID, data: [])

    /// The [MS-TDS] name of the feature.
    public var name: String {
        switch id {
        case 0x01: return "SESSIONRECOVERY"
        case 0x02: return "FEDAUTH"
        case 0x04: return "COLUMNENCRYPTION"
        case 0x05: return "GLOBALTRANSACTIONS"
        case 0x08: return "AZURESQLSUPPORT"
        case 0x09: return "DATACLASSIFICATION"
        case 0x0A: return "UTF8_SUPPORT"
        case 0x0B: return "AZURESQLDNSCACHING"
        default: return "FEATURE_0x" + String(id, radix: 16, uppercase: true)
        }
    }

    /// The name and the data length; never the data (FEDAUTH data can hold an access token).
    public var description: String { "\(name)(\(data.count) bytes)" }
    /// Shows the id, the name and the data length only, so `dump` never prints a token.
    public var customMirror: Mirror {
        Mirror(self, children: ["id": id, "name": name, "dataLength": data.count], displayStyle: .struct)
    }

    /// Decodes features up to and including the terminator 0xFF.
    ///
    /// - Throws: `.truncated` when the input ends before the terminator or inside a feature.
    public static func decodeList(from reader: inout ByteReader) throws(TDSDecodingError) -> [Login7Feature] {
        var features: [Login7Feature] = []
        while true {
            let id = try reader.readUInt8()
            if id == terminator { return features }
            let length = try reader.readUInt32LE()
            guard Int(length) <= reader.remaining else { throw reader.truncated(Int(length), "FeatureExt") }
            features.append(Login7Feature(id: id, data: try reader.readBytes(Int(length))))
        }
    }

    /// Encodes `features` followed by the terminator 0xFF.
    public static func encodeList(_ features: [Login7Feature], into writer: inout ByteWriter) {
        for f in features {
            writer.writeUInt8(f.id)
            writer.writeUInt32LE(UInt32(truncatingIfNeeded: f.data.count))
            writer.writeBytes(f.data)
        }
        writer.writeUInt8(terminator)
    }
}
