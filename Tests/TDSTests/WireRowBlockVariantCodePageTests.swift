import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// sql_variant columns and char/varchar columns in a code page other than 1252 (a UTF-8
/// collation included) kept in a ``WireRowBlock`` as their wire bytes (issue 27, item 2): the scan
/// accepts exactly what the token decoder accepts, the block reads exactly the token decoder's
/// values, whole, byte by byte and split at random, and a hostile cell stops the run at its row so
/// that the token decoder reports its error (code and offset).
final class WireRowBlockVariantCodePageTests: XCTestCase {
    static let cyrillic = Collation(lcid: 0x0419)            // code page 1251
    static let japanese = Collation(lcid: 0x0411)            // code page 932
    static let utf8 = Collation(lcid: 0x0409, flags: [.utf8]) // code page 65001

    static let textTypes: [TypeInfo] = [
        .varchar(10, collation: cyrillic), .varchar(8000, collation: japanese), .char(4, collation: cyrillic),
        .varchar(40, collation: utf8), .char(6, collation: utf8),
        TypeInfo(type: .varchar, length: 20, collation: cyrillic), TypeInfo(type: .char, length: 3, collation: japanese),
        TypeInfo(type: .varchar, length: 30, collation: utf8),
    ]

    /// Values of many base types, encoded as sql_variant cells.
    static let variantBases: [SQLValue] = [
        .int(42), .bit(true), .tinyint(7), .smallint(-2), .bigint(1 << 40), .real(1.5), .float(-2.25),
        .decimal(SQLDecimal("-1.50")!), .money(SQLMoney(units: 1)), .smallMoney(SQLMoney(units: -1)),
        .date(SQLDate(days: 5)), .time(SQLTime(ticks: 12, scale: 1)),
        .datetime2(SQLDateTime2(date: .max, time: SQLTime(ticks: 0, scale: 3))),
        .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: .min, time: SQLTime(ticks: 0, scale: 0)), offsetMinutes: 60)),
        .datetime(SQLDateTime(days: 1, ticks: 2)), .smallDateTime(SQLSmallDateTime(days: 3, minutes: 4)),
        .uniqueIdentifier(UUID(uuidString: "0E984725-C51C-4BF4-9960-E1C80E27ABA0")!), .binary([1, 2, 3]),
        .string("héllo 😀"),
    ]

    static func variantCell(_ v: SQLValue) throws -> [UInt8] {
        var w = ByteWriter()
        try TypeInfo.sqlVariant.encodeValue(v, into: &w)
        return w.bytes
    }

    static let cyrillicVariant = SQLValue.variant(SQLVariant(baseType: .varchar(10, collation: cyrillic), value: .string("Да")))

    /// Valid, mutated and random sql_variant cells.
    static func variantBytes(_ rng: inout SystemRandomNumberGenerator) throws -> [UInt8] {
        func random(_ n: Int) -> [UInt8] { (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) } }
        var cell = try Int.random(in: 0 ..< 10, using: &rng) == 0 ? variantCell(cyrillicVariant)
            : variantCell(.variant(XCTUnwrap(SQLVariant(value: variantBases.randomElement(using: &rng)!))))
        switch Int.random(in: 0 ..< 10, using: &rng) {
        case 0: return [0, 0, 0, 0]                                    // NULL
        case 1: cell[4] = UInt8.random(in: 0 ... 255, using: &rng)     // any base type
        case 2: if cell.count > 5 { cell[5] = UInt8.random(in: 0 ... 9, using: &rng) }   // any property count
        case 3:                                                        // any length, within the cell or past it
            let n = UInt32.random(in: 0 ... UInt32(cell.count + 3), using: &rng)
            cell.replaceSubrange(0 ..< 4, with: withUnsafeBytes(of: n.littleEndian, Array.init))
        case 4: cell.replaceSubrange(0 ..< 4, with: [0xFF, 0xFF, 0xFF, 0xFF])   // beyond Int32.max
        case 5: if cell.count > 6 { cell[Int.random(in: 6 ..< cell.count, using: &rng)] = UInt8.random(in: 0 ... 255, using: &rng) }
        case 6: let n = Int.random(in: 0 ... 12, using: &rng); cell = withUnsafeBytes(of: UInt32(n).littleEndian, Array.init) + random(n)
        default: break
        }
        return cell
    }

    /// char/varchar cells: ASCII, bytes of the code page, invalid bytes, random lengths and NULLs.
    static func textBytes(_ type: TypeInfo, _ rng: inout SystemRandomNumberGenerator) -> [UInt8] {
        let samples: [[UInt8]] = [
            Array("abc".utf8), Array("Да".utf8), [0xC4, 0xE0],            // "Да" in 1251
            [0x82, 0xA0, 0x82, 0xA2], [0x82], [0xFF, 0x41], [0x81, 0x39],    // 932: あい, a lead byte alone, invalid
            Array("日本 😀".utf8), [0xC3], [0xED, 0xA0, 0x80],                // UTF-8: valid, cut, a surrogate
        ]
        var body: [UInt8]
        if Bool.random(using: &rng) {
            body = samples.randomElement(using: &rng)!
        } else {
            body = (0 ..< Int.random(in: 0 ... 12, using: &rng)).map { _ in
                Bool.random(using: &rng) ? UInt8.random(in: 0x20 ... 0x7E, using: &rng) : UInt8.random(in: 0 ... 255, using: &rng)
            }
        }
        if type.type == .varchar || type.type == .char {   // BYTELEN: 0 is NULL
            return [UInt8(body.count)] + body
        }
        if Int.random(in: 0 ..< 8, using: &rng) == 0 { return [0xFF, 0xFF] }
        return [UInt8(body.count & 0xFF), UInt8(body.count >> 8)] + body
    }

    /// Equal values; a NaN equal to a NaN (random bytes make NaNs, in a variant too).
    static func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
        if a == b { return true }
        if case .variant = a, case .variant = b { return "\(a)" == "\(b)" }
        return WireRowBlockTests.same(a, b)
    }

    func testScanAcceptsExactlyWhatTheTokenDecoderAcceptsAndTheBlockReadsItsValues() throws {
        var rng = SystemRandomNumberGenerator()
        var accepted = 0, refused = 0, variants = 0, nonASCII = 0
        for type in [TypeInfo.sqlVariant] + Self.textTypes {
            for _ in 0 ..< (type.type == .ssVariant ? 2000 : 400) {
                let bytes = type.type == .ssVariant ? try Self.variantBytes(&rng) : Self.textBytes(type, &rng)
                // What follows the value in the stream (a DONE), as the scan sees it: a variant
                // whose length says more than its cell takes the DONE's bytes in both.
                let tail = ServerTokens.done(version: .v7_4)
                var reader = ByteReader(bytes + tail)
                let expected: SQLValue?
                do {
                    expected = try type.decodeValue(from: &reader)
                } catch {
                    expected = nil
                }
                let consumed = reader.offset
                var decoder = TokenStreamDecoder(version: .v7_4)
                decoder.setColumns([ColumnMetadata(typeInfo: type, name: "c")])
                decoder.append([TokenType.row.rawValue] + bytes + tail)
                guard var block = decoder.makeWireRowBlock() else {
                    XCTFail("\(type) is not kept as wire bytes")
                    continue
                }
                XCTAssertEqual(block.scan[0].kind, .decode)
                let (rows, end) = decoder.appendBufferedRows(to: &block, limit: 10, byteLimit: 1 << 20)
                if let expected {
                    // A value shorter than its cell (a variant's length) ends the row there: what
                    // follows is read as the next token, by both.
                    if consumed == bytes.count {
                        XCTAssertEqual(rows, 1, "\(type) \(bytes): the value decoder reads \(expected)")
                        XCTAssertEqual(end, .otherToken, "\(type) \(bytes)")
                    } else {
                        XCTAssertGreaterThanOrEqual(rows, 1, "\(type) \(bytes): the value decoder reads \(expected) in \(consumed) bytes")
                    }
                    if rows >= 1 {
                        let got = block.value(row: 0, column: 0)
                        XCTAssertTrue(Self.same(got, expected), "\(type) \(bytes): \(got) is not \(expected)")
                        XCTAssertTrue(Self.same(block.values(rows: 0 ..< 1)[0], expected), "\(type) \(bytes)")
                        XCTAssertEqual(block.isNull(row: 0, column: 0), expected.isNull, "\(type) \(bytes)")
                        if rows == 1 { XCTAssertEqual(block.byteCount, 1 + consumed, "the wire bytes, as they came") }
                        if case .variant = expected { variants += 1 }
                        if case .string = expected, bytes.contains(where: { $0 >= 0x80 }) { nonASCII += 1 }
                    }
                    accepted += 1
                } else {
                    XCTAssertEqual(rows, 0, "\(type) \(bytes) kept, but the value decoder says \(expected.map { "\($0) in \(consumed) bytes" } ?? "error")")
                    if expected == nil { XCTAssertNotEqual(end, .otherToken, "\(type) \(bytes)") }
                    refused += 1
                }
            }
        }
        XCTAssertGreaterThan(accepted, 1500)
        XCTAssertGreaterThan(refused, 300)
        XCTAssertGreaterThan(variants, 500)
        XCTAssertGreaterThan(nonASCII, 100)
    }

    static let columns: [ColumnMetadata] = [
        ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
        ColumnMetadata(flags: [.nullable], typeInfo: .sqlVariant, name: "v"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varchar(20, collation: cyrillic), name: "cyr"),
        // (A legacy VARCHARTYPE carries no collation on the wire: [MS-TDS] 2.2.5.4; its code page
        // is the default, so the stream's Japanese column is a BIGVARCHARTYPE.)
        ColumnMetadata(flags: [.nullable], typeInfo: .varchar(20, collation: japanese), name: "jp"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varchar(40, collation: utf8), name: "u8"),
        ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "n"),
    ]

    /// Row `i` of the split test: NULLs here and there, every variant base type, text in each
    /// collation (ASCII and not).
    static func rowValues(_ i: Int) throws -> [SQLValue] {
        let cyr = ["Привет", "abc", "", "Ёж \(i)"], jp = ["日本語", "kana カナ", "x"], u8 = ["日本 😀 é", "plain", "Ω\(i)"]
        var row: [SQLValue] = [
            .int(Int32(i)),
            i % 7 == 3 ? cyrillicVariant : .variant(try XCTUnwrap(SQLVariant(value: variantBases[i % variantBases.count]))),
            .string(cyr[i % cyr.count]), .string(jp[i % jp.count]), .string(u8[i % u8.count]), .string("n\(i)"),
        ]
        if i % 5 == 0 { row[1 + i % 4] = .null }
        if i % 11 == 0 { row[1] = .null; row[4] = .null }
        return row
    }

    static func stream(rows: Int, bad: (row: Int, cell: [UInt8])? = nil) throws -> [UInt8] {
        var wire: [[UInt8]] = []
        for i in 0 ..< rows {
            let values = try rowValues(i)
            if let bad, bad.row == i {
                // A ROW whose variant cell is `cell`, the other cells as they would be.
                var w = [TokenType.row.rawValue]
                for (c, col) in columns.enumerated() {
                    if c == 1 { w += bad.cell; continue }
                    var b = ByteWriter()
                    try col.typeInfo.encodeValue(values[c], into: &b)
                    w += b.bytes
                }
                wire.append(w)
            } else {
                wire.append(try i % 3 == 0 ? ServerTokens.nbcRow(values, columns: columns) : ServerTokens.row(values, columns: columns))
            }
        }
        return WireRowBlockUTF8HostileTests.stream(wire, columns: columns)
    }

    func testRowsAcrossSplitsAreKeptInTheBlockAndMatchTheTokenDecoder() throws {
        let n = 240
        let stream = try Self.stream(rows: n)
        let expected = try (0 ..< n).map(Self.rowValues)
        let reference = WireRowBlockUTF8HostileTests.alone(stream)
        XCTAssertNil(reference.error)
        XCTAssertEqual(reference.rows, expected)
        for split in DecoderVerifier.Split.allCases {
            for limit in [1000, 7] {
                let got = WireRowBlockUTF8HostileTests.drain(stream, split, limit: limit)
                XCTAssertNil(got.error, "\(split)")
                XCTAssertEqual(got.rows, expected, "\(split) limit \(limit)")
                XCTAssertEqual(got.blockRows, n, "\(split) limit \(limit): every row in a block")
                for b in got.blocks {
                    for r in 0 ..< b.rowCount {
                        XCTAssertEqual(b.values(rows: r ..< r + 1), (0 ..< b.columnCount).map { b.value(row: r, column: $0) })
                        for c in 0 ..< b.columnCount { XCTAssertEqual(b.isNull(row: r, column: c), b.value(row: r, column: c).isNull) }
                    }
                }
            }
        }
    }

    /// A hostile variant cell (or text in a code page that does not define it) in row 37 of 60:
    /// rows before it in blocks, the same rows and the same error (code and offset) as the token
    /// decoder alone, under every split.
    func testHostileCellsGiveTheTokenDecodersError() throws {
        let good = try Self.variantCell(.variant(XCTUnwrap(SQLVariant(value: .int(9)))))
        let nv = try Self.variantCell(.variant(XCTUnwrap(SQLVariant(value: .string("hi")))))
        let cases: [(String, [UInt8], TDSDecodingError.Code)] = [
            ("bad base type", [3, 0, 0, 0, 0xF1, 0, 0], .invalidValue),
            ("base type text", [3, 0, 0, 0, TDSDataType.text.rawValue, 0, 0], .invalidValue),
            ("props for int", [3, 0, 0, 0, 0x38, 1, 0], .invalidLength),
            ("int of 3 bytes", [5, 0, 0, 0, 0x38, 0, 1, 2, 3], .invalidLength),
            ("length beyond Int32", [0xFF, 0xFF, 0xFF, 0xFF] + good[4...], .invalidLength),
            ("decimal precision 0", [5, 0, 0, 0, 0x6A, 2, 0, 0, 1], .invalidValue),
            ("lone surrogate in an nvarchar base", Array(nv[..<(nv.count - 4)]) + [0x00, 0xD8, 0x41, 0x00], .invalidEncoding),
        ]
        for (name, cell, code) in cases {
            let stream = try Self.stream(rows: 60, bad: (37, cell))
            let reference = WireRowBlockUTF8HostileTests.alone(stream)
            XCTAssertEqual(reference.error?.code, code, name)
            XCTAssertEqual(reference.rows.count, 37, name)
            for split in DecoderVerifier.Split.allCases {
                let got = WireRowBlockUTF8HostileTests.drain(stream, split)
                XCTAssertEqual(got.rows, reference.rows, "\(name) \(split)")
                XCTAssertEqual(got.error?.code, reference.error?.code, "\(name) \(split)")
                XCTAssertEqual(got.error?.offset, reference.error?.offset, "\(name) \(split)")
                XCTAssertEqual(got.blockRows, 37, "\(name) \(split)")
            }
        }
        // A stream cut inside a variant (its length says more than is there): truncated, as the
        // token decoder says, the rows before it read from blocks.
        // Row 19 is a ROW: its token byte, the int (5 bytes), then a 10-byte int variant, cut after 6.
        let whole = try Self.stream(rows: 20)
        let row19 = try ServerTokens.row(Self.rowValues(19), columns: Self.columns)
        let done = ServerTokens.done(status: .count, rowCount: 20, version: .v7_4)
        let cut = Array(whole[..<(whole.count - done.count - row19.count + 12)])
        let reference = WireRowBlockUTF8HostileTests.alone(cut)
        XCTAssertEqual(reference.error?.code, .truncated)
        for split in DecoderVerifier.Split.allCases {
            let got = WireRowBlockUTF8HostileTests.drain(cut, split)
            XCTAssertEqual(got.rows, reference.rows, "cut \(split)")
            XCTAssertEqual(got.error?.code, .truncated, "cut \(split)")
            XCTAssertEqual(got.blockRows, reference.rows.count, "cut \(split)")
        }
        // Bytes code page 932 does not define, in a varchar column: the token decoder's error.
        let columnsBad = Self.columns
        var wire: [[UInt8]] = []
        for i in 0 ..< 30 {
            var row = try ServerTokens.row(Self.rowValues(i), columns: columnsBad)
            if i == 13 {
                // Replace the jp value (after id, variant, cyr) with 2 bytes invalid in 932.
                var r = ByteReader(row, start: 1)
                for c in 0 ..< 3 { _ = try columnsBad[c].typeInfo.decodeValue(from: &r) }
                let at = r.offset
                let len = Int(row[at]) | Int(row[at + 1]) << 8
                row.replaceSubrange(at ..< at + 2 + len, with: [2, 0, 0xFF, 0x41])
            }
            wire.append(row)
        }
        let bad932 = WireRowBlockUTF8HostileTests.stream(wire, columns: columnsBad)
        let ref932 = WireRowBlockUTF8HostileTests.alone(bad932)
        XCTAssertEqual(ref932.error?.code, .invalidEncoding)
        XCTAssertEqual(ref932.rows.count, 13)
        for split in DecoderVerifier.Split.allCases {
            let got = WireRowBlockUTF8HostileTests.drain(bad932, split)
            XCTAssertEqual(got.rows, ref932.rows, "932 \(split)")
            XCTAssertEqual(got.error?.code, ref932.error?.code, "932 \(split)")
            XCTAssertEqual(got.error?.offset, ref932.error?.offset, "932 \(split)")
            XCTAssertEqual(got.blockRows, 13, "932 \(split)")
        }
    }

    /// The scan's check-only rules for code page text (``CharacterCodec/checkedCodePageSize(at:available:prefix:declared:)``)
    /// and for sql_variant (``SQLVariantCodec/checkedSize(at:available:)``) never accept what the
    /// token decoder refuses, at every cut, and take the bytes it takes.
    func testCheckedSizeNeverAcceptsWhatTheDecoderRefuses() throws {
        var rng = SystemRandomNumberGenerator()
        var accepted = 0, variantsInPlace = 0
        for type in [TypeInfo.sqlVariant] + Self.textTypes {
            let column = WireColumn(type)
            for _ in 0 ..< (type.type == .ssVariant ? 1000 : 300) {
                let bytes = type.type == .ssVariant ? try Self.variantBytes(&rng) : Self.textBytes(type, &rng)
                for available in 1 ... bytes.count {
                    let size = bytes.withUnsafeBytes { column.checkedSize(at: $0.baseAddress!, available: available) }
                    guard size > 0 else { continue }
                    var reader = ByteReader(Array(bytes[..<available]))
                    let v = try type.decodeValue(from: &reader)
                    XCTAssertEqual(reader.offset, size, "\(type) \(bytes) available \(available): \(v)")
                    accepted += 1
                    if case .variant = v { variantsInPlace += 1 }
                }
            }
        }
        XCTAssertGreaterThan(accepted, 500)
        XCTAssertGreaterThan(variantsInPlace, 60, "non-NULL variants accepted in place")
    }
}
