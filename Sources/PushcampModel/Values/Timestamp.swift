/// An instant as UNIX seconds, written in files as ISO 8601 with a zone: `2027-03-20T09:00:00Z` or
/// `2027-03-20T09:00+01:00`. Parsing and formatting are done here by hand so they behave the same on
/// every platform and never depend on the machine's time zone.
public struct Timestamp: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var secondsSince1970: Int64

    public init(secondsSince1970: Int64) {
        self.secondsSince1970 = secondsSince1970
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.secondsSince1970 < rhs.secondsSince1970 }

    public static func + (lhs: Timestamp, rhs: TimeSpan) -> Timestamp {
        Timestamp(secondsSince1970: lhs.secondsSince1970 + rhs.seconds)
    }

    public static func parse(_ text: String) -> Result<Timestamp, ValueError> {
        let usage = "write a time like 2027-03-20T09:00:00Z or 2027-03-20T09:00+01:00"
        let bytes = Array(text.trimmingSpaces.utf8)
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + digits)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += digits
            return value
        }
        func expect(_ character: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == character else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect(0x2D), let month = number(2), expect(0x2D), let day = number(2),
            index < bytes.count, bytes[index] == 0x54 || bytes[index] == 0x20
        else { return .failure(ValueError("'\(text)' is not a date and time; \(usage)")) }
        index += 1
        guard let hour = number(2), expect(0x3A), let minute = number(2) else {
            return .failure(ValueError("'\(text)' is not a date and time; \(usage)"))
        }
        var second = 0
        if expect(0x3A) {
            guard let value = number(2) else { return .failure(ValueError("'\(text)': bad seconds; \(usage)")) }
            second = value
        }
        var offset = 0
        if expect(0x5A) {
            offset = 0
        } else if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D {
            let sign = bytes[index] == 0x2D ? -1 : 1
            index += 1
            guard let hours = number(2), expect(0x3A), let minutes = number(2) else {
                return .failure(ValueError("'\(text)': bad zone offset; \(usage)"))
            }
            offset = sign * (hours * 3600 + minutes * 60)
            // The world's offsets run from -12:00 to +14:00.
            guard minutes < 60, (-12 * 3600...14 * 3600).contains(offset) else {
                return .failure(
                    ValueError("'\(text)': zone offset out of range; offsets run from -12:00 to +14:00")
                )
            }
        } else {
            return .failure(ValueError("'\(text)' has no time zone; add Z (UTC) or an offset like +01:00"))
        }
        guard index == bytes.count else { return .failure(ValueError("'\(text)' has extra text; \(usage)")) }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24,
            minute < 60, second < 60
        else { return .failure(ValueError("'\(text)' is not a real date and time")) }
        if let problem = yearProblem(year, text) { return .failure(problem) }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        if seconds < 0, let problem = yearProblem(1969, text) { return .failure(problem) }
        return .success(Timestamp(secondsSince1970: seconds))
    }

    /// The years a time in a file may have: APNs counts expirations in seconds since 1970, so a
    /// time before it (year 0001, a typo) would make a negative `apns-expiration`.
    public static let years = 1970...9999

    /// Why `year` (of `text`) cannot be a time Pushcamp uses, if it cannot (a time in 1970 whose
    /// offset puts it before 1970 is asked about as 1969).
    static func yearProblem(_ year: Int, _ text: String) -> ValueError? {
        guard !years.contains(year) else { return nil }
        return ValueError(
            "'\(text)' is in the year \(year); times run from 1970 (APNs counts seconds since then) to 9999"
        )
    }

    /// `2027-03-20T09:00:00Z`.
    public var description: String {
        let days = Int(Self.floorDivide(secondsSince1970, 86_400))
        let rest = Int(secondsSince1970 - Int64(days) * 86_400)
        let (year, month, day) = Self.civilFromDays(days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(yearText)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))Z"
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days-from-civil algorithms.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    public static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }
}
