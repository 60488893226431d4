import PushcampAPNs
import PushcampModel
import PushcampSend
import Testing

@Suite("Send policies")
struct PolicyTests {
    @Test func tokenBucketPacesBatches() {
        var bucket = TokenBucket(rate: 100, burst: 10)
        #expect(bucket.reserve(10, now: 0) == 0)
        #expect(abs(bucket.reserve(10, now: 0) - 0.1) < 1e-9)
        #expect(abs(bucket.reserve(5, now: 0.1) - 0.05) < 1e-9)
        #expect(bucket.reserve(5, now: 10) == 0)
    }

    @Test func neverRetryReasonsAreNeverRetried() {
        let policy = RetryPolicy()
        for reason in [
            "BadDeviceToken", "DeviceTokenNotForTopic", "Forbidden", "ExpiredToken", "Unregistered", "PayloadTooLarge",
        ] {
            let reason = APNsReason(reason)
            #expect(
                policy.decide(.response(status: reason.status, reason: reason, timestamp: nil), attempt: 0, random: 0.5)
                    == .failed(reason: "\(reason)")
            )
        }
    }

    @Test func retriesFollowTheirDelaysAndStop() {
        var spec = RetrySpec()
        spec.maxAttempts = 3
        spec.delays["TooManyRequests"] = .after(TimeSpan(seconds: 30))
        spec.delays["Shutdown"] = .never
        let policy = RetryPolicy(spec)
        let busy = APNsOutcome.Result.response(status: 429, reason: .tooManyRequests, timestamp: nil)
        guard case .retry(let after, "TooManyRequests") = policy.decide(busy, attempt: 0, random: 0) else {
            Issue.record("expected a retry")
            return
        }
        #expect(after >= 30)
        #expect(policy.decide(busy, attempt: 2, random: 0) == .failed(reason: "TooManyRequests"))
        let unavailable = APNsOutcome.Result.response(status: 503, reason: .serviceUnavailable, timestamp: nil)
        if case .retry(let first, _) = policy.decide(unavailable, attempt: 0, random: 0.5),
            case .retry(let second, _) = policy.decide(unavailable, attempt: 1, random: 0.5)
        {
            #expect(second == 2 * first)
        } else {
            Issue.record("5xx must be retried")
        }
        #expect(
            policy.decide(.response(status: 503, reason: .shutdown, timestamp: nil), attempt: 0, random: 0)
                == .failed(reason: "Shutdown")
        )
        #expect(policy.decide(.connectionLost, attempt: 0, random: 0) == .retry(after: 0, cause: "connection-lost"))
        #expect(
            policy.decide(.response(status: 403, reason: .invalidProviderToken, timestamp: nil), attempt: 0, random: 0)
                == .credentials(reason: "InvalidProviderToken")
        )
    }
}
