import Foundation

/// Latencies in log-spaced buckets (about 3% wide) from 1 µs to ~100 s: fixed memory, percentiles
/// accurate to a bucket's width.
public struct LatencyHistogram: Sendable {
    private static let bucketsPerDoubling = 24.0
    private var counts = [UInt64](repeating: 0, count: 24 * 27 + 1)
    public private(set) var count: UInt64 = 0

    public init() {}

    public mutating func record(nanoseconds: Int64) {
        let micros = max(1, Double(nanoseconds) / 1000)
        counts[min(counts.count - 1, Int(log2(micros) * Self.bucketsPerDoubling))] += 1
        count += 1
    }

    /// The latency (seconds) under which `fraction` of the recorded ones fall; nil when empty.
    public func percentile(_ fraction: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = max(1, UInt64((Double(count) * fraction).rounded(.up)))
        var seen: UInt64 = 0
        for (index, bucketCount) in counts.enumerated() {
            seen += bucketCount
            if seen >= rank { return pow(2, Double(index + 1) / Self.bucketsPerDoubling) / 1_000_000 }
        }
        return nil
    }
}
