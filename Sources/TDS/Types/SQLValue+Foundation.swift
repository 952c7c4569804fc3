import Foundation

// Conversions from Foundation values to the lossless SQL value structs (for RPC parameters).
// All return nil when the value is outside the SQL type's range.

extension Civil {
    /// Days from 0001-01-01 to 2001-01-01 (Foundation's reference date).
    static let daysFrom0001To2001: Int = daysFrom0001To1970 + 11_323

    /// The wall-clock time of `date` in `timeZone` as (days since 0001-01-01, 100 ns ticks of the day).
    static func wallClock(_ date: Date, in timeZone: TimeZone) -> (days: Int, ticks: Int64)? {
        let seconds = date.timeIntervalSinceReferenceDate + Double(timeZone.secondsFromGMT(for: date))
        guard seconds.isFinite, abs(seconds) < 4e11 else { return nil }
        let whole = seconds.rounded(.down)
        var ticks = Int64(whole) * 10_000_000 + Int64(((seconds - whole) * 1e7).rounded())
        var days = Int(ticks / 864_000_000_000)
        ticks %= 864_000_000_000
        if ticks < 0 { ticks += 864_000_000_000; days -= 1 }
        return (days + daysFrom0001To2001, ticks)
    }
}

extension SQLDate {
    /// The calendar date of `date` in `timeZone` (UTC by default); nil outside 0001-01-01 ... 9999-12-31.
    public init?(_ date: Date, in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) {
        guard let w = Civil.wallClock(date, in: timeZone), (0...Civil.maxDay).contains(w.days) else { return nil }
        self.init(days: Int32(w.days))
    }
}

extension SQLDateTime2 {
    /// The wall-clock time of `date` in `timeZone` (UTC by default), rounded to `scale` (0...7)
    /// fraction digits; nil outside 0001-01-01 ... 9999-12-31.
    public init?(_ date: Date, in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current, scale: UInt8 = 7) {
        guard scale <= 7, var w = Civil.wallClock(date, in: timeZone) else { return nil }
        let unit = Int64(Civil.powersOf10[7 - Int(scale)])
        var ticks = (w.ticks + unit / 2) / unit
        let perDay = 86_400 * Int64(Civil.powersOf10[Int(scale)])
        if ticks >= perDay { ticks -= perDay; w.days += 1 }
        guard (0...Civil.maxDay).contains(w.days) else { return nil }
        self.init(date: SQLDate(days: Int32(w.days)), time: SQLTime(ticks: UInt64(ticks), scale: scale))
    }
}

extension SQLDateTimeOffset {
    /// The instant `date` with an offset of `offsetMinutes` (-840...840), rounded to `scale`.
    public init?(_ date: Date, offsetMinutes: Int16 = 0, scale: UInt8 = 7) {
        guard (-840...840).contains(offsetMinutes),
              let utc = SQLDateTime2(date, in: TimeZone(secondsFromGMT: 0) ?? .current, scale: scale) else { return nil }
        self.init(utc: utc, offsetMinutes: offsetMinutes)
    }
}

extension SQLDateTime {
    /// The wall-clock time of `date` in `timeZone` (UTC by default), rounded to 1/300 s; nil
    /// outside 1753-01-01 ... 9999-12-31.
    public init?(_ date: Date, in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) {
        guard var w = Civil.wallClock(date, in: timeZone) else { return nil }
        var ticks = (w.ticks * 3 + 50_000) / 100_000          // 100 ns -> 1/300 s, rounded
        if ticks >= Int64(SQLDateTime.ticksPerDay) { ticks -= Int64(SQLDateTime.ticksPerDay); w.days += 1 }
        let days = w.days - Civil.daysFrom0001To1900
        guard days >= Int(SQLDateTime.minDays), days <= Int(SQLDateTime.maxDays) else { return nil }
        self.init(days: Int32(days), ticks: UInt32(ticks))
    }
}

extension SQLSmallDateTime {
    /// The wall-clock time of `date` in `timeZone` (UTC by default), rounded to the minute; nil
    /// outside 1900-01-01 ... 2079-06-06 23:59.
    public init?(_ date: Date, in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) {
        guard var w = Civil.wallClock(date, in: timeZone) else { return nil }
        var minutes = (w.ticks + 300_000_000) / 600_000_000
        if minutes >= 1440 { minutes -= 1440; w.days += 1 }
        let days = w.days - Civil.daysFrom0001To1900
        guard (0...65535).contains(days) else { return nil }
        self.init(days: UInt16(days), minutes: UInt16(minutes))
    }
}

extension SQLMoney {
    /// An exact money value; nil if `value` has more than 4 decimals or is out of range.
    public init?(_ value: Decimal) {
        guard let d = SQLDecimal(value, scale: 4), let m = Int128(exactly: d.magnitude),
              let units = Int64(exactly: d.isNegative ? -m : m) else { return nil }
        self.init(units: units)
    }
}

extension SQLValue {
    /// `.uniqueIdentifier`.
    public init(_ uuid: UUID) { self = .uniqueIdentifier(uuid) }
    /// `.string`.
    public init(_ string: String) { self = .string(string) }
    /// `.binary`.
    public init(_ data: Data) { self = .binary([UInt8](data)) }
    /// `.bit`.
    public init(_ bool: Bool) { self = .bit(bool) }
    /// `.bigint` for Int.
    public init(_ int: Int) { self = .bigint(Int64(int)) }
    /// `.float`.
    public init(_ double: Double) { self = .float(double) }
}
