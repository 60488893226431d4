import Foundation

/// The one clock a send runs on: seconds since 1970, and a way to wait for a moment. Injected
/// wherever a rule depends on time (the executor's pacing, retries and stall checks, token ages,
/// `iat`), so tests move it by hand instead of sleeping.
public protocol WallClock: Sendable {
    func now() -> Double
    /// Returns at `deadline` (seconds since 1970), or throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Double) async throws
}

extension WallClock {
    public func sleep(until deadline: Double) async throws {
        let seconds = deadline - now()
        if seconds > 0 { try await Task.sleep(for: .seconds(min(seconds, 86_400 * 365))) }
        try Task.checkCancellation()
    }

    /// Returns `seconds` from now, or throws `CancellationError` when the task is cancelled.
    public func sleep(for seconds: Double) async throws {
        try await sleep(until: now() + seconds)
    }
}

extension Duration {
    /// The duration in seconds.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
}
