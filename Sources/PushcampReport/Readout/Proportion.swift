import Foundation

/// `successes` out of `trials`, with the statistics the readout states: the rate, its 95% Wilson
/// score interval, and the difference to another proportion with Newcombe's hybrid score interval
/// (his method 10, built from the two Wilson intervals) and a two-proportion z-test.
///
/// Chosen because both stay inside 0…1 and keep their coverage for small counts and rates near 0,
/// where the textbook Wald interval (p ± 1.96·√(p(1−p)/n)) collapses to a width of zero.
public struct Proportion: Sendable, Hashable {
    public var successes: Int
    public var trials: Int

    /// z for a two-sided 95% interval.
    public static let z95 = 1.959_963_984_540_054

    public init(_ successes: Int, of trials: Int) {
        self.successes = max(0, min(successes, trials))
        self.trials = max(0, trials)
    }

    /// successes ÷ trials; nil without trials.
    public var rate: Double? { trials > 0 ? Double(successes) / Double(trials) : nil }

    /// The 95% Wilson score interval: (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) ÷ (1 + z²/n).
    public var wilson: ClosedRange<Double>? {
        guard let p = rate else { return nil }
        let n = Double(trials)
        let z2 = Self.z95 * Self.z95
        let denominator = 1 + z2 / n
        let center = (p + z2 / (2 * n)) / denominator
        let half = Self.z95 * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot() / denominator
        return max(0, center - half)...min(1, center + half)
    }

    /// self − `baseline`, with its 95% interval (Newcombe's method 10) and the two-sided p-value of
    /// the pooled two-proportion z-test; nil when either side has no trials.
    public func difference(from baseline: Proportion) -> Difference? {
        guard let p1 = rate, let p2 = baseline.rate, let w1 = wilson, let w2 = baseline.wilson else { return nil }
        let d = p1 - p2
        let low =
            d - ((p1 - w1.lowerBound) * (p1 - w1.lowerBound) + (w2.upperBound - p2) * (w2.upperBound - p2)).squareRoot()
        let high =
            d + ((w1.upperBound - p1) * (w1.upperBound - p1) + (p2 - w2.lowerBound) * (p2 - w2.lowerBound)).squareRoot()
        let (n1, n2) = (Double(trials), Double(baseline.trials))
        let pooled = Double(successes + baseline.successes) / (n1 + n2)
        let spread = (pooled * (1 - pooled) * (1 / n1 + 1 / n2)).squareRoot()
        let pValue = spread > 0 ? erfc(abs(d) / spread / 2.0.squareRoot()) : (d == 0 ? 1 : 0)
        // The z-test's normal approximation holds when each side expects at least 5 successes and
        // 5 failures at the pooled rate; below that, no verdict.
        let expected = [n1 * pooled, n1 * (1 - pooled), n2 * pooled, n2 * (1 - pooled)]
        return Difference(
            difference: d,
            interval: low...high,
            relative: p2 > 0 ? d / p2 : nil,
            pValue: pValue,
            enoughData: expected.allSatisfy { $0 >= 5 }
        )
    }

    /// A difference of two rates, as the readout states it.
    public struct Difference: Sendable, Hashable {
        /// Rate minus the baseline's rate (absolute: 0.012 is 1.2 percentage points).
        public var difference: Double
        /// Its 95% interval.
        public var interval: ClosedRange<Double>
        /// difference ÷ the baseline's rate; nil when the baseline's rate is 0.
        public var relative: Double?
        public var pValue: Double
        /// Whether each side is large enough for the test (expected successes and failures ≥ 5).
        public var enoughData: Bool

        public enum Verdict: String, Sendable, Hashable {
            case better
            case worse
            case noClearDifference = "no-clear-difference"
            case tooSmall = "too-small-to-tell"

            public var words: String {
                switch self {
                case .better: return "better"
                case .worse: return "worse"
                case .noClearDifference: return "no clear difference"
                case .tooSmall: return "too small to tell"
                }
            }
        }

        /// Better or worse when the 95% interval leaves out 0 and the sample is large enough.
        public var verdict: Verdict {
            guard enoughData else { return .tooSmall }
            if interval.lowerBound > 0 { return .better }
            if interval.upperBound < 0 { return .worse }
            return .noClearDifference
        }
    }
}
