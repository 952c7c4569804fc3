// SQL Server 2025's vector (VECTORTYPE 0xF5) type: the value and its JSON text. Its wire codec
// is Types/Codecs/VectorCodec.swift, json's (JSONTYPE 0xF4) Types/Codecs/JSONCodec.swift.
// [MS-TDS] did not yet document them when this was written; the layouts are where Microsoft's
// two drivers (dotnet/SqlClient, microsoft/mssql-rs) agree (../shared/SQL2025.md).

/// A value of SQL Server 2025's `vector(n)` type ([MS-TDS] VECTORTYPE 0xF5): `n` elements of
/// ``elementType``, read as `Float` (a float16 element converts to `Float` exactly).
///
/// On the wire ([MS-TDS] 2.2.5.5, SQL Server 2025): an 8-byte header — layout format `0xA9`,
/// layout version `0x01`, the dimension count (UInt16 little-endian), the element type byte,
/// three zero bytes — then the elements little-endian (4 bytes each for float32, 2 for
/// float16); at most 8,000 bytes in all (1,998 float32 or 3,996 float16 dimensions). Elements
/// are finite (SQL Server refuses NaN and infinities in a vector).
///
/// A vector is a random-access collection of its elements (`v[i]`, `for x in v`, `v.count`).
/// A vector read from a row block (``WireRowBlock/value(row:column:)``, and so every `SQLRow`,
/// row block and typed read) is a **view** of the block's bytes: no allocation and no copy;
/// each element is read from the wire bytes when it is asked for. It keeps the block's bytes in
/// memory while it lives (they are shared, never changed). ``values`` makes an array of the
/// elements (one allocation: float32 copied as one block, float16 widened in one pass), and
/// ``copyElements(into:)`` reads them into a buffer the caller keeps. A vector built from an array
/// (``init(_:elementType:)``) holds its elements as float32 wire bytes.
///
/// ``jsonText`` is the JSON array the value prints as (`[1.0,-2.5]`); ``init(jsonArray:elementType:)``
/// reads one, as a server that did not acknowledge VECTORSUPPORT sends vectors (varchar(max) text
/// such as `[1.0000000e+000,2.0000000e+000]`).
public struct SQLVector: Hashable, Sendable, CustomStringConvertible, RandomAccessCollection {
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

    /// The value as on the wire: `bytes[offset...]` holds its 8-byte header, then its elements
    /// (little-endian float32 or float16, as the header's element type byte says). A view shares
    /// a row block's bytes (checked by the row scan); a vector built from an array holds its own
    /// (float32, every `Float` exactly). One array reference and plain fields: an `SQLValue` that
    /// holds a vector copies as cheaply as one that holds `[UInt8]`.
    @usableFromInline var bytes: [UInt8]
    /// Where the header is in ``bytes`` (a row block's offsets are below 2³²).
    @usableFromInline var headerAt: UInt32
    /// The number of elements after the header.
    @usableFromInline var storedCount: UInt32

    @inlinable var offset: Int { Int(headerAt) }
    @inlinable var elementCount: Int { Int(storedCount) }

    /// The element type: what the elements are sent as (a view's is its header's; set it to send
    /// a vector's elements as another type).
    public var elementType: ElementType

    /// The elements as a new array (one allocation: float32 copied as one block of bytes,
    /// float16 widened in one pass). Setting it replaces the elements.
    public var values: [Float] {
        get {
            bytes.withUnsafeBytes { raw in
                // The header and elements are inside `bytes` (checked when the vector was made).
                SQLVector.scannedElements(at: raw.baseAddress.unsafelyUnwrapped + offset, count: storedByteCount)
            }
        }
        set { self = SQLVector(newValue, elementType: elementType) }
    }

    /// Copies the elements into `buffer`, made ``dimensions`` long: its storage is reused when it
    /// is that long and not shared, so reading many vectors into one buffer allocates once (as a
    /// bound column buffer does in ODBC). float32 elements are copied as one block of bytes,
    /// float16 elements widened in one pass.
    public func copyElements(into buffer: inout [Float]) {
        if buffer.count != elementCount { buffer = [Float](repeating: 0, count: elementCount) }
        _ = bytes.withUnsafeBytes { raw in
            buffer.withUnsafeMutableBufferPointer { out in
                // The header and elements are inside `bytes` (checked when the vector was made).
                SQLVector.copyElements(at: raw.baseAddress.unsafelyUnwrapped + offset, count: storedByteCount, into: out)
            }
        }
    }

    /// The header's layout format byte (0xA9).
    public static let layoutFormat: UInt8 = 0xA9
    /// The header's layout version byte (0x01).
    public static let layoutVersion: UInt8 = 0x01
    /// The header's size in bytes (8).
    public static let headerSize = 8
    /// The largest value, header included, in bytes (8,000).
    public static let maximumByteCount = 8000

