import NIOCore
import PushcampAPNs
import PushcampFCMCore
import PushcampJournal
import PushcampModel
import PushcampSend
import Testing

/// FCM's answers through the executor, in virtual time (`reference/FCM.md`, section 3): each reason
/// with its reaction; a quota that stops the whole run for its minute, not one message.
@Suite("FCM answers in the executor")
struct FCMExecutorTests {
    static func error(_ reason: FCMReason) -> FCMError { FCMError(reason, message: "\(reason)") }

    @Test func eachReasonHasItsDecision() {
        let policy = RetryPolicy()
        func decide(
            _ error: FCMError?,
            status: Int,
            retryAfter: Int? = nil,
            knownValid: Bool = true,
            attempt: Int = 0
        )
            -> RetryPolicy.Decision
        {
            var outcome = APNsOutcome(
                request: ExecutorSimulation.fcmRequest(1),
                result: .response(status: status, reason: nil, timestamp: nil),
                latency: .zero,
                connection: 0
            )
            outcome.fcmError = error
            outcome.retryAfter = retryAfter
            return policy.decideFCM(outcome, attempt: attempt, payloadKnownValid: knownValid, random: 0.5)
        }
        #expect(decide(nil, status: 200) == .delivered)
        #expect(decide(Self.error(.unregistered), status: 404) == .failed(reason: "fcm/UNREGISTERED"))
        #expect(decide(FCMError.invalidToken, status: 400) == .failed(reason: "fcm/INVALID_ARGUMENT:token"))
        #expect(
            decide(FCMError.invalidToken, status: 400, knownValid: false) == .failed(reason: "fcm/INVALID_ARGUMENT")
        )
        #expect(decide(Self.error(.senderIDMismatch), status: 403) == .failed(reason: "fcm/SENDER_ID_MISMATCH"))
        #expect(decide(Self.error(.thirdPartyAuthError), status: 401) == .failed(reason: "fcm/THIRD_PARTY_AUTH_ERROR"))
        #expect(
            decide(Self.error(.quotaExceeded), status: 429, retryAfter: 17)
                == .pauseRun(after: 17, cause: "fcm/QUOTA_EXCEEDED")
        )
        #expect(decide(Self.error(.quotaExceeded), status: 429) == .pauseRun(after: 60, cause: "fcm/QUOTA_EXCEEDED"))
        #expect(decide(Self.error(.unavailable), status: 503) == .retry(after: 1, cause: "fcm/UNAVAILABLE"))
        #expect(decide(Self.error(.internalError), status: 500, attempt: 2) == .retry(after: 4, cause: "fcm/INTERNAL"))
        #expect(
            decide(Self.error(.unavailable), status: 503, retryAfter: 9) == .retry(after: 9, cause: "fcm/UNAVAILABLE")
        )
        #expect(decide(Self.error(.unavailable), status: 503, attempt: 4) == .failed(reason: "fcm/UNAVAILABLE"))
        #expect(decide(Self.error(.unauthenticated), status: 401) == .stopRun(reason: "fcm/UNAUTHENTICATED"))
        #expect(decide(Self.error(.permissionDenied), status: 403) == .credentials(reason: "fcm/PERMISSION_DENIED"))
        // A proxy's page instead of FCM's body: read by its status.
        #expect(decide(nil, status: 502) == .retry(after: 1, cause: "fcm/UNAVAILABLE"))
    }

    /// A request's group carries its platform beside its variant and locale, so a send's readout
    /// counts per platform and the variants still add both platforms up.
    @Test func readoutsAreKeptPerPlatform() {
        let groups = ReadoutGroups()
        let iosA = groups.group(variant: "a", locale: "fr")
        let androidA = groups.group(variant: "a", locale: "fr", platform: .android)
        let androidB = groups.group(variant: "b", locale: nil, platform: .android)
        #expect(iosA != androidA)
        #expect(groups.names(of: androidA) == ("a", "fr", .android))
        #expect(groups.names(of: androidB) == ("b", nil, .android))
        #expect(groups.names(of: iosA).platform == .ios)

        var report = SendReport(campaign: "mixed", revision: "r", endpoint: "e")
        report.groupNames = groups
        report.groups = [
            iosA: Readout(delivered: 5, failed: ["Unregistered": 1]),
            androidA: Readout(delivered: 3),
            androidB: Readout(delivered: 1, failed: ["fcm/UNREGISTERED": 2]),
        ]
        var latency = LatencyHistogram()
        latency.record(nanoseconds: 4_000_000)
        report.variantLatency[androidA >> 16] = latency
        let stats = report.stats
        #expect(stats.platforms["ios"] == Readout(delivered: 5, failed: ["Unregistered": 1]))
        #expect(stats.platforms["android"]?.delivered == 4)
        #expect(stats.platforms["android"]?.failed == ["fcm/UNREGISTERED": 2])
        #expect(stats.platforms["android"]?.latency?.count == 1)
        #expect(stats.variants["a"]?.delivered == 8)
        #expect(stats.variants["a"]?.latency?.count == 1)
        #expect(stats.locales["fr"]?.delivered == 8)
        #expect(report.platforms(latency: false)[.android]?.latency == nil)
    }

    /// The project's quota runs out at 1 s: every message answered QUOTA_EXCEEDED retries after the
    /// server's 30 s, and nothing at all is written meanwhile; then every message is delivered once.
    @Test func aQuotaStopsTheWholeRunForItsMinute() {
        var rules = ExecutorSimulation.Rules(latency: 0.005)
        rules.fcm = true
        rules.fcmAnswer = { _, now in
            (1.0..<31.0).contains(now) ? (FCMExecutorTests.error(.quotaExceeded), 30) : nil
        }
        var simulation = ExecutorSimulation(pushes: 3000, rate: 1000, rules: rules)
        simulation.run()
        let report = try! #require(simulation.report)
        #expect(report.delivered == 3000)
        #expect(report.retries["fcm/QUOTA_EXCEEDED", default: 0] > 0)
        let writes = simulation.written.values.flatMap { $0 }.sorted()
        let firstRefusal = 1.0
        // After the first refusal is read (one latency later), nothing goes out until its 30 s end.
        let during = writes.filter { $0 > firstRefusal + 0.05 && $0 < firstRefusal + 30 }
        #expect(during.isEmpty, "\(during.prefix(5))")
        #expect(simulation.written.values.allSatisfy { $0.count <= 2 })
    }

    /// A campaign at 5,000/s whose Firebase project's quota is 500/s: FCM messages leave at the quota,
    /// every one once, in the time the quota takes, not the campaign's rate.
    @Test func theProjectsQuotaCapsTheRun() {
        var rules = ExecutorSimulation.Rules(latency: 0.005)
        rules.fcm = true
        var simulation = ExecutorSimulation(pushes: 2000, rate: 5000, rules: rules) { configuration in
            configuration.fcmRate = 500
        }
        simulation.run()
        let report = try! #require(simulation.report)
        #expect(report.delivered == 2000)
        let writes = simulation.written.values.flatMap { $0 }.sorted()
        // 2,000 at 500/s: the last leaves after about 4 s (at 5,000/s it would be 0.4 s).
        #expect(writes.last! > 3.8 && writes.last! < 4.2, "\(writes.last!)")
        // No second holds more than the quota (and one hand-over batch).
        for second in 0..<4 {
            let count = writes.filter { $0 >= Double(second) && $0 < Double(second + 1) }.count
            #expect(count <= 500 + 25, "second \(second): \(count)")
        }
    }

    /// UNREGISTERED tokens are dead at once; an INVALID_ARGUMENT about a token only once FCM took a
    /// message of the run (its payload is then known valid).
    @Test func deadTokensAreRememberedOnlyWhenTheyAreTheTokens() {
        var rules = ExecutorSimulation.Rules(latency: 0.005)
        rules.fcm = true
        rules.fcmAnswer = { request, _ in
            switch request.tag {
            case 0: return (FCMError.invalidToken, nil)
            case 5: return (FCMError.invalidToken, nil)
            case 7: return (FCMExecutorTests.error(.unregistered), nil)
            default: return nil
            }
        }
        var simulation = ExecutorSimulation(pushes: 10, rate: 1, rules: rules)
        simulation.run()
        let report = try! #require(simulation.report)
        #expect(report.delivered == 7)
        #expect(report.failures == ["fcm/INVALID_ARGUMENT": 1, "fcm/INVALID_ARGUMENT:token": 1, "fcm/UNREGISTERED": 1])
        #expect(simulation.deadTokens.map(\.reason).sorted() == ["fcm/INVALID_ARGUMENT:token", "fcm/UNREGISTERED"])
    }
}
