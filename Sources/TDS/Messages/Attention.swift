/// [MS-TDS] 2.2.1.7 ATTENTION: the client's cancel signal (packet type 0x06) — a
/// packet header with no data. The server answers with a DONE carrying DONE_ATTN.
public struct Attention: Hashable, Sendable {
    /// An ATTENTION message (it has no body).
    public init() {}

    /// Decodes an ATTENTION body, which must be empty.
    ///
    /// - Throws: `.invalidLength` when the body has data.
    public static func decode(from bytes: [UInt8], version: TDSVersion = .v7_4) throws(TDSDecodingError) -> Attention {
        var reader = ByteReader(bytes)
        return try decode(from: &reader, version: version)
    }

    /// Decodes an ATTENTION body: there must be none.
    /// - Throws: ``TDSDecodingError`` when bytes follow.
    public static func decode(from reader: inout ByteReader, version: TDSVersion = .v7_4) throws(TDSDecodingError) -> Attention {
        guard reader.isAtEnd else {
            throw TDSDecodingError(.invalidLength, offset: reader.absoluteOffset, context: "ATTENTION",
                                   "ATTENTION carries \(reader.remaining) byte(s) of data; it must be empty")
        }
        return Attention()
    }

    /// The empty body.
    public func encode(version: TDSVersion = .v7_4) -> [UInt8] { [] }
}
