/// A send rate written as `2000/s`, `90000/min` or `1000000/h`; stored per second.
public struct Rate: Hashable, Sendable, CustomStringConvertible {
    public var perSecond: Double
    /// The spelling from the file, kept for reports.
    public var text: String

    public init(perSecond: Double, text: String? = nil) {
        self.perSecond = perSecond
        self.text = text ?? Rate.format(perSecond)
    }

    /// The slowest rate a campaign may name: one push an hour.
    public static let minimumPerSecond = 1.0 / 3600
    /// The fastest: far above what any connection carries, and small enough for every sum and
    /// product the pacer makes.
    public static let maximumPerSecond = 100_000_000.0

    public static func parse(_ text: String) -> Result<Rate, ValueError> {
        let parts = text.trimmingSpaces.split(separator: "/", omittingEmptySubsequences: false)
        let usage = "write a rate like 2000/s, 90000/min or 1000000/h"
        guard parts.count == 2, let count = Double(parts[0].trimmingCharacters(in: " ")), count.isFinite else {
            return .failure(ValueError("'\(text)' is not a rate; \(usage)"))
        }
        let seconds: Double
        switch parts[1].trimmingCharacters(in: " ") {
        case "s", "sec", "second": seconds = 1
        case "m", "min", "minute": seconds = 60
        case "h", "hour": seconds = 3600
        default: return .failure(ValueError("'\(text)' has an unknown unit; \(usage)"))
        }
        guard count > 0 else { return .failure(ValueError("'\(text)': a rate must be above zero")) }
        let perSecond = count / seconds
        guard perSecond >= minimumPerSecond else {
            return .failure(ValueError("'\(text)' is too slow: at least 1/h"))
        }
        guard perSecond <= maximumPerSecond else {
            return .failure(ValueError("'\(text)' is too fast: at most 100000000/s"))
        }
        return .success(Rate(perSecond: perSecond, text: text.trimmingSpaces))
    }

    public var description: String { text }

    static func format(_ perSecond: Double) -> String {
        perSecond == perSecond.rounded() ? "\(Int64(perSecond))/s" : "\(perSecond)/s"
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        var text = self
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}
