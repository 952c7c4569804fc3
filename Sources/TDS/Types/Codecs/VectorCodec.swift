import Foundation

// SQL Server 2025's vector type (VECTORTYPE 0xF5; ../shared/SQL2025.md): the one codec of its
// values, which every path (token decoder, row decoders, RPC parameters, RETURNVALUE, CLI text)
// calls: its TYPE_INFO, the row scan's size rule and check, the value read checked and unchecked,
// the encoding. The value type and its JSON text are ``SQLVector`` (Types/SQLVector.swift).

/// vector ([MS-TDS] VECTORTYPE 0xF5, USHORTLEN, 0xFFFF for NULL): the family's ``ColumnCodec``.
/// A row block checks a cell with ``SQLVector/check(at:count:available:declaredLength:declaredElement:)``
/// (``scannedSize(_:_:at:end:)``) and reads it without checks (``scannedValue(at:)``).
enum VectorCodec: ColumnCodec {
    static var family: TypeFamily { .vector }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        let e = t.vectorElementType ?? .float32
        let n = t.vectorDimensions ?? 0
        return e == .float32 ? "vector(\(n))" : "vector(\(n), float16)"
    }

    static func scanRule(_ l: WireColumn) -> WireColumn.Rule { WireColumn.Rule(kind: .vector, declared: l.length) }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        guard !inVariant else { throw reader.error(.invalidValue, "vector is not a sql_variant base type") }
        return .vector(try SQLVector.decode(from: &reader, count: n, declaredLength: l.length,
                                            declaredElement: SQLVector.ElementType(rawValue: l.scale)))
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        guard case .vector(var vector) = v else { throw mismatch(v, t, writer) }
        if let e = t.vectorElementType { vector.elementType = e }
        if t.length > 0, vector.byteCount != t.length {
            throw TDSDecodingError(.invalidValue, offset: writer.count,
                                   "a vector of \(vector.dimensions) dimension(s) for \(t.sqlTypeName)")
        }
        try vector.encode(into: &writer)
    }

    /// The row scan's size rule of a vector value at `j` of the `n` bytes at `p`
    /// (``WireColumn/scannedSize(_:_:at:end:)``): its byte count, ``WireColumn/needsBytes`` or
    /// ``WireColumn/notScanned`` (what the check refuses is the full decoder's error). Out of
    /// line: the rule of every other kind stays small enough to be inlined into the run.
    @inline(never)
    static func scannedSize(_ c: UnsafePointer<WireColumn>, _ p: UnsafePointer<UInt8>, at j: Int, end n: Int) -> Int {
        guard n - j >= 2 else { return WireColumn.needsBytes }
        let len = Int(p[j]) | Int(p[j + 1]) << 8
        if len == 0xFFFF { return 2 }
        // A length out of range is refused at once (as the decoder does), never waited for.
        guard len >= SQLVector.headerSize, len <= SQLVector.maximumByteCount else { return WireColumn.notScanned }
        guard n - j - 2 >= len else { return WireColumn.needsBytes }
        return SQLVector.check(at: UnsafeRawPointer(p + j + 2), count: len, available: len, declaredLength: c.pointee.declared,
                               declaredElement: SQLVector.ElementType(rawValue: c.pointee.scale)) == nil ? 2 + len : WireColumn.notScanned
    }

    /// A vector cell the scan checked at `p` (its USHORTLEN first): NULL or its value, read
    /// without checks.
    @inline(never)
    static func scannedValue(at p: UnsafeRawPointer) -> SQLValue {
        let n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
        return n == 0xFFFF ? .null : .vector(SQLVector.scannedValue(at: p + 2, count: n))
    }
}

extension WireRowBlock {
    /// The bytes of the vector value of `column` in `row` (header and elements, its USHORTLEN
    /// read), bounded by the block's bytes, for `body`; `.null` for NULL, `.other` for another type.
    @inline(__always)
    func withVector<R>(row: Int, column: Int, _ body: (UnsafeRawPointer, Int) -> R) -> WireTypedValue<R> {
        typed(row: row, column: column, accepts: { $0.kind == .vector }) { _, p, available in
            guard available >= 2 else { return .other }
            let n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
            if n == 0xFFFF { return .null }
            // Checked when the row was appended; bounded again here, never read past the block.
            guard n >= SQLVector.headerSize, n <= available &- 2 else { return .other }
            return .value(body(p + 2, n))
        }
    }

    /// vector: its elements as `[Float]` straight from the block's wire bytes, in one allocation
    /// (``SQLVector/scannedElements(at:count:)``: float32 copied as a block, float16 widened in
    /// one pass); equal to the ``SQLValue/vector(_:)`` value's ``SQLVector/values``. `.other` for
    /// any other type.
    package func floats(row: Int, column: Int) -> WireTypedValue<[Float]> {
        withVector(row: row, column: column) { SQLVector.scannedElements(at: $0, count: $1) }
    }

