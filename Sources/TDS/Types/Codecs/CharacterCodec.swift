/// The character family: char, varchar, varchar(max) and text in their collation's code page
/// ([MS-TDS] 2.2.5.4.2 CHARTYPE, VARCHARTYPE, BYTELEN; BIGCHARTYPE, BIGVARCHARTYPE, USHORTLEN with
/// 0xFFFF for NULL, PLP for `max`; 2.2.5.4.3 TEXTTYPE, LONGLEN), and nchar, nvarchar, nvarchar(max)
/// and ntext in UTF-16LE (NCHARTYPE, NVARCHARTYPE, NTEXTTYPE). The transcoders are ``TextCodec``'s.
///
/// The one decoder of these values: the row scan's rule (``keepsSingleByteText(_:)``,
/// ``byteLengths``; nchar and nvarchar are transcoded to UTF-8 by the scan, see
/// ``WireColumn/Kind/utf16``), the ``SQLValue`` of the bytes in place (``cp1252Value(at:count:)``,
/// ``utf8String(header:at:)``), read by the token decoder (``readSingleByte(from:count:collation:)``,
/// ``readUTF16(from:count:)``; PLP chunks assembled go through them) and the typed read
/// (``WireRowBlock/string(row:column:)``).
enum CharacterCodec {
    /// CHAR's and VARCHAR's BYTELEN values the row scan accepts: any length (bit 0: NULL).
    static let byteLengths: UInt64 = ~0

    /// Whether a row block reads char/varchar values of `collation` straight from their bytes
    /// (``WireColumn/Kind/byteLength``, ``WireColumn/Kind/ushortBytes``): code page 1252 (or no
    /// collation), which decodes without a table and cannot be invalid; any other code page
    /// (UTF-8 included) is kept as its wire bytes too, checked by the scan and decoded with the
    /// collation when read (``checkedCodePageSize(at:available:prefix:declared:)``).
    static func keepsSingleByteText(_ collation: Collation?) -> Bool { (collation?.codePage ?? 1252) == 1252 }

    /// The row scan's check of a char/varchar value in a code page other than 1252 (kept in the
    /// block as its wire bytes, ``WireColumn/Check/codePageByteLength``): the value at `p`, its
    /// length in a `prefix`-byte field (1: BYTELEN, 0 for NULL; 2: USHORTLEN, 0xFFFF for NULL),
    /// `available` bytes readable. Its byte count (prefix included) for NULL or text that is all
    /// ASCII (which ``readSingleByte(from:count:collation:)`` decodes in every code page); 0 for
    /// any other text, a value not all there, or (BYTELEN) longer than `declared` (when not 0): the
    /// scan then checks it with the full decoder.
    static func checkedCodePageSize(at p: UnsafeRawPointer, available: Int, prefix: Int, declared: Int) -> Int {
        guard available >= prefix else { return 0 }
        let n: Int
        if prefix == 1 {
            n = Int(p.load(as: UInt8.self))
            if n == 0 { return 1 }
            guard declared <= 0 || n <= declared else { return 0 }
        } else {
            n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
            if n == 0xFFFF { return 2 }
        }
        guard available - prefix >= n else { return 0 }
        let text = UnsafeRawBufferPointer(start: p + prefix, count: n)
        return text.allSatisfy({ $0 < 0x80 }) ? prefix + n : 0
    }

    /// The value of the `n` code page 1252 bytes at `p`: `.string`.
    @inline(__always)
    static func cp1252Value(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        .string(TextCodec.decodeCP1252(p, count: n))
    }

