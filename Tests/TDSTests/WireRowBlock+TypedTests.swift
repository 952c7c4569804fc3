import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// ``WireRowBlock``'s typed reads (``WireRowBlock/integer(row:column:)`` and the others): each
/// gives exactly the value ``WireRowBlock/value(row:column:)`` holds, as the Swift type it reads,
/// or `.null`, or `.other` for the types it does not take; over every type a block holds, random
/// and edge values, and rows whole, byte by byte and split at random.
final class WireRowBlockTypedTests: XCTestCase {
    /// What a read gave, comparable: floats and `Decimal` by their bits.
    enum Read: Equatable {
        case value(String)
        case null
        case other
    }

    static func read<V>(_ r: WireTypedValue<V>, _ show: (V) -> String) -> Read {
        switch r {
        case .value(let v): return .value(show(v))
        case .null: return .null
        case .other: return .other
        }
    }

    static func bits(_ d: Decimal) -> String { withUnsafeBytes(of: d) { Array($0) }.description }
    static func bits(_ d: Date) -> String { String(d.timeIntervalSinceReferenceDate.bitPattern) }

    /// Every typed read of the value at (`row`, `column`) against what ``WireRowBlock/value(row:column:)``
    /// gives; a description of each mismatch. `declined` counts the decimal and date values the
    /// quick decoder leaves to the full one (allowed to read as `.other`).
    static func mismatches(_ b: WireRowBlock, row: Int, column: Int, declined: inout Int) -> [String] {
        let v = b.value(row: row, column: column)
        var out: [String] = []
        func expect(_ name: String, _ got: Read, _ want: Read, orOther: Bool = false) {
            if got == want { return }
            if got == .other && orOther { declined += 1; return }
            // A NULL of a type a read does not take may read as `.other` (the caller then reads the SQLValue).
            if v.isNull && got == .other { return }
            out.append("\(name) of \(v) (\(b.scan[column].sqlTypeName)): \(got), expected \(want)")
        }
        let null: Read? = v.isNull ? .null : nil
        func integer() -> Read {
            switch v {
            case .tinyint(let x): return .value(String(x))
            case .smallint(let x): return .value(String(x))
            case .int(let x): return .value(String(x))
            case .bigint(let x): return .value(String(x))
            default: return null ?? .other
            }
        }
        expect("integer", read(b.integer(row: row, column: column)) { String($0) }, integer())
        if case .bit(let x) = v { expect("bit", read(b.bit(row: row, column: column)) { String($0) }, .value(String(x))) }
        else { expect("bit", read(b.bit(row: row, column: column)) { String($0) }, null ?? .other) }
        switch v {
        case .float(let x): expect("double", read(b.double(row: row, column: column)) { String($0.bitPattern) }, .value(String(x.bitPattern)))
        case .real(let x): expect("double", read(b.double(row: row, column: column)) { String($0.bitPattern) }, .value(String(Double(x).bitPattern)))
        default: expect("double", read(b.double(row: row, column: column)) { String($0.bitPattern) }, null ?? .other)
        }
        if case .real(let x) = v { expect("real", read(b.real(row: row, column: column)) { String($0.bitPattern) }, .value(String(x.bitPattern))) }
        else { expect("real", read(b.real(row: row, column: column)) { String($0.bitPattern) }, null ?? .other) }
        if case .string(let s) = v { expect("string", read(b.string(row: row, column: column)) { $0 }, .value(s)) }
        else { expect("string", read(b.string(row: row, column: column)) { $0 }, null ?? .other) }
        if case .binary(let x) = v {
            expect("bytes", read(b.bytes(row: row, column: column)) { $0.description }, .value(x.description))
            expect("data", read(b.data(row: row, column: column)) { Array($0).description }, .value(x.description))
        } else {
            expect("bytes", read(b.bytes(row: row, column: column)) { $0.description }, null ?? .other)
            expect("data", read(b.data(row: row, column: column)) { Array($0).description }, null ?? .other)
        }
        if case .uniqueIdentifier(let u) = v { expect("uuid", read(b.uuid(row: row, column: column)) { $0.uuidString }, .value(u.uuidString)) }
        else { expect("uuid", read(b.uuid(row: row, column: column)) { $0.uuidString }, null ?? .other) }
        switch v {
        case .decimal(let d):
            // The quick decoder leaves a magnitude beyond the column's precision to the full one.
            var limit: UInt128 = 1
            for _ in 0 ..< min(Int(b.scan[column].precision), 38) { limit *= 10 }
            expect("decimal", read(b.decimal(row: row, column: column), bits), .value(bits(d.decimalValue)), orOther: d.magnitude >= limit)
        case .money(let m), .smallMoney(let m): expect("decimal", read(b.decimal(row: row, column: column), bits), .value(bits(m.decimalValue)))
        default: expect("decimal", read(b.decimal(row: row, column: column), bits), null ?? .other)
        }
        switch v {
        case .date, .datetime2, .datetimeOffset, .datetime, .smallDateTime:
            let want = try? XCTUnwrap(v.dateValue(in: TimeZone(secondsFromGMT: 0) ?? .current))
            expect("utcDate", read(b.utcDate(row: row, column: column), bits), want.map { .value(bits($0)) } ?? .other)
            if let u = v.utcDateValue, let want, bits(u) != bits(want) { out.append("utcDateValue of \(v): \(u), expected \(want)") }
        default: expect("utcDate", read(b.utcDate(row: row, column: column), bits), null ?? .other)
        }
        return out
    }

