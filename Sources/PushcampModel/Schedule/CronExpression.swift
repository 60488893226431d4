/// A five-field cron expression — minute, hour, day of month, month, day of week — read as Vixie
/// cron reads it: `*`, numbers, ranges (`1-5`), steps (`*/15`, `8-18/2`), lists (`0,30`), month
/// and weekday names (`JAN`, `MON-FRI`; 0 and 7 are both Sunday), and the shorthands `@hourly`,
/// `@daily`, `@weekly`, `@monthly` and `@yearly`. When both the day of month and the day of week
/// are restricted, a day matching either fires (as in every cron).
///
/// Times are wall times in the schedule's zone, turned into instants by `Zone.instant(of:)`: a
/// slot in a spring-forward gap moves forward by the gap, one in a repeated hour fires once, at
/// its first occurrence.
public struct CronExpression: Hashable, Sendable, CustomStringConvertible {
    public let text: String
    let minutes: [Int]
    let hours: [Int]
    let daysOfMonth: Set<Int>
    let months: Set<Int>
    let weekdays: Set<Int>
    let dayOfMonthRestricted: Bool
    let weekdayRestricted: Bool

    public var description: String { text }

    public static func == (lhs: CronExpression, rhs: CronExpression) -> Bool { lhs.text == rhs.text }
    public func hash(into hasher: inout Hasher) { hasher.combine(text) }

    private static let shorthands = [
        "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@weekly": "0 0 * * 0",
        "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
    ]
    private static let monthNames = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ]
    private static let weekdayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    public static func parse(_ text: String) -> Result<CronExpression, ValueError> {
        let trimmed = text.trimmingSpaces
        let expanded = shorthands[trimmed.lowercased()] ?? trimmed
        if expanded.hasPrefix("@") {
            return .failure(
                ValueError(
                    "'\(text)' is not a cron shorthand; use @hourly, @daily, @weekly, @monthly or @yearly, "
                        + "or five fields"
                )
            )
        }
        let fields = expanded.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else {
            return .failure(
                ValueError(
                    "'\(text)' has \(fields.count) field\(fields.count == 1 ? "" : "s"); a cron expression has five: "
                        + "minute hour day-of-month month day-of-week (for example \"0 9 * * MON-FRI\")"
                )
            )
        }
        do {
            let minutes = try field(fields[0], "minute", 0...59)
            let hours = try field(fields[1], "hour", 0...23)
            let days = try field(fields[2], "day of month", 1...31)
            let months = try field(fields[3], "month", 1...12, names: monthNames, nameBase: 1)
            var weekdays = try field(fields[4], "day of week", 0...7, names: weekdayNames, nameBase: 0)
            if weekdays.contains(7) { weekdays.insert(0) }
            weekdays.remove(7)
            let expression = CronExpression(
                text: trimmed,
                minutes: minutes.sorted(),
                hours: hours.sorted(),
                daysOfMonth: days,
                months: months,
                weekdays: weekdays,
                dayOfMonthRestricted: !fields[2].hasPrefix("*"),
                weekdayRestricted: !fields[4].hasPrefix("*")
            )
            if !expression.weekdayRestricted, let earliest = days.min(),
                months.allSatisfy({ earliest > Timestamp.daysIn(month: $0, year: 2024) })
            {
                throw ValueError("'\(text)' never fires: no month it names has day \(earliest)")
            }
            return .success(expression)
        } catch let error as ValueError {
            return .failure(error)
        } catch {
            return .failure(ValueError("'\(text)': \(error)"))
        }
    }

    private static func field(
        _ text: String,
        _ name: String,
        _ range: ClosedRange<Int>,
        names: [String] = [],
        nameBase: Int = 0
    ) throws -> Set<Int> {
        func value(_ part: Substring) throws -> Int {
            if part.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(part) {
                guard range.contains(number) else {
                    throw ValueError("\(name) '\(part)' is out of range \(range.lowerBound)-\(range.upperBound)")
                }
                return number
            }
            if let index = names.firstIndex(of: part.uppercased()) { return index + nameBase }
            let known = names.isEmpty ? "" : " or a name (\(names.first!)…\(names.last!))"
            throw ValueError(
                "\(name) '\(part)' is not a number from \(range.lowerBound) to \(range.upperBound)\(known)"
            )
        }
        var values = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !item.isEmpty else { throw ValueError("\(name) '\(text)' has an empty list item") }
            let stepParts = item.split(separator: "/", omittingEmptySubsequences: false)
            guard stepParts.count <= 2 else { throw ValueError("\(name) '\(item)' has more than one '/'") }
            var step = 1
            if stepParts.count == 2 {
                guard let number = Int(stepParts[1]), number >= 1, number <= range.upperBound else {
                    throw ValueError("\(name) '\(item)': the step after '/' must be 1 to \(range.upperBound)")
                }
                step = number
            }
            let base = stepParts[0]
            var low: Int
            var high: Int
            if base == "*" {
                (low, high) = (range.lowerBound, range.upperBound)
            } else if let dash = base.firstIndex(of: "-") {
                low = try value(base[..<dash])
                high = try value(base[base.index(after: dash)...])
                guard low <= high else {
                    throw ValueError("\(name) '\(item)': a range goes from low to high")
                }
            } else {
                low = try value(base)
                // `5/15` means from 5 to the end, every 15.
                high = stepParts.count == 2 ? range.upperBound : low
            }
            values.formUnion(stride(from: low, through: high, by: step))
        }
        return values
    }

    /// Whether the date (year, month, day, weekday) is a day this expression fires on.
    func matches(day local: LocalDateTime) -> Bool {
        guard months.contains(local.month) else { return false }
        let dom = daysOfMonth.contains(local.day)
        let dow = weekdays.contains(local.weekday)
        if dayOfMonthRestricted && weekdayRestricted { return dom || dow }
        return dom && dow
    }

    /// The first slot strictly after `instant` (seconds since 1970) in `zone`, or nil when there is
    /// none within the next eight years (an expression like `0 0 29 2 MON` fires rarely, not never).
    public func next(after instant: Int64, in zone: Zone) -> Int64? {
        let start = zone.local(at: instant)
        var dayNumber = start.dayNumber
        let lastDay = dayNumber + 8 * 366
        while dayNumber <= lastDay {
            let date = LocalDateTime(wallSeconds: Int64(dayNumber) * 86_400)
            if matches(day: date), let slot = firstSlot(on: date, after: instant, in: zone) {
                return slot
            }
            dayNumber += 1
        }
        return nil
    }

    /// The earliest slot of the day `date` after `instant`. Within a day without an offset change
    /// the instants follow the wall times, so the first one after `instant` is the answer; on a day
    /// with a change a time moved forward out of a gap can land after a later wall time, so every
    /// time of the day is looked at.
    private func firstSlot(on date: LocalDateTime, after instant: Int64, in zone: Zone) -> Int64? {
        let midnight = date.wallSeconds
        let steady = zone.offset(at: midnight - 86_400 / 2) == zone.offset(at: midnight + 86_400 + 86_400 / 2)
        var best: Int64?
        for hour in hours {
            for minute in minutes {
                var time = date
                time.hour = hour
                time.minute = minute
                let slot = zone.instant(of: time)
                guard slot > instant else { continue }
                if steady { return slot }
                best = min(best ?? slot, slot)
            }
        }
        return best
    }
}
