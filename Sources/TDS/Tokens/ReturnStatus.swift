/// [MS-TDS] 2.2.7.18 RETURNSTATUS — a stored procedure's return value (token 0x79).
///
/// Wire shape after the token byte: Value LONG (4 bytes, little-endian).
public struct ReturnStatus: Hashable, Sendable {
    /// The procedure's return status (`RETURN n`).
    public var value: Int32
    /// A RETURNSTATUS of `value`.
    public init(value: Int32) { self.value = value }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> ReturnStatus {
        do throws(TDSDecodingError) { return ReturnStatus(value: try reader.readInt32LE()) } catch { throw error.inToken("RETURNSTATUS") }
    }

    /// Writes the token byte 0x79 and the value.
    public func encode(into writer: inout ByteWriter) {
        writer.writeUInt8(TokenType.returnStatus.rawValue)
        writer.writeInt32LE(value)
    }
}
