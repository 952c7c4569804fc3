// SQL Server 2025's json type (JSONTYPE 0xF4; ../shared/SQL2025.md): the one codec of its
// values, which the value decoder calls (a PLP value's assembled chunks, or its bytes in one
// run: TypeInfo+Values); the value is ``SQLValue/json(_:)``, its text.

/// The json codec ([MS-TDS] JSONTYPE 0xF4, SQL Server 2025): a PLP value whose bytes are UTF-8 text.
enum JSONCodec {
    /// The text of a json value's assembled PLP bytes.
    /// - Throws: `.invalidEncoding` at the first byte (counted from the start of `bytes`) that is
    ///   not well-formed UTF-8, context `JSON`.
    static func decode(_ bytes: [UInt8]) throws(TDSDecodingError) -> String {
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        let at = firstInvalidUTF8(bytes)
        throw TDSDecodingError(.invalidEncoding, offset: at, context: "JSON",
                               "json value is not UTF-8 (byte \(at) of its \(bytes.count))")
    }

    /// The value of the `n` assembled bytes at `p` (a row block's, checked by ``decode(_:)`` when
    /// the row was appended, so well-formed UTF-8): `.json`.
    static func value(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        .json(TextCodec.uncheckedString(p.assumingMemoryBound(to: UInt8.self), count: n, isASCII: false))
    }

    /// The index of the first byte of `bytes` that starts no well-formed UTF-8 sequence
    /// (`bytes.count` when all are well-formed).
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int {
        var i = 0
        let n = bytes.count
        while i < n {
            let c = bytes[i]
            if c < 0x80 { i += 1; continue }
            let len: Int, lo: UInt8, hi: UInt8
            switch c {
            case 0xC2 ... 0xDF: len = 2; lo = 0x80; hi = 0xBF
            case 0xE0: len = 3; lo = 0xA0; hi = 0xBF
            case 0xE1 ... 0xEC, 0xEE ... 0xEF: len = 3; lo = 0x80; hi = 0xBF
            case 0xED: len = 3; lo = 0x80; hi = 0x9F
            case 0xF0: len = 4; lo = 0x90; hi = 0xBF
            case 0xF1 ... 0xF3: len = 4; lo = 0x80; hi = 0xBF
            case 0xF4: len = 4; lo = 0x80; hi = 0x8F
            default: return i
            }
            guard i + len <= n, (lo ... hi).contains(bytes[i + 1]) else { return i }
            for k in 2 ..< len where !(0x80 ... 0xBF).contains(bytes[i + k]) { return i }
            i += len
        }
        return n
    }
}

extension JSONCodec: ColumnCodec {
    static var family: TypeFamily { .json }

    static func sqlTypeName(_ t: TypeInfo) -> String { "json" }
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule { WireColumn.Rule(kind: .large, declared: l.length) }

    /// Only when the bytes come as one run (a PLP value's assembled chunks, a bulk-load row).
    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        let start = reader.offset
        try reader.require(n)
        let bytes = try reader.readBytes(n)
        do { return .json(try decode(bytes)) } catch { throw error.shifted(by: reader.baseOffset + start) }
    }

    static func plpValue(_ l: WireColumn, _ bytes: [UInt8]) throws(TDSDecodingError) -> SQLValue { .json(try decode(bytes)) }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        switch v {
        case .json(let s), .string(let s): writer.writeBytes(s.utf8)
        default: throw mismatch(v, t, writer)
        }
    }
}
