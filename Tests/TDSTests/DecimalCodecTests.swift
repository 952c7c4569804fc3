import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// ``DecimalCodec``'s typed read (``WireRowBlock/decimal(row:column:)``), which builds the `Decimal`
/// straight from the wire's sign, scale and magnitude: the same `Decimal`, to the bit, as
/// ``SQLDecimal/decimalValue`` of the value ``WireRowBlock/value(row:column:)`` holds (the value
/// `query()` gives), on the edges: 38 digits, negative zero, scale 0 and 38, the 64-bit and 10^19
/// boundaries; a magnitude beyond the precision (widened by the full decoder) reads as `.other`.
final class DecimalCodecTests: XCTestCase {
    static func bits(_ d: Decimal) -> [UInt8] { withUnsafeBytes(of: d) { Array($0) } }

    static let maxMagnitude: UInt128 = 99_999_999_999_999_999_999_999_999_999_999_999_999
    static let tenTo19: UInt128 = 10_000_000_000_000_000_000

    /// Rows of one decimal(`precision`, `scale`) column, one per (negative, magnitude), each value
    /// sent with the length its precision gives; returns the typed reads that disagree.
    func mismatches(precision: UInt8, scale: UInt8, _ values: [(negative: Bool, magnitude: UInt128)]) throws -> [String] {
        let n = SQLDecimal.wireLength(precision: precision)
        var stream: [UInt8] = []
        for v in values {
            stream += [TokenType.row.rawValue, UInt8(n), v.negative ? 0 : 1]
            for k in 0 ..< n - 1 { stream.append(UInt8(truncatingIfNeeded: v.magnitude >> (8 * k))) }
        }
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.setColumns([ColumnMetadata(typeInfo: .decimal(precision: precision, scale: scale), name: "c")])
        decoder.append(stream + ServerTokens.done(version: .v7_4))
        var block = try XCTUnwrap(decoder.makeWireRowBlock())
        let (rows, _) = decoder.appendBufferedRows(to: &block, limit: 10_000, byteLimit: 1 << 24)
        XCTAssertEqual(rows, values.count, "decimal(\(precision),\(scale))")
        var limit: UInt128 = 1
        for _ in 0 ..< precision { limit *= 10 }
        var out: [String] = []
        for (row, v) in values.enumerated() where row < rows {
            guard case .decimal(let d) = block.value(row: row, column: 0) else {
                out.append("row \(row): \(block.value(row: row, column: 0)), expected a decimal"); continue
            }
            guard d.magnitude == v.magnitude, d.isNegative == v.negative, d.scale == scale else {
                out.append("row \(row): \(d) is not the value sent (\(v))"); continue
            }
            let want = d.decimalValue
            switch block.decimal(row: row, column: 0) {
            case .value(let got):
                if v.magnitude >= limit { out.append("\(d) beyond precision \(precision): \(got), expected .other") }
                if Self.bits(got) != Self.bits(want) || got != want || "\(got)" != "\(want)" {
                    out.append("\(v.negative ? "-" : "+")\(v.magnitude) scale \(scale): \(got) \(Self.bits(got)), expected \(want) \(Self.bits(want))")
                }
            case .other:
                if v.magnitude < limit { out.append("\(d): .other, expected \(want)") }
            case .null:
                out.append("\(d): .null")
            }
        }
        return out
    }

