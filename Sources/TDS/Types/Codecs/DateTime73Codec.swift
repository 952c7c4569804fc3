import Foundation

/// The date and time family of TDS 7.3: date, time, datetime2 and datetimeoffset ([MS-TDS]
/// 2.2.5.4.2 DATENTYPE, TIMENTYPE, DATETIME2NTYPE, DATETIMEOFFSETNTYPE, BYTELEN 0 for NULL;
/// [MS-TDS] 2.2.5.5.1.8): a time is 3, 4 or 5 little-endian bytes of 10^-scale s since midnight
/// (by scale, ``SQLTime/wireLength(scale:)``), a date 3 bytes of days since 0001-01-01;
/// datetime2 is the time then the date, datetimeoffset the time and date in UTC then a signed
/// 16-bit offset in minutes (-840...840).
///
/// The one decoder of these values: the row scan's rule and check (``scanRule(_:scale:)``,
/// ``isDate(at:count:)``, ``isTime(at:count:_:)``, ``isDateTime2(at:count:_:)``,
/// ``isDateTimeOffset(at:count:_:)``), the ``SQLValue`` in place, checked by the scan
/// (``scannedDate(at:)`` and the other `scanned` reads), read by the token decoder
/// (``read(_:from:count:scale:)``) and the instant of the typed read
/// (``utcDate(_:)-swift.type.method``, ``WireRowBlock/utcDate(row:column:)``).
enum DateTime73Codec {
    // MARK: Fields

