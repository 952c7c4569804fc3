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

    /// date, datetime2, datetimeoffset, datetime and smalldatetime as the instant
    /// ``SQLValue/utcDateValue`` gives (the wall-clock time read in UTC; a datetimeoffset's own
    /// instant); `.other` for any other type (time included).
    package func utcDate(row: Int, column: Int) -> WireTypedValue<Date> {
        // A local function, not a closure: always inlined (see uuid(row:column:)).
        @inline(__always) func read(_ c: WireColumn, _ p: UnsafeRawPointer, _ available: Int) -> WireTypedValue<Date> {
            guard let v = WireRowBlock.decodeScanned(c, at: p) else { return .other }
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
        case .datetime2(let d): return DateTime73Codec.utcDate(d)
        case .date(let d): return DateTime73Codec.utcDate(d)
        case .datetimeOffset(let d): return DateTime73Codec.utcDate(d.utc)
        case .datetime(let d): return DateTimeCodec.utcDate(d)
        case .smallDateTime(let d): return DateTimeCodec.utcDate(d)
        case .variant(let v): return v.value.utcDateValue
        default: return nil
        }
    }
}

extension WireRowBlock {
    /// The bytes of the value of `column` in `row` where the block holds them, for `body` (valid
    /// only inside it), as ``SQLValue/bytesValue`` gives them: a binary, varbinary, image,
    /// timestamp or UDT value's bytes (varbinary(max) and image assembled, one kept apart
    /// included), a json value's UTF-8, a vector's wire bytes (its 8-byte header and elements).
    /// `.null` for NULL, `.other` for any other type (a sql_variant included: read its
    /// ``SQLValue``). Every bound is checked against the block's bytes.
    package func withValueBytes<R>(row: Int, column: Int, _ body: (UnsafeRawBufferPointer) -> R) -> WireTypedValue<R> {
        typed(row: row, column: column) { c, p, available in
            switch c.kind {
            case .byteLength where c.family == .binary:
                guard available >= 1 else { return .other }
                let n = Int(p.load(as: UInt8.self))
                if n == 0 { return .null }
                guard n <= available &- 1 else { return .other }
                return .value(body(UnsafeRawBufferPointer(start: p + 1, count: n)))
            case .ushortBytes where c.family == .binary, .vector:
                guard available >= 2 else { return .other }
                let n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
                if n == 0xFFFF { return .null }
                guard n <= available &- 2 else { return .other }
                return .value(body(UnsafeRawBufferPointer(start: p + 2, count: n)))
            case .large where c.family == .binary || c.family == .udt || c.family == .json:
                guard available >= WireColumn.largeHeaderSize else { return .other }
                let n = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
                if n == WireColumn.largeNull { return .null }
                let form = p.load(fromByteOffset: 4, as: UInt8.self)
                if form == WireColumn.LargeForm.separate.rawValue {
                    guard Int(n) < separate.count else { return .other }
                    return .value(separate[Int(n)].withUnsafeBytes(body))
                }
                guard form == WireColumn.LargeForm.raw.rawValue, Int(n) <= available &- WireColumn.largeHeaderSize else { return .other }
                return .value(body(UnsafeRawBufferPointer(start: p + WireColumn.largeHeaderSize, count: Int(n))))
            default:
                return .other
            }
        }
    }
}