    /// The String of an nchar/nvarchar value kept as UTF-8 at `p` (not NULL): `header` (its first 2
    /// bytes, see ``WireColumn/Kind/utf16``) gives the byte count and whether all are ASCII; the
    /// bytes, written by the scan's transcoder, are well-formed, so they are copied as they are.
    @inline(__always)
    static func utf8String(header h: UInt16, at p: UnsafeRawPointer) -> String {
        let n = Int(h & 0x7FFF)
        if n == 0 { return "" }
        if n == utf16LongForm {
            // The long form: a 4-byte count, then the bytes (see WireColumn.Kind.utf16).
            let count = Int(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 2, as: UInt32.self)))
            return TextCodec.uncheckedString((p + 6).assumingMemoryBound(to: UInt8.self), count: count, isASCII: false)
        }
        return TextCodec.uncheckedString((p + 2).assumingMemoryBound(to: UInt8.self), count: n, isASCII: h & 0x8000 != 0)
    }

    /// The 15-bit count of an nchar/nvarchar value kept as UTF-8 that says a 4-byte count follows
    /// (a value of more than 32,766 UTF-8 bytes, see ``WireColumn/Kind/utf16``).
    static let utf16LongForm = 0x7FFF

    /// The String of a large value kept as UTF-8 (``WireColumn/Kind/large``, form `utf8` or
    /// `utf8ASCII`: nvarchar(max), ntext, xml transcoded by the scan, so well-formed) at `p`,
    /// header included, not NULL.
    static func largeString(_ form: UInt8, at p: UnsafeRawPointer) -> String {
        let n = Int(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
        return TextCodec.uncheckedString((p + WireColumn.largeHeaderSize).assumingMemoryBound(to: UInt8.self), count: n,
                                         isASCII: form == WireColumn.LargeForm.utf8ASCII.rawValue)
    }

    /// The value of the next `n` bytes of `reader`, text in `collation`'s code page: `.string`.
    /// - Throws: `.truncated` when fewer than `n` bytes remain, `.invalidEncoding` for bytes the
    ///   code page does not define.
    static func readSingleByte(from reader: inout ByteReader, count n: Int, collation: Collation?) throws(TDSDecodingError) -> SQLValue {
        .string(try TextCodec.decode(from: &reader, count: n, collation: collation))
    }

    /// The value of the next `n` bytes of `reader`, UTF-16LE text: `.string`.
    /// - Throws: `.truncated` when fewer than `n` bytes remain, `.invalidEncoding` for an odd
    ///   count or an unpaired surrogate.
    @inline(__always)
    static func readUTF16(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue {
        .string(try TextCodec.decodeUTF16LE(from: &reader, byteCount: n))
    }
}

extension WireRowBlock {
    /// nchar, nvarchar, nvarchar(max), ntext (UTF-16LE) and char, varchar in code page 1252: the
    /// value of `.string`, made from the UTF-8 the scan wrote (nchar, nvarchar, nvarchar(max), ntext)
    /// or transcoded here (code page 1252); `.other` for any other type (varchar(max) and text are
    /// read as their ``SQLValue``).
    package func string(row: Int, column: Int) -> WireTypedValue<String> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .utf16:   // kept as UTF-8 (see WireColumn.Kind.utf16)
                let h = UInt16(littleEndian: p.loadUnaligned(as: UInt16.self))
                return h == 0xFFFF ? .null : .value(CharacterCodec.utf8String(header: h, at: p))
            case .byteLength where c.family == .character:
                let n = Int(p.load(as: UInt8.self))
                return n == 0 ? .null : .value(TextCodec.decodeCP1252(p + 1, count: n))
            case .ushortBytes where c.family == .character:
                let n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
                return n == 0xFFFF ? .null : .value(TextCodec.decodeCP1252(p + 2, count: n))
            case .large where c.family == .nationalCharacter:
                if UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) == WireColumn.largeNull { return .null }
                let form = p.load(fromByteOffset: 4, as: UInt8.self)
                return form == WireColumn.LargeForm.raw.rawValue ? .other : .value(CharacterCodec.largeString(form, at: p))
            default:
                return .other
            }
        }
    }
}

extension CharacterCodec: ColumnCodec {
    static var family: TypeFamily { .character }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        t.type == .text ? "text" : sizedName(t, t.type == .char || t.type == .bigChar ? "char" : "varchar", t.length)
    }

    /// Code page 1252 kept as its bytes; any other code page checked by the scan
    /// (``checkedCodePageSize(at:available:prefix:declared:)``); text assembled.
    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        if l.type == .text { return WireColumn.Rule(kind: .large, declared: l.length) }
        let keeps = keepsSingleByteText(l.collation)
        if l.type == .varchar || l.type == .char {   // legacy BYTELEN
            return keeps ? WireColumn.Rule(kind: .byteLength, allowed: byteLengths, declared: l.length)
                : WireColumn.Rule(kind: .decode, declared: l.length, check: .codePageByteLength)
        }
        return keeps ? WireColumn.Rule(kind: .ushortBytes, declared: l.length)
            : WireColumn.Rule(kind: .decode, declared: l.length, check: .codePageUShortLength)
    }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try readSingleByte(from: &reader, count: n, collation: l.collation)
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        switch v {
        case .string(let s), .xml(let s), .json(let s):
            // ASCII is the same bytes in every supported code page: written as it is, with no array.
            if s.utf8.allSatisfy({ $0 < 0x80 }) { writer.writeBytes(s.utf8); return }
            guard let bytes = TextCodec.encode(s, collation: t.collation) else {
                throw TDSDecodingError(.invalidValue, offset: writer.count,
                                       "text not representable in code page \((t.collation ?? .sqlLatin1GeneralCP1CIAS).codePage)")
            }
            writer.writeBytes(bytes)
        default: throw mismatch(v, t, writer)
        }
    }
}

/// nchar, nvarchar, nvarchar(max) and ntext: UTF-16LE text (the ``CharacterCodec`` family's
/// transcoders; kept as UTF-8 in a row block, see ``WireColumn/Kind/utf16``).
enum NationalCharacterCodec: ColumnCodec {
    static var family: TypeFamily { .nationalCharacter }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        t.type == .ntext ? "ntext" : sizedName(t, t.type == .nchar ? "nchar" : "nvarchar", t.length / 2)
    }

    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        WireColumn.Rule(kind: l.type == .ntext ? .large : .utf16, declared: l.length)
    }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try CharacterCodec.readUTF16(from: &reader, count: n)
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        switch v {
        case .string(let s), .xml(let s), .json(let s): writer.writeUTF16LE(s)
        case .vector(let x) where t.type == .nvarchar: writer.writeUTF16LE(x.jsonText)   // a vector's JSON text
        default: throw mismatch(v, t, writer)
        }
    }
}
