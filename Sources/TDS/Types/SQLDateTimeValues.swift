import Foundation

// Proleptic Gregorian calendar arithmetic (as SQL Server uses for date/datetime2/datetimeoffset).
@usableFromInline enum Civil {
    /// Days from 0001-01-01 to 1970-01-01.
    static let daysFrom0001To1970: Int = 719_162
    /// Days from 0001-01-01 to 1900-01-01.
    static let daysFrom0001To1900: Int = 693_595
    /// Days from 0001-01-01 to 9999-12-31.
    static let maxDay: Int = 3_652_058

    /// Days since 0001-01-01 for a proleptic Gregorian date.
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468 + daysFrom0001To1970
    }

    /// The proleptic Gregorian date of a day count since 0001-01-01.
    static func date(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days - daysFrom0001To1970 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v.magnitude)
        let padded = s.count < width ? String(repeating: "0", count: width - s.count) + s : s
        return v < 0 ? "-" + padded : padded
    }

    static func dateText(days: Int) -> String {
        let (y, m, d) = date(days: days)
        return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2)
    }

    /// Converts a wall-clock time (seconds since 1970-01-01 00:00 in `timeZone`) to a `Date`.
    static func instant(localSeconds: Double, in timeZone: TimeZone) -> Date {
        let guess = localSeconds - Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: localSeconds)))
        let offset = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: guess))
        return Date(timeIntervalSince1970: localSeconds - Double(offset))
    }

    static let powersOf10: [UInt64] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000]
}

/// [MS-TDS] 2.2.5.5.1.8 date: days since 0001-01-01 (proleptic Gregorian), 3 bytes on the wire,
/// 0 (0001-01-01) ... 3,652,058 (9999-12-31).
public struct SQLDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Days since 0001-01-01.
    public var days: Int32
    /// A date `days` after 0001-01-01 (not checked: see ``isValid``).
    public init(days: Int32) { self.days = days }

    /// Nil unless the date is a valid date in 0001-01-01 ... 9999-12-31.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        let d = Civil.days(year: year, month: month, day: day)
        guard Civil.date(days: d) == (year, month, day) else { return nil }
        self.days = Int32(d)
    }

    public static func < (a: SQLDate, b: SQLDate) -> Bool { a.days < b.days }
    /// 0001-01-01.
    public static let min = SQLDate(days: 0)
    /// 9999-12-31.
    public static let max = SQLDate(days: Int32(Civil.maxDay))

    /// True within 0001-01-01 … 9999-12-31.
    public var isValid: Bool { days >= 0 && Int(days) <= Civil.maxDay }
    /// Year, month (1–12) and day (1–31), proleptic Gregorian.
    public var components: (year: Int, month: Int, day: Int) { Civil.date(days: Int(days)) }
    /// "YYYY-MM-DD".
    public var canonicalText: String { Civil.dateText(days: Int(days)) }
    public var description: String { canonicalText }

    /// Midnight of this date in `timeZone` (UTC by default).
    public func date(in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> Date {
        Civil.instant(localSeconds: Double(Int(days) - Civil.daysFrom0001To1970) * 86_400, in: timeZone)
    }
}

/// [MS-TDS] 2.2.5.5.1.8 time(scale): a count of 10^-scale second units since midnight
/// (scale 0...7; 3 bytes for scale 0-2, 4 for 3-4, 5 for 5-7).
public struct SQLTime: Hashable, Sendable, CustomStringConvertible {
    /// Units of 10^-`scale` seconds since midnight (below 86,400 * 10^scale).
    public var ticks: UInt64
    /// Fractional-second digits (0...7).
    public var scale: UInt8

    /// A time of `ticks` units of 10^-`scale` s since midnight (not checked: see ``isValid``).
    public init(ticks: UInt64, scale: UInt8) {
        self.ticks = ticks
        self.scale = scale
    }

    /// A time from clock fields; `fraction` counts 10^-scale seconds. Nil if out of range.
    public init?(hour: Int, minute: Int, second: Int, fraction: UInt64 = 0, scale: UInt8 = 7) {
        guard scale <= 7, (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second),
              fraction < Civil.powersOf10[Int(scale)] else { return nil }
        let secs = UInt64(hour * 3600 + minute * 60 + second)
        self.init(ticks: secs * Civil.powersOf10[Int(scale)] + fraction, scale: scale)
    }

    /// The wire length of a time value of `scale` (3, 4 or 5; 5 for scales above 7).
    public static func wireLength(scale: UInt8) -> Int {
        switch scale {
        case 0...2: return 3
        case 3...4: return 4
        default: return 5
        }
    }

