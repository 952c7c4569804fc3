/// [MS-TDS] 2.2.7.17 ORDER — the columns of an ORDER BY, by 1-based column number (token 0xA9).
///
/// Wire shape after the token byte: Length USHORT (bytes), then ColNum USHORT × Length/2.
public struct Order: Hashable, Sendable {
    /// 1-based column numbers in ORDER BY sequence.
    public var columns: [UInt16]
    /// An ORDER of `columns`.
    public init(columns: [UInt16]) { self.columns = columns }

    /// Decodes the body after the 0xA9 byte. An odd length is `.invalidLength`.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> Order {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody16()
            return try decodeBounded("ORDER") { () throws(TDSDecodingError) -> Order in
                guard body.remaining % 2 == 0 else {
                    throw body.error(.invalidLength, "ORDER length \(body.remaining) is odd")
                }
                var cols: [UInt16] = []
                cols.reserveCapacity(body.remaining / 2)
                while !body.isAtEnd { cols.append(try body.readUInt16LE()) }
                return Order(columns: cols)
            }
        } catch { throw error.inToken("ORDER") }
    }
}
