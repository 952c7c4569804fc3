import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// ``WireRowBlock`` and ``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``: rows kept
/// as wire bytes must give exactly what the value decoder gives, and a row is kept only when
/// every value of it decodes (so reading one later cannot fail).
final class WireRowBlockTests: XCTestCase {
    static let latin1 = Collation.sqlLatin1GeneralCP1CIAS

    /// Every type the wire path takes, with declared lengths, precisions and scales around the edges.
    static let types: [TypeInfo] = {
        var t: [TypeInfo] = [
            TypeInfo(type: .int1, length: 1), TypeInfo(type: .int2, length: 2), TypeInfo(type: .int4, length: 4),
            TypeInfo(type: .int8, length: 8), TypeInfo(type: .bit, length: 1), TypeInfo(type: .flt4, length: 4),
            TypeInfo(type: .flt8, length: 8), TypeInfo(type: .money, length: 8), TypeInfo(type: .money4, length: 4),
            TypeInfo(type: .datetime, length: 8), TypeInfo(type: .datetim4, length: 4),
            .int, .bigint, .smallint, .tinyint, TypeInfo(type: .intN, length: 0), .bit, .real, .float,
            TypeInfo(type: .fltN, length: 0), .money, .smallMoney, .datetime, .smallDateTime, .uniqueIdentifier, .date,
            TypeInfo(type: .intN, length: 2), TypeInfo(type: .guid, length: 0),
            .nvarchar(10), .nvarchar(4000), .nchar(3), .varchar(10, collation: latin1), .varchar(8000, collation: latin1),
            .char(4, collation: latin1), .varbinary(16), .varbinary(8000), .binary(5),
            TypeInfo(type: .varchar, length: 20, collation: latin1), TypeInfo(type: .char, length: 3, collation: latin1),
            TypeInfo(type: .varbinary, length: 20), TypeInfo(type: .binary, length: 4),
            TypeInfo(type: .bigVarChar, length: 30), // no collation: code page 1252
        ]
        for (p, s) in [(1, 0), (9, 2), (10, 0), (18, 4), (19, 19), (20, 5), (28, 10), (29, 0), (38, 12), (38, 38)] as [(UInt8, UInt8)] {
            t.append(.decimal(precision: p, scale: s))
            t.append(.numeric(precision: p, scale: s))
        }
        t.append(TypeInfo(type: .decimal, length: 17, precision: 38, scale: 2))
        t.append(TypeInfo(type: .numeric, length: 5, precision: 5, scale: 1))
        for s in 0 ... 8 as ClosedRange<UInt8> {
            t.append(.time(scale: s))
            t.append(.datetime2(scale: s))
            t.append(.datetimeOffset(scale: s))
        }
        return t
    }()

