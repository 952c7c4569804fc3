/// [MS-TDS] 2.2.6.4 LOGIN7 FeatureExt: one feature extension the client asks for.
///
/// On the wire: FeatureId (1 byte), FeatureDataLen (4 bytes, little-endian), FeatureData.
/// The list ends with the terminator 0xFF. Features this module does not interpret are kept raw.
public struct Login7Feature: Hashable, Sendable, CustomStringConvertible, CustomReflectable {
    /// FeatureId (one of the `…ID` constants below, or any other value kept as it is).
    public var id: UInt8
    /// FeatureData (its length is sent as FeatureDataLen).
    public var data: [UInt8]

    /// A feature extension from its FeatureId and FeatureData.
    public init(id: UInt8, data: [UInt8] = []) {
        self.id = id
        self.data = data
    }

    /// SESSIONRECOVERY (0x01): connection resiliency.
    public static let sessionRecoveryID: UInt8 = 0x01
    /// FEDAUTH (0x02): federated authentication (see ``FedAuth``).
    public static let fedAuthID: UInt8 = 0x02
    /// COLUMNENCRYPTION (0x04): Always Encrypted.
    public static let columnEncryptionID: UInt8 = 0x04
    /// GLOBALTRANSACTIONS (0x05).
    public static let globalTransactionsID: UInt8 = 0x05
    /// AZURESQLSUPPORT (0x08).
    public static let azureSQLSupportID: UInt8 = 0x08
    /// DATACLASSIFICATION (0x09): the server may send DATACLASSIFICATION tokens.
    public static let dataClassificationID: UInt8 = 0x09
    /// UTF8_SUPPORT (0x0A): the client accepts UTF-8 collations.
    public static let utf8SupportID: UInt8 = 0x0A
    /// AZURESQLDNSCACHING (0x0B).
    public static let azureSQLDNSCachingID: UInt8 = 0x0B
    /// TERMINATOR (0xFF): ends the FeatureExt list.
    public static let terminator: UInt8 = 0xFF

    /// UTF8_SUPPORT (0x0A), no data: the client accepts UTF-8 collations.
    public static let utf8Support = Login7Feature(id: utf8SupportID, data: [])

    /// FEDAUTH (0x02) for the security-token library: the caller already holds an access token.
    ///
    /// FeatureData: Options (bFedAuthLibrary `0x01` shifted left by one, fFedAuthEcho in bit 0 — it
    /// MUST equal the server's PRELOGIN FEDAUTHREQUIRED answer, or the server closes the
    /// connection), FedAuthToken (4-byte little-endian length, then the token, UTF-16LE for an access
    /// token), then the 32-byte Nonce when the server sent NONCEOPT in PRELOGIN.
    /// ([MS-TDS] 2.2.6.4 FEDAUTH FeatureExt.)
    public static func fedAuthSecurityToken(_ token: [UInt8], echo: Bool, nonce: [UInt8]? = nil) -> Login7Feature {
        var w = ByteWriter(capacity: 5 + token.count + 32)
        w.writeUInt8(FedAuth.Library.securityToken.rawValue << 1 | (echo ? 1 : 0))
        w.writeUInt32LE(UInt32(truncatingIfNeeded: token.count))
        w.writeBytes(token)
        if let nonce { w.writeBytes(nonce.prefix(32)); w.writeBytes([UInt8](repeating: 0, count: max(0, 32 - nonce.count))) }
        return Login7Feature(id: fedAuthID, data: w.bytes)
    }

    /// FEDAUTH with an access token string, sent as UTF-16LE.
    public static func fedAuthAccessToken(_ accessToken: String, echo: Bool, nonce: [UInt8]? = nil) -> Login7Feature {
        var w = ByteWriter(capacity: accessToken.utf16.count * 2)
        w.writeUTF16LE(accessToken)
        return fedAuthSecurityToken(w.bytes, echo: echo, nonce: nonce)
    }

