import Foundation

/// What a typed read of one value of a ``WireRowBlock`` found (``WireRowBlock/integer(row:column:)``
/// and the other typed reads).
@usableFromInline
package enum WireTypedValue<Value> {
    /// The value, equal to what ``WireRowBlock/value(row:column:)`` gives converted to `Value`
    /// (each read says how).
    case value(Value)
    /// The value is NULL (``WireRowBlock/value(row:column:)`` gives ``SQLValue/null``).
    case null
    /// A value of a type this read does not take: read it with ``WireRowBlock/value(row:column:)``.
    case other
}

/// Typed reads: one value of a row read straight from its wire bytes ([MS-TDS] 2.2.5.5.1) as the
/// Swift type a caller asks for, without building an ``SQLValue`` and converting it. Each gives
/// exactly the value ``value(row:column:)`` holds, or `.null`, or `.other` for a value of a type it
/// does not take (the caller then reads the ``SQLValue``). The bytes were checked when the row was
/// appended, so no read can fail; `row` and `column` must be in range (the caller checks).
extension WireRowBlock {
    /// The offset of the value of `column` in `row` (``nullOffset`` for a bitmap NULL).
    @inlinable @inline(__always)
    func offset(row: Int, column: Int) -> UInt32 {
        offsets[row &* columnCount &+ column]
    }

    /// The prologue of every typed read: `.null` for a bitmap NULL (an NBCROW's), `.other` when
    /// `accepts` declines the column's scan rule, else `read(rule, p, available)` with `p` at the
    /// value's first byte (its length prefix, if any) and `available` the block's bytes from
    /// there. The bytes were checked when the row was appended.
    @inlinable @inline(__always)
    func typed<V>(row: Int, column: Int, accepts: (WireColumn) -> Bool = { _ in true },
                  _ read: (WireColumn, UnsafeRawPointer, _ available: Int) -> WireTypedValue<V>) -> WireTypedValue<V> {
        let o = offset(row: row, column: column)
        if o == UInt32.max { return .null }   // nullOffset
        let c = scan[column]
        guard accepts(c) else { return .other }
        return bytes.withUnsafeBytes { raw in
            // Never nil: a value is present, so are its bytes.
            guard let base = raw.baseAddress else { return .other }
            return read(c, base + Int(o), raw.count &- Int(o))
        }
    }

