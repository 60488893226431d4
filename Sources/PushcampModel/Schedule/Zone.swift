import Foundation

/// A named time zone (`Europe/Paris`, `UTC`) and the one rule Pushcamp uses to turn a local wall
/// time into an instant:
///
/// - a local time that happens once is that instant;
/// - one that happens twice (the hour repeated when clocks fall back) is its **first** occurrence;
/// - one that never happens (the hour skipped when clocks spring forward) **moves forward by the
///   gap**: New York's 02:30 on a spring-forward day is 03:30 EDT, Lord Howe's 02:15 on its
///   30-minute jump is 02:45.
///
/// Only the zone's UTC offsets come from the system's zone data (`TimeZone.secondsFromGMT(for:)`);
/// the calendar arithmetic is done here, because Foundation's `Calendar.nextDate` on Linux skips a
/// whole day at Africa/Cairo's midnight gap and mishandles Lord Howe's half-hour one.
public struct Zone: Hashable, Sendable, CustomStringConvertible {
    public let identifier: String
    private let timeZone: TimeZone

    public static let utc = Zone(identifier: "UTC", timeZone: TimeZone(secondsFromGMT: 0)!)

    private init(identifier: String, timeZone: TimeZone) {
        self.identifier = identifier
        self.timeZone = timeZone
    }

    /// A zone of the IANA database by its name, or `UTC`.
    public static func named(_ name: String) -> Zone? {
        if name == "UTC" || name == "Etc/UTC" || name == "Z" { return .utc }
        // Only names of the database: `TimeZone(identifier:)` also takes abbreviations such as
        // `EST` or `GMT+1`, whose meaning depends on the platform.
        guard name.contains("/"), let zone = TimeZone(identifier: name) else { return nil }
        return Zone(identifier: name, timeZone: zone)
    }

    /// The error for a name that is not a zone, suggesting the nearest zone names.
    public static func parse(_ text: String) -> Result<Zone, ValueError> {
        let name = text.trimmingSpaces
        if let zone = named(name) { return .success(zone) }
        let known = TimeZone.knownTimeZoneIdentifiers
        let hint = Suggestion.didYouMean(name, in: known)
        return .failure(
            ValueError(
                "'\(text)' is not a time zone\(hint.isEmpty ? "" : hint); write an IANA zone name such as "
                    + "Europe/Paris or America/New_York, or UTC"
            )
        )
    }

    public var description: String { identifier }

    public static func == (lhs: Zone, rhs: Zone) -> Bool { lhs.identifier == rhs.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    /// The zone's offset from UTC, in seconds, at `instant` (seconds since 1970).
    public func offset(at instant: Int64) -> Int64 {
        if identifier == "UTC" { return 0 }
        return Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
    }

    /// The instant of a local wall time, by the rule above.
    public func instant(of local: LocalDateTime) -> Int64 {
        if let first = instants(of: local).first { return first }
        // In the gap: the wall time read with the offset from before the jump lands as far past
        // the jump as the wall time was.
        let wall = local.wallSeconds
        return wall - offset(at: wall - 86_400)
    }

    /// Every instant at which the zone's clocks show `local`, earliest first: one, two in the hour
    /// repeated when clocks fall back, none in the hour skipped when they spring forward.
    public func instants(of local: LocalDateTime) -> [Int64] {
        let wall = local.wallSeconds
        if identifier == "UTC" { return [wall] }
        // The offsets a day either side: zones change their offset at most once in two days.
        let before = offset(at: wall - 86_400)
        let after = offset(at: wall + 86_400)
        var found: [Int64] = []
        for candidate in [before, after] {
            let instant = wall - candidate
            if offset(at: instant) == candidate, !found.contains(instant) { found.append(instant) }
        }
        return found.sorted()
    }

    /// The local wall time at `instant`.
    public func local(at instant: Int64) -> LocalDateTime {
        LocalDateTime(wallSeconds: instant + offset(at: instant))
    }
}

/// A date and time on a wall clock, without a zone: `2027-03-20T09:00`.
public struct LocalDateTime: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int

    public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    /// The wall time as if it were UTC, in seconds since 1970: what calendar arithmetic works on.
    public var wallSeconds: Int64 {
        Int64(Timestamp.daysFromCivil(year: year, month: month, day: day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
    }

    public init(wallSeconds: Int64) {
        let days = Timestamp.floorDivide(wallSeconds, 86_400)
        let rest = Int(wallSeconds - days * 86_400)
        (year, month, day) = Timestamp.civilFromDays(Int(days))
        hour = rest / 3600
        minute = rest % 3600 / 60
        second = rest % 60
    }

    /// Days since 1970-01-01 of this date.
    public var dayNumber: Int { Timestamp.daysFromCivil(year: year, month: month, day: day) }

    /// 0 Sunday … 6 Saturday.
    public var weekday: Int {
        let days = dayNumber
        return ((days % 7) + 7 + 4) % 7  // 1970-01-01 was a Thursday
    }

    public static func < (lhs: LocalDateTime, rhs: LocalDateTime) -> Bool { lhs.wallSeconds < rhs.wallSeconds }

    /// `2027-03-20T09:00` (seconds only when they are not zero).
    public var description: String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = String(repeating: "0", count: max(0, 4 - String(self.year).count)) + String(self.year)
        return "\(year)-\(two(month))-\(two(day))T\(two(hour)):\(two(minute))" + (second == 0 ? "" : ":\(two(second))")
    }

    /// `2027-03-20T09:00` or `2027-03-20T09:00:30`, without a zone.
    public static func parse(_ text: String) -> Result<LocalDateTime, ValueError> {
        let usage = "write a local time like 2027-03-20T09:00"
        let parts = text.trimmingSpaces.split(separator: "T", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .failure(ValueError("'\(text)' is not a date and time; \(usage)")) }
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        let time = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        guard date.count == 3, date[0].count == 4, date[1].count == 2, date[2].count == 2,
            time.count == 2 || time.count == 3, time.allSatisfy({ $0.count == 2 }),
            let year = Int(date[0]), let month = Int(date[1]), let day = Int(date[2]),
            let hour = Int(time[0]), let minute = Int(time[1])
        else { return .failure(ValueError("'\(text)' is not a date and time; \(usage)")) }
        let second = time.count == 3 ? Int(time[2]) : 0
        guard let second, (1...12).contains(month), (1...Timestamp.daysIn(month: month, year: year)).contains(day),
            (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second)
        else { return .failure(ValueError("'\(text)' is not a real date and time")) }
        if let problem = Timestamp.yearProblem(year, text) { return .failure(problem) }
        return .success(LocalDateTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second))
    }
}