    /// Plausible and hostile value bytes for `type`: valid lengths, wrong lengths, random data,
    /// values at the range edges.
    static func valueBytes(_ type: TypeInfo, _ rng: inout SystemRandomNumberGenerator) -> [UInt8] {
        func random(_ n: Int) -> [UInt8] { (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) } }
        func text16(_ units: Int) -> [UInt8] {
            var out: [UInt8] = []
            for _ in 0 ..< units {
                let u: UInt16
                switch Int.random(in: 0 ..< 10, using: &rng) {
                case 0: u = UInt16.random(in: 0xD800 ... 0xDFFF, using: &rng)      // a lone surrogate, usually
                case 1: u = UInt16.random(in: 0x80 ... 0xFFFF, using: &rng)
                default: u = UInt16.random(in: 0x20 ... 0x7E, using: &rng)
                }
                out += [UInt8(u & 0xFF), UInt8(u >> 8)]
            }
            if Int.random(in: 0 ..< 4, using: &rng) == 0, units >= 2 {
                // A valid pair somewhere.
                let at = Int.random(in: 0 ..< units - 1, using: &rng) * 2
                out[at] = 0x3D; out[at + 1] = 0xD8; out[at + 2] = 0x00; out[at + 3] = 0xDE
            }
            return out
        }
        switch type.type.lengthKind {
        case .fixed(let size)?:
            return random(size)
        case .byteLength?:
            let n: Int
            switch Int.random(in: 0 ..< 6, using: &rng) {
            case 0: n = 0
            case 1: n = Int.random(in: 0 ... 20, using: &rng)
            default: n = type.length > 0 ? type.length : [1, 2, 4, 8, 16].randomElement(using: &rng)!
            }
            var v = random(n)
            // Dates, times, decimals: often in range.
            if n > 0, Bool.random(using: &rng) {
                switch type.type {
                case .decimalN, .numericN, .decimal, .numeric: v[0] = UInt8.random(in: 0 ... 1, using: &rng); if n > 14 { v[n - 1] = 0 }
                case .dateN, .datetime2N, .datetimeOffsetN: v[n - 1] = 0
                default: break
                }
            }
            return [UInt8(n)] + v
        case .ushortLength?:
            if Int.random(in: 0 ..< 8, using: &rng) == 0 { return [0xFF, 0xFF] }
            let n = Int.random(in: 0 ... 40, using: &rng)
            let body = (type.type == .nvarchar || type.type == .nchar) && n % 7 != 3 ? text16(n / 2) : random(n)
            return [UInt8(body.count & 0xFF), UInt8(body.count >> 8)] + body
        default:
            return random(4)
        }
    }

    /// Equal values, a NaN equal to a NaN of the same bits (random bytes make NaNs).
    static func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.real(let x), .real(let y)): return x.bitPattern == y.bitPattern
        case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern
        default: return a == b
        }
    }

    func testWirePathAcceptsExactlyWhatTheValueDecoderAcceptsAndGivesTheSameValues() throws {
        var rng = SystemRandomNumberGenerator()
        var accepted = 0, refused = 0
        for type in Self.types {
            for _ in 0 ..< 300 {
                let bytes = Self.valueBytes(type, &rng)
                var reader = ByteReader(bytes + [0xFD])
                let expected: SQLValue?
                do {
                    expected = try type.decodeValue(from: &reader)
                } catch {
                    expected = nil
                }
                let consumed = reader.offset
                var decoder = TokenStreamDecoder(version: .v7_4)
                decoder.setColumns([ColumnMetadata(typeInfo: type, name: "c")])
                decoder.append([TokenType.row.rawValue] + bytes + ServerTokens.done(version: .v7_4))
                guard var block = decoder.makeWireRowBlock() else {
                    XCTFail("\(type) is not kept as wire bytes")
                    continue
                }
                let (rows, end) = decoder.appendBufferedRows(to: &block, limit: 10, byteLimit: 1 << 20)
                if let expected, consumed == bytes.count {
                    XCTAssertEqual(rows, 1, "\(type) \(bytes): the value decoder reads \(expected)")
                    XCTAssertEqual(end, .otherToken, "\(type) \(bytes)")
                    if rows == 1 {
                        XCTAssertTrue(Self.same(block.value(row: 0, column: 0), expected), "\(type) \(bytes): \(block.value(row: 0, column: 0)) is not \(expected)")
                        XCTAssertEqual(block.isNull(row: 0, column: 0), expected.isNull, "\(type) \(bytes)")
                    }
                    accepted += 1
                } else {
                    // Refused, or a value shorter than the bytes (then the row is malformed: what
                    // follows is not a token): never a row of wire bytes, and the value decoder says why.
                    XCTAssertEqual(rows, 0, "\(type) \(bytes) kept, but the value decoder says \(expected.map { "\($0) in \(consumed) bytes" } ?? "error")")
                    if expected == nil { XCTAssertNotEqual(end, .otherToken, "\(type) \(bytes)") }
                    refused += 1
                }
            }
        }
        XCTAssertGreaterThan(accepted, 5000)
        XCTAssertGreaterThan(refused, 1000)
    }

    /// Every value the scan's check-only path (``WireColumn/checkedSize(at:available:)``) accepts,
    /// the full decoder (``TypeInfo/decodeValue(from:)``) accepts with the same size and the same
    /// value as the block's read (``WireRowBlock/decodeScanned(_:at:)``): random and edge values
    /// of every `.decode` type, each also cut short at every length.
    func testCheckedSizeAcceptsOnlyWhatTheFullDecoderAccepts() {
        var rng = SystemRandomNumberGenerator()
        func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        func le128(_ v: UInt128, _ n: Int) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt128($0))) } }
        var checked = 0, accepted = 0
        for type in Self.types {
            let column = WireColumn(type)
            guard column.kind == .decode else { continue }
            var samples: [[UInt8]] = (0 ..< 400).map { _ in Self.valueBytes(type, &rng) }
            // Edges: each field just inside and just outside its range.
            let tl = type.scale <= 7 ? SQLTime.wireLength(scale: type.scale) : 5
            let ticks = type.scale <= 7 ? 86_400 * Civil.powersOf10[Int(type.scale)] : 0
            let day = UInt64(Civil.maxDay)
            switch type.type {
            case .decimal, .numeric, .decimalN, .numericN:
                let limit = Civil.powersOf10Wide[Int(min(type.precision, 38))]
                for m in [4, 8, 12, 16, 1, 3, 7, 9, 15] {
                    for mag in [limit - 1, limit, 0, limit &+ 1, UInt128.max >> 1] {
                        for sign: UInt8 in [0, 1, 2] { samples.append([UInt8(m + 1), sign] + le128(mag, m)) }
                    }
                }
            case .timeN:
                for t in [ticks &- 1, ticks, 0] { samples.append([UInt8(tl)] + le(t, tl)) }
            case .datetime2N:
                for t in [ticks &- 1, ticks] { for d in [day, day + 1, 0] { samples.append([UInt8(tl + 3)] + le(t, tl) + le(d, 3)) } }
            case .datetimeOffsetN:
                for o: Int16 in [-840, 840, -841, 841, 0] {
                    for d in [day, day + 1] { samples.append([UInt8(tl + 5)] + le(ticks &- 1, tl) + le(d, 3) + le(UInt64(UInt16(bitPattern: o)), 2)) }
                }
            case .dateN:
                for d in [day, day + 1, 0] { samples.append([3] + le(d, 3)) }
            case .datetime, .datetimN:
                let prefix: [UInt8] = type.type == .datetimN ? [8] : []
                for d: Int32 in [SQLDateTime.minDays, SQLDateTime.minDays - 1, SQLDateTime.maxDays, SQLDateTime.maxDays + 1] {
                    for t: UInt32 in [SQLDateTime.ticksPerDay - 1, SQLDateTime.ticksPerDay] {
                        samples.append(prefix + le(UInt64(UInt32(bitPattern: d)), 4) + le(UInt64(t), 4))
                    }
                }
                for m: UInt16 in [1439, 1440] { samples.append((type.type == .datetimN ? [4] : []) + le(7, 2) + le(UInt64(m), 2)) }
            default:
                break
            }
            for bytes in samples {
                for available in 1 ... bytes.count {
                    let size = bytes.withUnsafeBytes { column.checkedSize(at: $0.baseAddress!, available: available) }
                    checked += 1
                    guard size > 0 else { continue }
                    accepted += 1
                    var reader = ByteReader(Array(bytes.prefix(available)))
                    let full = try? type.decodeValue(from: &reader)
                    let scanned = bytes.withUnsafeBytes { WireRowBlock.decodeScanned(column, at: $0.baseAddress!) }
                    XCTAssertEqual(reader.offset, size, "\(type) \(bytes) available \(available)")
                    XCTAssertNotNil(full, "\(type) \(bytes) available \(available)")
                    // nil: a value the block reads with the full decoder (sql_variant, code page text).
                    if let scanned { XCTAssertEqual(full, scanned, "\(type) \(bytes) available \(available)") }
                }
            }
        }
        XCTAssertGreaterThan(checked, 50_000)
        XCTAssertGreaterThan(accepted, 5_000)
    }

    /// A run of rows in one block: NBCROW bitmaps, NULLs, every value read back as the token
    /// decoder reads it, the same whole, byte by byte and split at random.
    func testRowsAcrossSplitsMatchTheTokenDecoder() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "a"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "b"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .decimal(precision: 18, scale: 4), name: "c"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .datetime2(scale: 7), name: "d"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(8), name: "e")]
        var stream: [UInt8] = ServerTokens.colMetadata(columns, version: .v7_4)
        var expected: [[SQLValue]] = []
        for i in 0 ..< 300 {
            var row: [SQLValue] = [.int(Int32(i)), .string("é\(i) 😀"), .decimal(SQLDecimal(isNegative: i % 2 == 0, precision: 18, scale: 4, magnitude: UInt128(i) * 977)),
                                   .datetime2(SQLDateTime2(date: SQLDate(days: Int32(700_000 + i)), time: SQLTime(ticks: UInt64(i) * 1_000_003, scale: 7))),
                                   .binary([UInt8(i & 0xFF), 1, 2])]
            if i % 5 == 0 { row[i % 5] = .null; row[4] = .null }
            stream += try i % 3 == 0 ? ServerTokens.nbcRow(row, columns: columns) : ServerTokens.row(row, columns: columns)
            expected.append(row)
        }
        stream += ServerTokens.done(status: .count, rowCount: 300, version: .v7_4)
        var rng = SystemRandomNumberGenerator()
        for split in DecoderVerifier.Split.allCases {
            var decoder = TokenStreamDecoder(version: .v7_4)
            var got: [[SQLValue]] = []
            var block: WireRowBlock?
            func drain() throws {
                while true {
                    if block == nil { block = decoder.makeWireRowBlock() }
                    if var b = block {
                        let (n, end) = decoder.appendBufferedRows(to: &b, limit: 7, byteLimit: 1 << 20)
                        block = b
                        if n > 0 || end == .limit {
                            // Per row, per value and the run in one array: the same values.
                            let run = b.rowCount - n ..< b.rowCount
                            let flat = b.values(rows: run)
                            XCTAssertEqual(flat.count, n * columns.count)
                            for r in run {
                                let row = b.values(row: r)
                                let k = (r - run.lowerBound) * columns.count
                                XCTAssertEqual(Array(flat[k ..< k + columns.count]), row)
                                XCTAssertEqual((0 ..< columns.count).map { b.value(row: r, column: $0) }, row)
                                got.append(row)
                            }
                            if end == .limit { block = nil }
                            continue
                        }
                        if end == .needBytes { return }
                    }
                    guard let token = try decoder.next() else { return }
                    if case .row(let r) = token { got.append(r.values) }
                    if case .nbcRow(let r) = token { got.append(r.values) }
                }
            }
            for piece in DecoderVerifier.pieces(of: stream, split, using: &rng) {
                decoder.append(piece)
                try drain()
            }
            try decoder.finish()
            XCTAssertEqual(got, expected, "\(split)")
        }
    }

    /// What reading `stream`, cut as `split` says, through blocks (runs of at most `limit` rows and
    /// `byteLimit` bytes, a new block after each `.limit`) and the token decoder gives: the rows
    /// in order, the blocks (each as it was when it was left), the rows each run gave and the
    /// error that ended it, if any.
    struct Drained {
        var rows: [[SQLValue]] = []
        var blocks: [WireRowBlock] = []
        var runs: [(rows: Int, end: TokenStreamDecoder.RowRunEnd)] = []
        var error: TDSDecodingError?
    }

    static func drain(_ stream: [UInt8], _ split: DecoderVerifier.Split, limit: Int = 1000, byteLimit: Int = 1 << 20) -> Drained {
        var rng = SystemRandomNumberGenerator()
        var decoder = TokenStreamDecoder(version: .v7_4)
        var out = Drained()
        var block: WireRowBlock?
        func step() throws(TDSDecodingError) {
            while true {
                if block == nil { block = decoder.makeWireRowBlock() }
                if var b = block {
                    let (n, end) = decoder.appendBufferedRows(to: &b, limit: limit, byteLimit: byteLimit)
                    block = b
                    if n > 0 || end != .needBytes { out.runs.append((n, end)) }
                    for r in b.rowCount - n ..< b.rowCount { out.rows.append(b.values(row: r)) }
                    if end == .limit {
                        out.blocks.append(b)
                        block = nil
                    }
                    if n > 0 || end == .limit { continue }
                    if end == .needBytes { return }
                }
                guard let token = try decoder.next() else { return }
                if case .row(let r) = token { out.rows.append(r.values) }
                if case .nbcRow(let r) = token { out.rows.append(r.values) }
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
        if let b = block, !b.isEmpty { out.blocks.append(b) }
        return out
    }

    /// The UTF-16LE bytes of `s`.
    static func utf16(_ s: String) -> [UInt8] { s.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }

    /// A row of a lone surrogate in the middle of a run: the rows before it are kept in the block,
    /// the run ends `.incremental` at it, and the token decoder then reports the same error (code,
    /// offset, token) as it does reading the stream alone; whole, byte by byte and split at random.
    func testLoneSurrogateInARunKeepsTheRowsBeforeItAndFailsAsTheTokenDecoder() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "a"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "b"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "c")]
        for (bad, column) in [(0, 1), (5, 1), (5, 2), (9, 2)] {
            for surrogate: [UInt8] in [[0x00, 0xD8], [0x00, 0xDC]] {   // a high one before 'Q', a low one
                var stream = ServerTokens.colMetadata(columns, version: .v7_4)
                var good: [[SQLValue]] = []
                for i in 0 ..< 10 {
                    var row: [SQLValue] = [.int(Int32(i)), .string("é\(i) 😀"), .string("ab\(i)")]
                    if i == bad { row[column] = .string("xyQQ") }
                    var bytes = try i % 2 == 0 ? ServerTokens.nbcRow(row, columns: columns) : ServerTokens.row(row, columns: columns)
                    if i == bad {
                        let q = Self.utf16("QQ")
                        let at = try XCTUnwrap((0 ..< bytes.count - 3).first { Array(bytes[$0 ..< $0 + 4]) == q })
                        bytes.replaceSubrange(at ..< at + 2, with: surrogate)
                    }
                    if i < bad { good.append(row) }
                    stream += bytes
                }
                stream += ServerTokens.done(status: .count, rowCount: 10, version: .v7_4)
                var alone = TokenStreamDecoder(version: .v7_4)
                alone.append(stream)
                var expected: TDSDecodingError?
                do { while try alone.next() != nil {} } catch { expected = error }
                let e = try XCTUnwrap(expected, "the token decoder refuses row \(bad)")
                XCTAssertEqual(e.code, .invalidEncoding)
                for split in DecoderVerifier.Split.allCases {
                    let got = Self.drain(stream, split)
                    XCTAssertEqual(got.rows, good, "\(bad) \(column) \(split)")
                    XCTAssertEqual(got.error?.code, e.code, "\(split)")
                    XCTAssertEqual(got.error?.offset, e.offset, "\(split)")
                    XCTAssertEqual(got.error?.context, e.context, "\(split)")
                    XCTAssertEqual(got.runs.last?.end, .incremental, "\(split): the run stops at the bad row")
                    if split == .whole {
                        XCTAssertEqual(got.runs.map(\.rows).filter { $0 > 0 }, bad > 0 ? [bad] : [], "one run, the rows before the bad one")
                        XCTAssertEqual(got.blocks.first?.rowCount ?? 0, bad)
                    }
                }
            }
        }
    }

    /// Text at the UTF-8 length extremes of nvarchar(4000): 4,000 CJK units (12,000 UTF-8 bytes),
    /// 2,000 surrogate pairs (8,000), 4,000 ASCII (4,000), an empty string; one value longer
    /// than the block's 15-bit length takes (read by the row's scan state, kept in the long form:
    /// the same value); each read as a
    /// value, a typed string and in `values(rows:)`, whole and split.
    func testTextAtTheUTF8LengthExtremesReadsBackWhole() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(4000), name: "t"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "n")]
        let texts = [String(repeating: "漢", count: 4000), String(repeating: "😀", count: 2000),
                     String(repeating: "a", count: 4000), "", String(repeating: "é", count: 3999) + "a",
                     String(repeating: "漢", count: 3999) + "😀"]
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        var expected: [[SQLValue]] = []
        for (i, t) in texts.enumerated() {
            let row: [SQLValue] = [.string(t), .int(Int32(i))]
            stream += try ServerTokens.row(row, columns: columns)
            expected.append(row)
        }
        // Longer than SQL Server sends for nvarchar(4000): beyond what the block keeps.
        let long = String(repeating: "漢", count: TokenStreamDecoder.wireTextLimit / 2 + 1)
        stream += [TokenType.row.rawValue] + [UInt8((long.utf16.count * 2) & 0xFF), UInt8((long.utf16.count * 2) >> 8)] + Self.utf16(long) + [4, 7, 0, 0, 0]
        expected.append([.string(long), .int(7)])
        stream += try ServerTokens.row([.string("after"), .int(8)], columns: columns)
        expected.append([.string("after"), .int(8)])
        stream += ServerTokens.done(status: .count, rowCount: UInt64(expected.count), version: .v7_4)
        for split in DecoderVerifier.Split.allCases {
            let got = Self.drain(stream, split)
            XCTAssertNil(got.error)
            XCTAssertEqual(got.rows, expected, "\(split)")
            XCTAssertEqual(got.blocks.reduce(0) { $0 + $1.rowCount }, expected.count, "\(split): every row in blocks, the long one too")
            for b in got.blocks {
                for r in 0 ..< b.rowCount {
                    guard case .string(let s) = b.value(row: r, column: 0) else { XCTFail("\(split) row \(r)"); continue }
                    guard case .value(let typed) = b.string(row: r, column: 0) else { XCTFail("\(split) row \(r) typed"); continue }
                    XCTAssertEqual(typed, s)
                    XCTAssertEqual(b.values(rows: r ..< r + 1).first, .string(s))
                }
            }
        }
    }

    /// The header of every UTF-8 value in a block: its byte count, and bit 15 set exactly when
    /// every byte is ASCII; rows mixing ASCII, Latin, CJK, emoji, empty and NULL values.
    func testASCIIFlagIsExactOnMixedRows() throws {
        let columns = (0 ..< 3).map { ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(60), name: "c\($0)") }
        let pieces = ["a", "Z", "~", " ", "é", "Ω", "漢", "😀", "\u{7F}", "\u{80}", "\u{7FF}", "\u{800}", "\u{FFFF}", "\u{10000}"]
        var rng = SystemRandomNumberGenerator()
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        var expected: [[SQLValue]] = []
        for i in 0 ..< 400 {
            let row: [SQLValue] = (0 ..< 3).map { c in
                if (i + c) % 11 == 0 { return .null }
                var s = ""
                let ascii = Bool.random(using: &rng)
                for _ in 0 ..< Int.random(in: 0 ... 20, using: &rng) {
                    s += ascii ? ["a", "Z", "~", " ", "\u{7F}"].randomElement(using: &rng)! : pieces.randomElement(using: &rng)!
                }
                return .string(s)
            }
            stream += try i % 3 == 0 ? ServerTokens.nbcRow(row, columns: columns) : ServerTokens.row(row, columns: columns)
            expected.append(row)
        }
        stream += ServerTokens.done(status: .count, rowCount: 400, version: .v7_4)
        let got = Self.drain(stream, .random)
        XCTAssertEqual(got.rows, expected)
        var checked = 0, asciiCount = 0
        var r0 = 0
        for b in got.blocks {
            for r in 0 ..< b.rowCount {
                for c in 0 ..< 3 {
                    let o = b.offset(row: r, column: c)
                    guard case .string(let s) = expected[r0 + r][c] else {
                        XCTAssertTrue(b.isNull(row: r, column: c))
                        continue
                    }
                    XCTAssertNotEqual(o, WireRowBlock.nullOffset)
                    let h = UInt16(b.bytes[Int(o)]) | UInt16(b.bytes[Int(o) + 1]) << 8
                    XCTAssertEqual(Int(h & 0x7FFF), s.utf8.count, "\(s)")
                    XCTAssertEqual(h & 0x8000 != 0, s.utf8.allSatisfy { $0 < 0x80 }, "\(s)")
                    XCTAssertEqual(Array(b.bytes[Int(o) + 2 ..< Int(o) + 2 + s.utf8.count]), Array(s.utf8))
                    checked += 1
                    if h & 0x8000 != 0 { asciiCount += 1 }
                }
            }
            r0 += b.rowCount
        }
        XCTAssertEqual(r0, 400, "every row in a block")
        XCTAssertGreaterThan(checked, 1000)
        XCTAssertGreaterThan(asciiCount, 300)
        XCTAssertLessThan(asciiCount, checked - 300)
    }

    /// A block's bytes stay within `byteLimit` plus one row however its text grows (UTF-8 up to
    /// 1.5 times the UTF-16, CJK): each block `.limit` left holds at most `byteLimit` + one row's
    /// worst case, and the rows are the token decoder's.
    func testBlockBytesStayWithinTheByteLimit() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "a"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(100), name: "b")]
        for text in ["漢字かな", "ascii only text", "é😀"] {
            var stream = ServerTokens.colMetadata(columns, version: .v7_4)
            var expected: [[SQLValue]] = []
            for i in 0 ..< 2000 {
                let row: [SQLValue] = [.int(Int32(i)), .string(String(repeating: text, count: 1 + i % 7))]
                stream += try ServerTokens.row(row, columns: columns)
                expected.append(row)
            }
            stream += ServerTokens.done(status: .count, rowCount: 2000, version: .v7_4)
            // The largest row: token, int (1 + 4), text (2 + 3 bytes a unit).
            let worstRow = 1 + 5 + 2 + 3 * 7 * text.utf16.count
            for byteLimit in [1, 300, 4096, 65536] {
                for split in [DecoderVerifier.Split.whole, .random] {
                    let got = Self.drain(stream, split, byteLimit: byteLimit)
                    XCTAssertNil(got.error)
                    XCTAssertEqual(got.rows, expected, "\(text) \(byteLimit) \(split)")
                    if byteLimit <= 4096 { XCTAssertGreaterThan(got.blocks.count, 10, "\(text) \(byteLimit) \(split)") }
                    for b in got.blocks {
                        XCTAssertLessThan(b.byteCount, byteLimit + worstRow, "\(text) \(byteLimit) \(split)")
                        XCTAssertGreaterThan(b.rowCount, 0)
                    }
                }
            }
        }
    }

    /// Runs of rows of hostile UTF-16 (lone surrogates, odd lengths, pairs, NULLs) beside other
    /// values: through blocks the same rows and the same error (code, offset) as the token decoder
    /// alone, whole, byte by byte and split at random.
    func testHostileTextInRunsGivesWhatTheTokenDecoderGives() throws {
        var rng = SystemRandomNumberGenerator()
        let types: [TypeInfo] = [.nvarchar(20), .int, .nchar(10)]
        let columns = types.enumerated().map { ColumnMetadata(flags: [.nullable], typeInfo: $0.element, name: "c\($0.offset)") }
        var failed = 0
        for _ in 0 ..< 150 {
            var stream = ServerTokens.colMetadata(columns, version: .v7_4)
            for _ in 0 ..< Int.random(in: 1 ... 12, using: &rng) {
                stream += [TokenType.row.rawValue]
                for t in types {
                    if t.type == .intN {
                        stream += [4, 1, 2, 3, 4]
                    } else if Int.random(in: 0 ..< 6, using: &rng) == 0 {
                        stream += Self.valueBytes(t, &rng)   // hostile, often
                    } else {
                        let text = Self.utf16(String((0 ..< Int.random(in: 0 ... 9, using: &rng)).map { _ in "aé漢😀 ".randomElement(using: &rng)! }))
                        stream += [UInt8(text.count & 0xFF), UInt8(text.count >> 8)] + text
                    }
                }
            }
            stream += ServerTokens.done(version: .v7_4)
            var alone = TokenStreamDecoder(version: .v7_4)
            var expected: [[SQLValue]] = []
            var error: TDSDecodingError?
            alone.append(stream)
            do throws(TDSDecodingError) {
                while let token = try alone.next() { if case .row(let r) = token { expected.append(r.values) } }
                try alone.finish()
            } catch let e {
                error = e
            }
            if error != nil { failed += 1 }
            for split in DecoderVerifier.Split.allCases {
                let got = Self.drain(stream, split)
                XCTAssertEqual(got.rows, expected, "\(split) \(stream)")
                XCTAssertEqual(got.error?.code, error?.code, "\(split) \(stream)")
                XCTAssertEqual(got.error?.offset, error?.offset, "\(split) \(stream)")
            }
        }
        XCTAssertGreaterThan(failed, 20)
        XCTAssertLessThan(failed, 145)
    }
}
