/// The campaign's rate, exact from one push a minute to the wire's limit.
///
/// A batch may leave at `earliest(now:)`: at once when the sender has been idle, else when the pushes
/// before it have used up their share of time (`count / rate` each batch). Nothing is saved up while
/// idle, so a run never bursts above its rate, and the first push leaves at once. Time is passed in
/// (seconds).
public struct Pacer: Sendable {
    public private(set) var rate: Double
    /// When the pushes taken so far have used up their time.
    private var busyUntil: Double?

    public init(rate: Double) {
        precondition(rate > 0 && rate.isFinite, "a rate is positive and finite")
        self.rate = rate
    }

    /// Paces at `rate` from now on (a worker's share of a run's rate changed); what was taken
    /// keeps the time it used.
    public mutating func change(rate: Double) {
        precondition(rate > 0 && rate.isFinite, "a rate is positive and finite")
        self.rate = rate
    }

    /// When the next batch may leave.
    public func earliest(now: Double) -> Double {
        max(now, busyUntil ?? now)
    }

    /// `count` pushes leave at `now` (no sooner than `earliest(now:)`).
    public mutating func take(_ count: Int, now: Double) {
        busyUntil = max(busyUntil ?? now, now) + Double(count) / rate
    }
}
