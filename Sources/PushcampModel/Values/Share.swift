/// A share of an audience written as `5%` or `2.5%`; stored in basis points (1% = 100), so
/// bucketing by a hash is exact integer arithmetic.
public struct Share: Hashable, Sendable, CustomStringConvertible {
    public var basisPoints: Int

    public init(basisPoints: Int) {
        self.basisPoints = basisPoints
    }

    public static func parse(_ text: String) -> Result<Share, ValueError> {
        let trimmed = text.trimmingSpaces
        guard trimmed.hasSuffix("%"), let value = Double(trimmed.dropLast().trimmingCharacters(in: " ")) else {
            return .failure(ValueError("'\(text)' is not a percentage; write it like 5% or 2.5%"))
        }
        guard value >= 0, value <= 100 else {
            return .failure(ValueError("'\(text)' must be between 0% and 100%"))
        }
        let basisPoints = value * 100
        guard basisPoints == basisPoints.rounded() else {
            return .failure(ValueError("'\(text)' is finer than 0.01%"))
        }
        return .success(Share(basisPoints: Int(basisPoints)))
    }

    public var description: String {
        basisPoints % 100 == 0 ? "\(basisPoints / 100)%" : "\(Double(basisPoints) / 100)%"
    }
}
