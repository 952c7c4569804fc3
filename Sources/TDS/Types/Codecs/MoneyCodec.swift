import Foundation

/// The money family: smallmoney and money ([MS-TDS] 2.2.5.4.1 MONEY4TYPE, MONEYTYPE, FIXEDLEN 4
/// and 8 bytes; 2.2.5.4.2 MONEYNTYPE, BYTELEN 0 for NULL, else 4 or 8), in units of 1/10,000
/// ([MS-TDS] 2.2.5.5.1.4: money is the high 32 bits then the low 32 bits, each little-endian).
///
/// The one decoder of these values: the row scan's size rule (``byteLengths``; the FIXEDLEN sizes
/// are ``TDSDataType/lengthKind``), the ``SQLValue`` of the bytes in place (a row block, the token
/// decoder through ``read(from:count:)``) and the typed read as `Decimal` (``decimal(units:)``,
/// ``WireRowBlock/decimal(row:column:)``).
@usableFromInline
enum MoneyCodec {
    /// MONEYN's BYTELEN values the row scan accepts: bit n set for n data bytes (bit 0: NULL).
    static let byteLengths: UInt64 = 1 | 1 << 4 | 1 << 8

    /// The value of the `n` data bytes at `p` (`n` is 4 or 8; the caller checked it):
    /// `.smallMoney` or `.money`.
    @inlinable @inline(__always)
    static func value(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        let units = units(at: p, count: n)
        return n == 8 ? .money(SQLMoney(units: units)) : .smallMoney(SQLMoney(units: units))
    }

    /// The units (1/10,000) of the `n` data bytes at `p` (`n` is 4 or 8; the caller checked it).
    @inlinable @inline(__always)
    static func units(at p: UnsafeRawPointer, count n: Int) -> Int64 {
        @inline(__always) func u32(_ i: Int) -> UInt32 { UInt32(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt32.self)) }
        if n == 8 { return Int64(Int32(bitPattern: u32(0))) << 32 | Int64(u32(4)) }
        return Int64(Int32(bitPattern: u32(0)))
    }

    /// The exact `Decimal` of `units` (1/10,000): ``SQLMoney/decimalValue`` and the typed read
    /// (``WireRowBlock/decimal(row:column:)``), one computation for both.
    @inline(__always)
    static func decimal(units: Int64) -> Decimal {
        Decimal(sign: units < 0 ? .minus : .plus, exponent: -4, significand: Decimal(units.magnitude))
    }

    /// The value of the next `n` data bytes of `reader` (its length prefix already read), or nil,
    /// nothing consumed, when `n` is not 4 or 8 (the caller reports it).
    /// - Throws: `.truncated` when fewer than `n` bytes remain.
    @inline(__always)
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue? {
        guard n == 8 || n == 4 else { return nil }
        return try reader.readInPlace(n) { value(at: $0, count: n) }
    }
}

extension MoneyCodec: FixedOrByteLengthCodec {
    static var family: TypeFamily { .money }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        t.type == .money4 || (t.type == .moneyN && t.length == 4) ? "smallmoney" : "money"
    }

    /// Any 4 or 8 bytes (a FIXEDLEN type's own size is not required).
    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try read(from: &reader, count: n)
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        let units: Int64
        switch v {
        case .money(let m), .smallMoney(let m): units = m.units
        default: units = try integer(v, -922_337_203_685_477...922_337_203_685_477, t, writer) * 10_000
        }
        if t.type == .money4 || (t.type == .moneyN && t.length == 4) {
            guard let small = Int32(exactly: units) else {
                throw TDSDecodingError(.invalidValue, offset: writer.count, "\(units) out of range for smallmoney")
            }
            writer.writeInt32LE(small)
        } else {
            writer.writeInt32LE(Int32(truncatingIfNeeded: units >> 32))
            writer.writeUInt32LE(UInt32(truncatingIfNeeded: units))
        }
    }
}
