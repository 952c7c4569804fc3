import Foundation
@testable import TDS
import XCTest

/// ``TextCodec``'s fast paths (UTF-16LE and code page 1252 to String): the ASCII scans 8 and 16
/// bytes at a time, the narrowing, the scratch buffer and its limit, against Swift's own
/// transcoding, with a non-ASCII unit at every offset of a 16-byte window and beyond.
final class TextCodecTests: XCTestCase {
    static func bytes(_ units: [UInt16]) -> [UInt8] {
        units.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
    }

    /// The String of `units` as the decoder gives it, or the index of the unpaired surrogate it reports.
    static func decode(_ units: [UInt16]) -> Result<String, TDSDecodingError> {
        let b = bytes(units)
        var reader = ByteReader([0xEE] + b + [0x41, 0x00], start: 1, baseOffset: 100)
        do {
            let s = try TextCodec.decodeUTF16LE(from: &reader, byteCount: b.count)
            XCTAssertEqual(reader.offset, 1 + b.count)
            return .success(s)
        } catch {
            XCTAssertEqual(reader.offset, 1, "the reader stays where it was")
            return .failure(error)
        }
    }

    /// The index of the first unpaired surrogate of `units`, nil if none.
    static func unpaired(_ units: [UInt16]) -> Int? {
        var i = 0
        while i < units.count {
            let u = units[i]
            if (0xD800 ... 0xDBFF).contains(u) {
                guard i + 1 < units.count, (0xDC00 ... 0xDFFF).contains(units[i + 1]) else { return i }
                i += 2
            } else if (0xDC00 ... 0xDFFF).contains(u) {
                return i
            } else {
                i += 1
            }
        }
        return nil
    }

    static func check(_ units: [UInt16], file: StaticString = #filePath, line: UInt = #line) {
        // The row scan's check (at an odd start, inside other bytes) agrees with the decoder.
        let framed = [0xEE] + bytes(units) + [0x00, 0xD8, 0x41, 0x00]
        let valid = framed.withUnsafeBufferPointer { TextCodec.isValidUTF16LE($0, start: 1, byteCount: units.count * 2) }
        XCTAssertEqual(valid, unpaired(units) == nil, "isValidUTF16LE \(units)", file: file, line: line)
        // The row scan's transcoder writes only within its room (3 bytes a unit and
        // transcodeSlack): the UTF-8, its count (the unit count only when all ASCII), or the
        // unpaired surrogate's index.
        if !units.isEmpty {
            let src = bytes(units), room = units.count * 3 + TextCodec.transcodeSlack
            var out = [UInt8](repeating: 0xA5, count: room + 8)
            let w = src.withUnsafeBytes { s in
                out.withUnsafeMutableBufferPointer { TextCodec.transcodeUTF16LE(s.baseAddress!, byteCount: src.count, into: $0.baseAddress!) }
            }
            XCTAssertEqual(Array(out[room...]), [UInt8](repeating: 0xA5, count: 8), "wrote past its room: \(units)", file: file, line: line)
            if let bad = unpaired(units) {
                XCTAssertEqual(w, -1 - bad, "\(units)", file: file, line: line)
            } else {
                let utf8 = Array(String(decoding: units, as: UTF16.self).utf8)
                XCTAssertEqual(w, utf8.count, "\(units)", file: file, line: line)
                if w >= 0 { XCTAssertEqual(Array(out[..<w]), utf8, "\(units)", file: file, line: line) }
                XCTAssertEqual(w == units.count, utf8.allSatisfy { $0 < 0x80 }, "\(units)", file: file, line: line)
            }
        }
        switch (decode(units), unpaired(units)) {
        case (.success(let s), nil):
            XCTAssertEqual(s, String(decoding: units, as: UTF16.self), "\(units)", file: file, line: line)
            XCTAssertEqual(Array(s.utf16), units, "\(units)", file: file, line: line)
            // Byte for byte (String equality is canonical equivalence), and the String's own
            // reading of its bytes (its ASCII flag) right.
            let expected = String(decoding: units, as: UTF16.self)
            XCTAssertEqual(Array(s.utf8), Array(expected.utf8), "\(units)", file: file, line: line)
            XCTAssertEqual(s.count, expected.count, "\(units)", file: file, line: line)
            XCTAssertEqual(s.unicodeScalars.map(\.value), expected.unicodeScalars.map(\.value), "\(units)", file: file, line: line)
        case (.failure(let e), let bad?):
            XCTAssertEqual(e.code, .invalidEncoding, "\(units)", file: file, line: line)
            XCTAssertEqual(e.offset, 101 + 2 * bad, "\(units)", file: file, line: line)
        case (let got, let bad):
            XCTFail("\(units): got \(got), unpaired surrogate at \(bad.map(String.init) ?? "none")", file: file, line: line)
        }
    }

