import Foundation

/// Times as the journal's commands print them.
public enum Timestamps {
    /// UTC, to the second: `2026-11-21 09:30:00Z`.
    public static func text(_ secondsSince1970: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss'Z'"
        return formatter.string(from: Date(timeIntervalSince1970: secondsSince1970))
    }

    /// ISO 8601 in UTC, to the millisecond when there are any: `2026-11-21T09:30:00.250Z`.
    public static func iso(_ secondsSince1970: Double) -> String {
        let date = Date(timeIntervalSince1970: secondsSince1970)
        return secondsSince1970.truncatingRemainder(dividingBy: 1) == 0
            ? date.formatted(isoSeconds) : date.formatted(isoMilliseconds)
    }

    // Made once: an export formats two times per token.
    private static let isoSeconds = Date.ISO8601FormatStyle()
    private static let isoMilliseconds = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}

/// Lengths of time as reports print them.
public enum Durations {
    /// `0.85 ms`, `12 ms`, `1250 ms`: two decimals under 10 ms.
    public static func milliseconds(_ seconds: Double) -> String {
        seconds < 0.01 ? String(format: "%.2f ms", seconds * 1000) : String(format: "%.0f ms", seconds * 1000)
    }

    /// `4.2 s`, `2m13s`, `1h02m`.
    public static func text(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole / 3600)h\(String(format: "%02d", whole % 3600 / 60))m"
    }
}
