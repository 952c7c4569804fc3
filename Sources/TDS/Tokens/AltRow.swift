/// [MS-TDS] 2.2.7.2 ALTROW — one row of COMPUTE values (token 0xD3; deprecated in TDS 7.4).
///
/// Wire shape after the token byte: Id USHORT (the ALTMETADATA it belongs to), then one value
/// per column of that ALTMETADATA, encoded as in ROW.
public struct AltRow: Hashable, Sendable {
    /// The ALTMETADATA id this row belongs to.
    public var id: UInt16
    /// The aggregate values.
    public var values: [SQLValue]
    /// An ALTROW from its fields.
    public init(id: UInt16, values: [SQLValue]) { self.id = id; self.values = values }

    /// Decodes a whole ALTROW body (after the 0xD3 byte). `metadata` finds the ALTMETADATA by
    /// id; an id without one is `.unexpectedToken`.
    public static func decode(from reader: inout ByteReader,
                              metadata: (UInt16) -> AltMetadata?) throws(TDSDecodingError) -> AltRow {
        let start = reader.offset
        do throws(TDSDecodingError) {
            let idOffset = reader.absoluteOffset
            let id = try reader.readUInt16LE()
            guard let meta = metadata(id) else {
                throw TDSDecodingError(.unexpectedToken, offset: idOffset, "no ALTMETADATA with Id \(id)")
            }
            guard let values = try WireRowProgress.values(of: .altRow, tokenStart: reader.baseOffset &+ start &- 1,
                                                          types: meta.columns.map(\.metadata.typeInfo), from: &reader) else {
                throw TDSDecodingError(.truncated, offset: reader.baseOffset &+ reader.endIndex, "the row continues past the input")
            }
            return AltRow(id: id, values: values)
        } catch {
            if error.code == .truncated { reader.offset = start }
            throw error.inToken("ALTROW")
        }
    }
}
