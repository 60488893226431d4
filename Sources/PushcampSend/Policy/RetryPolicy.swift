import PushcampAPNs
import PushcampAPNsCore
import PushcampModel

/// What to do with each outcome: Apple's rules plus the campaign's `retry:` settings.
///
/// | outcome | default |
/// |---|---|
/// | 200 | delivered |
/// | BadDeviceToken, DeviceTokenNotForTopic, Forbidden, ExpiredToken, Unregistered, PayloadTooLarge | failed, never retried |
/// | InvalidProviderToken, MissingProviderToken, BadCertificate… | not final; a few of them stop the run |
/// | TooManyProviderTokenUpdates | again at once with the token before the refused one while it is under an hour old (never minting again); otherwise the first one stops the run |
/// | TooManyRequests | that device again after 10 s |
/// | InternalServerError, ServiceUnavailable | again after 10 s, doubling, with jitter (at most 15 min) |
/// | Shutdown | again after 1 s, on whichever connection is up |
/// | connection lost with the request in flight | again after 50 ms, doubling to 5 s, on a budget of its own (`maxLosses`): a pool that keeps losing connections slows down instead of failing pushes nobody answered (counted: APNs may have had it) |
/// | no answer before the deadline | again after 5 s |
/// | other 4xx (a bug in the request) | failed |
public struct RetryPolicy: Sendable {
    public var maxAttempts: Int
    public var delays: [String: RetrySpec.Delay]
    /// How often one push may be lost with its connection before it counts as failed (`connection-lost`).
    public var maxLosses = 10
    /// The longest back-off between two attempts, in seconds.
    public var ceiling = RetryPolicy.maximumDelay

    public static let defaultDelays: [String: Double] = [
        "TooManyRequests": 10, "InternalServerError": 10, "ServiceUnavailable": 10, "Shutdown": 1, "timeout": 5,
    ]
    public static let maximumDelay: Double = 15 * 60

    public init(_ spec: RetrySpec = RetrySpec()) {
        maxAttempts = spec.maxAttempts ?? 5
        delays = spec.delays
    }

    public enum Decision: Equatable, Sendable {
        case delivered
        /// Final: the push failed for `reason` (Apple's reason, or a transport condition).
        case failed(reason: String)
        /// Send again after `seconds`, recorded under `cause`.
        case retry(after: Double, cause: String)
        /// The credentials are refused: count it, and stop the run after a few.
        case credentials(reason: String)
        /// A condition of the whole run, not of this push: stop the run at once (the push waits for a resume).
        case stopRun(reason: String)
        /// The whole run waits `after` seconds (FCM's project quota), then this push goes again.
        case pauseRun(after: Double, cause: String)
    }

    /// `attempt` is the request's attempt number (0 for the first send) and `losses` how many of those
    /// attempts were lost with their connection; `random` in 0..<1 gives the jitter and is evaluated only
    /// when a retry is decided.
    public func decide(
        _ result: APNsOutcome.Result,
        attempt: Int,
        losses: Int = 0,
        random: @autoclosure () -> Double
    ) -> Decision {
        // Attempts lost with a connection have their own budget.
        let attempt = max(0, attempt - losses)
        let reasonName: String
        switch result {
        case .response(200, _, _):
            return .delivered
        case .response(let status, let reason, _):
            let reason = reason ?? .unknown("HTTP \(status)")
            switch reason.disposition {
            case .neverRetry, .requestBug: return .failed(reason: "\(reason)")
            case .credentials, .refreshProviderToken: return .credentials(reason: "\(reason)")
            case .slowTokenRefresh: return .stopRun(reason: "\(reason)")
            case .deviceBusy, .serverError: reasonName = "\(reason)"
            }
        case .connectionLost:
            guard losses + 1 <= maxLosses else { return .failed(reason: "connection-lost") }
            let delay = min(0.05 * Double(1 << min(losses, 16)), 5)
            return .retry(after: losses == 0 ? 0 : delay * (0.5 + 0.5 * random()), cause: "connection-lost")
        case .timedOut:
            reasonName = "timeout"
        }
        let base: Double
        switch delays[reasonName] {
        case .never?: return .failed(reason: reasonName)
        case .after(let span)?: base = Double(span.seconds)
        case nil: base = Self.defaultDelays[reasonName] ?? 10
        }
        guard attempt + 1 < maxAttempts else { return .failed(reason: reasonName) }
        let exponential = reasonName == "TooManyRequests" ? base : base * Double(1 << min(attempt, 16))
        let ceiling = min(exponential, self.ceiling)
        // Jitter spreads retries out; TooManyRequests waits at least its delay.
        // (`random` is only evaluated here: delivered pushes cost no random number.)
        let jitter = random()
        let delay = reasonName == "TooManyRequests" ? ceiling * (1 + 0.2 * jitter) : ceiling * (0.8 + 0.4 * jitter)
        return .retry(after: max(delay, base), cause: reasonName)
    }
}
