// SQL Server 2025's json (JSONTYPE 0xF4) and vector (VECTORTYPE 0xF5) types: the one codec of
// each, which every path (token decoder, row decoders, RPC parameters, RETURNVALUE, CLI text)
// calls. [MS-TDS] did not yet document them when this was written; the layouts are where
// Microsoft's two drivers (dotnet/SqlClient, microsoft/mssql-rs) agree (../shared/SQL2025.md).

/// A value of SQL Server 2025's `vector(n)` type ([MS-TDS] VECTORTYPE 0xF5): `n` elements of
/// ``elementType``, held as `Float` (a float16 element converts to `Float` exactly).
///
/// On the wire ([MS-TDS] 2.2.5.5, SQL Server 2025): an 8-byte header — layout format `0xA9`,
/// layout version `0x01`, the dimension count (UInt16 little-endian), the element type byte,
/// three zero bytes — then the elements little-endian (4 bytes each for float32, 2 for
/// float16); at most 8,000 bytes in all (1,998 float32 or 3,996 float16 dimensions). Elements
/// are finite (SQL Server refuses NaN and infinities in a vector).
///
/// ``jsonText`` is the JSON array the value prints as (`[1.0,-2.5]`); ``init(jsonArray:elementType:)``
/// reads one, as a server that did not acknowledge VECTORSUPPORT sends vectors (varchar(max) text
/// such as `[1.0000000e+000,2.0000000e+000]`).
public struct SQLVector: Hashable, Sendable, CustomStringConvertible {
    /// The element type byte of TYPE_INFO and of the value header.
    public enum ElementType: UInt8, Hashable, Sendable, CaseIterable {
        /// IEEE 754 binary32, 4 bytes (VECTORSUPPORT version 1).
        case float32 = 0x00
        /// IEEE 754 binary16, 2 bytes (VECTORSUPPORT version 2).
        case float16 = 0x01

        /// Bytes per element (4 or 2).
        public var size: Int { self == .float32 ? 4 : 2 }
        /// The name SQL Server declares (`float32`, `float16`).
        public var name: String { self == .float32 ? "float32" : "float16" }
        /// The most dimensions a vector of this element type can have (1,998 or 3,996).
        public var maximumDimensions: Int { (SQLVector.maximumByteCount - SQLVector.headerSize) / size }
    }

    /// The elements.
    public var values: [Float]
    /// The element type (after ``values``: 9 bytes in all, inside every `SQLValue` payload).
    public var elementType: ElementType

    /// The header's layout format byte (0xA9).
    public static let layoutFormat: UInt8 = 0xA9
    /// The header's layout version byte (0x01).
    public static let layoutVersion: UInt8 = 0x01
    /// The header's size in bytes (8).
    public static let headerSize = 8
    /// The largest value, header included, in bytes (8,000).
    public static let maximumByteCount = 8000

    /// A vector of `values` as `elementType` (float16 elements are rounded to the nearest when sent).
    public init(_ values: [Float], elementType: ElementType = .float32) {
        self.values = values
        self.elementType = elementType
    }

    /// The number of elements.
    public var dimensions: Int { values.count }
    /// The value's bytes on the wire (header and elements): 8 + dimensions × element size.
    public var byteCount: Int { SQLVector.headerSize + values.count * elementType.size }

    /// The JSON array of the elements, each as Swift prints the `Float` (shortest round-trip
    /// text): `[1.0,-2.5,1e-05]`.
    public var jsonText: String {
        var s = "["
        s.reserveCapacity(values.count * 10 + 2)
        for (i, v) in values.enumerated() {
            if i > 0 { s += "," }
            s += v.description
        }
        return s + "]"
    }

    public var description: String { jsonText }

    /// Reads a JSON array of numbers (`[1, 2.5e0, -3]`, whitespace allowed), as SQL Server sends a
    /// vector's text when VECTORSUPPORT was not acknowledged; nil when the text is not such an
    /// array, is empty, holds a number that is not finite as `Float`, or has more elements than
    /// `elementType` allows.
    public init?(jsonArray text: String, elementType: ElementType = .float32) {
        guard let values = SQLVector.parseJSONArray(text), !values.isEmpty,
              values.count <= elementType.maximumDimensions else { return nil }
        self.init(values, elementType: elementType)
    }

    /// The numbers of a JSON array of numbers, nil when `text` is anything else.
    static func parseJSONArray(_ text: String) -> [Float]? {
        var values: [Float] = []
        var utf8 = Substring(text).utf8[...]
        func skipSpace() { while let c = utf8.first, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { utf8.removeFirst() } }
        skipSpace()
        guard utf8.first == UInt8(ascii: "[") else { return nil }
        utf8.removeFirst()
        skipSpace()
        if utf8.first == UInt8(ascii: "]") {
            utf8.removeFirst(); skipSpace()
            return utf8.isEmpty ? [] : nil
        }
        while true {
            skipSpace()
            var end = utf8.startIndex
            while end < utf8.endIndex, JSONNumber.isNumberByte(utf8[end]) { end = utf8.index(after: end) }
            let token = Substring(utf8[utf8.startIndex ..< end])
            guard JSONNumber.isValid(token.utf8), let v = Float(token), v.isFinite else { return nil }
            values.append(v)
            if values.count > SQLVector.maximumByteCount { return nil }
            utf8 = utf8[end...]
            skipSpace()
            guard let c = utf8.first else { return nil }
            utf8.removeFirst()
            if c == UInt8(ascii: "]") { break }
            guard c == UInt8(ascii: ",") else { return nil }
        }
        skipSpace()
        return utf8.isEmpty ? values : nil
    }

