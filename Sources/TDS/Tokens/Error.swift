/// The body shared by ERROR ([MS-TDS] 2.2.7.10) and INFO ([MS-TDS] 2.2.7.13).
///
/// Wire shape after the token byte: Length USHORT, Number LONG, State BYTE, Class BYTE,
/// MsgText US_VARCHAR, ServerName B_VARCHAR, ProcName B_VARCHAR, LineNumber (USHORT before
/// TDS 7.2, LONG from 7.2; when decoding, the token length decides which one is present).
public struct ServerMessage: Hashable, Sendable, CustomStringConvertible {
    /// The error number (e.g. 208 "Invalid object name", 5701 "Changed database context").
    public var number: Int32
    /// The error state (the server's locator for the exact cause).
    public var state: UInt8
    /// The severity, [MS-TDS] "Class": 0–10 informational, 11–16 user errors, 17+ fatal.
    public var severity: UInt8
    /// The message text.
    public var message: String
    /// The name of the server that sent it.
    public var serverName: String
    /// The stored procedure or RPC name, empty when none.
    public var procedureName: String
    /// The line number in the batch or procedure (1-based; 0 when unknown).
    public var lineNumber: Int32
    /// True when it came in an ERROR token (0xAA), false for an INFO token (0xAB).
    public var isError: Bool

    /// A message from its fields (`isError`: sent as ERROR rather than INFO).
    public init(number: Int32, state: UInt8, severity: UInt8, message: String,
                serverName: String = "", procedureName: String = "", lineNumber: Int32 = 0, isError: Bool = false) {
        self.number = number; self.state = state; self.severity = severity; self.message = message
        self.serverName = serverName; self.procedureName = procedureName; self.lineNumber = lineNumber
        self.isError = isError
    }

    /// sqlcmd's reference: `Msg N, Level L, State S, [Procedure P, ]Line X`.
    public var reference: String {
        var text = "Msg \(number), Level \(severity), State \(state), "
        if !procedureName.isEmpty { text += "Procedure \(procedureName), " }
        return text + "Line \(lineNumber)"
    }

    /// sqlcmd's form: ``reference``, then the text on the next line.
    public var description: String { reference + "\n" + message }

    static func decode(from reader: inout ByteReader, version: TDSVersion, name: String) throws(TDSDecodingError) -> ServerMessage {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody16()
            return try decodeBounded(name) { () throws(TDSDecodingError) -> ServerMessage in
                let number = try body.readInt32LE()
                let state = try body.readUInt8()
                let severity = try body.readUInt8()
                let message = try body.readUSVarChar()
                let server = try body.readBVarChar()
                let proc = try body.readBVarChar()
                // The token length tells the LineNumber size apart, so messages a 7.0/7.1 server
                // sends before its LOGINACK decode even when the client asked for 7.2+.
                let line: Int32
                switch body.remaining {
                case 2: line = Int32(try body.readUInt16LE())
                case 4: line = try body.readInt32LE()
                default: line = version.hasLongRowCounts ? try body.readInt32LE() : Int32(try body.readUInt16LE())
                }
                try body.requireConsumed(name)
                return ServerMessage(number: number, state: state, severity: severity, message: message,
                                     serverName: server, procedureName: proc, lineNumber: line)
            }
        } catch { throw error.inToken(name) }
    }

    func encodeBody(into writer: inout ByteWriter, version: TDSVersion) {
        var body = ByteWriter()
        body.writeInt32LE(number)
        body.writeUInt8(state)
        body.writeUInt8(severity)
        body.writeUSVarChar(message)
        body.writeBVarChar(serverName)
        body.writeBVarChar(procedureName)
        if version.hasLongRowCounts { body.writeInt32LE(lineNumber) } else { body.writeUInt16LE(UInt16(truncatingIfNeeded: lineNumber)) }
        writer.writeUInt16LE(UInt16(truncatingIfNeeded: body.count))
        writer.writeBytes(body.bytes)
    }
}

/// [MS-TDS] 2.2.7.10 ERROR (0xAA) — an error message from the server.
public typealias ErrorToken = MessageToken<TokenKinds.Error>
/// [MS-TDS] 2.2.7.13 INFO (0xAB) — an informational message from the server, such as
/// 5701 "Changed database context" or a PRINT statement's text.
public typealias InfoToken = MessageToken<TokenKinds.Info>

/// [MS-TDS] 2.2.7.10 ERROR and 2.2.7.13 INFO: one layout, told apart by `Kind` (use the names
/// ``ErrorToken`` and ``InfoToken``). See ``ServerMessage`` for the fields and wire shape.
public struct MessageToken<Kind: TokenKind>: Hashable, Sendable {
    /// The message's fields.
    public var message: ServerMessage
    /// A token carrying `message` (its `isError` set for ERROR, cleared for INFO).
    public init(_ message: ServerMessage) {
        self.message = message
        self.message.isError = Kind.tokenType == .error
    }

    /// Decodes the body after the token byte. Throws `.truncated` until the declared length is
    /// present, `.invalidLength` if the content does not fit that length.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> MessageToken {
        MessageToken(try ServerMessage.decode(from: &reader, version: version, name: Kind.tokenType.name))
    }

    /// Writes the token byte (0xAA or 0xAB), the length and the body.
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt8(Kind.tokenType.rawValue)
        message.encodeBody(into: &writer, version: version)
    }
}
