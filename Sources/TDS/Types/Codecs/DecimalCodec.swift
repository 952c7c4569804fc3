import Foundation

/// The decimal family: decimal and numeric ([MS-TDS] 2.2.5.4.2 DECIMALNTYPE, NUMERICNTYPE and the
/// legacy DECIMALTYPE, NUMERICTYPE: BYTELEN 0 for NULL, else a sign byte (1 positive, 0 negative)
/// then a little-endian magnitude of up to 16 bytes, precision and scale in TYPE_INFO;
/// [MS-TDS] 2.2.5.5.1.6).
///
/// The one decoder of these values: the row scan's rule (``scanLimits(precision:)``,
/// ``checkedSize(at:count:dataLength:magnitudeLimit:)``), the ``SQLValue`` in place
/// (``scannedValue(at:count:precision:scale:magnitudeLimit:)``), read by the token decoder
/// (``read(from:count:precision:scale:inVariant:)``) and the typed read as `Decimal`
/// (``decimal(at:count:scale:magnitudeLimit:)``, ``WireRowBlock/decimal(row:column:)``).
enum DecimalCodec {
    /// The row scan's limits for a column of `precision`: the longest value (sign byte and
    /// magnitude) and the first magnitude beyond the precision (10^precision); nil for a
    /// precision over 38 (every value then goes to the full decoder).
    static func scanLimits(precision: UInt8) -> (dataLength: Int, magnitudeLimit: UInt128)? {
        guard precision <= 38 else { return nil }
        return (SQLDecimal.wireLength(precision: precision), Civil.powersOf10Wide[Int(precision)])
    }

    /// The magnitude of the `m` (0...16) little-endian bytes at `p`.
    @inline(__always)
    static func magnitude(at p: UnsafeRawPointer, count m: Int) -> UInt128 {
        @inline(__always) func u32(_ i: Int) -> UInt32 { UInt32(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt32.self)) }
        @inline(__always) func u64(_ i: Int) -> UInt64 { UInt64(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) }
        var lo: UInt64 = 0, hi: UInt64 = 0
        switch m {
        case 4: lo = UInt64(u32(0))
        case 8: lo = u64(0)
        case 12: lo = u64(0); hi = UInt64(u32(8))
        case 16: lo = u64(0); hi = u64(8)
        default:
            for k in 0 ..< m {
                let b = UInt64(p.load(fromByteOffset: k, as: UInt8.self))
                if k < 8 { lo |= b << UInt64(8 * k) } else { hi |= b << UInt64(8 * (k - 8)) }
            }
        }
        return UInt128(hi) << 64 | UInt128(lo)
    }

    /// The row scan's check of a value of `n` data bytes (not NULL; its length byte at `p`, all
    /// its bytes readable): its byte count with the length byte, or 0 when the common case
    /// declines it (longer than `dataLength`, a sign byte over 1, a magnitude of
    /// `magnitudeLimit` or more).
    @inline(__always)
    static func checkedSize(at p: UnsafeRawPointer, count n: Int, dataLength: Int, magnitudeLimit: UInt128) -> Int {
        guard n <= dataLength, p.load(fromByteOffset: 1, as: UInt8.self) <= 1 else { return 0 }
        return magnitude(at: p + 2, count: n - 1) < magnitudeLimit ? 1 + n : 0
    }

    /// The value of a row block's decimal the scan accepted (``checkedSize(at:count:dataLength:magnitudeLimit:)``):
    /// the `n` data bytes at `p` (sign byte then magnitude), built without checking them again;
    /// nil for a magnitude of `magnitudeLimit` (10^precision) or more, which the scan left to the
    /// full decoder (``read(from:count:precision:scale:inVariant:)`` widens its precision).
    @inline(__always)
    static func scannedValue(at p: UnsafeRawPointer, count n: Int, precision: UInt8, scale: UInt8,
                             magnitudeLimit: UInt128) -> SQLValue? {
        let mag = magnitude(at: p + 1, count: n - 1)
        guard mag < magnitudeLimit else { return nil }
        return .decimal(SQLDecimal(isNegative: p.load(as: UInt8.self) == 0, precision: precision, scale: scale, magnitude: mag))
    }

    /// The value of the next `n` data bytes of `reader` (its length byte already read), or nil,
    /// nothing consumed, when `n` is not 1...17 (the caller reports it).
    ///
    /// A sign byte and a magnitude of 0-16 bytes whose length comes from the value, as
    /// Microsoft's ODBC driver reads it: in a column at most the precision's length (a longer one
    /// is refused), inside sql_variant (`inVariant`) up to 16 bytes whatever the precision. No
    /// magnitude bytes is zero. A magnitude beyond the precision (but within 38 digits) is the
    /// value sent, with its precision widened to its digits.
    /// - Throws: `.invalidLength` for a value longer than the precision allows, `.truncated`,
    ///   `.invalidValue` for a sign byte over 1 or a magnitude beyond 38 digits.
    static func read(from reader: inout ByteReader, count n: Int, precision: UInt8, scale: UInt8,
                     inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        guard (1...17).contains(n) else { return nil }
        let start = reader.offset
        let limit = inVariant ? 17 : SQLDecimal.wireLength(precision: precision)
        guard n <= limit else {
            throw reader.error(.invalidLength, at: start, "decimal of \(n) bytes for precision \(precision)")
        }
        let (sign, mag) = try reader.readInPlace(n) { p in (p.load(as: UInt8.self), magnitude(at: p + 1, count: n - 1)) }
        guard sign <= 1 else { throw reader.error(.invalidValue, at: start, "decimal sign byte \(sign)") }
        guard mag <= SQLDecimal.maxMagnitude else {
            throw reader.error(.invalidValue, at: start, "decimal magnitude beyond 38 digits")
        }
        var p = precision
        while p < 38 && mag >= Civil.powersOf10Wide[Int(p)] { p += 1 }
        return .decimal(SQLDecimal(isNegative: sign == 0, precision: p, scale: scale, magnitude: mag))
    }

    /// The typed read of a row block's decimal the scan accepted: the `n` data bytes at `p`
    /// (sign byte then magnitude) as the `Decimal` ``SQLDecimal/decimalValue`` gives, to the bit,
    /// straight from the sign, `scale` and magnitude (no ``SQLDecimal`` or ``SQLValue`` made); nil
    /// for a magnitude of `magnitudeLimit` or more (left to the full decoder, as in
    /// ``scannedValue(at:count:precision:scale:magnitudeLimit:)``).
    ///
    /// Up to 64 bits of magnitude the `Decimal` is `Decimal(UInt64)` given the sign and the
    /// exponent -scale (``SQLDecimal/decimalValue``'s own operations when its high part is 0; zero
    /// of either sign is +0, as there); a wider one goes through ``SQLDecimal/decimalValue``.
    @inline(__always)
    static func decimal(at p: UnsafeRawPointer, count n: Int, scale: UInt8, magnitudeLimit: UInt128) -> Decimal? {
        let mag = magnitude(at: p + 1, count: n - 1)
        guard mag < magnitudeLimit else { return nil }
        guard mag < 10_000_000_000_000_000_000 else {   // SQLDecimal.decimalValue splits at 10^19
            return SQLDecimal(isNegative: p.load(as: UInt8.self) == 0, precision: 38, scale: scale, magnitude: mag).decimalValue
        }
        let low = UInt64(truncatingIfNeeded: mag)
        guard low != 0 else { return Decimal(sign: .plus, exponent: -Int(scale), significand: 0) }
        return Decimal(sign: p.load(as: UInt8.self) == 0 ? .minus : .plus, exponent: -Int(scale), significand: Decimal(low))
    }
}