    /// `count` (3...5) bytes little-endian at `p`.
    @inline(__always)
    static func uint(at p: UnsafeRawPointer, count: Int) -> UInt64 {
        @inline(__always) func u8(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        switch count {
        case 3: return UInt64(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self))) | UInt64(u8(2)) << 16
        case 4: return UInt64(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
        default: return UInt64(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))) | UInt64(u8(4)) << 32
        }
    }

    /// The first number of ticks of `scale` (0...7) that is not a time of day: 86,400 × 10^scale.
    @inline(__always)
    static func ticksLimit(scale: UInt8) -> UInt64 { 86_400 &* Civil.powersOf10[Int(scale)] }

    /// The offset in minutes at `p`, nil outside -840...840.
    @inline(__always)
    static func offsetMinutes(at p: UnsafeRawPointer) -> Int16? {
        let offset = Int16(bitPattern: UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
        return offset >= -840 && offset <= 840 ? offset : nil
    }

    // MARK: Row scan

    /// The row scan's rule for a column of `type` and `scale`: its check, the data length a value
    /// must have, the time's byte count and ``ticksLimit(scale:)``; nil for a scale over 7 (every
    /// value then goes to the full decoder) or another type.
    static func scanRule(_ type: TDSDataType, scale: UInt8) -> (check: WireColumn.Check, dataLength: Int, timeLength: Int, ticksLimit: UInt64)? {
        if type == .dateN { return (.date, 3, 0, 0) }
        guard scale <= 7 else { return nil }
        let tl = SQLTime.wireLength(scale: scale), limit = ticksLimit(scale: scale)
        switch type {
        case .timeN: return (.time, tl, tl, limit)
        case .datetime2N: return (.datetime2, tl + 3, tl, limit)
        case .datetimeOffsetN: return (.datetimeOffset, tl + 5, tl, limit)
        default: return nil
        }
    }

    /// The scan's check of a date of `n` data bytes at `p` (all readable).
    @inline(__always)
    static func isDate(at p: UnsafeRawPointer, count n: Int) -> Bool {
        n == 3 && uint(at: p, count: 3) <= UInt64(Civil.maxDay)
    }

    /// The scan's check of a time of `n` data bytes at `p` in column `c` (``scanRule(_:scale:)``).
    @inline(__always)
    static func isTime(at p: UnsafeRawPointer, count n: Int, _ c: WireColumn) -> Bool {
        n == c.dataLength && uint(at: p, count: c.timeLength) < c.ticksLimit
    }

    /// The scan's check of a datetime2 of `n` data bytes at `p` in column `c`.
    @inline(__always)
    static func isDateTime2(at p: UnsafeRawPointer, count n: Int, _ c: WireColumn) -> Bool {
        n == c.dataLength && uint(at: p, count: c.timeLength) < c.ticksLimit
            && uint(at: p + c.timeLength, count: 3) <= UInt64(Civil.maxDay)
    }

    /// The scan's check of a datetimeoffset of `n` data bytes at `p` in column `c`.
    @inline(__always)
    static func isDateTimeOffset(at p: UnsafeRawPointer, count n: Int, _ c: WireColumn) -> Bool {
        n == c.dataLength && uint(at: p, count: c.timeLength) < c.ticksLimit
            && uint(at: p + c.timeLength, count: 3) <= UInt64(Civil.maxDay) && offsetMinutes(at: p + c.timeLength + 3) != nil
    }

    // MARK: Row block reads

    // A value the row scan accepted (``WireColumn/checkedSize(at:available:)``: the length the
    // column's scale gives, a valid time, date and offset), built without checking it again.

    /// `.date` of the 3 data bytes at `p`.
    @inline(__always)
    static func scannedDate(at p: UnsafeRawPointer) -> SQLValue {
        .date(SQLDate(days: Int32(truncatingIfNeeded: uint(at: p, count: 3))))
    }

    /// `.time` of the `timeLength` data bytes at `p` in `scale`.
    @inline(__always)
    static func scannedTime(at p: UnsafeRawPointer, timeLength tl: Int, scale: UInt8) -> SQLValue {
        .time(SQLTime(ticks: uint(at: p, count: tl), scale: scale))
    }

    /// The time then the date at `p` (a datetime2, or a datetimeoffset's UTC part).
    @inline(__always)
    static func scannedDateTime2(at p: UnsafeRawPointer, timeLength tl: Int, scale: UInt8) -> SQLDateTime2 {
        SQLDateTime2(date: SQLDate(days: Int32(truncatingIfNeeded: uint(at: p + tl, count: 3))),
                     time: SQLTime(ticks: uint(at: p, count: tl), scale: scale))
    }

    /// `.datetime2` of the data bytes at `p` (time of `timeLength` bytes in `scale`, then date).
    @inline(__always)
    static func scannedDateTime2Value(at p: UnsafeRawPointer, timeLength tl: Int, scale: UInt8) -> SQLValue {
        .datetime2(scannedDateTime2(at: p, timeLength: tl, scale: scale))
    }

    /// `.datetimeOffset` of the data bytes at `p` (time, date, then the offset in minutes).
    @inline(__always)
    static func scannedDateTimeOffsetValue(at p: UnsafeRawPointer, timeLength tl: Int, scale: UInt8) -> SQLValue {
        .datetimeOffset(SQLDateTimeOffset(utc: scannedDateTime2(at: p, timeLength: tl, scale: scale),
                                          offsetMinutes: Int16(bitPattern: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: tl + 3, as: UInt16.self)))))
    }

    // MARK: Token decoder

    static func readDate(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLDate {
        let at = reader.offset
        let days = Int32(try reader.readUIntLE(count: 3))
        let d = SQLDate(days: days)
        guard d.isValid else { throw reader.error(.invalidValue, at: at, "date \(days) days after 0001-01-01 beyond 9999-12-31") }
        return d
    }

    static func readTime(from reader: inout ByteReader, scale: UInt8) throws(TDSDecodingError) -> SQLTime {
        let at = reader.offset
        guard scale <= 7 else { throw reader.error(.invalidValue, at: at, "time scale \(scale)") }
        let ticks = try reader.readUIntLE(count: SQLTime.wireLength(scale: scale))
        let t = SQLTime(ticks: ticks, scale: scale)
        guard t.isValid else { throw reader.error(.invalidValue, at: at, "time \(ticks) units of 10^-\(scale) s is 24:00 or later") }
        return t
    }

    /// The value of type `type` (DATEN, TIMEN, DATETIME2N, DATETIMEOFFSETN) of the next `n` data
    /// bytes of `reader` (its length byte already read) in `scale`, or nil, nothing consumed, when
    /// `n` is not the length the type and scale give (the caller reports it).
    /// - Throws: `.truncated`, `.invalidValue` for a scale over 7, a date beyond 9999-12-31, a
    ///   time of 24:00 or later, an offset outside -840...840.
    static func read(_ type: TDSDataType, from reader: inout ByteReader, count n: Int,
                     scale: UInt8) throws(TDSDecodingError) -> SQLValue? {
        let tl = SQLTime.wireLength(scale: scale)
        switch type {
        case .dateN:
            guard n == 3 else { return nil }
            return .date(try readDate(from: &reader))
        case .timeN:
            guard n == tl else { return nil }
            return .time(try readTime(from: &reader, scale: scale))
        case .datetime2N:
            guard n == tl + 3 else { return nil }
            let time = try readTime(from: &reader, scale: scale)
            return .datetime2(SQLDateTime2(date: try readDate(from: &reader), time: time))
        case .datetimeOffsetN:
            guard n == tl + 5 else { return nil }
            let time = try readTime(from: &reader, scale: scale)
            let date = try readDate(from: &reader)
            let at = reader.offset
            let offset = try reader.readInt16LE()
            guard (-840...840).contains(offset) else {
                throw reader.error(.invalidValue, at: at, "datetimeoffset offset \(offset) minutes outside -840...840")
            }
            return .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: date, time: time), offsetMinutes: offset))
        default:
            return nil
        }
    }

    // MARK: Instants

    /// The instant of a date's midnight read in UTC.
    static func utcDate(_ d: SQLDate) -> Date {
        Date(timeIntervalSince1970: Double(Int(d.days) - Civil.daysFrom0001To1970) * 86_400)
    }

    /// The instant of a datetime2's wall-clock time read in UTC.
    @inline(__always)
    static func utcDate(_ d: SQLDateTime2) -> Date {
        Date(timeIntervalSince1970: Double(Int(d.date.days) - Civil.daysFrom0001To1970) * 86_400 + d.time.timeInterval)
    }
}

