/// The campaign's rate, as a token bucket: `rate` tokens a second, at most `burst` saved up.
///
/// `reserve` never refuses: it takes the tokens (going into debt if need be) and says how long to wait
/// before sending, so a batch goes out no sooner than the rate allows. Time is passed in (seconds).
public struct TokenBucket: Sendable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var updated: Double?

    public init(rate: Double, burst: Double) {
        precondition(rate > 0 && burst >= 1)
        self.rate = rate
        self.burst = burst
        self.tokens = burst
    }

    /// Takes `count` tokens at `now`; returns the seconds to wait before using them (0 when available).
    public mutating func reserve(_ count: Int, now: Double) -> Double {
        if let updated { tokens = min(burst, tokens + (now - updated) * rate) }
        updated = now
        tokens -= Double(count)
        return tokens >= 0 ? 0 : -tokens / rate
    }
}
