/// [MS-TDS] 2.2.6.3 Federated Authentication Token (FEDAUTH, packet type 0x08).
///
/// Layout: DataLen (4 bytes LE, the length of what follows), FedAuthToken (L_VARBYTE: 4-byte LE
/// length, then the token — for ADAL/MSAL the access token in UTF-16LE), and, when the server
/// sent a NONCEOPT in PRELOGIN, the 32-byte Nonce. The token is a credential: it is held in
/// ``RedactedBytes`` and never printed.
public struct FedAuthTokenMessage: Hashable, Sendable, CustomStringConvertible {
    /// The access token (never printed).
    public var token: RedactedBytes
    /// The 32-byte nonce echoed from the server's PRELOGIN, if any.
    public var nonce: [UInt8]?

    /// A FEDAUTH_TOKEN message with `token` and, when the server asked for one, the `nonce`.
    public init(token: [UInt8], nonce: [UInt8]? = nil) {
        self.token = RedactedBytes(token)
        self.nonce = nonce
    }

    /// An access token string, sent as UTF-16LE.
    public init(accessToken: String, nonce: [UInt8]? = nil) {
        var w = ByteWriter()
        w.writeUTF16LE(accessToken)
        self.init(token: w.bytes, nonce: nonce)
    }

    /// Decodes a FEDAUTH_TOKEN message body.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from bytes: [UInt8], version: TDSVersion = .v7_4) throws(TDSDecodingError) -> FedAuthTokenMessage {
        var reader = ByteReader(bytes)
        return try decode(from: &reader, version: version)
    }

    /// - Throws: `.truncated` when the input is shorter than DataLen or the token length;
    ///   `.invalidLength` when DataLen disagrees with the token (what follows it must be empty
    ///   or a 32-byte nonce).
    public static func decode(from reader: inout ByteReader, version: TDSVersion = .v7_4) throws(TDSDecodingError) -> FedAuthTokenMessage {
        try TDSDecodingError.inContext("FEDAUTH") { () throws(TDSDecodingError) in
            let dataLength = Int(try reader.readUInt32LE())
            var body = try reader.subReader(dataLength)
            let tokenAt = body.offset
            let tokenLength = Int(try body.readUInt32LE())
            guard tokenLength <= body.remaining else {
                throw body.error(.invalidLength, at: tokenAt, "FedAuthToken length \(tokenLength) exceeds DataLen \(dataLength)")
            }
            let token = try body.readBytes(tokenLength)
            switch body.remaining {
            case 0: return FedAuthTokenMessage(token: token)
            case 32: return FedAuthTokenMessage(token: token, nonce: try body.readBytes(32))
            default:
                throw body.error(.invalidLength, "\(body.remaining) byte(s) after the token: expected none or a 32-byte nonce")
            }
        }
    }

    /// The message body: DataLen, TokenLen, the token, then the nonce when present.
    public func encode(version: TDSVersion = .v7_4) -> [UInt8] {
        let t = token.reveal()
        let nonceBytes = nonce.map { Array($0.prefix(32)) + [UInt8](repeating: 0, count: max(0, 32 - $0.count)) } ?? []
        var w = ByteWriter(capacity: 8 + t.count + nonceBytes.count)
        w.writeUInt32LE(UInt32(truncatingIfNeeded: 4 + t.count + nonceBytes.count))
        w.writeUInt32LE(UInt32(truncatingIfNeeded: t.count))
        w.writeBytes(t)
        w.writeBytes(nonceBytes)
        return w.bytes
    }

    public var description: String {
        "FEDAUTH token=\(token)" + (nonce == nil ? "" : " nonce=32 bytes")
    }
}
