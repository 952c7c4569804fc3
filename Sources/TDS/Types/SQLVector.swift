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
/// elements (one allocation: float32 copied as one block, float16 widened in one pass); a vector
/// built from an array (``init(_:elementType:)``) holds that array.
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

    /// Where the elements are: an array, or a checked wire value shared with a row block.
    @usableFromInline
    enum Storage: Sendable {
        case floats([Float])
        /// A value ``check(at:count:available:declaredLength:declaredElement:)`` accepted: its
        /// header at `offset` of `bytes` (an offset below 2³², as a row block's), its elements after it.
        case wire([UInt8], offset: UInt32, dimensions: UInt16)
    }

    @usableFromInline var storage: Storage

    /// The element type: what the elements are on the wire, and what they are sent as (set it to
    /// send a vector's elements as another type).
    public var elementType: ElementType

    /// The elements as an array: the array a vector was built from, or a new one (one
    /// allocation) for a view of a row block's bytes. Setting it replaces the elements.
    public var values: [Float] {
        get {
            switch storage {
            case .floats(let f): return f
            case .wire(let bytes, let offset, _):
                return bytes.withUnsafeBytes { raw in
                    // Checked when the view was made: the value's bytes are inside `bytes`.
                    SQLVector.scannedElements(at: raw.baseAddress.unsafelyUnwrapped + Int(offset), count: wireByteCount)
                }
            }
        }
        set { storage = .floats(newValue) }
    }

    /// Copies the elements into `buffer`, made ``dimensions`` long: its storage is reused when it
    /// is that long and not shared, so reading many vectors into one buffer allocates once (as a
    /// bound column buffer does in ODBC). A view's float32 elements are copied as one block of
    /// bytes, float16 elements widened in one pass.
    public func copyElements(into buffer: inout [Float]) {
        switch storage {
        case .floats(let f): buffer = f
        case .wire(let bytes, let offset, let n):
            if buffer.count != Int(n) { buffer = [Float](repeating: 0, count: Int(n)) }
            bytes.withUnsafeBytes { raw in
                buffer.withUnsafeMutableBufferPointer { out in
                    // Checked when the view was made: the value's bytes are inside `bytes`.
                    SQLVector.copyElements(at: raw.baseAddress.unsafelyUnwrapped + Int(offset), count: wireByteCount, into: out)
                }
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

    /// A vector of `values` as `elementType` (float16 elements are rounded to the nearest when sent).
    public init(_ values: [Float], elementType: ElementType = .float32) {
        self.storage = .floats(values)
        self.elementType = elementType
    }

    /// A view of the checked value whose header is at `offset` of `bytes` (nil when `offset` is
    /// not below 2³² or the bytes are not there: then ``scannedValue(at:count:)`` copies).
    init?(checkedWire bytes: [UInt8], offset: Int) {
        guard offset >= 0, offset <= Int(UInt32.max) - SQLVector.maximumByteCount,
              bytes.count &- offset >= SQLVector.headerSize else { return nil }
        let (element, dimensions) = bytes.withUnsafeBytes { raw in
            (raw[offset &+ 4], UInt16(raw[offset &+ 2]) | UInt16(raw[offset &+ 3]) << 8)
        }
        let type = ElementType(rawValue: element) ?? .float32
        guard bytes.count &- offset >= SQLVector.headerSize &+ Int(dimensions) &* type.size else { return nil }
        self.storage = .wire(bytes, offset: UInt32(offset), dimensions: dimensions)
        self.elementType = type
    }

    /// The number of elements.
    public var dimensions: Int {
        switch storage {
        case .floats(let f): return f.count
        case .wire(_, _, let n): return Int(n)
        }
    }

    /// The value's bytes on the wire (header and elements): 8 + dimensions × element size.
    public var byteCount: Int { SQLVector.headerSize + dimensions * elementType.size }

    /// A view's bytes on the wire (its own element type's size).
    private var wireByteCount: Int { SQLVector.headerSize &+ dimensions &* wireElement.size }

    /// The element type of the stored elements (a view's header's; `Float` for an array).
    @inline(__always)
    private var wireElement: ElementType {
        if case .wire(let bytes, let offset, _) = storage, bytes[Int(offset) &+ 4] == ElementType.float16.rawValue { return .float16 }
        return .float32
    }

    // MARK: RandomAccessCollection

    public var startIndex: Int { 0 }
    public var endIndex: Int { dimensions }
    public var count: Int { dimensions }

    /// The element at `position` (0 ..< ``dimensions``; out of range traps, as an array's index).
    @inlinable
    public subscript(position: Int) -> Float {
        switch storage {
        case .floats(let f): return f[position]
        case .wire(let bytes, let offset, let n):
            precondition(position >= 0 && position < Int(n), "SQLVector index out of range")
            return bytes.withUnsafeBytes { raw in
                // Checked when the view was made: header and elements are inside `bytes`.
                let p = raw.baseAddress.unsafelyUnwrapped + Int(offset)
                if p.load(fromByteOffset: 4, as: UInt8.self) == 0x01 {
                    return SQLVector.float(fromFloat16Bits: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 8 &+ 2 &* position, as: UInt16.self)))
                }
                return Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8 &+ 4 &* position, as: UInt32.self)))
            }
        }
    }

    /// Reads the elements in order: an array's, or a view's straight from the wire bytes.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let floats: [Float]
        @usableFromInline let bytes: [UInt8]
        /// The next element's index in `floats`, or its byte offset in `bytes`.
        @usableFromInline var position: Int
        /// `floats.count`, or the byte offset after a view's last element (at most `bytes.count`).
        @usableFromInline let end: Int
        /// 0 for an array; a view's element size (4 float32, 2 float16).
        @usableFromInline let width: Int

        @inlinable
        public mutating func next() -> Float? {
            guard position < end else { return nil }
            if width == 0 {
                defer { position &+= 1 }
                return floats[position]
            }
            defer { position &+= width }
            return bytes.withUnsafeBytes { raw in
                // position + width <= end <= bytes.count (checked when the view was made).
                let p = raw.baseAddress.unsafelyUnwrapped + position
                if width == 4 { return Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))) }
                return SQLVector.float(fromFloat16Bits: UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
            }
        }
    }

    public func makeIterator() -> Iterator {
        switch storage {
        case .floats(let f):
            return Iterator(floats: f, bytes: [], position: 0, end: f.count, width: 0)
        case .wire(let bytes, let offset, let n):
            let width = wireElement.size
            let start = Int(offset) &+ SQLVector.headerSize
            return Iterator(floats: [], bytes: bytes, position: start, end: start &+ Int(n) &* width, width: width)
        }
    }

    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R? {
        if case .floats(let f) = storage { return try f.withUnsafeBufferPointer(body) }
        return nil
    }

    // MARK: Hashable (by element type and elements, wherever they are held)

    public static func == (a: SQLVector, b: SQLVector) -> Bool {
        guard a.elementType == b.elementType, a.dimensions == b.dimensions else { return false }
        if case .floats(let x) = a.storage, case .floats(let y) = b.storage { return x == y }
        return a.elementsEqual(b)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(elementType)
        hasher.combine(dimensions)
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
