import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// ``WireRowBlock``'s nchar/nvarchar values kept as UTF-8 (``WireColumn/Kind/utf16``), fed what a
/// hostile server can send: every UTF-16 unit class (ASCII, NUL, 2- and 3-byte BMP, U+FFFF,
/// paired and lone surrogates) at every position, odd and zero lengths, 0xFFFF NULL and bitmap
/// NULL, lengths at and past ``TokenStreamDecoder/wireTextLimit``. Each block's bytes are
/// compared with a model built independently from the wire (token, bitmap, other values copied,
/// each text value as its 2-byte header then Swift's own UTF-8 of it), every String read from a
/// block is checked against one Swift validated (a wrong ASCII flag changes `count` and `utf16`),
/// and the transcoder must never write past its room.
final class WireRowBlockUTF8HostileTests: XCTestCase {
    // MARK: Wire building

    /// UTF-16 units a hostile value is made of: ASCII, NUL, DEL, the 2-byte and 3-byte UTF-8
    /// boundaries, U+FFFF/U+FFFE, a high and a low surrogate at both ends of their ranges.
    static let alphabet: [UInt16] = [0x41, 0x00, 0x7F, 0x80, 0x7FF, 0x800, 0x6F22, 0xFFFF, 0xFFFE,
                                     0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xD83D, 0xDE00, 0x20]

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func bytes(_ units: [UInt16]) -> [UInt8] { units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }

    /// Index of the first unpaired surrogate of `units`, nil when every surrogate is paired.
    static func unpaired(_ units: [UInt16]) -> Int? {
        var i = 0
        while i < units.count {
            let u = units[i]
            if u & 0xF800 == 0xD800 {
                guard u < 0xDC00, i + 1 < units.count, units[i + 1] & 0xFC00 == 0xDC00 else { return i }
                i += 2
            } else {
                i += 1
            }
        }
        return nil
    }

    /// One cell of a hostile row: an int (INTN 4), text (a UTF-16 value, possibly invalid, or raw
    /// bytes of any length), or NULL (0xFFFF for text, 0 for the int, or by the NBCROW bitmap).
    enum Cell {
        case int(Int32?)
        case text([UInt16]?)
        case rawText([UInt8])   // the length prefix says `count` bytes (odd or over the limit)
        case cp1252([UInt8]?)   // varchar(50), code page 1252
    }

