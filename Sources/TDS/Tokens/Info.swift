/// [MS-TDS] 2.2.7.13 INFO — an informational message from the server (token 0xAB), such as
/// 5701 "Changed database context" or a PRINT statement's text.
///
/// Same shape as ERROR; see ``ServerMessage``.
public struct InfoToken: Hashable, Sendable {
    /// The message's fields.
    public var message: ServerMessage
    /// An INFO token carrying `message`.
    public init(_ message: ServerMessage) {
        self.message = message
        self.message.isError = false
    }

    /// Decodes the body after the 0xAB byte. Throws `.truncated` until the declared length is
    /// present, `.invalidLength` if the content does not fit that length.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> InfoToken {
        InfoToken(try ServerMessage.decode(from: &reader, version: version, name: "INFO"))
    }

    /// Writes the token byte 0xAB, the length and the body.
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt8(TokenType.info.rawValue)
        message.encodeBody(into: &writer, version: version)
    }
}
