/// What an event was worth to a group: the sum of its values (revenue), and the value per
/// recipient assigned — those who did not do the event count as 0 — with a 95% interval from the
/// normal approximation of a mean (fixed-sample: read it at the end of the test, not every hour).
public struct Amount: Sendable, Hashable {
    /// Recipients assigned to the group.
    public var recipients: Int
    /// The sum of the values, and of their squares.
    public var total: Double
    public var squares: Double

    public init(total: Double, squares: Double, of recipients: Int) {
        self.total = total
        self.squares = squares
        self.recipients = recipients
    }

    /// Value per recipient assigned.
    public var perRecipient: Double? { recipients > 0 ? total / Double(recipients) : nil }

    /// The variance of one recipient's value (zeros included), by the sample formula.
    var variance: Double? {
        guard recipients > 1, let mean = perRecipient else { return nil }
        return max(0, (squares - Double(recipients) * mean * mean) / Double(recipients - 1))
    }

    /// 95% interval of the value per recipient.
    public var interval: ClosedRange<Double>? {
        guard let mean = perRecipient, let variance else { return nil }
        let half = 1.959963984540054 * (variance / Double(recipients)).squareRoot()
        return (mean - half)...(mean + half)
    }

    /// This group's value per recipient minus `baseline`'s, with Welch's 95% interval; better or
    /// worse only when the interval leaves out 0.
    public func difference(from baseline: Amount) -> Difference? {
        guard let mean = perRecipient, let base = baseline.perRecipient, let variance,
            let baseVariance = baseline.variance
        else { return nil }
        let difference = mean - base
        let half =
            1.959963984540054
            * (variance / Double(recipients) + baseVariance / Double(baseline.recipients)).squareRoot()
        return Difference(difference: difference, interval: (difference - half)...(difference + half))
    }

    public struct Difference: Sendable, Hashable {
        public var difference: Double
        public var interval: ClosedRange<Double>

        public var verdict: Proportion.Difference.Verdict {
            if interval.lowerBound > 0 { return .better }
            if interval.upperBound < 0 { return .worse }
            return .noClearDifference
        }
    }
}