    /// FEDAUTH (0x02) for the ADAL/MSAL library: the client gets the token after the server's
    /// FEDAUTHINFO and sends it in a FEDAUTH token message (packet type 0x08).
    ///
    /// FeatureData: Options (bFedAuthLibrary `0x02` shifted left by one, fFedAuthEcho in bit 0), then
    /// bWorkflow (0x01 user and password, also sent for a service principal; 0x02 integrated;
    /// 0x03 interactive and the identity-based workflows). ([MS-TDS] 2.2.6.4 FEDAUTH FeatureExt.)
    public static func fedAuthMSAL(workflow: UInt8, echo: Bool) -> Login7Feature {
        Login7Feature(id: fedAuthID, data: [FedAuth.Library.adal.rawValue << 1 | (echo ? 1 : 0), workflow])
    }

    /// The [MS-TDS] name of the feature (``FeatureID/name``), or `FEATURE_0xN` for another id.
    public var name: String {
        let known = FeatureID(rawValue: id).name
        return id == 0xFF || known.hasPrefix("0x") ? "FEATURE_0x" + String(id, radix: 16, uppercase: true) : known
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

/// The FEDAUTH feature's data ([MS-TDS] 2.2.6.4): which library, the echo bit, and for the
/// security-token library the token (kept in ``RedactedBytes``: never printed) and the nonce.
public struct FedAuth: Hashable, Sendable, CustomStringConvertible {
    /// bFedAuthLibrary (7 bits).
    public struct Library: RawRepresentable, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Live ID compact token (0x00), retired by Microsoft.
        public static let liveIDCompactToken = Library(rawValue: 0x00)
        /// The client brings a token (for example an Entra ID access token).
        public static let securityToken = Library(rawValue: 0x01)
        /// The client gets the token after FEDAUTHINFO (ADAL/MSAL workflows).
        public static let adal = Library(rawValue: 0x02)
    }

    /// bFedAuthLibrary.
    public var library: Library
    /// fFedAuthEcho: the client's copy of the server's PRELOGIN FEDAUTHREQUIRED answer.
    public var echo: Bool
    /// FedAuthToken, for the security-token library.
    public var token: RedactedBytes?
    /// The 32-byte nonce, when present.
    public var nonce: [UInt8]?
    /// bWorkflow, for the ADAL library.
    public var workflow: UInt8?

    /// The FEDAUTH data from its parts; `token` is kept redacted.
    public init(library: Library, echo: Bool, token: [UInt8]? = nil, nonce: [UInt8]? = nil, workflow: UInt8? = nil) {
        self.library = library
        self.echo = echo
        self.token = token.map(RedactedBytes.init)
        self.nonce = nonce
        self.workflow = workflow
    }

    /// The access token as text (UTF-16LE), for the security-token library.
    public var accessToken: String? {
        guard let bytes = token?.reveal(), bytes.count % 2 == 0 else { return nil }
        var r = ByteReader(bytes)
        return try? r.readUTF16LE(byteCount: bytes.count)
    }

    /// Decodes FEDAUTH FeatureData.
    /// - Throws: `.truncated` for data shorter than its lengths; `.invalidLength` when bytes follow
    ///   the token other than a 32-byte nonce.
    public static func decode(_ data: [UInt8]) throws(TDSDecodingError) -> FedAuth {
        try TDSDecodingError.inContext("FEDAUTH") { () throws(TDSDecodingError) in
            var r = ByteReader(data)
            let options = try r.readUInt8()
            var result = FedAuth(library: Library(rawValue: options >> 1), echo: options & 1 != 0)
            switch result.library {
            case .securityToken:
                let length = Int(try r.readUInt32LE())
                guard length <= r.remaining else { throw r.truncated(length, "FedAuthToken") }
                result.token = RedactedBytes(try r.readBytes(length))
                switch r.remaining {
                case 0: break
                case 32: result.nonce = try r.readBytes(32)
                default: throw r.error(.invalidLength, "\(r.remaining) byte(s) after FedAuthToken: expected none or a 32-byte nonce")
                }
            case .adal:
                result.workflow = try r.readUInt8()
            default:
                break
            }
            return result
        }
    }

    public var description: String {
        "FEDAUTH library=0x\(String(library.rawValue, radix: 16)) echo=\(echo)" + (token.map { " token=\($0)" } ?? "")
    }
}