    /// vector: the ``SQLVector`` of ``value(row:column:)``, a view of the block's bytes (no
    /// allocation); `.other` for any other type.
    package func vector(row: Int, column: Int) -> WireTypedValue<SQLVector> {
        let o = offset(row: row, column: column)
        if o == WireRowBlock.nullOffset { return .null }
        guard scan[column].kind == .vector else { return .other }
        switch vectorView(at: Int(o)) {
        case .vector(let v): return .value(v)
        default: return .null
        }
    }

    /// The vector cell (its USHORTLEN first) at `offset` of the bytes: NULL, or a view of its
    /// value (``SQLVector/init(checkedWire:offset:)``; a copy if the view cannot be made).
    @inline(never)
    func vectorView(at offset: Int) -> SQLValue {
        bytes.withUnsafeBytes { raw in
            // Checked when the row was appended; bounded again here, never read past the block.
            guard offset >= 0, raw.count &- offset >= 2, let base = raw.baseAddress else { return .null }
            let n = Int(UInt16(littleEndian: (base + offset).loadUnaligned(as: UInt16.self)))
            if n == 0xFFFF { return .null }
            guard n >= SQLVector.headerSize, n <= raw.count &- offset &- 2 else { return .null }
            // Never nil: the value is inside the bytes (checked above).
            return .vector(SQLVector(checkedWire: bytes, offset: offset &+ 2) ?? SQLVector.scannedValue(at: base + offset + 2, count: n))
        }
    }
}

extension TypeInfo {
    /// vector(dimensions[, float16]) (SQL Server 2025): VECTOR, maximum length 8 + dimensions ×
    /// element size, the element type kept in ``scale`` (see ``vectorElementType``).
    public static func vector(dimensions: Int, elementType: SQLVector.ElementType = .float32) -> TypeInfo {
        TypeInfo(type: .vector, length: SQLVector.headerSize + max(0, dimensions) * elementType.size,
                 scale: elementType.rawValue)
    }

    /// A vector's element type (its TYPE_INFO byte, kept in ``scale``); nil for other types or an unknown byte.
    public var vectorElementType: SQLVector.ElementType? {
        type == .vector ? SQLVector.ElementType(rawValue: scale) : nil
    }

    /// A vector's dimension count from its declared length; nil for other types.
    public var vectorDimensions: Int? {
        guard let e = vectorElementType else { return nil }
        return max(0, length - SQLVector.headerSize) / e.size
    }

    /// VECTOR TYPE_INFO after its type byte: USHORT maximum length (8 + dimensions × element
    /// size, at most 8,000), then the element type byte (0 float32, 1 float16).
    static func decodeVectorTypeInfo(from reader: inout ByteReader) throws(TDSDecodingError) -> TypeInfo {
        let at = reader.offset
        let length = Int(try reader.readUInt16LE())
        let elementAt = reader.offset
        let byte = try reader.readUInt8()
        guard let element = SQLVector.ElementType(rawValue: byte) else {
            throw reader.error(.invalidValue, at: elementAt, "vector element type 0x\(TokenType.hex(byte)) is neither float32 (0) nor float16 (1)")
        }
        guard length > SQLVector.headerSize, length <= SQLVector.maximumByteCount,
              (length - SQLVector.headerSize) % element.size == 0 else {
            throw reader.error(.invalidLength, at: at, "vector maximum length \(length) is not 8 + 1…\(element.maximumDimensions) \(element.name) elements")
        }
        return TypeInfo(type: .vector, length: length, scale: element.rawValue)
    }
}

