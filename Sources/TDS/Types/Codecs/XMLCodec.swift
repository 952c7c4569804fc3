/// xml ([MS-TDS] 2.2.5.4.3 XMLTYPE, TDS 7.2+: always PLP, UTF-16LE text; the TYPE_INFO's schema
/// collection is ``XMLSchemaInfo``).
///
/// The token decoder assembles the chunks and reads them through ``read(from:count:)``; a row
/// block keeps them as UTF-8, transcoded (and so checked) by the scan (``WireColumn/Kind/large``),
/// and reads them as ``CharacterCodec/largeString(_:at:)`` gives them.
enum XMLCodec {
    /// The value of the next `n` bytes of `reader` (assembled PLP chunks): `.xml`.
    /// - Throws: `.truncated` when fewer than `n` bytes remain, `.invalidEncoding` for an odd
    ///   count or an unpaired surrogate.
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue {
        .xml(try TextCodec.decodeUTF16LE(from: &reader, byteCount: n))
    }
}