    /// nchar, nvarchar (UTF-16LE) and char, varchar in code page 1252 (the only character types a
    /// block holds): the value of `.string`, made from the UTF-8 the scan wrote (nchar, nvarchar) or
    /// transcoded here (code page 1252); `.other` for any other type.
    package func string(row: Int, column: Int) -> WireTypedValue<String> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .utf16:   // kept as UTF-8 (see WireColumn.Kind.utf16)
                let h = UInt16(littleEndian: p.loadUnaligned(as: UInt16.self))
                return h == 0xFFFF ? .null : .value(WireRowBlock.utf8String(header: h, at: p))
            case .byteLength where c.type == .varchar || c.type == .char:
                let n = Int(p.load(as: UInt8.self))
                return n == 0 ? .null : .value(TextCodec.decodeCP1252(p + 1, count: n))
            case .ushortBytes where c.type == .bigVarChar || c.type == .bigChar:
                let n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
                return n == 0xFFFF ? .null : .value(TextCodec.decodeCP1252(p + 2, count: n))
            default:
                return .other
            }
        }
    }

    /// The bytes of a binary or varbinary value (legacy BINARY/VARBINARY, BIGBINARY,
    /// BIGVARBINARY): where they are, or nil for NULL; `body` gets them and its result is
    /// returned as `.value`. `.other` for any other type.
    @inline(__always)
    func withBinary<R>(row: Int, column: Int, _ body: (UnsafeRawBufferPointer) -> R) -> WireTypedValue<R> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .byteLength where c.type == .varbinary || c.type == .binary:
                let n = Int(p.load(as: UInt8.self))
                return n == 0 ? .null : .value(body(UnsafeRawBufferPointer(start: p + 1, count: n)))
            case .ushortBytes where c.type == .bigVarBinary || c.type == .bigBinary:
                let n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
                return n == 0xFFFF ? .null : .value(body(UnsafeRawBufferPointer(start: p + 2, count: n)))
            default:
                return .other
            }
        }
    }

    /// binary and varbinary: the bytes of `.binary`; `.other` for any other type.
    package func bytes(row: Int, column: Int) -> WireTypedValue<[UInt8]> {
        withBinary(row: row, column: column) { [UInt8]($0) }
    }

    /// binary and varbinary as `Data` (one copy of the bytes: equal to `Data(bytes)` of
    /// `.binary(bytes)`); `.other` for any other type.
    package func data(row: Int, column: Int) -> WireTypedValue<Data> {
        withBinary(row: row, column: column) { Data($0) }
    }

    /// decimal, numeric, money and smallmoney as Foundation's `Decimal`: the `Decimal` of
    /// `.decimal(d)` (``SQLDecimal/decimalValue``) or of `.money(m)`, `.smallMoney(m)`
    /// (``SQLMoney/decimalValue``), to the bit; `.other` for any other type.
    package func decimal(row: Int, column: Int) -> WireTypedValue<Decimal> {
        typed(row: row, column: column) { c, p, available in
            switch c.kind {
            case .fixed where c.type == .money, .fixed where c.type == .money4, .byteLength where c.type == .moneyN:
                switch value(row: row, column: column) {
                case .money(let m), .smallMoney(let m): return .value(m.decimalValue)
                case .null: return .null
                default: return .other
                }
            case .decode where c.type == .decimalN || c.type == .numericN || c.type == .decimal || c.type == .numeric:
                var size = 0
                switch layouts[column].quickValue(at: p, available: available, size: &size) {
                case .decimal(let d)?: return .value(WireRowBlock.decimalValue(of: d))
                case .null?: return .null
                default: return .other   // a widened magnitude: through the full decoder
                }
            default:
                return .other
            }
        }
    }

    /// ``SQLDecimal/decimalValue`` to the bit: the same `Decimal` operations on the same
    /// operands, without dividing the magnitude by 10^19 when it is below (up to 19 digits).
    @inline(__always)
    static func decimalValue(of d: SQLDecimal) -> Decimal {
        guard d.magnitude < 10_000_000_000_000_000_000 else { return d.decimalValue }
        let low = UInt64(truncatingIfNeeded: d.magnitude)   // the high part is 0
        guard low != 0 else { return Decimal(sign: .plus, exponent: -Int(d.scale), significand: 0) }
        return Decimal(sign: d.isNegative ? .minus : .plus, exponent: -Int(d.scale), significand: Decimal(low))
    }

    /// date, datetime2, datetimeoffset, datetime and smalldatetime as the instant
    /// ``SQLValue/utcDateValue`` gives (the wall-clock time read in UTC; a datetimeoffset's own
    /// instant); `.other` for any other type (time included).
    package func utcDate(row: Int, column: Int) -> WireTypedValue<Date> {
        // A local function, not a closure: always inlined (see uuid(row:column:)).
        @inline(__always) func read(_ c: WireColumn, _ p: UnsafeRawPointer, _ available: Int) -> WireTypedValue<Date> {
            var size = 0
            guard let v = layouts[column].quickValue(at: p, available: available, size: &size) else { return .other }
            if v.isNull { return .null }
            return v.utcDateValue.map { .value($0) } ?? .other
        }
        return typed(row: row, column: column, accepts: {
            $0.kind == .decode && $0.type != .decimalN && $0.type != .numericN && $0.type != .decimal && $0.type != .numeric && $0.type != .timeN
        }, read)
    }
}

extension SQLValue {
    /// date, datetime2, datetimeoffset, datetime and smalldatetime as an instant, the wall-clock
    /// time read in UTC (a datetimeoffset: its own instant); nil for NULL and other types. The
    /// same `Date`, to the bit, as ``dateValue(in:)`` in UTC (the types' `date(in:)` arithmetic
    /// with a zero offset), without a time zone.
    package var utcDateValue: Date? {
        switch self {
        case .datetime2(let d): return SQLValue.utcDate(d)
        case .date(let d): return Date(timeIntervalSince1970: Double(Int(d.days) - Civil.daysFrom0001To1970) * 86_400)
        case .datetimeOffset(let d): return SQLValue.utcDate(d.utc)
        case .datetime(let d):
            return Date(timeIntervalSince1970: Double(Int(d.days) + Civil.daysFrom0001To1900 - Civil.daysFrom0001To1970) * 86_400
                        + Double(d.ticks) / 300)
        case .smallDateTime(let d):
            return Date(timeIntervalSince1970: Double(Int(d.days) + Civil.daysFrom0001To1900 - Civil.daysFrom0001To1970) * 86_400
                        + Double(d.minutes) * 60)
        case .variant(let v): return v.value.utcDateValue
        default: return nil
        }
    }

    @inline(__always)
    static func utcDate(_ d: SQLDateTime2) -> Date {
        Date(timeIntervalSince1970: Double(Int(d.date.days) - Civil.daysFrom0001To1970) * 86_400 + d.time.timeInterval)
    }
}