extension SQLVector {
    /// Writes the header and the elements (no length prefix).
    /// - Throws: `.invalidValue` (offset = `writer.count`) for no element, more than
    ///   ``ElementType/maximumDimensions``, or an element that is not finite (or, as float16,
    ///   beyond ±65,504).
    public func encode(into writer: inout ByteWriter) throws(TDSDecodingError) {
        let at = writer.count
        let n = dimensions
        guard n > 0, n <= elementType.maximumDimensions else {
            throw TDSDecodingError(.invalidValue, offset: at, context: "VECTOR",
                                   "\(n) dimension(s): a \(elementType.name) vector has 1 to \(elementType.maximumDimensions)")
        }
        writer.writeUInt8(SQLVector.layoutFormat)
        writer.writeUInt8(SQLVector.layoutVersion)
        writer.writeUInt16LE(UInt16(n))
        writer.writeUInt8(elementType.rawValue)
        writer.writeBytes([0, 0, 0])
        for (i, v) in enumerated() {
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
        if count >= headerSize && count <= maximumByteCount { try reader.require(count) }
        let fault: Fault? = reader.bytes.withUnsafeBytes { raw in
            // `count` bytes are there when it is in range (checked first in `check`, which reads nothing otherwise).
            check(at: raw.baseAddress.map { $0 + start }, count: count, available: raw.count - start,
                  declaredLength: declaredLength, declaredElement: declaredElement)
        }
        if let fault {
            throw reader.error(fault.code, at: start + fault.at, fault.detail).withContext("VECTOR")
        }
        let v = reader.bytes.withUnsafeBytes { raw in scannedValue(at: raw.baseAddress.unsafelyUnwrapped + start, count: count) }
        reader.offset = start + count
        return v
    }

    /// Why ``check(at:count:available:declaredLength:declaredElement:)`` refuses a value: the
    /// error's code, the offset of the field at fault (from the value's first byte) and the text.
    struct Fault {
        let code: TDSDecodingError.Code
        let at: Int
        let detail: String
    }

    /// The one check of a vector value of `count` bytes at `p` (`available` bytes readable there;
    /// `p` may be nil when none are): nil when ``decode(from:count:declaredLength:declaredElement:)``
    /// accepts it, else what it throws. Reads nothing past `count`; never builds the value. The row
    /// scan checks vector cells with it (``VectorCodec/scannedSize(_:_:at:end:)``), the token decoder through
    /// `decode`.
    static func check(at p: UnsafeRawPointer?, count: Int, available: Int, declaredLength: Int,
                      declaredElement: ElementType?) -> Fault? {
        guard count >= headerSize else {
            return Fault(code: .invalidLength, at: 0, detail: "a vector value of \(count) byte(s) is shorter than its 8-byte header")
        }
        guard count <= maximumByteCount else {
            return Fault(code: .invalidLength, at: 0, detail: "a vector value of \(count) bytes is longer than 8000")
        }
        guard available >= count, let p else { return Fault(code: .truncated, at: 0, detail: "vector value of \(count) bytes") }
        @inline(__always) func b(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        guard b(0) == layoutFormat else {
            return Fault(code: .invalidValue, at: 0, detail: "vector layout format 0x\(TokenType.hex(b(0))), expected 0xA9")
        }
        guard b(1) == layoutVersion else {
            return Fault(code: .invalidValue, at: 1, detail: "vector layout version \(b(1)), expected 1")
        }
        let dimensions = Int(b(2)) | Int(b(3)) << 8
        guard let element = ElementType(rawValue: b(4)) else {
            return Fault(code: .invalidValue, at: 4, detail: "vector element type 0x\(TokenType.hex(b(4))) is neither float32 (0) nor float16 (1)")
        }
        if let declaredElement, declaredElement != element {
            return Fault(code: .invalidValue, at: 4, detail: "vector element type \(element.name) in a \(declaredElement.name) column")
        }
        guard b(5) == 0, b(6) == 0, b(7) == 0 else {
            return Fault(code: .invalidValue, at: 5, detail: "vector header reserved bytes are not zero")
        }
        let payload = count - headerSize
        guard payload % element.size == 0 else {
            return Fault(code: .invalidLength, at: headerSize + payload / element.size * element.size,
                         detail: "\(payload) element byte(s) are not a whole number of \(element.size)-byte \(element.name) elements")
        }
        guard dimensions == payload / element.size else {
            return Fault(code: .invalidLength, at: 2, detail: "vector header counts \(dimensions) dimension(s), its \(count) bytes hold \(payload / element.size)")
        }
        guard dimensions > 0 else { return Fault(code: .invalidValue, at: 2, detail: "vector of 0 dimensions") }
        if declaredLength > 0, count != declaredLength {
            return Fault(code: .invalidLength, at: 0, detail: "a vector value of \(count) bytes in a column of \(declaredLength)")
        }
        let bad = firstNonFinite(at: p + headerSize, count: dimensions, element: element)
        if bad >= 0 {
            return Fault(code: .invalidValue, at: headerSize + bad * element.size, detail: "vector element \(bad) is not finite")
        }
        return nil
    }

    /// The index of the first of the `count` elements at `e` (little-endian `element`s) that is
    /// not finite (its exponent bits all ones: an infinity or a NaN), -1 when every one is finite.
    ///
    /// Vectorised: an element's exponent bits plus the exponent's lowest bit carry into the sign
    /// bit only when they are all ones (float32: `(x & 0x7F80_0000) + 0x0080_0000`, float16:
    /// `(x & 0x7C00) + 0x0400`), so the elements are OR-ed 8 or 16 at a time with no branch, and
    /// only a value that holds a bad element is searched again, element by element. Reads exactly
    /// `count × element.size` bytes.
    static func firstNonFinite(at e: UnsafeRawPointer, count: Int, element: ElementType) -> Int {
        var found = false
        var i = 0
        if element == .float32 {
            #if _endian(little)
            let mask = SIMD8<UInt32>(repeating: 0x7F80_0000), carry = SIMD8<UInt32>(repeating: 0x0080_0000)
            var acc = SIMD8<UInt32>(repeating: 0)
            while count &- i >= 8 {
                acc |= (e.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt32>.self) & mask) &+ carry
                i &+= 8
            }
            found = acc.max() >= 0x8000_0000
            #endif
            var tail: UInt32 = 0
            while i < count {
                tail |= (UInt32(littleEndian: e.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self)) & 0x7F80_0000) &+ 0x0080_0000
                i &+= 1
            }
            found = found || tail >= 0x8000_0000
        } else {
            #if _endian(little)
            let mask = SIMD16<UInt16>(repeating: 0x7C00), carry = SIMD16<UInt16>(repeating: 0x0400)
            var acc = SIMD16<UInt16>(repeating: 0)
            while count &- i >= 16 {
                acc |= (e.loadUnaligned(fromByteOffset: i &* 2, as: SIMD16<UInt16>.self) & mask) &+ carry
                i &+= 16
            }
            found = acc.max() >= 0x8000
            #endif
            var tail: UInt16 = 0
            while i < count {
                tail |= (UInt16(littleEndian: e.loadUnaligned(fromByteOffset: i &* 2, as: UInt16.self)) & 0x7C00) &+ 0x0400
                i &+= 1
            }
            found = found || tail >= 0x8000
        }
        guard found else { return -1 }
        for k in 0 ..< count {
            let bad = element == .float32
                ? UInt32(littleEndian: e.loadUnaligned(fromByteOffset: 4 &* k, as: UInt32.self)) & 0x7F80_0000 == 0x7F80_0000
                : UInt16(littleEndian: e.loadUnaligned(fromByteOffset: 2 &* k, as: UInt16.self)) & 0x7C00 == 0x7C00
            if bad { return k }
        }
        return -1   // not reached
    }

