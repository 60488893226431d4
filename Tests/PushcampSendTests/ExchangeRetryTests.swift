import PushcampAPNsCore
import PushcampModel
import PushcampSend
import Testing

/// Issue 43: broadcasts and management requests follow Apple's reasons as pushes do.
@Suite("Retrying the broadcast API's requests")
struct ExchangeRetryTests {
    static let now = 1_800_000_000.0

    static func retry(_ spec: RetrySpec = RetrySpec(), deadline: Double? = nil) -> ExchangeRetry {
        ExchangeRetry(policy: RetryPolicy(spec), deadline: deadline)
    }

    @Test func tooManyRequestsWaitsItsDelayOrTheServersRetryAfterWhicheverIsLonger() {
        var retry = Self.retry()
        #expect(
            retry.decide(.answered(status: 429, reason: .tooManyRequests, retryAfter: nil), now: Self.now, random: 0)
                == .retry(after: 10, cause: "TooManyRequests", possibleDuplicate: false)
        )
        #expect(
            retry.decide(.answered(status: 429, reason: .tooManyRequests, retryAfter: 30), now: Self.now, random: 0)
                == .retry(after: 30, cause: "TooManyRequests", possibleDuplicate: false)
        )
        #expect(retry.attempts == 2)
    }

    @Test func serverErrorsBackOffDoublingUntilMaxAttempts() {
        var spec = RetrySpec()
        spec.maxAttempts = 3
        var retry = Self.retry(spec)
        let unavailable = ExchangeRetry.Attempt.answered(status: 503, reason: .serviceUnavailable, retryAfter: nil)
        // random 0.5: no jitter (0.8 + 0.4 · 0.5 = 1).
        #expect(
            retry.decide(unavailable, now: Self.now, random: 0.5)
                == .retry(after: 10, cause: "ServiceUnavailable", possibleDuplicate: false)
        )
        #expect(
            retry.decide(unavailable, now: Self.now, random: 0.5)
                == .retry(after: 20, cause: "ServiceUnavailable", possibleDuplicate: false)
        )
        #expect(
            retry.decide(unavailable, now: Self.now, random: 0.5)
                == .fail(reason: "ServiceUnavailable", detail: "3 attempts, as many as retry.max_attempts allows")
        )
    }

    @Test func anUnansweredAttemptGoesAgainAtOnceAsAPossibleDuplicate() {
        var retry = Self.retry()
        #expect(
            retry.decide(.unanswered(timedOut: false), now: Self.now, random: 0.5)
                == .retry(after: 0, cause: "connection-lost", possibleDuplicate: true)
        )
        #expect(retry.losses == 1)
        // A late answer: again after the timeout's delay, a possible duplicate too.
        #expect(
            retry.decide(.unanswered(timedOut: true), now: Self.now, random: 0.5)
                == .retry(after: 5, cause: "timeout", possibleDuplicate: true)
        )
    }

    @Test func neverRetryReasonsAndRefusedCredentialsFailAtOnce() {
        var retry = Self.retry()
        #expect(
            retry.decide(
                .answered(status: 400, reason: .channelNotRegistered, retryAfter: nil),
                now: Self.now,
                random: 0
            )
                == .fail(reason: "ChannelNotRegistered", detail: "never retried")
        )
        var refused = Self.retry()
        #expect(
            refused.decide(
                .answered(status: 403, reason: .invalidProviderToken, retryAfter: nil),
                now: Self.now,
                random: 0
            ) == .fail(reason: "InvalidProviderToken", detail: "the credentials were refused")
        )
    }

    /// Never past the message's expiration: a retry that would start after it fails instead.
    @Test func noAttemptStartsAfterTheDeadline() {
        var retry = Self.retry(deadline: Self.now + 15)
        #expect(
            retry.decide(.answered(status: 429, reason: .tooManyRequests, retryAfter: 20), now: Self.now, random: 0)
                == .fail(
                    reason: "TooManyRequests",
                    detail: "its expiration would pass before it could go again (in 20 s)"
                )
        )
    }

    /// A request that cannot go (no connection) goes again after 1, 2, 4, 8 s (half of it or
    /// more, with jitter), and fails as `cannot-connect` at the fifth failure in a row; an
    /// attempt that went out in between starts the count again.
    @Test func aRequestThatCannotGoBacksOffThenFails() {
        var retry = Self.retry()
        for ceiling in [1.0, 2, 4, 8] {
            #expect(
                retry.decide(.notSent, now: Self.now, random: 1)
                    == .retry(after: ceiling, cause: "connect", possibleDuplicate: false)
            )
        }
        #expect(
            retry.decide(.notSent, now: Self.now, random: 1)
                == .fail(reason: "cannot-connect", detail: "no connection in 5 attempts")
        )
        var again = Self.retry()
        for _ in 0..<4 { _ = again.decide(.notSent, now: Self.now, random: 0) }
        _ = again.decide(.answered(status: 503, reason: .serviceUnavailable, retryAfter: nil), now: Self.now, random: 0)
        #expect(
            again.decide(.notSent, now: Self.now, random: 1)
                == .retry(after: 1, cause: "connect", possibleDuplicate: false)
        )
        // Not-sent attempts are not attempts: nothing went out.
        #expect(again.attempts == 1)
    }

    /// The management API's policy: 1, 2, 4 s, then every 8 s, eight attempts.
    @Test func managementRequestsBackOffBriefly() {
        var retry = ExchangeRetry.management
        var delays: [Double] = []
        while case .retry(let after, _, _) = retry.decide(
            .answered(status: 500, reason: .internalServerError, retryAfter: nil),
            now: Self.now,
            random: 0.5
        ) {
            delays.append(after)
        }
        #expect(delays == [1, 2, 4, 8, 8, 8, 8])
        #expect(retry.attempts == 8)
    }
}
