import Foundation
#if canImport(CoreFoundation)
import CoreFoundation
#endif

/// Single-byte and multi-byte code page text for char/varchar/text ([MS-TDS] 2.2.5.1.2: the
/// column collation's code page).
///
/// 1252 and UTF-8 (65001) are decoded here (1252's five undefined bytes 0x81, 0x8D, 0x8F, 0x90,
/// 0x9D map to the C1 controls U+0081 … as Windows does); other code pages (874, 932, 936, 949,
/// 950, 1250-1258, 437, 850) go through Foundation's CoreFoundation encodings.
enum TextCodec {
    static let cp1252High: [UInt16] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
        0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
    ]

    static func foundationEncoding(codePage: Int) -> String.Encoding? {
        let cf = CFStringConvertWindowsCodepageToEncoding(UInt32(truncatingIfNeeded: codePage))
        guard cf != kCFStringEncodingInvalidId else { return nil }
        return String.Encoding(rawValue: CFStringConvertEncodingToNSStringEncoding(cf))
    }

    /// Decodes `count` bytes (checked first) in the collation's code page (1252 when nil).
    /// Throws `.invalidEncoding` at the value's offset for bytes invalid in the code page.
    static func decode(from reader: inout ByteReader, count: Int, collation: Collation?) throws(TDSDecodingError) -> String {
        try reader.require(count)
        let start = reader.offset
        let end = start + count
        let bytes = reader.bytes
        let codePage = collation?.codePage ?? 1252
        if count == 0 {
            return ""
        }
        if codePage == 1252 {
            let text = bytes.withUnsafeBytes { TextCodec.decodeCP1252($0.baseAddress! + start, count: count) }
            reader.offset = end
            return text
        }
        var ascii = true
        for i in start ..< end where bytes[i] >= 0x80 { ascii = false; break }
        let text: String
        if ascii {
            text = String(decoding: bytes[start ..< end], as: UTF8.self)
        } else {
            switch codePage {
            case 65001:
                guard let s = String(validating: bytes[start ..< end], as: UTF8.self) else {
                    throw reader.error(.invalidEncoding, at: start, "invalid UTF-8")
                }
                text = s
            default:
                guard let enc = foundationEncoding(codePage: codePage),
                      let s = String(data: Data(bytes[start ..< end]), encoding: enc) else {
                    throw reader.error(.invalidEncoding, at: start, "bytes invalid in code page \(codePage)")
                }
                text = s
            }
        }
        reader.offset = end
        return text
    }

    /// `count` bytes of code page 1252 text at `p` (every byte is valid): an ASCII run found
    /// sixteen bytes at a time and copied whole; other bytes mapped to their BMP scalar (at most 3
    /// UTF-8 bytes) in a scratch buffer, then copied into a String of exactly their length (up to
    /// 15 UTF-8 bytes stay inline: no allocation), without a validation pass
    /// (``uncheckedString(_:count:isASCII:)``).
    static func decodeCP1252(_ p: UnsafeRawPointer, count: Int) -> String {
        if count == 0 { return "" }
        var i = 0
        while i + 16 <= count,
              (p.loadUnaligned(fromByteOffset: i, as: UInt64.self) | p.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))
                & 0x8080_8080_8080_8080 == 0 { i += 16 }
        if i + 8 <= count, p.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i += 8 }
        while i < count, p.load(fromByteOffset: i, as: UInt8.self) < 0x80 { i += 1 }
        if i == count {
            return uncheckedString(p.assumingMemoryBound(to: UInt8.self), count: count, isASCII: true)
        }
        let prefix = i
        let capacity = count * 3
        if capacity > scratchLimit {
            return String(unsafeUninitializedCapacity: capacity) { out -> Int in
                transcodeCP1252(p, count: count, asciiPrefix: prefix, into: out.baseAddress!)
            }
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { scratch -> String in
            let source = scratch.baseAddress!
            let w = transcodeCP1252(p, count: count, asciiPrefix: prefix, into: source)
            return uncheckedString(source, count: w, isASCII: false)   // a byte >= 0x80 gave 2 or 3
        }
    }

    /// Writes the UTF-8 of `count` bytes of code page 1252 at `p` (the first `prefix` ASCII) at
    /// `o`, which has room for 3 bytes a byte; returns the count written.
    @inline(__always)
    static func transcodeCP1252(_ p: UnsafeRawPointer, count: Int, asciiPrefix prefix: Int, into o: UnsafeMutablePointer<UInt8>) -> Int {
        UnsafeMutableRawPointer(o).copyMemory(from: p, byteCount: prefix)
        var w = prefix
        for k in prefix ..< count {
            let b = p.load(fromByteOffset: k, as: UInt8.self)
            if b < 0x80 { o[w] = b; w += 1; continue }
            let u = UInt32(b <= 0x9F ? cp1252High[Int(b) - 0x80] : UInt16(b))
            if u < 0x800 {
                o[w] = UInt8(truncatingIfNeeded: 0xC0 | u >> 6); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | u & 0x3F); w += 2
            } else {
                o[w] = UInt8(truncatingIfNeeded: 0xE0 | u >> 12); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | u >> 6 & 0x3F)
                o[w + 2] = UInt8(truncatingIfNeeded: 0x80 | u & 0x3F); w += 3
            }
        }
        return w
    }

    /// The room ``transcodeUTF16LE(_:byteCount:into:)`` needs past 3 bytes a unit (it stores a
    /// 1- to 3-byte sequence as 4 bytes).
    static let transcodeSlack = 1

    /// The largest transcoding scratch buffer taken on the stack (bytes); longer text is
    /// transcoded straight into a String of the worst-case capacity.
    static let scratchLimit = 1024

    /// Encodes text in the collation's code page (1252 when nil); nil if not representable.
    static func encode(_ s: String, collation: Collation?) -> [UInt8]? {
        let codePage = collation?.codePage ?? 1252
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return Array(s.utf8) }
        switch codePage {
        case 65001:
            return Array(s.utf8)
        case 1252:
            var out = [UInt8]()
            out.reserveCapacity(s.unicodeScalars.count)
            for sc in s.unicodeScalars {
                let v = sc.value
                if v < 0x80 || (0xA0...0xFF).contains(v) {
                    out.append(UInt8(v))
                } else if let i = cp1252High.firstIndex(of: UInt16(truncatingIfNeeded: v)), v <= 0xFFFF {
                    out.append(UInt8(0x80 + i))
                } else {
                    return nil
                }
            }
            return out
        default:
            guard let enc = foundationEncoding(codePage: codePage), let d = s.data(using: enc, allowLossyConversion: false) else {
                return nil
            }
            return [UInt8](d)
        }
    }

    /// Decodes `byteCount` bytes (checked first) of UTF-16LE straight into a UTF-8 String.
    /// Throws `.invalidLength` for an odd byte count and `.invalidEncoding` at the offset of an
    /// unpaired surrogate.
    static func decodeUTF16LE(from reader: inout ByteReader, byteCount: Int) throws(TDSDecodingError) -> String {
        try reader.require(byteCount)
        guard byteCount % 2 == 0 else {
            throw reader.error(.invalidLength, "UTF-16 text of odd byte length \(byteCount)")
        }
        if byteCount == 0 { return "" }
        let start = reader.offset
        var badUnit = -1
        let text = reader.bytes.withUnsafeBufferPointer { src -> String in
            transcodeUTF16LE(UnsafeRawPointer(src.baseAddress!) + start, byteCount: byteCount, badUnit: &badUnit)
        }
        if badUnit >= 0 {
            throw reader.error(.invalidEncoding, at: start + badUnit * 2, "invalid UTF-16 (unpaired surrogate)")
        }
        reader.offset = start + byteCount
        return text
    }

    /// The 4 UTF-16 units of `w` (little-endian) are all ASCII.
    @inline(__always)
    static func allASCII(_ w: UInt64) -> Bool { w & 0xFF80_FF80_FF80_FF80 == 0 }

    /// The low bytes of the 4 units of `w` (all ASCII), as 4 bytes.
    @inline(__always)
    static func narrow(_ w: UInt64) -> UInt32 {
        var x = w & 0x00FF_00FF_00FF_00FF
        x = (x | x >> 8) & 0x0000_FFFF_0000_FFFF
        x = (x | x >> 16) & 0x0000_0000_FFFF_FFFF
        return UInt32(truncatingIfNeeded: x)
    }

    /// UTF-16LE (`byteCount` even, > 0, readable at `src`) to a native UTF-8 String: transcoded
    /// in one pass (``transcodeUTF16LE(_:byteCount:into:)``) into a scratch buffer on the stack,
    /// then copied into a String of exactly the UTF-8 length (up to 15 bytes stay inline: no
    /// allocation) without a second pass to validate it (``uncheckedString(_:count:isASCII:)``:
    /// the transcoder only writes well-formed UTF-8). Text longer than the scratch limit is
    /// transcoded straight into a String of the worst-case capacity.
    ///
    /// Sets `badUnit` to the index of an unpaired surrogate (and returns ""): a high surrogate
    /// not followed by a low one, or a low one alone.
    @inline(__always)
    static func transcodeUTF16LE(_ src: UnsafeRawPointer, byteCount: Int, badUnit: inout Int) -> String {
        let units = byteCount >> 1
        let capacity = units * 3 + transcodeSlack
        if capacity > scratchLimit {
            var written = 0
            let text = String(unsafeUninitializedCapacity: capacity) { out -> Int in
                written = transcodeUTF16LE(src, byteCount: byteCount, into: out.baseAddress!)
                return Swift.max(written, 0)
            }
            if written < 0 { badUnit = -1 - written; return "" }
            return text
        }
        let (text, written) = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Swift.max(capacity, 1)) { scratch -> (String, Int) in
            let o = scratch.baseAddress!
            let w = transcodeUTF16LE(src, byteCount: byteCount, into: o)
            if w <= 0 { return ("", w) }
            // Every unit gives at least one byte, exactly one only when it is ASCII.
            return (uncheckedString(o, count: w, isASCII: w == units), w)
        }
        if written < 0 { badUnit = -1 - written; return "" }
        return text
    }

    /// Writes the UTF-8 of `byteCount` bytes of UTF-16LE at `src` at `o`, which has room for 3
    /// bytes a unit and 1 more (``transcodeSlack``), in one pass: ASCII runs narrowed 8 units at
    /// a time, other units as 1-3 bytes without a branch on their size, a surrogate pair as 4. Returns the count written (equal to the unit count only when every unit is
    /// ASCII), or `-1 - i` for an unpaired surrogate at unit `i`. Writes only well-formed UTF-8.
    @inline(__always)
    static func transcodeUTF16LE(_ src: UnsafeRawPointer, byteCount: Int, into o: UnsafeMutablePointer<UInt8>) -> Int {
        @inline(__always) func word(_ k: Int) -> UInt64 { UInt64(littleEndian: src.loadUnaligned(fromByteOffset: k, as: UInt64.self)) }
        var k = 0
        var w = 0
        while k < byteCount {
            // 8 ASCII units at once when the next 8 all are (at least as many units remain as
            // bytes written, so the write stays in the 3-bytes-a-unit room).
            if k + 16 <= byteCount {
                let a = word(k), b = word(k + 8)
                if allASCII(a | b) {
                    UnsafeMutableRawPointer(o + w).storeBytes(of: (UInt64(narrow(a)) | UInt64(narrow(b)) << 32).littleEndian, as: UInt64.self)
                    w += 8; k += 16
                    continue
                }
            }
            let u = UInt32(src.load(fromByteOffset: k, as: UInt8.self)) | UInt32(src.load(fromByteOffset: k + 1, as: UInt8.self)) << 8
            k += 2
            if u & 0xF800 != 0xD800 {
                // 1, 2 (below 0x800) or 3 bytes, chosen without a branch (text mixing scripts
                // would mispredict one), stored as 4: the rest is overwritten by what follows or
                // lies in the 1 byte of room past 3 a unit (``transcodeSlack``).
                let two = (0xC0 | u >> 6) | (0x80 | u & 0x3F) << 8
                let three = (0xE0 | u >> 12) | (0x80 | u >> 6 & 0x3F) << 8 | (0x80 | u & 0x3F) << 16
                let ascii = u < 0x80, long = u >= 0x800
                let v = ascii ? u : long ? three : two
                UnsafeMutableRawPointer(o + w).storeBytes(of: v.littleEndian, as: UInt32.self)
                w += 1 &+ (ascii ? 0 : 1) &+ (long ? 1 : 0)
            } else {
                // A high surrogate followed by a low surrogate; anything else is invalid.
                guard u < 0xDC00, k < byteCount else { return -1 - (k - 2) >> 1 }
                let l = UInt32(src.load(fromByteOffset: k, as: UInt8.self)) | UInt32(src.load(fromByteOffset: k + 1, as: UInt8.self)) << 8
                guard l & 0xFC00 == 0xDC00 else { return -1 - (k - 2) >> 1 }
                k += 2
                let c = 0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00)
                o[w] = UInt8(truncatingIfNeeded: 0xF0 | c >> 18); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | c >> 12 & 0x3F)
                o[w + 2] = UInt8(truncatingIfNeeded: 0x80 | c >> 6 & 0x3F); o[w + 3] = UInt8(truncatingIfNeeded: 0x80 | c & 0x3F); w += 4
            }
        }
        return w
    }

    /// A String of the `count` bytes at `utf8`, which the caller wrote and knows to be
    /// well-formed UTF-8 (all ASCII when `isASCII`), copied as they are: no validation pass
    /// (`String(unsafeUninitializedCapacity:initializingUTF8With:)` validates every new String
    /// again, as much as the transcoding itself costs). Up to 15 bytes stay inline. A wrong
    /// `isASCII` or ill-formed bytes would break the String's invariants: only our transcoders'
    /// output comes here.
    @inline(__always)
    static func uncheckedString(_ utf8: UnsafePointer<UInt8>, count: Int, isASCII: Bool) -> String {
        let bytes = UnsafeBufferPointer(start: utf8, count: count)
        // SE-0464: a UTF8Span of bytes known to be well-formed (`unchecked`), copied into a
        // native String as they are. It is Swift 6.2 standard library API, so it is compiled only
        // where the standard library is the toolchain's own (not an Apple SDK's, which may be
        // older than the compiler: Xcode 16's is 6.1); Apple platforms validate instead.
        #if compiler(>=6.2) && !canImport(Darwin)
        return String(copying: unsafe UTF8Span(unchecked: bytes.span, isKnownASCII: isASCII))
        #else
        return String(unsafeUninitializedCapacity: count) { out -> Int in
            _ = out.initialize(fromContentsOf: bytes)
            return count
        }
        #endif
    }

    /// Whether `byteCount` bytes of `src` from `start` (all present) are valid UTF-16LE, as
    /// ``decodeUTF16LE(from:byteCount:)`` would accept them: an even count and every surrogate
    /// paired (a high one followed by a low one).
    static func isValidUTF16LE(_ src: UnsafeBufferPointer<UInt8>, start: Int, byteCount: Int) -> Bool {
        guard byteCount & 1 == 0 else { return false }
        guard byteCount > 0 else { return true }
        let p = UnsafeRawPointer(src.baseAddress!) + start
        // Bit 15 of a lane set iff that lane of `w` (4 units) is a surrogate (0xD800...0xDFFF).
        @inline(__always) func surrogateLanes(_ w: UInt64) -> UInt64 {
            let s = (w & 0xF800_F800_F800_F800) ^ 0xD800_D800_D800_D800   // a lane is 0 iff a surrogate
            return (s &- 0x0001_0001_0001_0001) & ~s & 0x8000_8000_8000_8000
        }
        var k = 0
        // No surrogate among 8 units: skip them at once.
        while k + 16 <= byteCount,
              surrogateLanes(UInt64(littleEndian: p.loadUnaligned(fromByteOffset: k, as: UInt64.self)))
                | surrogateLanes(UInt64(littleEndian: p.loadUnaligned(fromByteOffset: k + 8, as: UInt64.self))) == 0 {
            k += 16
        }
        while k < byteCount {
            if k + 8 <= byteCount {
                // No unit of the 4 is a surrogate (0xD800...0xDFFF): test the 4 high bytes at once.
                let w = UInt64(littleEndian: p.loadUnaligned(fromByteOffset: k, as: UInt64.self))
                let s = (w & 0xF800_F800_F800_F800) ^ 0xD800_D800_D800_D800   // a lane is 0 iff a surrogate
                if (s &- 0x0001_0001_0001_0001) & ~s & 0x8000_8000_8000_8000 == 0 { k += 8; continue }
            }
            let u = UInt16(p.load(fromByteOffset: k, as: UInt8.self)) | UInt16(p.load(fromByteOffset: k + 1, as: UInt8.self)) << 8
            k += 2
            if u & 0xF800 != 0xD800 { continue }
            guard u < 0xDC00, k < byteCount else { return false }
            let l = UInt16(p.load(fromByteOffset: k, as: UInt8.self)) | UInt16(p.load(fromByteOffset: k + 1, as: UInt8.self)) << 8
            guard l & 0xFC00 == 0xDC00 else { return false }
            k += 2
        }
        return true
    }
}
