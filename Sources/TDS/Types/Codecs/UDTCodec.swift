/// CLR user-defined types (geography, geometry, hierarchyid and others) ([MS-TDS] 2.2.5.4.3
/// UDTTYPE, TDS 7.2+: PLP, the type's serialized bytes; the TYPE_INFO's names are ``UDTInfo``).
///
/// The token decoder assembles the chunks (``plpValue(_:)``), or reads a run of bytes
/// (``read(from:count:)``); a row block assembles them (``WireColumn/Kind/large``) and reads them
/// in place (``value(at:count:)``).
enum UDTCodec {
    /// The value of the next `n` bytes of `reader`: `.udt`.
    /// - Throws: `.truncated` when fewer than `n` bytes remain.
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue {
        .udt(try reader.readBytes(n))
    }

    /// The value of the `n` assembled bytes at `p` (a row block's): `.udt` (a copy).
    static func value(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        .udt([UInt8](UnsafeRawBufferPointer(start: p, count: n)))
    }

    /// The value whose PLP chunks are `bytes` (the assembled chunks are the value: no copy).
    static func plpValue(_ bytes: [UInt8]) -> SQLValue { .udt(bytes) }
}

extension UDTCodec: ColumnCodec {
    static var family: TypeFamily { .udt }

    static func sqlTypeName(_ t: TypeInfo) -> String { t.udt.map { $0.typeName.isEmpty ? "udt" : $0.typeName } ?? "udt" }
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule { WireColumn.Rule(kind: .large, declared: l.length) }
    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try read(from: &reader, count: n)
    }
    static func plpValue(_ l: WireColumn, _ bytes: [UInt8]) throws(TDSDecodingError) -> SQLValue { plpValue(bytes) }
    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        try BinaryCodec.encode(v, as: t, into: &writer)
    }
}