    // MARK: Wire codec

    /// Writes the header and the elements (no length prefix).
    /// - Throws: `.invalidValue` (offset = `writer.count`) for no element, more than
    ///   ``ElementType/maximumDimensions``, or an element that is not finite (or, as float16,
    ///   beyond ±65,504).
    public func encode(into writer: inout ByteWriter) throws(TDSDecodingError) {
        let at = writer.count
        guard !values.isEmpty, values.count <= elementType.maximumDimensions else {
            throw TDSDecodingError(.invalidValue, offset: at, context: "VECTOR",
                                   "\(values.count) dimension(s): a \(elementType.name) vector has 1 to \(elementType.maximumDimensions)")
        }
        writer.writeUInt8(SQLVector.layoutFormat)
        writer.writeUInt8(SQLVector.layoutVersion)
        writer.writeUInt16LE(UInt16(values.count))
        writer.writeUInt8(elementType.rawValue)
        writer.writeBytes([0, 0, 0])
        for (i, v) in values.enumerated() {
            guard v.isFinite else {
                writer.bytes.removeLast(writer.count - at)
                throw TDSDecodingError(.invalidValue, offset: at, context: "VECTOR", "element \(i) is not finite")
            }
            if elementType == .float32 {
                writer.writeFloat32LE(v)
            } else {
                let h = SQLVector.float16Bits(v)
                guard h & 0x7C00 != 0x7C00 else {
                    writer.bytes.removeLast(writer.count - at)
                    throw TDSDecodingError(.invalidValue, offset: at, context: "VECTOR", "element \(i) is beyond float16's ±65504")
                }
                writer.writeUInt16LE(h)
            }
        }
    }

    /// The value's bytes (header and elements), as SQL Server's `CAST(v AS varbinary(8000))` gives them.
    /// - Throws: as ``encode(into:)``.
    public func wireBytes() throws(TDSDecodingError) -> [UInt8] {
        var w = ByteWriter(capacity: byteCount)
        try encode(into: &w)
        return w.bytes
    }