    /// The columns of the hostile results: int, nvarchar(4000), nchar(10), varchar(50), nvarchar(50).
    static let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "i"),
                          ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(4000), name: "t"),
                          ColumnMetadata(flags: [.nullable], typeInfo: .nchar(10), name: "c"),
                          ColumnMetadata(flags: [.nullable], typeInfo: .varchar(50, collation: .sqlLatin1GeneralCP1CIAS), name: "v"),
                          ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(50), name: "u")]

    static func isNull(_ c: Cell) -> Bool {
        switch c {
        case .int(nil), .text(nil), .cp1252(nil): return true
        default: return false
        }
    }

    /// The wire bytes of a cell (not NULL by bitmap).
    static func wire(_ c: Cell) -> [UInt8] {
        switch c {
        case .int(let v?): return [4] + withUnsafeBytes(of: v.littleEndian, Array.init)
        case .int(nil): return [0]
        case .text(let u?): return le16(u.count * 2) + bytes(u)
        case .text(nil): return [0xFF, 0xFF]
        case .rawText(let b): return le16(b.count) + b
        case .cp1252(let b?): return le16(b.count) + b
        case .cp1252(nil): return [0xFF, 0xFF]
        }
    }

    /// What a block holds for a cell: the wire bytes, text as its UTF-8 header and bytes.
    static func blockBytes(_ c: Cell) -> [UInt8] {
        if case .text(let u?) = c {
            let utf8 = Array(String(decoding: u, as: UTF16.self).utf8)
            let ascii = utf8.allSatisfy { $0 < 0x80 }
            return le16(utf8.count | (ascii ? 0x8000 : 0)) + utf8
        }
        return wire(c)
    }

    /// The value the token decoder gives for a valid cell.
    static func value(_ c: Cell) -> SQLValue {
        switch c {
        case .int(let v?): return .int(v)
        case .text(let u?): return .string(String(decoding: u, as: UTF16.self))
        case .cp1252(let b?): return .string(b.map { String(UnicodeScalar($0)) }.joined())   // tests use ASCII and Latin-1 letters
        default: return .null
        }
    }

    /// A row token (NBCROW when `nbc`: NULL cells by the bitmap) and its bytes in a block.
    static func row(_ cells: [Cell], nbc: Bool) -> (wire: [UInt8], block: [UInt8]) {
        var w: [UInt8] = [nbc ? 0xD2 : 0xD1]
        var bitmap = [UInt8](repeating: 0, count: (cells.count + 7) / 8)
        if nbc {
            for (i, c) in cells.enumerated() where isNull(c) { bitmap[i / 8] |= 1 << UInt8(i % 8) }
            w += bitmap
        }
        var b = w
        for c in cells where !(nbc && isNull(c)) {
            w += wire(c)
            b += blockBytes(c)
        }
        return (w, b)
    }

    /// Appends the row of `cells` to a model: its token to `wire`, its block bytes to `model`,
    /// its values' offsets in the model block (after the token and bitmap, each present value in
    /// turn; a bitmap NULL has none) to `offsets`, its values to `expected`.
    static func appendModelRow(_ cells: [Cell], nbc: Bool, wire: inout [[UInt8]], model: inout [UInt8],
                               offsets: inout [UInt32], expected: inout [[SQLValue]]) {
        let (w, b) = row(cells, nbc: nbc)
        var at = model.count + 1 + (nbc ? (cells.count + 7) / 8 : 0)
        for c in cells {
            if nbc && isNull(c) { offsets.append(WireRowBlock.nullOffset); continue }
            offsets.append(UInt32(at))
            at += blockBytes(c).count
        }
        wire.append(w)
        model += b
        expected.append(cells.map(value))
    }

    static func stream(_ rows: [[UInt8]], columns: [ColumnMetadata] = columns) -> [UInt8] {
        ServerTokens.colMetadata(columns, version: .v7_4) + rows.joined()
            + ServerTokens.done(status: .count, rowCount: UInt64(rows.count), version: .v7_4)
    }

    // MARK: Reading back

    struct Drained {
        var rows: [[SQLValue]] = []
        var blocks: [WireRowBlock] = []
        var blockRows = 0
        var error: TDSDecodingError?
    }

    /// `stream` cut as `split`, read through blocks where the scan takes the rows (a new block
    /// after `.limit` or `.incremental`) and the token decoder where it does not.
    static func drain(_ stream: [UInt8], _ split: DecoderVerifier.Split, limit: Int = 100_000,
                      byteLimit: Int = 1 << 30, seed: UInt64 = 7) -> Drained {
        var rng = SeededRandom(seed: seed)
        var decoder = TokenStreamDecoder(version: .v7_4)
        var out = Drained()
        var block: WireRowBlock?
        func leave() {
            if let b = block, !b.isEmpty { out.blocks.append(b) }
            block = nil
        }
        func step() throws(TDSDecodingError) {
            while true {
                if block == nil { block = decoder.makeWireRowBlock() }
                if var b = block {
                    let before = (b.byteCount, b.rowCount)
                    let (n, end) = decoder.appendBufferedRows(to: &b, limit: limit, byteLimit: byteLimit)
                    block = b
                    if n == 0 {
                        // Nothing appended: the block is exactly as it was.
                        precondition(b.byteCount == before.0 && b.rowCount == before.1)
                    }
                    for r in b.rowCount - n ..< b.rowCount { out.rows.append(b.values(row: r)) }
                    out.blockRows += n
                    if end == .limit || end == .incremental { leave() }
                    if end == .limit { continue }
                    if end == .needBytes { return }
                }
                guard let token = try decoder.next() else { return }
                if case .row(let r) = token { out.rows.append(r.values) }
                if case .nbcRow(let r) = token { out.rows.append(r.values) }
                if case .done = token { leave() }
            }
        }
        do throws(TDSDecodingError) {
            for piece in DecoderVerifier.pieces(of: stream, split, using: &rng) {
                decoder.append(piece)
                try step()
            }
            try decoder.finish()
        } catch {
            out.error = error
        }
        leave()
        return out
    }

    /// The token decoder alone on `stream`: its rows and the error that ended it.
    static func alone(_ stream: [UInt8]) -> (rows: [[SQLValue]], error: TDSDecodingError?) {
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.append(stream)
        var rows: [[SQLValue]] = []
        do {
            while let token = try decoder.next() {
                if case .row(let r) = token { rows.append(r.values) }
                if case .nbcRow(let r) = token { rows.append(r.values) }
            }
            try decoder.finish()
        } catch {
            return (rows, error)
        }
        return (rows, nil)
    }

    /// Every value of every block against its well-formedness: offsets in range and increasing,
    /// each text value's header (count, ASCII flag) exact for its bytes, which are well-formed
    /// UTF-8; each String from `value`, the typed read and `values(rows:)` the same as one Swift
    /// validated from the same bytes (`count`, `utf16.count`, scalars and bytes).
    func checkWellFormed(_ blocks: [WireRowBlock], _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        for (k, b) in blocks.enumerated() {
            var last = -1
            for r in 0 ..< b.rowCount {
                let all = b.values(rows: r ..< r + 1)
                for c in 0 ..< b.columnCount {
                    let o = b.offset(row: r, column: c)
                    if o == WireRowBlock.nullOffset { continue }
                    XCTAssertGreaterThan(Int(o), last, "\(context) block \(k) row \(r) col \(c)", file: file, line: line)
                    last = Int(o)
                    guard b.scan[c].kind == .utf16 else { continue }
                    XCTAssertLessThanOrEqual(Int(o) + 2, b.byteCount, file: file, line: line)
                    let h = Int(b.bytes[Int(o)]) | Int(b.bytes[Int(o) + 1]) << 8
                    if h == 0xFFFF {
                        XCTAssertEqual(b.value(row: r, column: c), .null, file: file, line: line)
                        continue
                    }
                    var n = h & 0x7FFF, at = Int(o) + 2
                    let longForm = n == CharacterCodec.utf16LongForm
                    if longForm {
                        // A 4-byte count follows (a value past wireTextLimit, read by the row's scan state).
                        XCTAssertEqual(h & 0x8000, 0, "\(context): the long form has no ASCII flag", file: file, line: line)
                        n = (0 ..< 4).reduce(0) { $0 | Int(b.bytes[Int(o) + 2 + $1]) << (8 * $1) }
                        at = Int(o) + 6
                    }
                    guard at + n <= b.byteCount else {
                        XCTFail("\(context) block \(k) row \(r): header \(h) past the block's \(b.byteCount) bytes", file: file, line: line)
                        continue
                    }
                    let utf8 = Array(b.bytes[at ..< at + n])
                    guard let reference = String(validating: utf8, as: UTF8.self) else {
                        XCTFail("\(context) block \(k) row \(r) col \(c): ill-formed UTF-8 \(utf8)", file: file, line: line)
                        continue
                    }
                    if !longForm {
                        XCTAssertEqual(h & 0x8000 != 0, utf8.allSatisfy { $0 < 0x80 }, "\(context): ASCII flag of \(utf8)", file: file, line: line)
                    }
                    guard case .string(let s) = b.value(row: r, column: c),
                          case .value(let typed) = b.string(row: r, column: c),
                          case .string(let fromValues) = all[c] else {
                        XCTFail("\(context) block \(k) row \(r) col \(c): not a string", file: file, line: line)
                        continue
                    }
                    for got in [s, typed, fromValues] {
                        XCTAssertEqual(Array(got.utf8), utf8, file: file, line: line)
                        XCTAssertEqual(got.count, reference.count, "\(context): Characters of \(utf8)", file: file, line: line)
                        XCTAssertEqual(got.utf16.count, reference.utf16.count, "\(context): UTF-16 count of \(utf8)", file: file, line: line)
                        XCTAssertEqual(got.unicodeScalars.map(\.value), reference.unicodeScalars.map(\.value), file: file, line: line)
                        XCTAssertEqual(got, reference, file: file, line: line)
                    }
                }
            }
        }
    }

    // MARK: The transcoder alone

    /// Every sequence of up to 4 units of the hostile alphabet (69,905), and random ones of 1-70
    /// units (around the 8-unit ASCII step): the transcoder writes within 3 bytes a unit plus
    /// ``TextCodec/transcodeSlack`` (guard bytes after it untouched), the UTF-8 Swift gives when
    /// the units are valid, and `-1 - i` for the first unpaired surrogate `i` otherwise.
    func testTranscoderStaysInItsRoomOnEveryShortSequence() {
        var failures = 0
        func check(_ units: [UInt16]) {
            let src = Self.bytes(units)
            let room = units.count * 3 + TextCodec.transcodeSlack
            var out = [UInt8](repeating: 0xA5, count: room + 16)
            let w = src.withUnsafeBytes { s in
                out.withUnsafeMutableBufferPointer { o in
                    TextCodec.transcodeUTF16LE(s.baseAddress ?? UnsafeRawPointer(o.baseAddress!), byteCount: src.count, into: o.baseAddress!)
                }
            }
            var ok = Array(out[room...]) == [UInt8](repeating: 0xA5, count: 16)
            if let bad = Self.unpaired(units) {
                ok = ok && w == -1 - bad
            } else {
                let utf8 = Array(String(decoding: units, as: UTF16.self).utf8)
                ok = ok && w == utf8.count && Array(out[..<max(w, 0)]) == utf8 && (w == units.count) == utf8.allSatisfy { $0 < 0x80 }
            }
            if !ok {
                failures += 1
                if failures < 10 { XCTFail("units \(units.map { String($0, radix: 16) }): wrote \(w)") }
            }
        }
        let a = Self.alphabet
        var seq: [[UInt16]] = [[]]
        for _ in 1 ... 4 {
            seq = seq.flatMap { s in a.map { s + [$0] } }
            for s in seq { check(s) }
        }
        var rng = SeededRandom(seed: 12)
        for _ in 0 ..< 20_000 {
            let n = Int(rng.next() % 70) + 1
            // Mostly ASCII with a few others, so the 8-unit step is taken and left at every offset.
            check((0 ..< n).map { _ in rng.next() % 4 == 0 ? a[Int(rng.next() % UInt64(a.count))] : 0x61 })
        }
        XCTAssertEqual(failures, 0)
    }

    // MARK: Blocks

    /// Rows of every unit class at every position (valid ones only), NULL by 0xFFFF and by the
    /// bitmap, empty strings, nchar padding, code page 1252 text: whole, byte by byte and split
    /// at random the rows are the token decoder's, one block holds them all, and its bytes and
    /// offsets are the model's exactly (so a run stopped mid-row left nothing of the row).
    func testValidHostileTextMakesTheModelBlockUnderEverySplit() throws {
        var rng = SeededRandom(seed: 3)
        let a = Self.alphabet
        var wire: [[UInt8]] = [], model: [UInt8] = [], expected: [[SQLValue]] = []
        var modelOffsets: [UInt32] = []
        func text(_ maxUnits: Int) -> [UInt16] {
            var u: [UInt16] = []
            let n = Int(rng.next() % UInt64(maxUnits + 1))
            while u.count < n {
                let x = a[Int(rng.next() % UInt64(a.count))]
                if x & 0xF800 == 0xD800 { if u.count + 2 <= maxUnits { u += [0xD83D, x & 1 == 0 ? 0xDE00 : 0xDFFF] } else { u.append(0x6F22) } } else { u.append(x) }
            }
            return u
        }
        for i in 0 ..< 300 {
            let cells: [Cell] = [
                i % 9 == 0 ? .int(nil) : .int(Int32(i)),
                i % 7 == 0 ? .text(nil) : .text(i % 13 == 0 ? [] : text(i % 5 == 0 ? 200 : 24)),
                i % 11 == 0 ? .text(nil) : .text(Array("ab\(i % 10)".utf16) + [UInt16](repeating: 0x20, count: 7)),   // nchar(10): padded
                i % 6 == 0 ? .cp1252(nil) : .cp1252(Array("é\(i)".unicodeScalars.map { UInt8($0.value) })),
                i % 4 == 0 ? .text(nil) : .text(text(50)),
            ]
            Self.appendModelRow(cells, nbc: i % 3 == 0, wire: &wire, model: &model, offsets: &modelOffsets, expected: &expected)
        }
        let stream = Self.stream(wire)
        XCTAssertEqual(Self.alone(stream).rows, expected, "the token decoder")
        XCTAssertNil(Self.alone(stream).error)
        for split in DecoderVerifier.Split.allCases {
            let got = Self.drain(stream, split)
            XCTAssertNil(got.error, "\(split)")
            XCTAssertEqual(got.rows, expected, "\(split)")
            XCTAssertEqual(got.blocks.count, 1, "\(split): one block")
            guard let b = got.blocks.first else { continue }
            XCTAssertEqual(b.rowCount, 300, "\(split)")
            XCTAssertEqual(b.bytes, model, "\(split): the block's bytes are the model's")
            XCTAssertEqual(b.offsets, modelOffsets, "\(split): the offsets are the model's")
            checkWellFormed(got.blocks, "\(split)")
        }
    }

    /// Random hostile streams (lone surrogates anywhere, odd lengths, zero lengths), each read
    /// whole, byte by byte and at random: the rows and the error (code, offset) are the token
    /// decoder's, every block is well-formed, and the rows the blocks hold are exactly the rows
    /// before the first bad one that the scan reached.
    func testRandomHostileStreamsGiveTheTokenDecodersRowsAndError() throws {
        var rng = SeededRandom(seed: 99)
        let a = Self.alphabet
        var bad = 0
        for s in 0 ..< 250 {
            var wire: [[UInt8]] = []
            let rowCount = Int(rng.next() % 12) + 1
            let hostile = s % 2 == 0   // lone surrogates (rarely), else only paired ones
            for i in 0 ..< rowCount {
                func text(_ maxUnits: Int) -> Cell {
                    let r = rng.next() % 300
                    if r < 8 { return .text(nil) }
                    if r == 8 { return .rawText([0x41]) }                  // odd length
                    if r == 9 { return .rawText([0x41, 0x00, 0x42]) }      // odd length
                    let n = Int(rng.next() % UInt64(maxUnits + 1))
                    var u: [UInt16] = []
                    while u.count < n {
                        let x = a[Int(rng.next() % UInt64(a.count))]
                        if x & 0xF800 != 0xD800 { u.append(x); continue }
                        if hostile && rng.next() % 25 == 0 { u.append(x); continue }   // as it comes: maybe unpaired
                        u += [0xD800 | x & 0x3FF, 0xDC00 | x & 0x3FF]                   // a pair
                    }
                    return .text(u)
                }
                let cells: [Cell] = [.int(Int32(i)), text(30), text(10), .cp1252([0x61]), text(50)]
                wire.append(Self.row(cells, nbc: rng.next() % 2 == 0).wire)
            }
            let stream = Self.stream(wire)
            let reference = Self.alone(stream)
            if reference.error != nil { bad += 1 }
            for split in DecoderVerifier.Split.allCases {
                let got = Self.drain(stream, split, seed: UInt64(s))
                XCTAssertEqual(got.rows, reference.rows, "stream \(s) \(split)")
                XCTAssertEqual(got.error?.code, reference.error?.code, "stream \(s) \(split)")
                XCTAssertEqual(got.error?.offset, reference.error?.offset, "stream \(s) \(split)")
                XCTAssertEqual(got.blocks.reduce(0) { $0 + $1.rowCount }, got.blockRows, "stream \(s) \(split)")
                checkWellFormed(got.blocks, "stream \(s) \(split)")
            }
        }
        XCTAssertGreaterThan(bad, 50, "enough streams end in a bad value")
        XCTAssertLessThan(bad, 200, "enough streams are whole")
    }

    /// Lengths at the block's limit: 21,844 bytes (10,922 units) of CJK (32,766 UTF-8 bytes, the
    /// most the 15-bit header holds), of ASCII, of surrogate pairs, CJK then one pair; and 21,846
    /// (one unit more) and 0xFFFE bytes, which the row's scan state keeps in the long form (same
    /// values), and 0xFFFD (odd) bytes (the token decoder's error): whole and split.
    func testLengthsAtAndPastTheWireTextLimit() throws {
        XCTAssertEqual(TokenStreamDecoder.wireTextLimit, 21_844)
        // The header's invariant: 3 bytes a unit of the longest value kept stays below bit 15
        // (the ASCII flag), so no length can set it (or read as 0xFFFF, NULL).
        XCTAssertLessThan(TokenStreamDecoder.wireTextLimit / 2 * 3, 0x8000)
        XCTAssertGreaterThanOrEqual((TokenStreamDecoder.wireTextLimit + 2) / 2 * 3, 0x8000, "the limit is the largest that keeps it")
        let units = TokenStreamDecoder.wireTextLimit / 2
        let long: [[UInt16]] = [
            [UInt16](repeating: 0x6F22, count: units),
            [UInt16](repeating: 0x61, count: units),
            Array([[UInt16]](repeating: [0xD83D, 0xDE00], count: units / 2).joined()),
            [UInt16](repeating: 0xFFFF, count: units - 2) + [0xD83D, 0xDE00],
            [UInt16](repeating: 0x6F22, count: units + 1),
            [UInt16](repeating: 0x800, count: 0xFFFE / 2),
        ]
        var wire: [[UInt8]] = [], expected: [[SQLValue]] = []
        for (i, u) in long.enumerated() {
            let cells: [Cell] = [.int(Int32(i)), .text(u), .text([0x41]), .cp1252(nil), .text([])]
            wire.append(Self.row(cells, nbc: i % 2 == 1).wire)
            expected.append(cells.map(Self.value))
        }
        let stream = Self.stream(wire)
        XCTAssertEqual(Self.alone(stream).rows, expected)
        for split in [DecoderVerifier.Split.whole, .random] {
            let got = Self.drain(stream, split)
            XCTAssertNil(got.error, "\(split)")
            XCTAssertEqual(got.rows, expected, "\(split)")
            XCTAssertEqual(got.blockRows, 6, "\(split): every row in blocks (past the limit: the long form)")
            checkWellFormed(got.blocks, "\(split)")
            if let b = got.blocks.first, b.rowCount >= 1 {
                let o = Int(b.offset(row: 0, column: 1))
                XCTAssertEqual(Int(b.bytes[o]) | Int(b.bytes[o + 1]) << 8, 32_766, "\(split): the longest header")
            }
        }
        // An odd length past the limit: the token decoder's error, at its offset.
        let odd = Self.stream([Self.row([.int(1), .rawText([UInt8](repeating: 0x41, count: 0xFFFD)), .text(nil), .cp1252(nil), .text(nil)], nbc: false).wire])
        let reference = Self.alone(odd)
        XCTAssertNotNil(reference.error)
        for split in [DecoderVerifier.Split.whole, .random] {
            let got = Self.drain(odd, split)
            XCTAssertEqual(got.error?.code, reference.error?.code, "\(split)")
            XCTAssertEqual(got.error?.offset, reference.error?.offset, "\(split)")
            XCTAssertEqual(got.blockRows, 0)
        }
    }

    /// nchar(4000)-sized rows of CJK (8,000 wire bytes, 12,000 in the block) and of 2,000
    /// surrogate pairs, under byte limits from 1 to 1 MB: every block left at `.limit` holds less
    /// than the limit plus one row's worst case (3 bytes a unit), so what a server's rows cost
    /// stays bounded; the rows are the token decoder's.
    func testByteLimitBoundsBlocksOfWorstCaseText() throws {
        let cjk = [UInt16](repeating: 0x6F22, count: 4000)
        let pairs = Array([[UInt16]](repeating: [0xD83D, 0xDE00], count: 2000).joined())
        var wire: [[UInt8]] = [], expected: [[SQLValue]] = []
        for i in 0 ..< 40 {
            let cells: [Cell] = [.int(Int32(i)), .text(i % 2 == 0 ? cjk : pairs), .text(Array("x".utf16)), .cp1252([0x62]), .text(Array(cjk[..<50]))]
            wire.append(Self.row(cells, nbc: false).wire)
            expected.append(cells.map(Self.value))
        }
        let stream = Self.stream(wire)
        // token, int 5, nvarchar(4000) 2 + 12,000, nchar 2 + 1, varchar 2 + 1, nvarchar(50) 2 + 150
        let worstRow = 1 + 5 + 2 + 12_000 + 3 + 3 + 2 + 150
        for byteLimit in [1, 12_000, 100_000, 1 << 20] {
            for split in [DecoderVerifier.Split.whole, .random] {
                let got = Self.drain(stream, split, byteLimit: byteLimit)
                XCTAssertNil(got.error)
                XCTAssertEqual(got.rows, expected, "\(byteLimit) \(split)")
                XCTAssertEqual(got.blockRows, 40)
                for b in got.blocks {
                    XCTAssertLessThan(b.byteCount, byteLimit + worstRow, "\(byteLimit) \(split)")
                }
                if byteLimit == 1 { XCTAssertEqual(got.blocks.map(\.rowCount), [Int](repeating: 1, count: 40)) }
                checkWellFormed(got.blocks, "\(byteLimit) \(split)")
            }
        }
    }

    /// A bad row after rows already in the block (appended by earlier runs, so the block's base
    /// offset is not 0), at every column of text and with NULLs before it in its row: the block
    /// keeps exactly the rows before it (bytes and offsets as the model of those rows), and after
    /// the token decoder reports the error nothing more is appended.
    func testBadRowAfterEarlierRunsLeavesTheBlockAsTheModelOfTheRowsBefore() throws {
        for badColumn in [1, 2, 4] {
            for badRow in [0, 1, 5, 9] {
                for lone: UInt16 in [0xD800, 0xDFFF] {
                    var wire: [[UInt8]] = [], model: [UInt8] = []
                    for i in 0 ..< 10 {
                        var cells: [Cell] = [.int(nil), .text(Array("é\(i)漢".utf16)), .text(nil), .cp1252(nil), .text(Array("z".utf16) + [0xD83D, 0xDE00])]
                        if i == badRow { cells[badColumn] = .text([0x41, lone, 0x42]) }
                        let (w, b) = Self.row(cells, nbc: i % 2 == 0)
                        wire.append(w)
                        if i < badRow { model += b }
                    }
                    let stream = Self.stream(wire)
                    let reference = Self.alone(stream)
                    XCTAssertEqual(reference.error?.code, .invalidEncoding)
                    for split in DecoderVerifier.Split.allCases {
                        let got = Self.drain(stream, split)
                        let context = "column \(badColumn) row \(badRow) \(String(lone, radix: 16)) \(split)"
                        XCTAssertEqual(got.rows, reference.rows, context)
                        XCTAssertEqual(got.error?.offset, reference.error?.offset, context)
                        XCTAssertEqual(got.blockRows, badRow, context)
                        XCTAssertEqual(Array(got.blocks.map(\.bytes).joined()), model, context)
                        checkWellFormed(got.blocks, context)
                    }
                }
            }
        }
    }

    /// nchar/nvarchar in any collation (Japanese 932, a UTF-8 collation, binary) are UTF-16 on
    /// the wire and kept as UTF-8 in a block; a varchar in code page 932 and a sql_variant are kept
    /// as their wire bytes in the block too (issue 27 item 2); the values the same either way.
    func testCollationsAndVariantChooseTheShapeAndKeepTheValues() throws {
        let japanese = Collation(lcid: 0x0411, flags: [.ignoreCase])
        let utf8 = Collation(lcid: 0x0409, flags: [.utf8])
        let binary = Collation(lcid: 0x0409, flags: [.binary2])
        let text = "日本語テキスト 😀 é"
        for (types, wire) in [([TypeInfo.nvarchar(40, collation: japanese), .nchar(30, collation: utf8), .nvarchar(40, collation: binary)], true),
                              ([.nvarchar(40, collation: japanese), .varchar(40, collation: japanese)], true),
                              ([.nvarchar(40), .sqlVariant], true)] {
            let columns = types.enumerated().map { ColumnMetadata(flags: [.nullable], typeInfo: $1, name: "c\($0)") }
            let values: [SQLValue] = types.map { $0.type == .ssVariant ? .null : .string($0.type == .bigChar || $0.type == .bigVarChar ? "abc" : text) }
            var stream = ServerTokens.colMetadata(columns, version: .v7_4)
            for _ in 0 ..< 3 { stream += try ServerTokens.row(values, columns: columns) }
            stream += ServerTokens.done(status: .count, rowCount: 3, version: .v7_4)
            var decoder = TokenStreamDecoder(version: .v7_4)
            decoder.append(stream)
            _ = try decoder.next()   // COLMETADATA
            XCTAssertEqual(decoder.makeWireRowBlock() != nil, wire, "\(types.map(\.type))")
            for split in DecoderVerifier.Split.allCases {
                let got = Self.drain(stream, split)
                XCTAssertNil(got.error)
                XCTAssertEqual(got.rows, [[SQLValue]](repeating: values, count: 3), "\(types.map(\.type)) \(split)")
                XCTAssertEqual(got.blockRows, wire ? 3 : 0)
                checkWellFormed(got.blocks, "\(split)")
            }
        }
    }

    /// 21 columns (int and nvarchar alternating), NBCROWs whose bitmap spans 3 bytes with NULLs
    /// in each, ROWs with 0xFFFF NULLs: the block is the model's byte for byte and offset for
    /// offset under every split.
    func testWideNBCRowsMakeTheModelBlock() throws {
        let width = 21
        let columns = (0 ..< width).map { ColumnMetadata(flags: [.nullable], typeInfo: $0 % 2 == 0 ? .int : .nvarchar(30), name: "c\($0)") }
        var rng = SeededRandom(seed: 21)
        var wire: [[UInt8]] = [], model: [UInt8] = [], offsets: [UInt32] = [], expected: [[SQLValue]] = []
        let texts: [[UInt16]] = [[], Array("a".utf16), Array("漢字".utf16), [0xD83D, 0xDE00], Array("mixed é 漢 😀 text".utf16)]
        for i in 0 ..< 200 {
            let cells: [Cell] = (0 ..< width).map { c in
                let null = rng.next() % 4 == 0
                if c % 2 == 0 { return null ? .int(nil) : .int(Int32(i * 100 + c)) }
                return null ? .text(nil) : .text(texts[Int(rng.next() % UInt64(texts.count))])
            }
            Self.appendModelRow(cells, nbc: i % 2 == 0, wire: &wire, model: &model, offsets: &offsets, expected: &expected)
        }
        let stream = Self.stream(wire, columns: columns)
        for split in DecoderVerifier.Split.allCases {
            let got = Self.drain(stream, split)
            XCTAssertNil(got.error, "\(split)")
            XCTAssertEqual(got.rows, expected, "\(split)")
            XCTAssertEqual(got.blocks.count, 1, "\(split)")
            XCTAssertEqual(got.blocks.first?.bytes, model, "\(split)")
            XCTAssertEqual(got.blocks.first?.offsets, offsets, "\(split)")
            checkWellFormed(got.blocks, "\(split)")
        }
    }
}
