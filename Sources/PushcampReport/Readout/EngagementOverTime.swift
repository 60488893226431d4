import PushcampJournal

/// One event of a run's readout (its leading one) per arm over time since the run's start, as the
/// journal counted it: what the run page's chart draws, as each arm's cumulative rate.
public struct EngagementOverTime: Sendable, Hashable {
    public var event: String
    /// Seconds per bucket.
    public var width: Double
    public var buckets: [EngagementBucket]

    /// Points a chart draws at most: buckets beyond are merged.
    public static let points = 120

    public init(event: String, width: Double, buckets: [EngagementBucket]) {
        self.event = event
        self.width = width
        self.buckets = buckets
    }

    /// Seconds per bucket asked of the journal: the attribution window over `points` (a minute at
    /// least); 10 minutes without a window (merged further when the events span longer).
    public static func width(window: Int64?) -> Double {
        window.map { max(60, Double($0) / Double(points)) } ?? 600
    }

    /// One arm's cumulative rate at each point: of everyone it was assigned, the share that had
    /// done the event by then.
    public struct Curve: Sendable, Hashable {
        public var name: String
        public var isHoldout: Bool
        public var rates: [Double]
    }

    /// Each arm of `readout` (in its order, those assigned anybody) with its curve, over at most
    /// `points` points of `secondsPerPoint` each; nil when no event was counted.
    public func curves(for readout: EngagementReadout) -> (curves: [Curve], secondsPerPoint: Double)? {
        guard let last = buckets.map(\.bucket).max() else { return nil }
        let merge = (last + 1 + Self.points - 1) / Self.points
        let count = last / merge + 1
        var curves: [Curve] = []
        for group in readout.groups where group.recipients > 0 {
            var counts = [Int](repeating: 0, count: count)
            for bucket in buckets where bucket.variant == (group.isHoldout ? nil : group.name) {
                counts[bucket.bucket / merge] += bucket.count
            }
            var total = 0
            let rates = counts.map { count -> Double in
                total += count
                return Double(total) / Double(group.recipients)
            }
            curves.append(Curve(name: group.name, isHoldout: group.isHoldout, rates: rates))
        }
        return (curves, width * Double(merge))
    }
}