    /// True when the scale is 0…7 and the time is before midnight.
    public var isValid: Bool { scale <= 7 && ticks < 86_400 * Civil.powersOf10[Int(scale)] }

    /// The time in 100 ns units (scale 7).
    public var hundredNanoseconds: UInt64 {
        let s = Int(min(scale, 7))
        return ticks.multipliedReportingOverflow(by: Civil.powersOf10[7 - s]).partialValue
    }

    /// Seconds since midnight (may round).
    public var timeInterval: Double { Double(ticks) / Double(Civil.powersOf10[Int(min(scale, 7))]) }

    /// "hh:mm:ss" plus "." and `scale` fraction digits when scale > 0.
    public var canonicalText: String {
        let s = Int(min(scale, 7))
        let p = Civil.powersOf10[s]
        let secs = Int(ticks / p)
        var text = Civil.pad(secs / 3600, 2) + ":" + Civil.pad(secs / 60 % 60, 2) + ":" + Civil.pad(secs % 60, 2)
        if s > 0 { text += "." + Civil.pad(Int(ticks % p), s) }
        return text
    }
    public var description: String { canonicalText }
}

/// [MS-TDS] 2.2.5.5.1.8 datetime2(scale): a time then a date (no time zone).
public struct SQLDateTime2: Hashable, Sendable, CustomStringConvertible {
    /// The date part.
    public var date: SQLDate
    /// The time part (its scale is the value's).
    public var time: SQLTime
    /// A datetime2 of `date` at `time`.
    public init(date: SQLDate, time: SQLTime) {
        self.date = date
        self.time = time
    }

    /// Fractional-second digits (0…7), the time's.
    public var scale: UInt8 { time.scale }
    /// "YYYY-MM-DD hh:mm:ss[.f…]".
    public var canonicalText: String { date.canonicalText + " " + time.canonicalText }
    public var description: String { canonicalText }

    /// The instant of this wall-clock time in `timeZone` (UTC by default).
    public func date(in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> Date {
        Civil.instant(localSeconds: Double(Int(date.days) - Civil.daysFrom0001To1970) * 86_400 + time.timeInterval,
                      in: timeZone)
    }
}

/// [MS-TDS] 2.2.5.5.1.8 datetimeoffset(scale): a UTC datetime2 and the offset (minutes, -840...840)
/// of the local time it was written in. The canonical text shows the local time.
public struct SQLDateTimeOffset: Hashable, Sendable, CustomStringConvertible {
    /// The instant, in UTC.
    public var utc: SQLDateTime2
    /// Minutes east of UTC (-840 ... 840).
    public var offsetMinutes: Int16
    /// The instant `utc`, written in a zone `offsetMinutes` east of UTC.
    public init(utc: SQLDateTime2, offsetMinutes: Int16) {
        self.utc = utc
        self.offsetMinutes = offsetMinutes
    }

    /// The exact instant.
    public var date: Date { utc.date(in: TimeZone(secondsFromGMT: 0) ?? .current) }

    /// The local date and time (UTC plus the offset), as SQL Server displays it.
    public var local: SQLDateTime2 {
        let p = Int64(Civil.powersOf10[Int(min(utc.time.scale, 7))])
        let dayTicks = 86_400 * p
        // Ticks beyond a day only come from hand-built values; keep them within a day first.
        let utcTicks = Int64(truncatingIfNeeded: utc.time.ticks % UInt64(dayTicks))
        let total = utcTicks + Int64(offsetMinutes) * 60 * p
        var dayShift = total / dayTicks
        var ticks = total % dayTicks
        if ticks < 0 { ticks += dayTicks; dayShift -= 1 }
        return SQLDateTime2(date: SQLDate(days: Int32(truncatingIfNeeded: Int64(utc.date.days) + dayShift)),
                            time: SQLTime(ticks: UInt64(ticks), scale: utc.time.scale))
    }

    /// Builds a value from the local wall-clock time and its offset.
    public init(local: SQLDateTime2, offsetMinutes: Int16) {
        let shifted = SQLDateTimeOffset(utc: local, offsetMinutes: 0 &- offsetMinutes).local
        self.init(utc: shifted, offsetMinutes: offsetMinutes)
    }

