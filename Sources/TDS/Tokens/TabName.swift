/// [MS-TDS] 2.2.7.23 TABNAME — the names of the tables behind a browse-mode result (token 0xA4).
///
/// Wire shape after the token byte: Length USHORT, then table names to the end of the token.
/// From TDS 7.1 Revision 1 each name is NumParts BYTE + PartName US_VARCHAR × NumParts
/// (`server.db.schema.table` parts); before, a single US_VARCHAR. If the names do not parse in
/// the form the version implies, the other form is tried (the token length bounds both).
public struct TabName: Hashable, Sendable {
    /// One entry per table; each is the list of its name parts.
    public var tables: [[String]]
    /// A TABNAME of `tables`.
    public init(tables: [[String]]) { self.tables = tables }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> TabName {
        do throws(TDSDecodingError) {
            let body = try reader.tokenBody16()
            return try decodeBounded("TABNAME") { () throws(TDSDecodingError) -> TabName in
                // The token length bounds the names, so a server that uses the other form than
                // its version suggests (7.1 before and after Revision 1) is still understood.
                let preferred = version >= .v7_1_1
                do throws(TDSDecodingError) {
                    return try names(body, multipart: preferred)
                } catch {
                    if let other = try? names(body, multipart: !preferred) { return other }
                    throw error
                }
            }
        } catch { throw error.inToken("TABNAME") }
    }

    private static func names(_ body: ByteReader, multipart: Bool) throws(TDSDecodingError) -> TabName {
        var body = body
        var tables: [[String]] = []
        while !body.isAtEnd {
            tables.append(try readTableName(&body, multipart: multipart))
        }
        return TabName(tables: tables)
    }

    /// Reads one TableName: NumParts BYTE + US_VARCHAR parts, or one US_VARCHAR.
    static func readTableName(_ reader: inout ByteReader, multipart: Bool) throws(TDSDecodingError) -> [String] {
        guard multipart else { return [try reader.readUSVarChar()] }
        let parts = Int(try reader.readUInt8())
        var names: [String] = []
        names.reserveCapacity(parts)
        for _ in 0..<parts { names.append(try reader.readUSVarChar()) }
        return names
    }
}
