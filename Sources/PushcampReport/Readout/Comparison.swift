import Foundation

/// Every pair of a test's arms compared on one event (the variants with each other, and each with
/// the holdout), and the arm that leads, if one does: what the readout's verdict is made of.
///
/// Each difference has an *anytime-valid* interval, a confidence sequence: it holds at every look
/// at once, however often the readout is read while events come in (after every import), so a
/// team may stop the test the first time it names a winner. A fixed-sample interval (Newcombe's,
/// the lift column's) holds at one look decided in advance; read after every import and acted on
/// at the first "better", it names far more false winners than its 5%.
///
/// The sequence is Robbins' normal mixture (Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform,
/// nonparametric, nonasymptotic confidence sequences", 2021; the mixture sequential test of Johari,
/// Pekelis & Walsh, "Always valid inference", 2017): with d the difference of the two rates so far
/// and V its variance (p₁(1−p₁)/n₁ + p₂(1−p₂)/n₂), which grows as events arrive,
///
///     d ± √( (1 + ρ²V)/ρ² · (2·ln(1/α) + ln(1 + ρ²V)) )
///
/// with ρ fixed before any event is seen, from the arms' sizes (tightest where V is what a 5% rate
/// gives). The pairs share the error rate: each interval is at α divided by the number of pairs
/// (Bonferroni), so the chance that any of them is wrong at any look stays at most α.
public struct Comparisons: Sendable, Hashable {
    /// The chance, over every pair and every look, of a wrong verdict: 5%.
    public static let alpha = 0.05
    /// The rate the mixture is tuned for.
    static let tuningRate = 0.05

    /// One arm against another on the event.
    public struct Pair: Sendable, Hashable {
        public var arm: String
        public var baseline: String
        /// The arm's rate minus the baseline's.
        public var difference: Double
        /// The anytime-valid interval, at the corrected level.
        public var interval: ClosedRange<Double>
        /// Whether each side expects at least 5 events and 5 non-events at the pooled rate: below
        /// that the normal approximation does not hold, and there is no verdict.
        public var enoughData: Bool

        public var verdict: Proportion.Difference.Verdict {
            guard enoughData else { return .tooSmall }
            if interval.lowerBound > 0 { return .better }
            if interval.upperBound < 0 { return .worse }
            return .noClearDifference
        }
    }

    /// An arm, its assigned recipients and how many of them did the event.
    public struct Arm: Sendable, Hashable {
        public var name: String
        public var proportion: Proportion

        public init(_ name: String, _ proportion: Proportion) {
            self.name = name
            self.proportion = proportion
        }
    }

    /// What the comparisons say about the test as a whole.
    public enum Leader: Sendable, Hashable {
        /// `arm` is ahead of every other arm, each by an interval that leaves out 0.
        case winner(String)
        /// `arm` has the highest rate, but is not clearly ahead of `unclear` yet.
        case leading(String, unclear: [String])
        /// Fewer than two arms with recipients, or no arm has the event yet.
        case none
    }

    public var event: String
    public var arms: [Arm]
    /// Every pair, each arm against those after it in `arms` (oriented so the difference is the
    /// higher rate's arm minus the other's).
    public var pairs: [Pair]
    public var leader: Leader
    /// Each interval's level: 1 − α ÷ pairs.
    public var level: Double

    /// The comparisons of `arms` (each with recipients) on `event`.
    public init(event: String, arms: [Arm]) {
        self.event = event
        self.arms = arms.filter { $0.proportion.trials > 0 }
        let arms = self.arms
        let count = arms.count * (arms.count - 1) / 2
        let alpha = Self.alpha / Double(max(count, 1))
        level = 1 - alpha
        var pairs: [Pair] = []
        for i in arms.indices {
            for j in arms.indices where j > i {
                let (a, b) = (arms[i], arms[j])
                let higher = (a.proportion.rate ?? 0) >= (b.proportion.rate ?? 0)
                let (arm, baseline) = higher ? (a, b) : (b, a)
                pairs.append(Self.pair(arm, against: baseline, alpha: alpha))
            }
        }
        self.pairs = pairs
        let best = arms.max { ($0.proportion.rate ?? 0) < ($1.proportion.rate ?? 0) }
        if let best, arms.count >= 2, best.proportion.successes > 0 {
            let unclear = pairs.filter { $0.arm == best.name || $0.baseline == best.name }
                .filter { !($0.arm == best.name && $0.verdict == .better) }
                .map { $0.arm == best.name ? $0.baseline : $0.arm }
            leader = unclear.isEmpty ? .winner(best.name) : .leading(best.name, unclear: unclear)
        } else {
            leader = .none
        }
    }

    /// `arm` − `baseline` with the anytime-valid interval at `alpha`.
    static func pair(_ arm: Arm, against baseline: Arm, alpha: Double) -> Pair {
        let (a, b) = (arm.proportion, baseline.proportion)
        let (p1, p2) = (a.rate ?? 0, b.rate ?? 0)
        let (n1, n2) = (Double(a.trials), Double(b.trials))
        let d = p1 - p2
        let half = halfWidth(variance: p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2, sizes: (n1, n2), alpha: alpha)
        let pooled = Double(a.successes + b.successes) / (n1 + n2)
        let expected = [n1 * pooled, n1 * (1 - pooled), n2 * pooled, n2 * (1 - pooled)]
        return Pair(
            arm: arm.name,
            baseline: baseline.name,
            difference: d,
            interval: max(-1, d - half)...min(1, d + half),
            enoughData: expected.allSatisfy { $0 >= 5 }
        )
    }

    /// The normal mixture's half-width at variance `variance`, with ρ tuned for two arms of
    /// `sizes` at the tuning rate (Howard et al.'s choice of ρ for an intrinsic time).
    static func halfWidth(variance: Double, sizes: (Double, Double), alpha: Double) -> Double {
        let tuned = tuningRate * (1 - tuningRate) * (1 / sizes.0 + 1 / sizes.1)
        let logTerm = 2 * log(1 / alpha)
        let rho2 = (logTerm + log(logTerm + 1)) / tuned
        return ((1 + rho2 * variance) / rho2 * (logTerm + log(1 + rho2 * variance))).squareRoot()
    }
}