    /// A vector of `values` as `elementType` (float16 elements are rounded to the nearest when
    /// sent). The elements are kept as float32 (every `Float` exactly).
    public init(_ values: [Float], elementType: ElementType = .float32) {
        let n = values.count
        self.bytes = [UInt8](unsafeUninitializedCapacity: SQLVector.headerSize &+ n &* 4) { out, count in
            // The header (its dimension count is informative only: `elementCount` is the count).
            out[0] = SQLVector.layoutFormat
            out[1] = SQLVector.layoutVersion
            out[2] = UInt8(truncatingIfNeeded: n)
            out[3] = UInt8(truncatingIfNeeded: n >> 8)
            out[4] = ElementType.float32.rawValue
            out[5] = 0; out[6] = 0; out[7] = 0
            let e = UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(out)[SQLVector.headerSize...])
            values.withUnsafeBytes { src in
                #if _endian(little)
                e.copyMemory(from: src)   // Float is binary32 in the host's (little-endian) order
                #else
                for i in 0 ..< n { e.storeBytes(of: values[i].bitPattern.littleEndian, toByteOffset: 4 &* i, as: UInt32.self) }
                #endif
            }
            count = SQLVector.headerSize &+ n &* 4
        }
        self.headerAt = 0
        self.storedCount = UInt32(truncatingIfNeeded: n)   // an array of 2³² floats (16 GiB) is not a vector
        self.elementType = elementType
    }

    /// A view of the checked value whose header is at `offset` of `bytes`; nil when the header
    /// and elements are not all inside `bytes`.
    init?(checkedWire bytes: [UInt8], offset: Int) {
        guard offset >= 0, offset <= Int(UInt32.max), bytes.count &- offset >= SQLVector.headerSize else { return nil }
        let (element, dimensions) = bytes.withUnsafeBytes { raw in
            (raw[offset &+ 4], Int(raw[offset &+ 2]) | Int(raw[offset &+ 3]) << 8)
        }
        let type = ElementType(rawValue: element) ?? .float32
        guard bytes.count &- offset >= SQLVector.headerSize &+ dimensions &* type.size else { return nil }
        self.bytes = bytes
        self.headerAt = UInt32(offset)
        self.storedCount = UInt32(dimensions)
        self.elementType = type
    }

    /// The number of elements.
    public var dimensions: Int { elementCount }

    /// The value's bytes on the wire (header and elements): 8 + dimensions × element size.
    public var byteCount: Int { SQLVector.headerSize + dimensions * elementType.size }

    /// The size of the stored elements (the header's element type: float16 2, float32 4).
    @inlinable
    var storedElementSize: Int { bytes[offset &+ 4] == ElementType.float16.rawValue ? 2 : 4 }

    /// The stored value's bytes (header and elements).
    private var storedByteCount: Int { SQLVector.headerSize &+ elementCount &* storedElementSize }

    // MARK: RandomAccessCollection

    public var startIndex: Int { 0 }
    public var endIndex: Int { elementCount }
    public var count: Int { elementCount }

    /// The element at `position` (0 ..< ``dimensions``; out of range traps, as an array's index).
    @inlinable
    public subscript(position: Int) -> Float {
        precondition(position >= 0 && position < elementCount, "SQLVector index out of range")
        return bytes.withUnsafeBytes { raw in
            // The header and elements are inside `bytes` (checked when the vector was made).
            let p = raw.baseAddress.unsafelyUnwrapped + offset
            if p.load(fromByteOffset: 4, as: UInt8.self) == ElementType.float16.rawValue {
                return SQLVector.float(fromFloat16Bits: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 8 &+ 2 &* position, as: UInt16.self)))
            }
            return Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8 &+ 4 &* position, as: UInt32.self)))
        }
    }

    /// Reads the elements in order, straight from the wire bytes.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let bytes: [UInt8]
        /// The next element's byte offset in `bytes`.
        @usableFromInline var position: Int
        /// The byte offset after the last element (at most `bytes.count`).
        @usableFromInline let end: Int
        /// The element size (4 float32, 2 float16).
        @usableFromInline let width: Int

        @inlinable
        public mutating func next() -> Float? {
            guard position < end else { return nil }
            defer { position &+= width }
            return bytes.withUnsafeBytes { raw in
                // position + width <= end <= bytes.count (checked when the vector was made).
                let p = raw.baseAddress.unsafelyUnwrapped + position
                if width == 4 { return Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))) }
                return SQLVector.float(fromFloat16Bits: UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
            }
        }
    }

    public func makeIterator() -> Iterator {
        let width = storedElementSize
        let start = offset &+ SQLVector.headerSize
        return Iterator(bytes: bytes, position: start, end: start &+ elementCount &* width, width: width)
    }

    // MARK: Hashable (by element type and elements)

    public static func == (a: SQLVector, b: SQLVector) -> Bool {
        a.elementType == b.elementType && a.elementCount == b.elementCount && a.elementsEqual(b)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(elementType)
        hasher.combine(elementCount)
        for x in self { hasher.combine(x) }
    }

    /// The JSON array of the elements, each as Swift prints the `Float` (shortest round-trip
    /// text): `[1.0,-2.5,1e-05]`.
    public var jsonText: String {
        var s = "["
        s.reserveCapacity(dimensions * 10 + 2)
        for (i, v) in enumerated() {
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
