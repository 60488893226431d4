import PushcampAPNs
import PushcampAPNsCore
import PushcampModel
import PushcampSend
import Testing

@Suite("Send policies")
struct PolicyTests {
    @Test func pacerSendsTheFirstAtOnceAndSavesNothingUpWhileIdle() {
        var pacer = Pacer(rate: 100)
        #expect(pacer.earliest(now: 5) == 5)
        pacer.take(10, now: 5)
        #expect(abs(pacer.earliest(now: 5) - 5.1) < 1e-9)
        pacer.take(5, now: 5.1)
        #expect(abs(pacer.earliest(now: 5.12) - 5.15) < 1e-9)
        // Idle for a long time: the next batch leaves at once, and the one after it is paced again.
        #expect(pacer.earliest(now: 60) == 60)
        pacer.take(10, now: 60)
        #expect(abs(pacer.earliest(now: 60) - 60.1) < 1e-9)
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
        // Losses have their own budget: a push lost four times still has all its attempts.
        guard
            case .retry(let wait, "connection-lost") = policy.decide(.connectionLost, attempt: 4, losses: 4, random: 1)
        else {
            Issue.record("a lost push within its loss budget is sent again")
            return
        }
        #expect(wait == 0.8)
        #expect(policy.decide(busy, attempt: 5, losses: 4, random: 0) != .failed(reason: "TooManyRequests"))
        #expect(
            policy.decide(.connectionLost, attempt: 10, losses: 10, random: 0) == .failed(reason: "connection-lost")
        )
        #expect(
            policy.decide(
                .response(status: 429, reason: .tooManyProviderTokenUpdates, timestamp: nil),
                attempt: 0,
                random: 0
            )
                == .stopRun(reason: "TooManyProviderTokenUpdates")
        )
        #expect(
            policy.decide(.response(status: 403, reason: .invalidProviderToken, timestamp: nil), attempt: 0, random: 0)
                == .credentials(reason: "InvalidProviderToken")
        )
    }
}
