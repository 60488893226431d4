/// `max_invalid`: how many audience rows with an invalid token a plan tolerates before it fails —
/// a count (`0`, `25`) or a share of the rows read (`2%`, `0.5%`).
public enum InvalidLimit: Hashable, Sendable, CustomStringConvertible {
    case count(Int)
    case share(Share)

    public static func parse(_ text: String) -> Result<InvalidLimit, ValueError> {
        let trimmed = text.trimmingSpaces
        if trimmed.hasSuffix("%") { return Share.parse(trimmed).map { .share($0) } }
        guard let count = Int(trimmed), count >= 0 else {
            return .failure(ValueError("'\(text)' is not a count of rows or a percentage; write it like 0, 25 or 2%"))
        }
        return .success(.count(count))
    }

    /// Whether `invalid` rows with an invalid token, of `read` rows, are within the limit.
    public func allows(_ invalid: Int, of read: Int) -> Bool {
        switch self {
        case .count(let count): invalid <= count
        // invalid / read <= basisPoints / 10,000, in integers.
        case .share(let share): invalid * 10_000 <= share.basisPoints * read
        }
    }

    public var description: String {
        switch self {
        case .count(let count): "\(count)"
        case .share(let share): share.description
        }
    }
}