    /// The edges and random values of up to 38 digits, either sign, at scales 0, 4, 12, 19, 37, 38.
    func testTypedDecimalIsTheDecimalValueOfTheSQLDecimalToTheBit() throws {
        let edges: [UInt128] = [0, 1, 9, 10, 12_345, UInt128(UInt64.max) - 1, UInt128(UInt64.max), UInt128(UInt64.max) + 1,
                                Self.tenTo19 - 1, Self.tenTo19, Self.tenTo19 + 1, Self.tenTo19 * 10,
                                UInt128(1) << 100, Self.maxMagnitude / 2, Self.maxMagnitude - 1, Self.maxMagnitude]
        var rng = SystemRandomNumberGenerator()
        var values: [(negative: Bool, magnitude: UInt128)] = []
        for m in edges { values += [(false, m), (true, m)] }   // (true, 0): negative zero
        for _ in 0 ..< 200 {
            let digits = Int.random(in: 1 ... 38, using: &rng)
            var m: UInt128 = 0
            for _ in 0 ..< digits { m = m * 10 + UInt128(UInt8.random(in: 0 ... 9, using: &rng)) }
            values.append((Bool.random(using: &rng), m))
        }
        for scale: UInt8 in [0, 4, 12, 19, 37, 38] {
            let problems = try mismatches(precision: 38, scale: scale, values)
            for p in problems.prefix(5) { XCTFail(p) }
        }
    }

    /// Narrower precisions: the values that fit read as `Decimal` (negative zero as +0, as
    /// ``SQLDecimal/decimalValue`` gives it); one beyond the precision, which the full decoder
    /// widens, reads as `.other` (the caller then converts the `SQLValue`).
    func testNarrowPrecisionsAndAMagnitudeBeyondThePrecision() throws {
        let cases: [(UInt8, UInt8, [(negative: Bool, magnitude: UInt128)])] = [
            (5, 0, [(false, 0), (true, 0), (true, 99_999), (false, 100_000), (true, 4_294_967_295)]),
            (9, 9, [(false, 999_999_999), (true, 1), (true, 1_000_000_000)]),
            (18, 4, [(true, 0), (false, 999_999_999_999_999_999), (true, 1_000_000_000_000_000_000), (false, UInt128(UInt64.max))]),
            (19, 2, [(true, Self.tenTo19 - 1), (false, Self.tenTo19), (false, UInt128(UInt64.max))]),
            (28, 10, [(true, Self.tenTo19 * 1_000_000_000 - 1), (false, Self.tenTo19 * 1_000_000_000)]),
        ]
        for (precision, scale, values) in cases {
            let problems = try mismatches(precision: precision, scale: scale, values)
            for p in problems.prefix(5) { XCTFail("decimal(\(precision),\(scale)): \(p)") }
        }
    }

    /// The money family's typed read is ``SQLMoney/decimalValue`` of the value, to the bit.
    func testTypedMoneyIsTheDecimalValueOfTheSQLMoney() throws {
        let units: [Int64] = [0, 1, -1, 9_999, -10_000, Int64(Int32.max), Int64(Int32.min), .max, .min, .min + 1]
        for type in [TypeInfo(type: .money, length: 8), TypeInfo.money] {
            var stream: [UInt8] = []
            for u in units {
                stream.append(TokenType.row.rawValue)
                if type.type == .moneyN { stream.append(8) }
                let high = UInt32(truncatingIfNeeded: u >> 32), low = UInt32(truncatingIfNeeded: u)
                for k in 0 ..< 4 { stream.append(UInt8(truncatingIfNeeded: high >> (8 * k))) }
                for k in 0 ..< 4 { stream.append(UInt8(truncatingIfNeeded: low >> (8 * k))) }
            }
            var decoder = TokenStreamDecoder(version: .v7_4)
            decoder.setColumns([ColumnMetadata(typeInfo: type, name: "c")])
            decoder.append(stream + ServerTokens.done(version: .v7_4))
            var block = try XCTUnwrap(decoder.makeWireRowBlock())
            let (rows, _) = decoder.appendBufferedRows(to: &block, limit: 100, byteLimit: 1 << 20)
            XCTAssertEqual(rows, units.count)
            for (row, u) in units.enumerated() where row < rows {
                XCTAssertEqual(block.value(row: row, column: 0), .money(SQLMoney(units: u)), "\(type.sqlTypeName) \(u)")
                let want = SQLMoney(units: u).decimalValue
                guard case .value(let got) = block.decimal(row: row, column: 0) else { XCTFail("\(u): not a value"); continue }
                XCTAssertEqual(Self.bits(got), Self.bits(want), "\(type.sqlTypeName) \(u): \(got), expected \(want)")
            }
        }
    }
}
