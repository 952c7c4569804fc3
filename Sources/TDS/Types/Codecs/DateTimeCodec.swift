import Foundation

/// The datetime family: datetime and smalldatetime ([MS-TDS] 2.2.5.4.1 DATETIMETYPE, FIXEDLEN 8:
/// days since 1900-01-01 (signed 32 bits) then 1/300 s ticks since midnight (32 bits);
/// DATETIM4TYPE, FIXEDLEN 4: days since 1900-01-01 then minutes since midnight (16 bits each);
/// 2.2.5.4.2 DATETIMNTYPE, BYTELEN 0 for NULL, else 4 or 8; [MS-TDS] 2.2.5.5.1.8).
///
/// The one decoder of these values: the row scan's check (``isValid(at:count:)``), the
/// ``SQLValue`` in place (``scannedValue(at:count:)``), read by the token decoder
/// (``read(from:count:)``) and the instant of the typed read (``utcDate(_:)-swift.type.method``,
/// ``WireRowBlock/utcDate(row:column:)``).
enum DateTimeCodec {
    /// The datetime of the 8 bytes at `p`, nil outside 1753-01-01 ... 9999-12-31 or with ticks of a
    /// day or more.
    @inline(__always)
    static func datetime(at p: UnsafeRawPointer) -> SQLDateTime? {
        let v = SQLDateTime(days: Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))),
                            ticks: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        return v.isValid ? v : nil
    }

    /// The smalldatetime of the 4 bytes at `p`, nil with minutes of a day or more.
    @inline(__always)
    static func smallDateTime(at p: UnsafeRawPointer) -> SQLSmallDateTime? {
        let v = SQLSmallDateTime(days: UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)),
                                 minutes: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
        return v.isValid ? v : nil
    }

    /// The row scan's check: whether the `n` data bytes at `p` are a valid datetime (8) or
    /// smalldatetime (4), without building the value.
    @inline(__always)
    static func isValid(at p: UnsafeRawPointer, count n: Int) -> Bool {
        if n == 8 { return datetime(at: p) != nil }
        if n == 4 { return smallDateTime(at: p) != nil }
        return false
    }

    /// The value of a row block's `n` (8 or 4) data bytes at `p`, which the scan accepted
    /// (``isValid(at:count:)``): `.datetime` or `.smallDateTime`, built without checking again.
    @inline(__always)
    static func scannedValue(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        if n == 8 {
            return .datetime(SQLDateTime(days: Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))),
                                         ticks: UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))))
        }
        return .smallDateTime(SQLSmallDateTime(days: UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)),
                                               minutes: UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 2, as: UInt16.self))))
    }

    /// The value of the next `n` data bytes of `reader` (its length prefix, if any, already
    /// read), or nil, nothing consumed, when `n` is not 4 or 8 (the caller reports it).
    /// - Throws: `.truncated`, `.invalidValue` for a value outside the type's range.
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue? {
        let start = reader.offset
        switch n {
        case 4:
            let days = try reader.readUInt16LE()
            let minutes = try reader.readUInt16LE()
            let v = SQLSmallDateTime(days: days, minutes: minutes)
            guard v.isValid else { throw reader.error(.invalidValue, at: start + 2, "smalldatetime minutes \(minutes)") }
            return .smallDateTime(v)
        case 8:
            let days = try reader.readInt32LE()
            let ticks = try reader.readUInt32LE()
            let v = SQLDateTime(days: days, ticks: ticks)
            guard v.isValid else { throw reader.error(.invalidValue, at: start, "datetime days \(days) ticks \(ticks)") }
            return .datetime(v)
        default:
            return nil
        }
    }

    /// The instant of a datetime's wall-clock time read in UTC.
    static func utcDate(_ d: SQLDateTime) -> Date {
        Date(timeIntervalSince1970: Double(Int(d.days) + Civil.daysFrom0001To1900 - Civil.daysFrom0001To1970) * 86_400
             + Double(d.ticks) / 300)
    }

    /// The instant of a smalldatetime's wall-clock time read in UTC.
    static func utcDate(_ d: SQLSmallDateTime) -> Date {
        Date(timeIntervalSince1970: Double(Int(d.days) + Civil.daysFrom0001To1900 - Civil.daysFrom0001To1970) * 86_400
             + Double(d.minutes) * 60)
    }
}

extension DateTimeCodec: ColumnCodec {
    static var family: TypeFamily { .dateTime }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        t.type == .datetim4 || (t.type == .datetimN && t.length == 4) ? "smalldatetime" : "datetime"
    }

    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        let check: WireColumn.Check = l.type == .datetime ? .datetime : l.type == .datetim4 ? .smallDateTime : .datetimeN
        return WireColumn.Rule(kind: .decode, declared: l.length, check: check)
    }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try read(from: &reader, count: n)
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        let small = t.type == .datetim4 || (t.type == .datetimN && t.length == 4)
        switch (v, small) {
        case (.datetime(let d), false):
            guard d.isValid else { throw TDSDecodingError(.invalidValue, offset: writer.count, "datetime out of range") }
            writer.writeInt32LE(d.days)
            writer.writeUInt32LE(d.ticks)
        case (.smallDateTime(let d), true):
            guard d.isValid else { throw TDSDecodingError(.invalidValue, offset: writer.count, "smalldatetime out of range") }
            writer.writeUInt16LE(d.days)
            writer.writeUInt16LE(d.minutes)
        default: throw mismatch(v, t, writer)
        }
    }
}
