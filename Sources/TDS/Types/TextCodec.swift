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

    /// `count` bytes of code page 1252 text at `p` (every byte is valid): an ASCII run copied
    /// eight bytes at a time, other bytes mapped to their BMP scalar (at most 3 UTF-8 bytes).
    static func decodeCP1252(_ p: UnsafeRawPointer, count: Int) -> String {
        if count == 0 { return "" }
        var i = 0
        while i + 8 <= count, UInt64(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) & 0x8080_8080_8080_8080 == 0 { i += 8 }
        while i < count, p.load(fromByteOffset: i, as: UInt8.self) < 0x80 { i += 1 }
        if i == count {
            return String(unsafeUninitializedCapacity: count) { out -> Int in
                UnsafeMutableRawPointer(out.baseAddress!).copyMemory(from: p, byteCount: count)
                return count
            }
        }
        return String(unsafeUninitializedCapacity: count * 3) { out -> Int in
            let o = out.baseAddress!
            UnsafeMutableRawPointer(o).copyMemory(from: p, byteCount: i)
            var w = i
            for k in i ..< count {
                let b = p.load(fromByteOffset: k, as: UInt8.self)
                let u = UInt32((0x80...0x9F).contains(b) ? cp1252High[Int(b) - 0x80] : UInt16(b))
                if u < 0x80 {
                    o[w] = UInt8(truncatingIfNeeded: u); w += 1
                } else if u < 0x800 {
                    o[w] = UInt8(truncatingIfNeeded: 0xC0 | u >> 6); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | u & 0x3F); w += 2
                } else {
                    o[w] = UInt8(truncatingIfNeeded: 0xE0 | u >> 12); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | u >> 6 & 0x3F)
                    o[w + 2] = UInt8(truncatingIfNeeded: 0x80 | u & 0x3F); w += 3
                }
            }
            return w
        }
    }

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

    /// UTF-16LE (`byteCount` even, > 0, readable at `src`) to a native UTF-8 String: ASCII runs
    /// four units at a time, exact capacity when the text is all ASCII (up to 15 characters stay
    /// inline, no allocation). Sets `badUnit` to the index of an unpaired surrogate (and returns "").
    @inline(__always)
    static func transcodeUTF16LE(_ src: UnsafeRawPointer, byteCount: Int, badUnit: inout Int) -> String {
        let units = byteCount >> 1
        // Leading ASCII, 4 units at a time.
        var i = 0
        while i + 8 <= byteCount, allASCII(UInt64(littleEndian: src.loadUnaligned(fromByteOffset: i, as: UInt64.self))) { i += 8 }
        while i < byteCount, src.load(fromByteOffset: i + 1, as: UInt8.self) == 0, src.load(fromByteOffset: i, as: UInt8.self) < 0x80 { i += 2 }
        if i == byteCount {
            return String(unsafeUninitializedCapacity: units) { out -> Int in
                let o = UnsafeMutableRawPointer(out.baseAddress!)
                var k = 0
                while k + 8 <= byteCount {
                    o.storeBytes(of: narrow(UInt64(littleEndian: src.loadUnaligned(fromByteOffset: k, as: UInt64.self))).littleEndian,
                                 toByteOffset: k >> 1, as: UInt32.self)
                    k += 8
                }
                while k < byteCount { o.storeBytes(of: src.load(fromByteOffset: k, as: UInt8.self), toByteOffset: k >> 1, as: UInt8.self); k += 2 }
                return units
            }
        }
        var bad = -1
        let text = String(unsafeUninitializedCapacity: units * 3) { out -> Int in
            let o = out.baseAddress!
            var w = 0
            var k = 0
            // The ASCII prefix found above.
            while k < i { o[w] = src.load(fromByteOffset: k, as: UInt8.self); w += 1; k += 2 }
            while k < byteCount {
                if k + 8 <= byteCount {
                    let word = UInt64(littleEndian: src.loadUnaligned(fromByteOffset: k, as: UInt64.self))
                    if allASCII(word) {
                        UnsafeMutableRawPointer(o + w).storeBytes(of: narrow(word).littleEndian, as: UInt32.self)
                        w += 4; k += 8
                        continue
                    }
                }
                let u = UInt32(src.load(fromByteOffset: k, as: UInt8.self)) | UInt32(src.load(fromByteOffset: k + 1, as: UInt8.self)) << 8
                k += 2
                if u < 0x80 {
                    o[w] = UInt8(truncatingIfNeeded: u); w += 1
                } else if u < 0x800 {
                    o[w] = UInt8(truncatingIfNeeded: 0xC0 | u >> 6); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | u & 0x3F); w += 2
                } else if u & 0xF800 != 0xD800 {
                    o[w] = UInt8(truncatingIfNeeded: 0xE0 | u >> 12); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | u >> 6 & 0x3F)
                    o[w + 2] = UInt8(truncatingIfNeeded: 0x80 | u & 0x3F); w += 3
                } else {
                    // A high surrogate followed by a low surrogate; anything else is invalid.
                    guard u < 0xDC00, k < byteCount else { bad = (k - 2) >> 1; return 0 }
                    let l = UInt32(src.load(fromByteOffset: k, as: UInt8.self)) | UInt32(src.load(fromByteOffset: k + 1, as: UInt8.self)) << 8
                    guard l & 0xFC00 == 0xDC00 else { bad = (k - 2) >> 1; return 0 }
                    k += 2
                    let c = 0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00)
                    o[w] = UInt8(truncatingIfNeeded: 0xF0 | c >> 18); o[w + 1] = UInt8(truncatingIfNeeded: 0x80 | c >> 12 & 0x3F)
                    o[w + 2] = UInt8(truncatingIfNeeded: 0x80 | c >> 6 & 0x3F); o[w + 3] = UInt8(truncatingIfNeeded: 0x80 | c & 0x3F); w += 4
                }
            }
            return w
        }
        badUnit = bad
        return bad >= 0 ? "" : text
    }

    /// Whether `byteCount` bytes of `src` from `start` (all present) are valid UTF-16LE, as
    /// ``decodeUTF16LE(from:byteCount:)`` would accept them: an even count and every surrogate
    /// paired (a high one followed by a low one).
    static func isValidUTF16LE(_ src: UnsafeBufferPointer<UInt8>, start: Int, byteCount: Int) -> Bool {
        guard byteCount & 1 == 0 else { return false }
        guard byteCount > 0 else { return true }
        let p = UnsafeRawPointer(src.baseAddress!) + start
        var k = 0
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
