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

    /// The scan's check-only path (``WireColumn/checkedSize(at:available:)``) accepts exactly the
    /// values ``ValueLayout/quickValue(at:available:size:)`` builds, with the same size: random
    /// and edge values of every `.decode` type, each also cut short at every length.
    func testCheckedSizeAcceptsExactlyWhatQuickValueAccepts() {
        var rng = SystemRandomNumberGenerator()
        func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        func le128(_ v: UInt128, _ n: Int) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt128($0))) } }
        var checked = 0, accepted = 0
        for type in Self.types {
            let layout = ValueLayout(type)
            let column = WireColumn(layout)
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
                    let quick = bytes.withUnsafeBytes { layout.quickValue(at: $0.baseAddress!, available: available) }
                    XCTAssertEqual(size, quick?.size ?? 0, "\(type) \(bytes) available \(available): quickValue gives \(String(describing: quick))")
                    checked += 1
                    if size > 0 { accepted += 1 }
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
}
