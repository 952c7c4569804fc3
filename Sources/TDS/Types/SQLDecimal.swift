import Foundation

/// An exact decimal/numeric value ([MS-TDS] 2.2.5.5.1.6 Decimal/Numeric): a sign, a precision
/// (1...38), a scale (0...precision) and an unsigned integer magnitude; the value is
/// `(isNegative ? -1 : 1) * magnitude / 10^scale`.
///
/// Equality is structural (same sign, precision, scale and magnitude), so `1.0` as decimal(2,1)
/// and `1.00` as decimal(3,2) differ, as their canonical texts do. Negative zero is kept as sent.
public struct SQLDecimal: Hashable, Sendable, CustomStringConvertible {
    /// The sign (0 = negative on the wire).
    public var isNegative: Bool
    /// Total number of decimal digits the column allows (1...38).
    public var precision: UInt8
    /// Digits after the decimal point (0...precision).
    public var scale: UInt8
    /// The unscaled magnitude (at most 10^38 - 1).
    public var magnitude: UInt128

    /// The largest magnitude any decimal can hold: 10^38 - 1.
    public static let maxMagnitude: UInt128 = 99_999_999_999_999_999_999_999_999_999_999_999_999

    /// A decimal from its parts (magnitude not checked against the precision).
    public init(isNegative: Bool = false, precision: UInt8, scale: UInt8, magnitude: UInt128) {
        self.isNegative = isNegative
        self.precision = precision
        self.scale = scale
        self.magnitude = magnitude
    }

    /// Parses text like "-123.450" (digits, one optional point, optional sign). Precision is at
    /// least the digit count (at least 1), scale the digits after the point. Nil if not a number
    /// or more than 38 digits.
    public init?(_ text: String, precision: UInt8? = nil) {
        var chars = Substring(text)
        var negative = false
        if chars.first == "-" { negative = true; chars = chars.dropFirst() } else if chars.first == "+" { chars = chars.dropFirst() }
        var mag: UInt128 = 0
        var digits = 0, scaleDigits = 0, seenPoint = false, leading = true
        for c in chars {
            if c == "." {
                if seenPoint { return nil }
                seenPoint = true
                continue
            }
            guard let d = c.wholeNumberValue, c.isASCII else { return nil }
            if seenPoint { scaleDigits += 1 }
            if leading && d == 0 && !seenPoint { continue }
            leading = false
            digits += 1
            guard digits <= 38 else { return nil }
            mag = mag * 10 + UInt128(d)
        }
        guard scaleDigits <= 38 else { return nil }
        let p = max(digits, scaleDigits, 1)
        guard p <= 38 else { return nil }
        self.init(isNegative: negative, precision: precision.map { max($0, UInt8(p)) } ?? UInt8(p),
                  scale: UInt8(scaleDigits), magnitude: mag)
    }

    /// The exact value as a Foundation `Decimal` (38 significant digits always fit).
    public var decimalValue: Decimal {
        // magnitude = high * 10^19 + low; each part fits in UInt64 and the sum in Decimal's 128-bit mantissa.
        let tenTo19: UInt128 = 10_000_000_000_000_000_000
        let high = UInt64(truncatingIfNeeded: magnitude / tenTo19)
        let low = UInt64(truncatingIfNeeded: magnitude % tenTo19)
        var unscaled = Decimal(low)
        if high != 0 { unscaled += Decimal(sign: .plus, exponent: 19, significand: Decimal(high)) }
        guard magnitude != 0 else { return Decimal(sign: .plus, exponent: -Int(scale), significand: 0) }
        return Decimal(sign: isNegative ? .minus : .plus, exponent: -Int(scale), significand: unscaled)
    }

    /// The value as a `Double` (may round).
    public var doubleValue: Double {
        var d = Double(magnitude)
        var s = Int(scale)
        while s > 0 { d /= 10; s -= 1 }
        return isNegative ? -d : d
    }

    /// Exactly `scale` digits after the point; "-" for negative non-zero values ("-0.50", "12", "0.000").
    public var canonicalText: String {
        var digits = String(magnitude)
        let s = Int(scale)
        if s > 0 {
            if digits.count <= s { digits = String(repeating: "0", count: s - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -s))
        }
        return (isNegative && magnitude != 0 ? "-" : "") + digits
    }

    public var description: String { canonicalText }

    /// The value's byte count on the wire for a precision, sign byte included ([MS-TDS] 2.2.5.5.1.6):
    /// 5 (1-9), 9 (10-19), 13 (20-28), 17 (29-38).
    public static func wireLength(precision: UInt8) -> Int {
        switch precision {
        case 0...9: return 5
        case 10...19: return 9
        case 20...28: return 13
        default: return 17
        }
    }
}

extension SQLDecimal {
    /// Converts a Foundation `Decimal` exactly, with the given precision and scale if given
    /// (else the smallest that hold it). Nil if it needs more than 38 digits or the scale would lose digits.
    public init?(_ value: Decimal, precision: UInt8? = nil, scale: UInt8? = nil) {
        guard !value.isNaN else { return nil }
        var v = value
        let text = NSDecimalString(&v, Locale(identifier: "en_US_POSIX"))
        guard var parsed = SQLDecimal(text) else { return nil }
        if let scale, scale != parsed.scale {
            if scale > parsed.scale {
                for _ in 0 ..< Int(scale - parsed.scale) {
                    let (m, o) = parsed.magnitude.multipliedReportingOverflow(by: 10)
                    guard !o, m <= SQLDecimal.maxMagnitude else { return nil }
                    parsed.magnitude = m
                }
            } else {
                for _ in 0 ..< Int(parsed.scale - scale) {
                    guard parsed.magnitude % 10 == 0 else { return nil }
                    parsed.magnitude /= 10
                }
            }
            parsed.scale = scale
        }
        let digits = max(String(parsed.magnitude).count, Int(parsed.scale), 1)
        let p = precision ?? UInt8(min(digits, 38))
        guard digits <= Int(p), p <= 38 else { return nil }
        parsed.precision = p
        self = parsed
    }
}