extension DateTime73Codec: ColumnCodec {
    static var family: TypeFamily { .dateTime73 }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        t.type == .dateN ? "date" : t.type == .timeN ? "time(\(t.scale))"
            : t.type == .datetime2N ? "datetime2(\(t.scale))" : "datetimeoffset(\(t.scale))"
    }

    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        var rule = WireColumn.Rule(kind: .decode, declared: l.length)
        if let r = scanRule(l.type, scale: l.scale) {
            (rule.check, rule.dataLength, rule.timeLength, rule.ticksLimit) = r
        }
        return rule
    }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try read(l.type, from: &reader, count: n, scale: l.scale)
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        switch (t.type, v) {
        case (.dateN, .date(let d)):
            try writeDate(d, into: &writer)
        case (.timeN, .time(let x)):
            try writeTime(x, t, into: &writer)
        case (.datetime2N, .datetime2(let d)):
            try writeTime(d.time, t, into: &writer)
            try writeDate(d.date, into: &writer)
        case (.datetimeOffsetN, .datetimeOffset(let d)):
            guard (-840...840).contains(d.offsetMinutes) else {
                throw TDSDecodingError(.invalidValue, offset: writer.count, "offset \(d.offsetMinutes) minutes")
            }
            try writeTime(d.utc.time, t, into: &writer)
            try writeDate(d.utc.date, into: &writer)
            writer.writeInt16LE(d.offsetMinutes)
        default:
            throw mismatch(v, t, writer)
        }
    }

    static func writeDate(_ d: SQLDate, into writer: inout ByteWriter) throws(TDSDecodingError) {
        guard d.isValid else { throw TDSDecodingError(.invalidValue, offset: writer.count, "date out of range") }
        writer.writeUIntLE(UInt64(d.days), count: 3)
    }

    static func writeTime(_ x: SQLTime, _ t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        guard x.isValid, let r = x.rescaled(to: t.scale) else {
            throw TDSDecodingError(.invalidValue, offset: writer.count, "time \(x) does not fit \(t.sqlTypeName)")
        }
        writer.writeUIntLE(r.ticks, count: SQLTime.wireLength(scale: t.scale))
    }
}
