import NIOCore

/// Exponential back-off with full jitter, for reconnects (APNs treats rapid reconnects as an attack).
///
/// The n-th consecutive failure waits a random time in `[base·2ⁿ/2, base·2ⁿ]`, capped at `maximum`.
public struct Backoff: Sendable {
    public var base: TimeAmount
    public var maximum: TimeAmount
    public private(set) var failures = 0

    public init(base: TimeAmount = .milliseconds(200), maximum: TimeAmount = .seconds(30)) {
        self.base = base
        self.maximum = maximum
    }

    /// The wait before the next attempt; `random` picks in 0..<1 (injected by tests).
    public mutating func next(random: Double = Double.random(in: 0..<1)) -> TimeAmount {
        let exponent = min(failures, 30)
        failures += 1
        let ceiling = min(Double(base.nanoseconds) * Double(1 << exponent), Double(maximum.nanoseconds))
        return .nanoseconds(Int64(ceiling / 2 + ceiling / 2 * random))
    }

    public mutating func reset() {
        failures = 0
    }
}
