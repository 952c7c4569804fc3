import Foundation

/// A bounds-checked cursor over bytes received from the network.
///
/// Every read checks the remaining length first and throws ``TDSDecodingError`` with code
/// `.truncated` (and the absolute offset) instead of trapping. Lengths read from the wire are
/// validated before they are used to slice. Endianness is part of every multi-byte read's name:
/// TDS packet headers and PRELOGIN option offsets are big-endian, everything else little-endian.
///
/// `offset` is an index into `bytes`; `absoluteOffset` adds `baseOffset`, the position of
/// `bytes[0]` in the whole message or stream, and is what errors report.
public struct ByteReader: Sendable {
    /// The whole buffer (reads stay within `offset..<endIndex`).
    public let bytes: [UInt8]
    /// The index of the next byte to read, in `bytes`.
    public var offset: Int
    /// One past the last readable index of `bytes`.
    public let endIndex: Int
    /// The position of `bytes[0]` in the whole message or stream, for error offsets.
    public var baseOffset: Int

    /// Reads `bytes[start..<end]`. `start` and `end` are clamped to the array.
    public init(_ bytes: [UInt8], start: Int = 0, end: Int? = nil, baseOffset: Int = 0) {
        self.bytes = bytes
        let e = min(max(end ?? bytes.count, 0), bytes.count)
        self.endIndex = e
        self.offset = min(max(start, 0), e)
        self.baseOffset = baseOffset
    }

    /// Reads all of `bytes`.
    public init<S: Sequence>(bytes: S) where S.Element == UInt8 {
        self.init(Array(bytes))
    }

    /// Bytes left to read.
    @inlinable public var remaining: Int { endIndex - offset }
    /// True when no byte is left.
    @inlinable public var isAtEnd: Bool { offset >= endIndex }
    /// The offset of the next byte in the whole message or stream.
    @inlinable public var absoluteOffset: Int { baseOffset &+ offset }

    /// A `.truncated` error at the current position, needing `count` bytes.
    public func truncated(_ count: Int, _ what: String = "") -> TDSDecodingError {
        TDSDecodingError(.truncated, offset: absoluteOffset, context: what,
                         "needed \(count) byte(s), \(remaining) left")
    }

    /// An error of `code` at the current position (or at `offset`, an index into `bytes`).
    public func error(_ code: TDSDecodingError.Code, at offset: Int? = nil, _ detail: String) -> TDSDecodingError {
        TDSDecodingError(code, offset: baseOffset &+ (offset ?? self.offset), detail)
    }

    /// Throws `.truncated` unless `count` bytes (a non-negative count) remain.
    @inlinable public func require(_ count: Int) throws(TDSDecodingError) {
        guard count >= 0 else { throw error(.invalidLength, "negative length \(count)") }
        guard count <= endIndex - offset else { throw truncated(count) }
    }

    /// Skips `count` bytes.
    /// - Throws: `.truncated` when fewer remain, `.invalidLength` for a negative count.
    public mutating func skip(_ count: Int) throws(TDSDecodingError) {
        try require(count)
        offset += count
    }

    /// The next byte, not consumed.
    /// - Throws: `.truncated` at the end.
    public func peekUInt8() throws(TDSDecodingError) -> UInt8 {
        try require(1)
        return bytes[offset]
    }

    /// Reads one byte.
    /// - Throws: `.truncated` at the end.
    @inlinable public mutating func readUInt8() throws(TDSDecodingError) -> UInt8 {
        guard offset < endIndex else { throw truncated(1) }
        let b = bytes[offset]
        offset += 1
        return b
    }

    /// Reads one signed byte.
    /// - Throws: `.truncated`.
    public mutating func readInt8() throws(TDSDecodingError) -> Int8 {
        Int8(bitPattern: try readUInt8())
    }

    /// Reads 2 bytes, little-endian.
    /// - Throws: `.truncated`.
    @inlinable public mutating func readUInt16LE() throws(TDSDecodingError) -> UInt16 { try readLE(UInt16.self) }

    /// Reads 2 bytes, big-endian (packet headers, PRELOGIN offsets).
    /// - Throws: `.truncated`.
    public mutating func readUInt16BE() throws(TDSDecodingError) -> UInt16 { try readBE(UInt16.self) }

    /// Reads 4 bytes, little-endian.
    /// - Throws: `.truncated`.
    @inlinable public mutating func readUInt32LE() throws(TDSDecodingError) -> UInt32 { try readLE(UInt32.self) }

    /// Reads 4 bytes, big-endian.
    /// - Throws: `.truncated`.
    public mutating func readUInt32BE() throws(TDSDecodingError) -> UInt32 { try readBE(UInt32.self) }

    /// Reads 8 bytes, little-endian.
    /// - Throws: `.truncated`.
    @inlinable public mutating func readUInt64LE() throws(TDSDecodingError) -> UInt64 { try readLE(UInt64.self) }