extension WireRowBlock {
    /// decimal, numeric, money and smallmoney as Foundation's `Decimal`: the `Decimal` of
    /// `.decimal(d)` (``SQLDecimal/decimalValue``) or of `.money(m)`, `.smallMoney(m)`
    /// (``SQLMoney/decimalValue``), to the bit; `.other` for any other type.
    package func decimal(row: Int, column: Int) -> WireTypedValue<Decimal> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .fixed where c.family == .money:
                return .value(MoneyCodec.decimal(units: MoneyCodec.units(at: p, count: c.size)))
            case .byteLength where c.family == .money:   // 0 (NULL), 4 or 8 bytes
                let n = Int(p.load(as: UInt8.self))
                return n == 0 ? .null : .value(MoneyCodec.decimal(units: MoneyCodec.units(at: p + 1, count: n)))
            case .decode where c.check == .decimal:   // a column of precision 38 or less
                let n = Int(p.load(as: UInt8.self))
                if n == 0 { return .null }
                // nil: a magnitude beyond the precision (widened by the full decoder)
                return DecimalCodec.decimal(at: p + 1, count: n, scale: c.scale, magnitudeLimit: c.magnitudeLimit).map { .value($0) } ?? .other
            default:
                return .other
            }
        }
    }
}

extension DecimalCodec: ColumnCodec {
    static var family: TypeFamily { .decimal }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        (t.type == .numeric || t.type == .numericN ? "numeric" : "decimal") + "(\(t.precision),\(t.scale))"
    }

    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        var rule = WireColumn.Rule(kind: .decode, declared: l.length)
        if let limits = scanLimits(precision: l.precision) {
            rule.check = .decimal
            (rule.dataLength, rule.magnitudeLimit) = limits
        }
        return rule
    }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try read(from: &reader, count: n, precision: l.precision, scale: l.scale, inVariant: inVariant)
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        var d: SQLDecimal
        switch v {
        case .decimal(let x): d = x
        case .money(let m), .smallMoney(let m): d = m.sqlDecimal
        default:
            let i = try integer(v, Int64.min...Int64.max, t, writer)
            d = SQLDecimal(isNegative: i < 0, precision: 19, scale: 0, magnitude: UInt128(i.magnitude))
        }
        guard let r = d.rescaled(to: t.scale), r.magnitude < Civil.pow10(Int(t.precision)) else {
            throw TDSDecodingError(.invalidValue, offset: writer.count, "\(d) does not fit \(t.sqlTypeName)")
        }
        d = r
        writer.writeUInt8(d.isNegative ? 0 : 1)
        let n = SQLDecimal.wireLength(precision: t.precision) - 1
        for i in 0 ..< n { writer.writeUInt8(UInt8(truncatingIfNeeded: d.magnitude >> (8 * i))) }
    }
}
