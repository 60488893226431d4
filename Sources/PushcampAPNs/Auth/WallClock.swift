import Foundation

/// Seconds since 1970, injected wherever a rule depends on the time of day (token ages, `iat`).
public protocol WallClock: Sendable {
    func now() -> Double
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
}