    /// One value of every type a block holds (``WireRowBlockTests/types``), random bytes and
    /// edges (``WireRowBlockTests/valueBytes(_:_:)``), each row the value decoder accepts.
    func testEveryTypedReadGivesTheValueOfTheSQLValueForEveryType() throws {
        var rng = SystemRandomNumberGenerator()
        var checked = 0, declined = 0, nulls = 0
        var typesRead = Set<String>()
        for type in WireRowBlockTests.types {
            for _ in 0 ..< 300 {
                let bytes = WireRowBlockTests.valueBytes(type, &rng)
                var reader = ByteReader(bytes)
                guard (try? type.decodeValue(from: &reader)) != nil, reader.offset == bytes.count else { continue }
                var decoder = TokenStreamDecoder(version: .v7_4)
                decoder.setColumns([ColumnMetadata(typeInfo: type, name: "c")])
                decoder.append([TokenType.row.rawValue] + bytes + ServerTokens.done(version: .v7_4))
                var block = try XCTUnwrap(decoder.makeWireRowBlock(), "\(type)")
                let (rows, _) = decoder.appendBufferedRows(to: &block, limit: 10, byteLimit: 1 << 20)
                XCTAssertEqual(rows, 1, "\(type) \(bytes)")
                guard rows == 1 else { continue }
                let problems = Self.mismatches(block, row: 0, column: 0, declined: &declined)
                for p in problems.prefix(3) { XCTFail("\(p), bytes \(bytes)") }
                if block.value(row: 0, column: 0).isNull { nulls += 1 } else { typesRead.insert(type.sqlTypeName) }
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 8000)
        XCTAssertGreaterThan(nulls, 300)
        XCTAssertGreaterThanOrEqual(typesRead.count, 40, "\(typesRead.sorted())")
    }

    /// Rows of every kind of column in one block, ROW and NBCROW (bitmap NULLs), NULLs of every
    /// type: the typed reads agree with the values whole, byte by byte and split at random.
    func testTypedReadsAcrossSplitsAndNBCRowNulls() throws {
        let latin1 = WireRowBlockTests.latin1
        let types: [TypeInfo] = [
            TypeInfo(type: .int1, length: 1), TypeInfo(type: .int2, length: 2), TypeInfo(type: .int4, length: 4), TypeInfo(type: .int8, length: 8),
            .tinyint, .smallint, .int, .bigint, TypeInfo(type: .bit, length: 1), .bit,
            TypeInfo(type: .flt4, length: 4), TypeInfo(type: .flt8, length: 8), .real, .float,
            TypeInfo(type: .money, length: 8), TypeInfo(type: .money4, length: 4), .money, .smallMoney,
            .decimal(precision: 18, scale: 4), .numeric(precision: 38, scale: 12), .decimal(precision: 5, scale: 0),
            .date, .datetime2(scale: 7), .datetime2(scale: 0), .datetimeOffset(scale: 3), .datetime, .smallDateTime,
            TypeInfo(type: .datetime, length: 8), TypeInfo(type: .datetim4, length: 4), .time(scale: 7),
            .uniqueIdentifier, .nvarchar(30), .nchar(4), .varchar(30, collation: latin1), .char(3, collation: latin1),
            TypeInfo(type: .varchar, length: 20, collation: latin1), .varbinary(16), .binary(3), TypeInfo(type: .varbinary, length: 20),
        ]
        let columns = types.enumerated().map { ColumnMetadata(flags: [.nullable], typeInfo: $0.element, name: "c\($0.offset)") }
        /// A time of day at `scale` (below 24:00).
        func ticks(_ i: Int, _ step: UInt64, _ scale: UInt8) -> UInt64 {
            UInt64(i) &* step % (86_400 * [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000][Int(scale)])
        }
        func value(_ t: TypeInfo, _ i: Int) -> SQLValue {
            switch t.type {
            case .int1, .intN where t.length == 1: return .tinyint(UInt8(truncatingIfNeeded: i * 7))
            case .int2, .intN where t.length == 2: return .smallint(Int16(truncatingIfNeeded: i * 977 - 30_000))
            case .int4, .intN where t.length == 4: return .int(Int32(truncatingIfNeeded: i &* 2_654_435_761))
            case .int8, .intN: return .bigint(Int64(i) &* -7_000_000_000_003)
            case .bit, .bitN: return .bit(i % 3 == 0)
            case .flt4: return .real(Float(i) * -0.375)
            case .flt8: return .float(Double(i) / 7)
            case .fltN: return t.length == 4 ? .real(Float(i) * 1.5) : .float(Double(i) * -1e300)
            case .money, .moneyN where t.length == 8: return .money(SQLMoney(units: Int64(i) &* 987_654_321_987 - 5))
            case .money4, .moneyN: return .smallMoney(SQLMoney(units: Int64(i * 7919 - 1_000_000)))
            case .decimalN, .numericN:
                let mag = t.precision > 19 ? UInt128(i) * 12_345_678_901_234_567_890_123 + 1 : UInt128(i * 97 % 99_999)
                return .decimal(SQLDecimal(isNegative: i % 2 == 1, precision: t.precision, scale: t.scale, magnitude: mag))
            case .dateN: return .date(SQLDate(days: Int32(i * 1217 % 3_652_059)))
            case .datetime2N:
                return .datetime2(SQLDateTime2(date: SQLDate(days: Int32(700_000 + i)), time: SQLTime(ticks: ticks(i, 86_399_017, t.scale), scale: t.scale)))
            case .datetimeOffsetN:
                return .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: SQLDate(days: Int32(730_000 + i)), time: SQLTime(ticks: ticks(i, 3_000_001, t.scale), scale: t.scale)),
                                                         offsetMinutes: Int16(i % 1681 - 840)))
            case .datetime, .datetimN where t.length == 8: return .datetime(SQLDateTime(days: Int32(i * 13 - 20_000), ticks: UInt32(i * 7919 % 25_920_000)))
            case .datetim4, .datetimN: return .smallDateTime(SQLSmallDateTime(days: UInt16(i * 31 % 65_536), minutes: UInt16(i % 1440)))
            case .timeN: return .time(SQLTime(ticks: ticks(i, 1_000_003, t.scale), scale: t.scale))
            case .guid: return .uniqueIdentifier(UUID(uuid: (UInt8(i & 0xFF), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, UInt8(i >> 8 & 0xFF))))
            case .nvarchar: return .string(i % 4 == 0 ? "" : "é\(i) 😀 ω")
            case .nchar: return .string("ab\(i % 10)ω")
            case .bigChar, .char: return .string("x\(i % 10)é")
            // An empty legacy VARCHAR or VARBINARY would read back as NULL: never sent.
            case .bigVarChar, .varchar: return .string(i % 5 == 0 && t.type == .bigVarChar ? "" : "varchar \(i) café")
            case .bigBinary: return .binary([UInt8(i & 0xFF), 0, 0xFF])
            default: return .binary((0 ..< (t.type == .varbinary ? 1 : 0) + i % 16).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) })
            }
        }
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        var expected: [[SQLValue]] = []
        for i in 0 ..< 120 {
            var row = types.map { value($0, i) }
            // A fixed-length type is NULL only in an NBCROW's bitmap.
            for c in row.indices where (i + c) % 9 == 0 {
                if case .fixed? = types[c].type.lengthKind, i % 2 == 1 { continue }
                row[c] = .null
            }
            stream += try i % 2 == 0 ? ServerTokens.nbcRow(row, columns: columns) : ServerTokens.row(row, columns: columns)
            expected.append(row)
        }
        stream += ServerTokens.done(status: .count, rowCount: 120, version: .v7_4)
        var rng = SystemRandomNumberGenerator()
        for split in DecoderVerifier.Split.allCases {
            var decoder = TokenStreamDecoder(version: .v7_4)
            var read = 0, declined = 0
            var block: WireRowBlock?
            func drain() throws {
                while true {
                    if block == nil { block = decoder.makeWireRowBlock() }
                    if var b = block {
                        let (n, end) = decoder.appendBufferedRows(to: &b, limit: 11, byteLimit: 1 << 20)
                        block = b
                        for r in b.rowCount - n ..< b.rowCount {
                            for c in 0 ..< columns.count {
                                XCTAssertEqual(b.value(row: r, column: c), expected[read][c], "\(split) row \(read) column \(c)")
                                for p in Self.mismatches(b, row: r, column: c, declined: &declined).prefix(2) { XCTFail("\(split) row \(read): \(p)") }
                            }
                            read += 1
                        }
                        if end == .limit { block = nil; continue }
                        if n > 0 { continue }
                        if end == .needBytes { return }
                    }
                    guard let token = try decoder.next() else { return }
                    if case .row = token { XCTFail("\(split): a row outside a block") }
                    if case .nbcRow = token { XCTFail("\(split): a row outside a block") }
                }
            }
            for piece in DecoderVerifier.pieces(of: stream, split, using: &rng) {
                decoder.append(piece)
                try drain()
            }
            try decoder.finish()
            XCTAssertEqual(read, 120, "\(split)")
            XCTAssertEqual(declined, 0, "\(split)")
        }
    }
}