    /// The value of the `count` bytes at `p`, which ``check(at:count:available:declaredLength:declaredElement:)``
    /// accepted (a row block's cell, or the token decoder's after its check): built without checks.
    static func scannedValue(at p: UnsafeRawPointer, count: Int) -> SQLVector {
        // Its own copy of the value's bytes (one allocation), read as a view of them.
        let bytes = [UInt8](UnsafeRawBufferPointer(start: p, count: count))
        return SQLVector(checkedWire: bytes, offset: 0) ?? SQLVector([])
    }

    /// The elements of the checked value of `count` bytes at `p` (its header first) as `Float`, in
    /// one allocation: float32 elements copied as one block of bytes (on a little-endian host;
    /// element by element otherwise), float16 elements widened in one pass.
    static func scannedElements(at p: UnsafeRawPointer, count: Int) -> [Float] {
        let element = ElementType(rawValue: p.load(fromByteOffset: 4, as: UInt8.self)) ?? .float32
        return [Float](unsafeUninitializedCapacity: Swift.max(0, count &- headerSize) / element.size) { out, n in
            n = copyElements(at: p, count: count, into: out)
        }
    }

    /// Writes the elements of the checked value of `count` bytes at `p` (its header first) to
    /// `out` (at most `out.count` of them) and returns how many: float32 elements copied as one
    /// block of bytes (on a little-endian host; element by element otherwise), float16 elements
    /// widened in one pass.
    @discardableResult
    static func copyElements(at p: UnsafeRawPointer, count: Int, into out: UnsafeMutableBufferPointer<Float>) -> Int {
        let element = ElementType(rawValue: p.load(fromByteOffset: 4, as: UInt8.self)) ?? .float32
        let dimensions = Swift.min(out.count, Swift.max(0, count &- headerSize) / element.size)
        let e = p + headerSize
        if element == .float32 {
            #if _endian(little)
            // Float is IEEE 754 binary32 in the host's (little-endian) order: the wire's bytes are its bytes.
            UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(out)[..<(dimensions &* 4)])
                .copyMemory(from: UnsafeRawBufferPointer(start: e, count: dimensions &* 4))
            #else
            for i in 0 ..< dimensions {
                out[i] = Float(bitPattern: UInt32(littleEndian: e.loadUnaligned(fromByteOffset: 4 &* i, as: UInt32.self)))
            }
            #endif
        } else {
            for i in 0 ..< dimensions {
                out[i] = SQLVector.float(fromFloat16Bits: UInt16(littleEndian: e.loadUnaligned(fromByteOffset: 2 &* i, as: UInt16.self)))
            }
        }
        return dimensions
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