    /// Reads `T`'s size in bytes, little-endian. Throws `.truncated` when fewer remain.
    @inlinable @inline(__always)
    mutating func readLE<T: FixedWidthInteger>(_: T.Type) throws(TDSDecodingError) -> T {
        let size = MemoryLayout<T>.size
        try require(size)
        let v = bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
        offset += size
        return v
    }

    /// Reads `T`'s size in bytes, big-endian (the little-endian read, its bytes reversed). Throws
    /// `.truncated` when fewer remain.
    mutating func readBE<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) throws(TDSDecodingError) -> T {
        try readLE(T.self).byteSwapped
    }

    /// Reads an unsigned little-endian integer of `count` bytes (0...8).
    public mutating func readUIntLE(count: Int) throws(TDSDecodingError) -> UInt64 {
        guard (0...8).contains(count) else { throw error(.invalidLength, "integer of \(count) bytes") }
        try require(count)
        var v: UInt64 = 0
        for i in 0..<count { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += count
        return v
    }

    /// Reads a 2-byte signed integer, little-endian.
    public mutating func readInt16LE() throws(TDSDecodingError) -> Int16 { Int16(bitPattern: try readUInt16LE()) }
    /// Reads a 4-byte signed integer, little-endian.
    public mutating func readInt32LE() throws(TDSDecodingError) -> Int32 { Int32(bitPattern: try readUInt32LE()) }
    /// Reads an 8-byte signed integer, little-endian.
    public mutating func readInt64LE() throws(TDSDecodingError) -> Int64 { Int64(bitPattern: try readUInt64LE()) }
    /// Reads an IEEE 754 single, little-endian.
    public mutating func readFloat32LE() throws(TDSDecodingError) -> Float { Float(bitPattern: try readUInt32LE()) }
    /// Reads an IEEE 754 double, little-endian.
    public mutating func readFloat64LE() throws(TDSDecodingError) -> Double { Double(bitPattern: try readUInt64LE()) }

    /// Hands `body` the next `count` bytes (1 or more) in place and consumes them: how a type's
    /// codec (``IntegerCodec`` and the others in Types/Codecs) reads a value it also reads in a
    /// row block, with one decoder for both.
    /// - Throws: `.truncated` when fewer remain, `.invalidLength` for a count below 1.
    @inline(__always)
    mutating func readInPlace<T>(_ count: Int, _ body: (UnsafeRawPointer) -> T) throws(TDSDecodingError) -> T {
        guard count >= 1 else { throw error(.invalidLength, "length \(count)") }
        try require(count)
        let o = offset
        // `bytes` holds at least `o + count` bytes (count >= 1), so its base address is not nil.
        let v = bytes.withUnsafeBytes { raw in body(raw.baseAddress.unsafelyUnwrapped + o) }
        offset = o &+ count
        return v
    }

    /// Reads `count` bytes (a length from the wire is checked first).
    public mutating func readBytes(_ count: Int) throws(TDSDecodingError) -> [UInt8] {
        try require(count)
        let slice = Array(bytes[offset ..< offset + count])
        offset += count
        return slice
    }

    /// A reader over the next `count` bytes, with the same absolute offsets; advances past them.
    public mutating func subReader(_ count: Int) throws(TDSDecodingError) -> ByteReader {
        try require(count)
        let sub = ByteReader(bytes, start: offset, end: offset + count, baseOffset: baseOffset)
        offset += count
        return sub
    }

    /// Reads `byteCount` bytes of UTF-16LE text. Unpaired surrogates throw `.invalidEncoding`
    /// (at the offset of the surrogate), an odd count `.invalidLength`; the reader does not move
    /// when it throws. The one UTF-16 decoder, ``TextCodec/decodeUTF16LE(from:byteCount:)``
    /// (an ASCII fast path, then straight to UTF-8).
    public mutating func readUTF16LE(byteCount: Int) throws(TDSDecodingError) -> String {
        try TextCodec.decodeUTF16LE(from: &self, byteCount: byteCount)
    }

    /// B_VARCHAR: a 1-byte character count, then UTF-16LE ([MS-TDS] 2.2.5.1.3).
    public mutating func readBVarChar() throws(TDSDecodingError) -> String {
        let chars = Int(try readUInt8())
        return try readUTF16LE(byteCount: chars * 2)
    }

    /// US_VARCHAR: a 2-byte little-endian character count, then UTF-16LE ([MS-TDS] 2.2.5.1.3).
    public mutating func readUSVarChar() throws(TDSDecodingError) -> String {
        let chars = Int(try readUInt16LE())
        return try readUTF16LE(byteCount: chars * 2)
    }

    /// B_VARBYTE: a 1-byte length, then bytes.
    public mutating func readBVarByte() throws(TDSDecodingError) -> [UInt8] {
        let n = Int(try readUInt8())
        return try readBytes(n)
    }

    /// US_VARBYTE: a 2-byte little-endian length, then bytes.
    public mutating func readUSVarByte() throws(TDSDecodingError) -> [UInt8] {
        let n = Int(try readUInt16LE())
        return try readBytes(n)
    }
}
