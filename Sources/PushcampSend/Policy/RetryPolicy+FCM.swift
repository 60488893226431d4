import PushcampAPNs
import PushcampFCMCore
import PushcampModel

extension RetryPolicy {
    /// FCM's answers (`reference/FCM.md`, section 3) onto the same decisions as APNs', reasons named
    /// with their provider (`fcm/UNREGISTERED`):
    ///
    /// | answer | decision |
    /// |---|---|
    /// | 200 | delivered |
    /// | UNREGISTERED; INVALID_ARGUMENT about the token once the payload is known valid | failed, the token dead |
    /// | SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR, INVALID_ARGUMENT, UNSPECIFIED_ERROR | failed, never retried |
    /// | QUOTA_EXCEEDED (429) | the whole run waits `retry-after` (else the quota's minute), then this message goes again |
    /// | UNAVAILABLE (503), INTERNAL (500) | again after 1 s, doubling, with jitter, at least `retry-after` |
    /// | 401 after one fresh access token | stop the run: the credentials are refused |
    /// | PERMISSION_DENIED, NOT_FOUND (403, 404 without an FCM code) | credentials: a few stop the run |
    ///
    /// Losses and timeouts are decided as for APNs.
    public func decideFCM(
        _ outcome: APNsOutcome,
        attempt: Int,
        losses: Int = 0,
        payloadKnownValid: Bool,
        random: @autoclosure () -> Double
    ) -> Decision {
        guard case .response(let status, _, _) = outcome.result else {
            return decide(outcome.result, attempt: attempt, losses: losses, random: random())
        }
        if status == 200 { return .delivered }
        let error = outcome.fcmError ?? FCMError(FCMReason(httpStatus: status), message: "HTTP \(status)")
        let reaction = error.reaction(payloadKnownValid: payloadKnownValid)
        let name = Self.fcmReason(error, reaction: reaction)
        let attempt = max(0, attempt - losses)
        switch reaction {
        case .dropToken, .neverRetry, .requestBug:
            return .failed(reason: name)
        case .credentials:
            return .credentials(reason: name)
        case .refreshAccessToken:
            return .stopRun(reason: name)
        case .slowRun:
            guard attempt + 1 < maxAttempts else { return .failed(reason: name) }
            return .pauseRun(after: Double(max(outcome.retryAfter ?? 60, 1)), cause: name)
        case .serverError:
            guard attempt + 1 < maxAttempts else { return .failed(reason: name) }
            let base: Double
            switch delays[name] {
            case .never?: return .failed(reason: name)
            case .after(let span)?: base = Double(span.seconds)
            case nil: base = 1
            }
            let delay = min(base * Double(1 << min(attempt, 16)), ceiling) * (0.8 + 0.4 * random())
            return .retry(after: max(delay, Double(outcome.retryAfter ?? 0)), cause: name)
        }
    }

    /// `fcm/CODE`; a token FCM calls invalid is `fcm/INVALID_ARGUMENT:token`.
    static func fcmReason(_ error: FCMError, reaction: FCMReason.Reaction) -> String {
        error.reason == .invalidArgument && reaction == .dropToken
            ? "\(FCMReason.prefix)INVALID_ARGUMENT:token" : "\(FCMReason.prefix)\(error.reason)"
    }
}