    /// ASCII text of every length 0...40 with one non-ASCII unit (or pair) at every position:
    /// every offset within the 16-byte and 8-byte blocks, every tail length, 1- to 4-byte UTF-8.
    func testNonASCIIAtEveryOffsetMatchesSwiftsTranscoding() {
        let specials: [[UInt16]] = [[0x7F], [0x80], [0xE9], [0x7FF], [0x800], [0x20AC], [0xD7FF], [0xE000], [0xFFFD], [0xFFFF],
                                    [0x100], [0xFF00], [0x0041 | 0x8000], [0xD83D, 0xDE00], [0xDBFF, 0xDFFF], [0xD800, 0xDC00]]
        for length in 0 ... 40 {
            let ascii = (0 ..< length).map { UInt16(0x61 + $0 % 26) }
            Self.check(ascii)
            for at in 0 ... length {
                for s in specials {
                    Self.check(Array(ascii[..<at]) + s + Array(ascii[at...]))
                }
                // Only the high byte of the unit non-zero (a unit whose low byte is ASCII).
                var high = ascii
                if at < length { high[at] |= 0x0100; Self.check(high) }
            }
        }
    }

    /// Text that is not ASCII at all, and mixed runs, around the 15-byte inline limit and across
    /// the scratch buffer's limit.
    func testNonASCIIRunsAndLongTextMatchSwiftsTranscoding() {
        let pieces = ["é", "€", "😀", "a", "Ω", "東", "ß", " "]
        var rng = SystemRandomNumberGenerator()
        for units in [1, 2, 4, 5, 7, 8, 14, 15, 16, 17, 31, 33, 100, 341, 342, 343, 500, 2000, 4000] {
            for _ in 0 ..< 8 {
                var s = ""
                while s.utf16.count < units { s += pieces.randomElement(using: &rng)! }
                Self.check(Array(s.utf16))
            }
            Self.check([UInt16](repeating: 0xE9, count: units))
            Self.check([UInt16](repeating: 0x6771, count: units))
            Self.check([UInt16](repeating: 0x41, count: units - 1) + [0xE9])
        }
    }

    /// Unpaired surrogates at every offset of the windows: the error points at the unit, the
    /// reader does not move; a pair cut by the end of the value is unpaired.
    func testUnpairedSurrogatesAtEveryOffsetAreErrorsAtTheirUnit() {
        let bad: [[UInt16]] = [[0xD800], [0xDBFF], [0xDC00], [0xDFFF], [0xDE00, 0xD83D], [0xD83D, 0x41], [0xD83D, 0xD83D], [0xD83D, 0xE9]]
        for length in [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33] {
            let ascii = (0 ..< length).map { UInt16(0x30 + $0 % 10) }
            for at in 0 ... length {
                for b in bad {
                    Self.check(Array(ascii[..<at]) + b + Array(ascii[at...]))
                    // After a non-ASCII prefix too (the transcoding loop rather than the scan).
                    Self.check([0xE9] + Array(ascii[..<at]) + b + Array(ascii[at...]))
                }
            }
            // A high surrogate as the last unit.
            Self.check(ascii + [0xD83D])
        }
        // A long value (past the scratch limit) with a surrogate error at its end.
        Self.check([UInt16](repeating: 0xE9, count: 600) + [0xDC00])
    }

