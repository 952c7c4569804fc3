import Foundation

/// An exact money/smallmoney value ([MS-TDS] 2.2.5.5.1.4): a signed count of 1/10,000 units.
///
/// money is 8 bytes on the wire (the high 32 bits first, then the low 32 bits, each little-endian);
/// smallmoney is a 4-byte Int32. Both use the same scale (4 decimal places).
public struct SQLMoney: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The value in units of 1/10,000 (0.0001).
    public var units: Int64

    /// A money value of `units` × 0.0001.
    public init(units: Int64) { self.units = units }

    public static func < (a: SQLMoney, b: SQLMoney) -> Bool { a.units < b.units }

    /// The smallest money: -922,337,203,685,477.5808.
    public static let min = SQLMoney(units: .min)
    /// The largest money: 922,337,203,685,477.5807.
    public static let max = SQLMoney(units: .max)
    /// The smallest smallmoney: -214,748.3648.
    public static let smallMin = SQLMoney(units: Int64(Int32.min))
    /// The largest smallmoney: 214,748.3647.
    public static let smallMax = SQLMoney(units: Int64(Int32.max))

    /// The exact value as a Foundation `Decimal`.
    public var decimalValue: Decimal {
        MoneyCodec.decimal(units: units)
    }

    /// The exact value as a decimal(19,4).
    public var sqlDecimal: SQLDecimal {
        SQLDecimal(isNegative: units < 0, precision: 19, scale: 4, magnitude: UInt128(units.magnitude))
    }

    /// The nearest Double (not exact: prefer ``decimalValue``).
    public var doubleValue: Double { Double(units) / 10_000 }

    /// Exactly 4 decimals: "-922337203685477.5808", "0.0000", "1.2300".
    public var canonicalText: String {
        let mag = units.magnitude
        var frac = String(mag % 10_000)
        if frac.count < 4 { frac = String(repeating: "0", count: 4 - frac.count) + frac }
        return (units < 0 ? "-" : "") + String(mag / 10_000) + "." + frac
    }

    public var description: String { canonicalText }
}