    /// Decodes a vector value of `count` bytes at the reader (its USHORTLEN already read) whose
    /// TYPE_INFO declares `declaredLength` bytes (0: none declared) and `declaredElement`
    /// (nil: none declared).
    ///
    /// - Throws: ``TDSDecodingError`` with the offset of the field at fault, context `VECTOR`:
    ///   `.invalidLength` for a value shorter than its header, longer than 8,000 bytes, not the
    ///   length its TYPE_INFO declares, whose header's dimension count disagrees with its
    ///   length, or whose elements do not fill it whole (a partial element); `.invalidValue` for a
    ///   header whose layout format is not 0xA9, version not 1, reserved bytes not zero, an element
    ///   type other than the TYPE_INFO's (or unknown), no dimension, or an element that is not
    ///   finite; `.truncated` when fewer than `count` bytes are present (the reader is then left
    ///   where it was).
    public static func decode(from reader: inout ByteReader, count: Int, declaredLength: Int,
                              declaredElement: ElementType?) throws(TDSDecodingError) -> SQLVector {
        let start = reader.offset
        func fail(_ code: TDSDecodingError.Code, _ at: Int, _ detail: String) -> TDSDecodingError {
            reader.error(code, at: at, detail).withContext("VECTOR")
        }
        guard count >= headerSize else {
            throw fail(.invalidLength, start, "a vector value of \(count) byte(s) is shorter than its 8-byte header")
        }
        guard count <= maximumByteCount else {
            throw fail(.invalidLength, start, "a vector value of \(count) bytes is longer than 8000")
        }
        try reader.require(count)
        let b = reader.bytes, o = start
        guard b[o] == layoutFormat else {
            throw fail(.invalidValue, o, "vector layout format 0x\(TokenType.hex(b[o])), expected 0xA9")
        }
        guard b[o + 1] == layoutVersion else {
            throw fail(.invalidValue, o + 1, "vector layout version \(b[o + 1]), expected 1")
        }
        let dimensions = Int(b[o + 2]) | Int(b[o + 3]) << 8
        guard let element = ElementType(rawValue: b[o + 4]) else {
            throw fail(.invalidValue, o + 4, "vector element type 0x\(TokenType.hex(b[o + 4])) is neither float32 (0) nor float16 (1)")
        }
        if let declaredElement, declaredElement != element {
            throw fail(.invalidValue, o + 4, "vector element type \(element.name) in a \(declaredElement.name) column")
        }
        guard b[o + 5] == 0, b[o + 6] == 0, b[o + 7] == 0 else {
            throw fail(.invalidValue, o + 5, "vector header reserved bytes are not zero")
        }
        let payload = count - headerSize
        guard payload % element.size == 0 else {
            throw fail(.invalidLength, o + headerSize + payload / element.size * element.size,
                       "\(payload) element byte(s) are not a whole number of \(element.size)-byte \(element.name) elements")
        }
        guard dimensions == payload / element.size else {
            throw fail(.invalidLength, o + 2, "vector header counts \(dimensions) dimension(s), its \(count) bytes hold \(payload / element.size)")
        }
        guard dimensions > 0 else { throw fail(.invalidValue, o + 2, "vector of 0 dimensions") }
        if declaredLength > 0, count != declaredLength {
            throw fail(.invalidLength, start, "a vector value of \(count) bytes in a column of \(declaredLength)")
        }
        var values = [Float](repeating: 0, count: dimensions)
        var bad = -1
        b.withUnsafeBytes { raw in
            let p = raw.baseAddress! + o + headerSize
            values.withUnsafeMutableBufferPointer { out in
                if element == .float32 {
                    for i in 0 ..< dimensions {
                        let v = Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4 &* i, as: UInt32.self)))
                        out[i] = v
                        if !v.isFinite && bad < 0 { bad = i }
                    }
                } else {
                    for i in 0 ..< dimensions {
                        let h = UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 2 &* i, as: UInt16.self))
                        if h & 0x7C00 == 0x7C00 && bad < 0 { bad = i }
                        out[i] = SQLVector.float(fromFloat16Bits: h)
                    }
                }
            }
        }
        if bad >= 0 {
            throw fail(.invalidValue, o + headerSize + bad * element.size, "vector element \(bad) is not finite")
        }
        reader.offset = start + count
        return SQLVector(values, elementType: element)
    }

    // MARK: float16 (portable: Swift's Float16 is unavailable on some platforms)

    /// The `Float` of IEEE 754 binary16 bits `h` (exact).
    public static func float(fromFloat16Bits h: UInt16) -> Float {
        let sign = UInt32(h & 0x8000) << 16
        let exponent = Int(h >> 10 & 0x1F)
        let mantissa = UInt32(h & 0x3FF)
        if exponent == 0 {
            // Zero or subnormal: mantissa × 2^-24.
            let v = Float(mantissa) * 0x1p-24
            return sign != 0 ? -v : v
        }
        if exponent == 0x1F { return Float(bitPattern: sign | 0x7F80_0000 | mantissa << 13) }
        return Float(bitPattern: sign | UInt32(exponent - 15 + 127) << 23 | mantissa << 13)
    }

    /// The IEEE 754 binary16 bits nearest `v` (ties to even); beyond ±65,504 an infinity.
    public static func float16Bits(_ v: Float) -> UInt16 {
        let bits = v.bitPattern
        let sign = UInt16(truncatingIfNeeded: bits >> 16 & 0x8000)
        if v.isNaN { return sign | 0x7E00 }
        let a = abs(v)
        if a >= 65520 { return sign | 0x7C00 }   // rounds to infinity
        if a < 0x1p-14 {
            // Subnormal (or zero): round a × 2^24 to an integer, ties to even.
            let m = (a * 0x1p24).rounded(.toNearestOrEven)
            return sign | UInt16(m)
        }
        let e = Int(bits >> 23 & 0xFF) - 127 + 15
        var m = bits & 0x7F_FFFF
        var exp = UInt32(e)
        // Round the 23-bit mantissa to 10 bits, ties to even.
        let rest = m & 0x1FFF
        m >>= 13
        if rest > 0x1000 || (rest == 0x1000 && m & 1 == 1) {
            m += 1
            if m == 0x400 { m = 0; exp += 1 }
        }
        if exp >= 0x1F { return sign | 0x7C00 }
        return sign | UInt16(exp << 10 | m)
    }
}

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

/// The JSON number grammar (RFC 8259 §6), for reading a vector's JSON text.
enum JSONNumber {
    static func isNumberByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x2B || c == 0x2E || c == 0x65 || c == 0x45
    }

    /// Whether `s` is `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    static func isValid(_ s: Substring.UTF8View) -> Bool {
        var i = s.startIndex
        func digit() -> Bool { i < s.endIndex && s[i] >= 0x30 && s[i] <= 0x39 }
        func next() { i = s.index(after: i) }
        if i < s.endIndex, s[i] == 0x2D { next() }
        guard digit() else { return false }
        if s[i] == 0x30 { next() } else { while digit() { next() } }
        if i < s.endIndex, s[i] == 0x2E {
            next()
            guard digit() else { return false }
            while digit() { next() }
        }
        if i < s.endIndex, s[i] == 0x65 || s[i] == 0x45 {
            next()
            if i < s.endIndex, s[i] == 0x2B || s[i] == 0x2D { next() }
            guard digit() else { return false }
            while digit() { next() }
        }
        return i == s.endIndex
    }
}

extension SQLVector: Codable {
    /// A vector from an array of numbers (float32 elements).
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode([Float].self))
    }

    /// The elements as an array of numbers.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(values)
    }
}