    /// Every class of unit (1- to 4-byte UTF-8, the edges of each) at every offset of text of
    /// every length 0...64 that is ASCII, Latin, CJK or mixed: the ASCII prefix, the 4-unit ASCII
    /// runs inside other text, the inline limit of 15 bytes and every tail length.
    func testEveryUnitClassAtEveryOffsetOfTextOfLengths0To64() {
        let specials: [[UInt16]] = [[0x41], [0x7F], [0x80], [0xE9], [0x7FF], [0x800], [0x6771], [0xD7FF], [0xE000], [0xFFFF],
                                    [0xD83D, 0xDE00], [0xDBFF, 0xDFFF]]
        let bases: [(Int) -> UInt16] = [{ UInt16(0x61 + $0 % 26) }, { _ in 0xE9 }, { _ in 0x6771 },
                                        { [0x5A, 0x6F, 0xEB, 0x20, 0x395, 0x6771, 0x20AC, 0x41][$0 % 8] }]
        for length in 0 ... 64 {
            for base in bases {
                let text = (0 ..< length).map(base)
                Self.check(text)
                for at in 0 ... length {
                    for s in specials { Self.check(Array(text[..<at]) + s + Array(text[at...])) }
                }
            }
        }
    }

    /// Unpaired surrogates at every offset of text that is not ASCII at all (found by the
    /// transcoding loop, never by the ASCII scan), at every length 0...40.
    func testUnpairedSurrogatesInNonASCIITextAreErrorsAtTheirUnit() {
        let bad: [[UInt16]] = [[0xD800], [0xDFFF], [0xDE00, 0xD83D], [0xD83D, 0x41], [0xD83D, 0xE9], [0xD83D, 0x6771], [0xD83D, 0xD83D]]
        for length in 0 ... 40 {
            for unit: UInt16 in [0xE9, 0x6771] {
                let text = [UInt16](repeating: unit, count: length)
                for at in 0 ... length {
                    for b in bad { Self.check(Array(text[..<at]) + b + Array(text[at...])) }
                }
                Self.check(text + [0xD83D])
                Self.check(text + [0xD83D, 0xDE00] + [0xDC00])
            }
        }
    }

    /// Text dense in surrogates (pairs, lone highs and lows, highs in a row) of every length
    /// 0...64, and odd byte counts: the row scan's check and the decoder agree.
    func testSurrogateDenseTextOfLengths0To64() {
        var rng = SystemRandomNumberGenerator()
        let classes: [ClosedRange<UInt16>] = [0x41 ... 0x7A, 0xD800 ... 0xDBFF, 0xDC00 ... 0xDFFF, 0xE9 ... 0xE9, 0xD7FF ... 0xD7FF, 0xE000 ... 0xE000]
        for length in 0 ... 64 {
            for _ in 0 ..< 60 {
                var units: [UInt16] = []
                while units.count < length {
                    if Int.random(in: 0 ..< 3, using: &rng) == 0, units.count + 2 <= length {
                        units += [UInt16.random(in: 0xD800 ... 0xDBFF, using: &rng), UInt16.random(in: 0xDC00 ... 0xDFFF, using: &rng)]
                    } else {
                        units.append(UInt16.random(in: classes.randomElement(using: &rng)!, using: &rng))
                    }
                }
                Self.check(units)
            }
            let b = Self.bytes([UInt16](repeating: 0x41, count: length)) + [0x41]
            XCTAssertFalse(b.withUnsafeBufferPointer { TextCodec.isValidUTF16LE($0, start: 0, byteCount: b.count) }, "odd length \(b.count)")
        }
    }

    /// The wire row path's transcoder (no reader) gives the same strings.
    func testTranscodeWithoutReaderMatches() {
        for units: [UInt16] in [[0x41], Array("hello world, ça va? 😀 東京".utf16), [UInt16](repeating: 0x7A, count: 33)] {
            let b = Self.bytes(units)
            var bad = -1
            let s = b.withUnsafeBytes { TextCodec.transcodeUTF16LE($0.baseAddress!, byteCount: b.count, badUnit: &bad) }
            XCTAssertEqual(bad, -1)
            XCTAssertEqual(s, String(decoding: units, as: UTF16.self))
        }
        var bad = -1
        let b = Self.bytes([0x41, 0x42, 0xDC00])
        let s = b.withUnsafeBytes { TextCodec.transcodeUTF16LE($0.baseAddress!, byteCount: b.count, badUnit: &bad) }
        XCTAssertEqual(bad, 2)
        XCTAssertEqual(s, "")
    }

