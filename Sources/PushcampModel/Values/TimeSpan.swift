/// A length of time written as `90s`, `15m`, `24h`, `7d` or combined (`1h30m`); stored in whole seconds.
public struct TimeSpan: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var seconds: Int64

    /// The longest span a file may write: ten years (3650d). Every span read is within it, so adding
    /// one to any timestamp (years 0000–9999) can never overflow.
    public static let maximum = TimeSpan(seconds: 3650 * 86_400)

    public init(seconds: Int64) {
        self.seconds = seconds
    }

    public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool { lhs.seconds < rhs.seconds }

    public static func parse(_ text: String) -> Result<TimeSpan, ValueError> {
        let trimmed = text.trimmingSpaces
        if trimmed == "0" { return .success(TimeSpan(seconds: 0)) }
        var total: Int64 = 0
        var number = ""
        var sawUnit = false
        for character in trimmed {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            let unit: Int64
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            default:
                return .failure(ValueError("'\(text)' is not a duration; write it like 90s, 15m, 24h, 7d or 1h30m"))
            }
            if number.count > 18 {
                return .failure(ValueError("'\(text)' is too long: at most \(maximum) (ten years)"))
            }
            guard let value = Int64(number) else {
                return .failure(ValueError("'\(text)' is not a duration; write it like 90s, 15m, 24h, 7d or 1h30m"))
            }
            let (product, overflow) = value.multipliedReportingOverflow(by: unit)
            guard !overflow, total <= maximum.seconds - product else {
                return .failure(ValueError("'\(text)' is too long: at most \(maximum) (ten years)"))
            }
            total += product
            number = ""
            sawUnit = true
        }
        guard sawUnit, number.isEmpty else {
            return .failure(ValueError("'\(text)' needs a unit: s, m, h or d (for example 24h)"))
        }
        return .success(TimeSpan(seconds: total))
    }

    /// An exact spelling: `86400` seconds is `24h`, `5400` is `1h30m`; days from two days up.
    public var description: String {
        if seconds == 0 { return "0s" }
        var rest = seconds
        var text = ""
        let units: [(Int64, String)] =
            seconds >= 172_800
            ? [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")] : [(3600, "h"), (60, "m"), (1, "s")]
        for (unit, name) in units where rest >= unit {
            text += "\(rest / unit)\(name)"
            rest %= unit
        }
        return text
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first == " " || scalars.first == "\t" { scalars.removeFirst() }
        while scalars.last == " " || scalars.last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
