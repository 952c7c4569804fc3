/// An append-only byte buffer for encoding messages and tokens.
///
/// Multi-byte writes name their endianness. Strings are written as UTF-16LE, as TDS requires
/// for every Unicode field.
public struct ByteWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// An empty buffer with room for `capacity` bytes.
    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The number of bytes written.
    public var count: Int { bytes.count }

    /// Appends one byte.
    public mutating func writeUInt8(_ v: UInt8) { bytes.append(v) }
    /// Appends one signed byte.
    public mutating func writeInt8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    /// Appends 2 bytes, little-endian.
    public mutating func writeUInt16LE(_ v: UInt16) { writeRaw(v.littleEndian) }
    /// Appends 2 bytes, big-endian (packet headers, PRELOGIN offsets).
    public mutating func writeUInt16BE(_ v: UInt16) { writeRaw(v.bigEndian) }
    /// Appends 4 bytes, little-endian.
    public mutating func writeUInt32LE(_ v: UInt32) { writeRaw(v.littleEndian) }
    /// Appends 4 bytes, big-endian.
    public mutating func writeUInt32BE(_ v: UInt32) { writeRaw(v.bigEndian) }
    /// Appends 8 bytes, little-endian.
    public mutating func writeUInt64LE(_ v: UInt64) { writeRaw(v.littleEndian) }
    /// Appends the bytes of `v` as they are in memory (the caller picks the byte order).
    @inline(__always)
    private mutating func writeRaw<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v) { bytes.append(contentsOf: $0) } }
    /// Writes the low `count` bytes (0...8) of `v`, little-endian.
    public mutating func writeUIntLE(_ v: UInt64, count: Int) {
        for i in 0..<min(max(count, 0), 8) { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }
    /// Appends a 2-byte signed integer, little-endian.
    public mutating func writeInt16LE(_ v: Int16) { writeUInt16LE(UInt16(bitPattern: v)) }
    /// Appends a 4-byte signed integer, little-endian.
    public mutating func writeInt32LE(_ v: Int32) { writeUInt32LE(UInt32(bitPattern: v)) }
    /// Appends an 8-byte signed integer, little-endian.
    public mutating func writeInt64LE(_ v: Int64) { writeUInt64LE(UInt64(bitPattern: v)) }
    /// Appends an IEEE 754 single, little-endian.
    public mutating func writeFloat32LE(_ v: Float) { writeUInt32LE(v.bitPattern) }
    /// Appends an IEEE 754 double, little-endian.
    public mutating func writeFloat64LE(_ v: Double) { writeUInt64LE(v.bitPattern) }
    /// Appends bytes as they are.
    public mutating func writeBytes<S: Sequence>(_ s: S) where S.Element == UInt8 { bytes.append(contentsOf: s) }

    /// Writes `s` as UTF-16LE with no length prefix.
    ///
    /// The space is appended once and filled in place (an ASCII string from its UTF-8 bytes),
    /// not two appends per code unit.
    public mutating func writeUTF16LE(_ s: String) {
        let utf8Count = s.utf8.count
        guard utf8Count > 0 else { return }
        let start = bytes.count
        if let done = s.utf8.withContiguousStorageIfAvailable({ utf8 -> Bool in
            // All ASCII (no byte >= 0x80): each byte is one code unit.
            var high: UInt8 = 0
            for b in utf8 { high |= b }
            guard high < 0x80 else { return false }
            bytes.append(contentsOf: repeatElement(0, count: 2 * utf8Count))
            bytes.withUnsafeMutableBufferPointer { out in
                var i = start
                for b in utf8 { out[i] = b; i &+= 2 }
            }
            return true
        }), done {
            return
        }
        let units = s.utf16.count
        bytes.append(contentsOf: repeatElement(0, count: 2 * units))
        bytes.withUnsafeMutableBufferPointer { out in
            var i = start
            for u in s.utf16 {
                out[i] = UInt8(truncatingIfNeeded: u)
                out[i &+ 1] = UInt8(truncatingIfNeeded: u &>> 8)
                i &+= 2
            }
        }
    }
    /// The first UTF-16 code units of `s`, at most `maxUnits` (negative counts as 0), never half
    /// a surrogate pair: a cut that would keep only the high surrogate of a pair drops it too,
    /// so what is written is valid UTF-16 (and decodes again).
    public static func utf16Prefix(_ s: String, maxUnits: Int) -> [UInt16] {
        let limit = Swift.max(0, maxUnits)
        var units = Array(s.utf16.prefix(limit))
        if units.count == limit, let last = units.last, UTF16.isLeadSurrogate(last) {
            units.removeLast()
        }
        return units
    }
    /// B_VARCHAR: 1-byte character count (UTF-16 code units, at most 255, a surrogate pair never
    /// split), then UTF-16LE.
    public mutating func writeBVarChar(_ s: String) {
        let units = ByteWriter.utf16Prefix(s, maxUnits: 255)
        writeUInt8(UInt8(units.count))
        for u in units { writeUInt16LE(u) }
    }
    /// US_VARCHAR: 2-byte character count (at most 65,535 UTF-16 code units, a surrogate pair
    /// never split), then UTF-16LE.
    public mutating func writeUSVarChar(_ s: String) {
        let units = ByteWriter.utf16Prefix(s, maxUnits: 65535)
        writeUInt16LE(UInt16(units.count))
        for u in units { writeUInt16LE(u) }
    }
    /// Overwrites 2 bytes at `index` (little-endian); does nothing when `index` was not written yet.
    public mutating func setUInt16LE(_ v: UInt16, at index: Int) { setRaw(v.littleEndian, at: index) }
    /// Overwrites 2 bytes at `index` (big-endian); does nothing when `index` was not written yet.
    public mutating func setUInt16BE(_ v: UInt16, at index: Int) { setRaw(v.bigEndian, at: index) }
    /// Overwrites 4 bytes at `index` (little-endian); does nothing when `index` was not written yet.
    public mutating func setUInt32LE(_ v: UInt32, at index: Int) { setRaw(v.littleEndian, at: index) }
    /// Overwrites the bytes at `index` with those of `v` as they are in memory; does nothing when
    /// they were not all written yet.
    private mutating func setRaw<T: FixedWidthInteger>(_ v: T, at index: Int) {
        guard index >= 0, index + MemoryLayout<T>.size <= bytes.count else { return }
        withUnsafeBytes(of: v) { bytes.replaceSubrange(index ..< index + $0.count, with: $0) }
    }
}