    /// Code page 1252: every byte at every offset of ASCII text of lengths 0...40 (16- and 8-byte
    /// scans, tails), against the Windows table; the 5 undefined bytes as C1 controls.
    func testCP1252EveryByteAtEveryOffset() {
        func scalar(_ b: UInt8) -> Unicode.Scalar {
            (0x80 ... 0x9F).contains(b) ? Unicode.Scalar(TextCodec.cp1252High[Int(b) - 0x80])! : Unicode.Scalar(b)
        }
        func expected(_ bytes: [UInt8]) -> String {
            var s = String.UnicodeScalarView()
            for b in bytes { s.append(scalar(b)) }
            return String(s)
        }
        func decode(_ bytes: [UInt8]) -> String {
            let s = bytes.isEmpty ? TextCodec.decodeCP1252(UnsafeRawPointer(bitPattern: 1)!, count: 0)
                : bytes.withUnsafeBytes { TextCodec.decodeCP1252($0.baseAddress!, count: bytes.count) }
            // Byte for byte, and the String's reading of its own bytes (its ASCII flag) right.
            let e = expected(bytes)
            XCTAssertEqual(Array(s.utf8), Array(e.utf8))
            XCTAssertEqual(s.count, e.count)
            XCTAssertEqual(s.unicodeScalars.map(\.value), e.unicodeScalars.map(\.value))
            return s
        }
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40] {
            let ascii = (0 ..< length).map { UInt8(0x41 + $0 % 26) }
            XCTAssertEqual(decode(ascii), expected(ascii))
            for at in 0 ... length {
                for b in [UInt8](0x7F ... 0xFF) {
                    let text = Array(ascii[..<at]) + [b] + Array(ascii[at...])
                    XCTAssertEqual(decode(text), expected(text), "\(text)")
                }
            }
        }
        // All non-ASCII, short and past the scratch limit.
        for count in [1, 5, 6, 15, 100, 341, 342, 1000] {
            let text = (0 ..< count).map { UInt8(0x80 + $0 % 128) }
            XCTAssertEqual(decode(text), expected(text))
        }
        XCTAssertEqual(decode([0x81, 0x8D, 0x8F, 0x90, 0x9D]), "\u{81}\u{8D}\u{8F}\u{90}\u{9D}")
        XCTAssertEqual(decode([0x80, 0x41]), "€A")
    }

    // MARK: - Hostile input: never ill-formed UTF-8, never a wrong ASCII flag

    /// `s` is sound as a String: its bytes are well-formed UTF-8 (validated afresh, not by `s`),
    /// its ASCII flag (which the String trusts for its UTF-16 view and indexing) says what its
    /// bytes say, and its UTF-16 view is `units`.
    static func assertSound(_ s: String, units: [UInt16], _ what: @autoclosure () -> String,
                            file: StaticString = #filePath, line: UInt = #line) {
        let utf8 = Array(s.utf8)
        XCTAssertNotNil(String(validating: utf8, as: UTF8.self), "ill-formed UTF-8 for \(what())", file: file, line: line)
        XCTAssertEqual(s._classify()._isASCII, utf8.allSatisfy { $0 < 0x80 }, "ASCII flag for \(what())", file: file, line: line)
        XCTAssertEqual(s.utf16.count, units.count, "UTF-16 count for \(what())", file: file, line: line)
        XCTAssertEqual(Array(s.utf16), units, "UTF-16 of \(what())", file: file, line: line)
        XCTAssertEqual(s.unicodeScalars.count, String(decoding: units, as: UTF16.self).unicodeScalars.count, file: file, line: line)
    }

    /// Random UTF-16LE bytes as a hostile server may send them: units drawn from every class
    /// (ASCII, NUL, 2- and 3-byte, the edges, lone and paired surrogates, 0xFFFE/0xFFFF, bytes
    /// with only the high byte set), raw random bytes, odd byte counts; lengths 0...64 and long
    /// (past the scratch limit). Each is decoded through the reader (errors: the oracle's) and
    /// through the wire row path's transcoder, and must be sound (``assertSound``) and equal
    /// the standard library's own decoding, byte for byte.
    func testHostileUTF16NeverGivesIllFormedUTF8OrAWrongASCIIFlag() {
        var rng = SplitMix64(seed: 0x5EED_0012)
        func unit() -> UInt16 {
            switch Int.random(in: 0 ..< 12, using: &rng) {
            case 0, 1, 2: return UInt16.random(in: 0 ... 0x7F, using: &rng)
            case 3: return [0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFE, 0xFFFF, 0xFEFF].randomElement(using: &rng)!
            case 4: return UInt16.random(in: 0x80 ... 0x7FF, using: &rng)
            case 5: return UInt16.random(in: 0x800 ... 0xD7FF, using: &rng)
            case 6: return UInt16.random(in: 0xD800 ... 0xDBFF, using: &rng)
            case 7: return UInt16.random(in: 0xDC00 ... 0xDFFF, using: &rng)
            case 8: return UInt16.random(in: 0x01 ... 0x7F, using: &rng) << 8   // ASCII low byte 0, high byte set
            case 9: return UInt16.random(in: 0x00 ... 0x7F, using: &rng) | 0x0100
            default: return UInt16.random(in: 0 ... 0xFFFF, using: &rng)
            }
        }
        func check(_ bytes: [UInt8]) {
            let units: [UInt16] = stride(from: 0, to: bytes.count & ~1, by: 2).map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
            let oracle = bytes.count % 2 == 0 ? String(validating: units, as: UTF16.self) : nil
            var reader = ByteReader([0xEE] + bytes + [0x00, 0xD8], start: 1, baseOffset: 0)
            do {
                let s = try TextCodec.decodeUTF16LE(from: &reader, byteCount: bytes.count)
                guard let oracle else { return XCTFail("accepted \(bytes)") }
                Self.assertSound(s, units: units, "\(bytes)")
                XCTAssertEqual(Array(s.utf8), Array(oracle.utf8), "\(bytes)")
            } catch {
                XCTAssertNil(oracle, "refused valid UTF-16 \(bytes): \(error)")
                XCTAssertEqual(reader.offset, 1)
            }
            guard bytes.count % 2 == 0, !bytes.isEmpty else { return }
            var bad = -1
            let t = bytes.withUnsafeBytes { TextCodec.transcodeUTF16LE($0.baseAddress!, byteCount: bytes.count, badUnit: &bad) }
            if let oracle {
                XCTAssertEqual(bad, -1, "\(bytes)")
                Self.assertSound(t, units: units, "\(bytes) (row path)")
                XCTAssertEqual(Array(t.utf8), Array(oracle.utf8), "\(bytes) (row path)")
            } else {
                XCTAssertGreaterThanOrEqual(bad, 0, "\(bytes) (row path)")
                XCTAssertEqual(t, "")
            }
        }
        for length in 0 ... 64 {
            for _ in 0 ..< 300 {
                // Mostly valid text (pairs kept together) with a bad unit now and then.
                var units: [UInt16] = []
                while units.count < length {
                    if Int.random(in: 0 ..< 4, using: &rng) == 0 {
                        units += [UInt16.random(in: 0xD800 ... 0xDBFF, using: &rng), UInt16.random(in: 0xDC00 ... 0xDFFF, using: &rng)]
                    } else {
                        let u = unit()
                        if (0xD800 ... 0xDFFF).contains(u), Int.random(in: 0 ..< 8, using: &rng) != 0 { continue }
                        units.append(u)
                    }
                }
                check(Self.bytes(units))
            }
            for _ in 0 ..< 40 {
                check((0 ..< length).map { _ in UInt8.random(in: 0 ... 255, using: &rng) })
                check(Self.bytes((0 ..< length).map { _ in unit() }))
                check(Self.bytes((0 ..< length).map { _ in unit() }) + [UInt8.random(in: 0 ... 255, using: &rng)])   // odd
            }
        }
        // Long text around and past the scratch limit (3 bytes a unit: 341 units), valid and not.
        for length in [300, 340, 341, 342, 343, 500, 1000, 5000] {
            for _ in 0 ..< 12 {
                var units = (0 ..< length).map { _ in unit() }.filter { !(0xD800 ... 0xDFFF).contains($0) }
                check(Self.bytes(units))
                units.insert(0xDC00, at: Int.random(in: 0 ... units.count, using: &rng))
                check(Self.bytes(units))
                check((0 ..< 2 * length).map { _ in UInt8.random(in: 0 ... 255, using: &rng) })
            }
            check(Self.bytes([UInt16](repeating: 0x41, count: length)))
            check(Self.bytes([UInt16](repeating: 0x41, count: length - 1) + [0xE9]))
            check(Self.bytes([0xE9] + [UInt16](repeating: 0x41, count: length - 1)))
        }
    }

    /// Random code page 1252 bytes (dense in 0x80-0x9F, the undefined five, 0xA0-0xFF, ASCII runs)
    /// of lengths 0...64 and long: sound (``assertSound``) and equal to the Windows table
    /// (Foundation's windowsCP1252 where it decodes: it leaves the five undefined bytes out).
    func testHostileCP1252NeverGivesIllFormedUTF8OrAWrongASCIIFlag() {
        var rng = SplitMix64(seed: 0xC1252)
        func byte() -> UInt8 {
            switch Int.random(in: 0 ..< 4, using: &rng) {
            case 0: return UInt8.random(in: 0 ... 0x7F, using: &rng)
            case 1: return UInt8.random(in: 0x80 ... 0x9F, using: &rng)
            case 2: return [0x81, 0x8D, 0x8F, 0x90, 0x9D, 0x00, 0x7F, 0xA0, 0xFF].randomElement(using: &rng)!
            default: return UInt8.random(in: 0 ... 0xFF, using: &rng)
            }
        }
        func check(_ bytes: [UInt8]) {
            let s = bytes.isEmpty ? TextCodec.decodeCP1252(UnsafeRawPointer(bitPattern: 1)!, count: 0)
                : bytes.withUnsafeBytes { TextCodec.decodeCP1252($0.baseAddress!, count: bytes.count) }
            var scalars = String.UnicodeScalarView()
            for b in bytes { scalars.append(Unicode.Scalar((0x80 ... 0x9F).contains(b) ? TextCodec.cp1252High[Int(b) - 0x80] : UInt16(b))!) }
            let expected = String(scalars)
            Self.assertSound(s, units: Array(expected.utf16), "\(bytes)")
            XCTAssertEqual(Array(s.utf8), Array(expected.utf8), "\(bytes)")
            if !bytes.contains(where: { [0x81, 0x8D, 0x8F, 0x90, 0x9D].contains($0) }),
               let foundation = String(data: Data(bytes), encoding: .windowsCP1252) {
                XCTAssertEqual(Array(s.unicodeScalars), Array(foundation.unicodeScalars), "\(bytes) (Foundation)")
            }
        }
        for length in 0 ... 64 {
            for _ in 0 ..< 200 { check((0 ..< length).map { _ in byte() }) }
            // ASCII with one high byte at a random place.
            var ascii = (0 ..< length).map { _ in UInt8.random(in: 0 ... 0x7F, using: &rng) }
            check(ascii)
            if length > 0 { ascii[Int.random(in: 0 ..< length, using: &rng)] = UInt8.random(in: 0x80 ... 0xFF, using: &rng); check(ascii) }
        }
        for length in [300, 341, 342, 343, 1000, 5000] {
            for _ in 0 ..< 10 { check((0 ..< length).map { _ in byte() }) }
            check([UInt8](repeating: 0x41, count: length - 1) + [0x80])
        }
    }
}