    /// "YYYY-MM-DD hh:mm:ss[.f…] +hh:mm" in local time.
    public var canonicalText: String {
        let m = Int(offsetMinutes)
        let sign = m < 0 ? "-" : "+"
        return local.canonicalText + " " + sign + Civil.pad(abs(m) / 60, 2) + ":" + Civil.pad(abs(m) % 60, 2)
    }
    public var description: String { canonicalText }
}

/// [MS-TDS] 2.2.5.5.1.8 datetime: days since 1900-01-01 (Int32, -53,690 = 1753-01-01 ...
/// 2,958,463 = 9999-12-31) and 1/300-second ticks since midnight (UInt32, 0 ... 25,919,999).
public struct SQLDateTime: Hashable, Sendable, CustomStringConvertible {
    /// Days since 1900-01-01 (negative before).
    public var days: Int32
    /// 1/300 s units since midnight.
    public var ticks: UInt32
    /// A datetime from its wire fields (not checked: see ``isValid``).
    public init(days: Int32, ticks: UInt32) {
        self.days = days
        self.ticks = ticks
    }

    /// 1753-01-01, the first day datetime holds.
    public static let minDays: Int32 = -53_690
    /// 9999-12-31, the last day datetime holds.
    public static let maxDays: Int32 = 2_958_463
    /// 1/300 s ticks in a day (300 × 86,400).
    public static let ticksPerDay: UInt32 = 25_920_000

    /// True within 1753-01-01 … 9999-12-31 with ticks below a day.
    public var isValid: Bool { days >= SQLDateTime.minDays && days <= SQLDateTime.maxDays && ticks < SQLDateTime.ticksPerDay }

    /// Milliseconds since midnight as SQL Server rounds them (…, .000, .003, .007, .010, …).
    public var roundedMilliseconds: Int { (Int(ticks) * 10 + 1) / 3 }

    /// "YYYY-MM-DD hh:mm:ss.fff" with SQL Server's rounding of 1/300 s.
    public var canonicalText: String {
        var ms = roundedMilliseconds
        var d = Int(days) + Civil.daysFrom0001To1900
        if ms >= 86_400_000 { ms -= 86_400_000; d += 1 }
        let secs = ms / 1000
        return Civil.dateText(days: d) + " " + Civil.pad(secs / 3600, 2) + ":" + Civil.pad(secs / 60 % 60, 2) + ":"
            + Civil.pad(secs % 60, 2) + "." + Civil.pad(ms % 1000, 3)
    }
    public var description: String { canonicalText }

    /// The instant of this wall-clock time in `timeZone` (UTC by default), with exact 1/300 s.
    public func date(in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> Date {
        Civil.instant(localSeconds: Double(Int(days) + Civil.daysFrom0001To1900 - Civil.daysFrom0001To1970) * 86_400
                        + Double(ticks) / 300, in: timeZone)
    }

    /// The same wall-clock time as a datetime2(7) (1/300 s rounded to 100 ns).
    public var dateTime2: SQLDateTime2 {
        SQLDateTime2(date: SQLDate(days: Int32(truncatingIfNeeded: Int(days) + Civil.daysFrom0001To1900)),
                     time: SQLTime(ticks: (UInt64(ticks) * 100_000 + 1) / 3, scale: 7))
    }
}

/// [MS-TDS] 2.2.5.5.1.8 smalldatetime: days since 1900-01-01 (UInt16, up to 2079-06-06) and
/// minutes since midnight (UInt16, 0 ... 1439).
public struct SQLSmallDateTime: Hashable, Sendable, CustomStringConvertible {
    /// Days since 1900-01-01 (up to 2079-06-06).
    public var days: UInt16
    /// Minutes since midnight (0…1439).
    public var minutes: UInt16
    /// A smalldatetime from its wire fields (not checked: see ``isValid``).
    public init(days: UInt16, minutes: UInt16) {
        self.days = days
        self.minutes = minutes
    }

    /// True when the minutes are within a day.
    public var isValid: Bool { minutes < 1440 }

    /// "YYYY-MM-DD hh:mm:00".
    public var canonicalText: String {
        Civil.dateText(days: Int(days) + Civil.daysFrom0001To1900) + " " + Civil.pad(Int(minutes) / 60, 2) + ":"
            + Civil.pad(Int(minutes) % 60, 2) + ":00"
    }
    public var description: String { canonicalText }

    /// The instant of this wall-clock time in `timeZone` (UTC by default).
    public func date(in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> Date {
        Civil.instant(localSeconds: Double(Int(days) + Civil.daysFrom0001To1900 - Civil.daysFrom0001To1970) * 86_400
                        + Double(minutes) * 60, in: timeZone)
    }
}
