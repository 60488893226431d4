import PushcampAPNs
import PushcampAPNsCore
import PushcampModel

/// Whether and when a request to APNs' broadcast API (a broadcast send, or a channel-management
/// request) goes again, by the rules device pushes follow (`RetryPolicy`): 429 and 5xx again after
/// a back-off with jitter, never the reasons Apple says never to retry; at least as long as the
/// server's `retry-after` asks; never past `deadline` (a broadcast's expiration). A request that
/// went out and got no answer goes again too, as a possible duplicate; one that could not go (no
/// connection) goes again after a back-off of its own, a few times.
///
/// A plain value: the caller sends, tells it what happened, and sleeps as it says.
public struct ExchangeRetry: Sendable {
    /// What one attempt came to, when it was not the answer the request wanted.
    public enum Attempt: Sendable, Equatable {
        /// APNs answered with an error: its status, reason and `retry-after` (seconds), if any.
        case answered(status: Int, reason: APNsReason?, retryAfter: Double?)
        /// The request went out and no answer came: APNs may have it.
        case unanswered(timedOut: Bool)
        /// The request could not go (TCP, TLS or HTTP/2 could not be set up): APNs has nothing.
        case notSent
    }

    public enum Decision: Sendable, Equatable {
        /// Send it again after `after` seconds; `cause` names why (Apple's reason, `connection-lost`,
        /// `timeout`, `connect`); `possibleDuplicate` when APNs may have had the attempt before.
        case retry(after: Double, cause: String, possibleDuplicate: Bool)
        /// Final: `reason` (Apple's, or the transport's), and why no more attempts go.
        case fail(reason: String, detail: String)
    }

    public var policy: RetryPolicy
    /// No attempt starts after this moment (seconds since 1970); nil for none.
    public var deadline: Double?
    /// Attempts that went out, and how many of them got no answer.
    public private(set) var attempts = 0
    public private(set) var losses = 0
    /// Attempts in a row that could not go.
    private var connectFailures = 0

    /// Attempts in a row that may fail to connect before the request fails (`cannot-connect`).
    public static let connectLimit = 5

    /// `attempts` made before (by a sender that stopped), counted against `retry.max_attempts`.
    public init(policy: RetryPolicy, deadline: Double? = nil, attempts: Int = 0) {
        self.policy = policy
        self.deadline = deadline
        self.attempts = max(0, attempts)
    }

    /// The management API's policy: a person waits on `pushcamp channels`, so the back-off starts
    /// at a second and stays under 8 (1, 2, 4, 8, 8, 8, 8 s), and a request gives up after eight
    /// attempts.
    public static var management: ExchangeRetry {
        var spec = RetrySpec()
        spec.maxAttempts = 8
        for reason in ["TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown", "timeout"] {
            spec.delays[reason] = .after(TimeSpan(seconds: 1))
        }
        var policy = RetryPolicy(spec)
        policy.ceiling = 8
        return ExchangeRetry(policy: policy)
    }

    /// `attempt` ended without the wanted answer at `now`: again, or not.
    public mutating func decide(_ attempt: Attempt, now: Double, random: @autoclosure () -> Double) -> Decision {
        let decision: RetryPolicy.Decision
        var retryAfter: Double?
        switch attempt {
        case .notSent:
            connectFailures += 1
            guard connectFailures < Self.connectLimit else {
                return .fail(reason: "cannot-connect", detail: "no connection in \(connectFailures) attempts")
            }
            let ceiling = min(Double(1 << (connectFailures - 1)), 30)
            return retry(after: ceiling * (0.5 + 0.5 * random()), cause: "connect", duplicate: false, now: now)
        case .answered(let status, let reason, let after):
            retryAfter = after
            decision = policy.decide(
                .response(status: status, reason: reason, timestamp: nil),
                attempt: attempts,
                losses: losses,
                random: random()
            )
        case .unanswered(let timedOut):
            decision = policy.decide(
                timedOut ? .timedOut : .connectionLost,
                attempt: attempts,
                losses: losses,
                random: random()
            )
            if !timedOut { losses += 1 }
        }
        connectFailures = 0
        attempts += 1
        switch decision {
        case .retry(let after, let cause), .pauseRun(let after, let cause):
            let duplicate = attempt == .unanswered(timedOut: true) || attempt == .unanswered(timedOut: false)
            return retry(after: max(after, retryAfter ?? 0), cause: cause, duplicate: duplicate, now: now)
        case .failed(let reason):
            let retryable = RetryPolicy.defaultDelays[reason] != nil || reason == "connection-lost"
            return .fail(
                reason: reason,
                detail: retryable ? "\(attempts) attempts, as many as retry.max_attempts allows" : "never retried"
            )
        case .credentials(let reason), .stopRun(let reason):
            return .fail(reason: reason, detail: "the credentials were refused")
        case .delivered:
            return .fail(reason: "HTTP 200", detail: "not the answer the request wanted")
        }
    }

    private func retry(after: Double, cause: String, duplicate: Bool, now: Double) -> Decision {
        if let deadline, now + after > deadline {
            return .fail(
                reason: cause,
                detail: "its expiration would pass before it could go again (in \(Int(after.rounded(.up))) s)"
            )
        }
        return .retry(after: after, cause: cause, possibleDuplicate: duplicate)
    }
}
