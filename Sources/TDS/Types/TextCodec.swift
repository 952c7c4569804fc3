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
            case 1252:
                // Every 1252 byte maps to one BMP scalar (at most 3 UTF-8 bytes).
                text = String(unsafeUninitializedCapacity: count * 3) { out -> Int in
                    var o = 0
                    for i in start ..< end {
                        let b = bytes[i]
                        let u = UInt32((0x80...0x9F).contains(b) ? cp1252High[Int(b) - 0x80] : UInt16(b))
                        if u < 0x80 {
                            out[o] = UInt8(u); o += 1
                        } else if u < 0x800 {
                            out[o] = UInt8(0xC0 | u >> 6); out[o + 1] = UInt8(0x80 | u & 0x3F); o += 2
                        } else {
                            out[o] = UInt8(0xE0 | u >> 12); out[o + 1] = UInt8(0x80 | u >> 6 & 0x3F)
                            out[o + 2] = UInt8(0x80 | u & 0x3F); o += 3
                        }
                    }
                    return o
                }
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
        let units = byteCount / 2
        var badUnit = -1
        let text = reader.bytes.withUnsafeBufferPointer { src -> String in
            String(unsafeUninitializedCapacity: units * 3) { out -> Int in
                var o = 0, i = start
                let end = start + byteCount
                while i < end {
                    let u = UInt32(src[i]) | UInt32(src[i + 1]) << 8
                    i += 2
                    if u < 0x80 {
                        out[o] = UInt8(u); o += 1
                    } else if u < 0x800 {
                        out[o] = UInt8(0xC0 | u >> 6); out[o + 1] = UInt8(0x80 | u & 0x3F); o += 2
                    } else if u < 0xD800 || u > 0xDFFF {
                        out[o] = UInt8(0xE0 | u >> 12); out[o + 1] = UInt8(0x80 | u >> 6 & 0x3F)
                        out[o + 2] = UInt8(0x80 | u & 0x3F); o += 3
                    } else {
                        // A high surrogate followed by a low surrogate; anything else is invalid.
                        guard u < 0xDC00, i < end else { badUnit = (i - 2 - start) / 2; return 0 }
                        let l = UInt32(src[i]) | UInt32(src[i + 1]) << 8
                        guard (0xDC00...0xDFFF).contains(l) else { badUnit = (i - 2 - start) / 2; return 0 }
                        i += 2
                        let c = 0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00)
                        out[o] = UInt8(0xF0 | c >> 18); out[o + 1] = UInt8(0x80 | c >> 12 & 0x3F)
                        out[o + 2] = UInt8(0x80 | c >> 6 & 0x3F); out[o + 3] = UInt8(0x80 | c & 0x3F); o += 4
                    }
                }
                return o
            }
        }
        if badUnit >= 0 {
            throw reader.error(.invalidEncoding, at: start + badUnit * 2, "invalid UTF-16 (unpaired surrogate)")
        }
        reader.offset = start + byteCount
        return text
    }
}
