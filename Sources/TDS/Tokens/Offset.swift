/// [MS-TDS] 2.2.7.16 OFFSET — position of a keyword in the SQL text (token 0x78; removed in
/// TDS 7.2, sent only after SET OFFSET by older servers).
///
/// Wire shape after the token byte: Identifier USHORT (the keyword), OffSetLen USHORT.
public struct Offset: Hashable, Sendable {
    /// The keyword identifier.
    public var identifier: UInt16
    /// The offset of the keyword in the SQL text, in characters.
    public var offset: UInt16
    /// An OFFSET from its fields.
    public init(identifier: UInt16, offset: UInt16) { self.identifier = identifier; self.offset = offset }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> Offset {
        do throws(TDSDecodingError) {
            let id = try reader.readUInt16LE()
            let off = try reader.readUInt16LE()
            return Offset(identifier: id, offset: off)
        } catch { throw error.inToken("OFFSET") }
    }
}
