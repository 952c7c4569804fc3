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

extension XMLCodec: ColumnCodec {
    static var family: TypeFamily { .xml }

    static func sqlTypeName(_ t: TypeInfo) -> String { "xml" }
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule { WireColumn.Rule(kind: .large, declared: l.length) }
    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try read(from: &reader, count: n)
    }
    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        try NationalCharacterCodec.encode(v, as: t, into: &writer)
    }
}
