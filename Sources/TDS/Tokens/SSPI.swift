/// [MS-TDS] 2.2.7.22 SSPI — an SSPI (Kerberos/NTLM) challenge from the server (token 0xED).
///
/// Wire shape after the token byte: Length USHORT, SSPIBuffer (Length bytes).
public struct SSPIToken: Hashable, Sendable {
    /// The SSPI/GSS-API token bytes.
    public var buffer: [UInt8]
    /// An SSPI token of `buffer`.
    public init(buffer: [UInt8]) { self.buffer = buffer }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> SSPIToken {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody16()
            return SSPIToken(buffer: try body.readBytes(body.remaining))
        } catch { throw error.inToken("SSPI") }
    }
}
