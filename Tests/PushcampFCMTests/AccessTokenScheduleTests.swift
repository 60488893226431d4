import PushcampFCMCore
import Testing

/// When an access token is fetched, and what a 401 does (`reference/FCM.md`, section 2).
@Suite("Access token schedule")
struct AccessTokenScheduleTests {
    @Test func aTokenIsUsedUntilAMinuteBeforeItExpiresAndFetchedFiveMinutesAhead() {
        var schedule = AccessTokenSchedule()
        #expect(schedule.due(now: 1000))
        #expect(schedule.usable(now: 1000) == nil)
        schedule.fetched("a", lifetime: 3600, now: 1000)
        #expect(schedule.usable(now: 1000)?.bearer == "a")
        #expect(!schedule.due(now: 4299))
        #expect(schedule.due(now: 4300))
        #expect(schedule.due(now: 4000, lookahead: 300))
        // Never sent within the last minute of its life: no request goes out with an expired token.
        #expect(schedule.usable(now: 4539)?.bearer == "a")
        #expect(schedule.usable(now: 4540) == nil)
        schedule.fetched("b", lifetime: 3600, now: 4300)
        #expect(schedule.usable(now: 4540)?.generation == 2)
    }

    /// One fresh token after a 401; a 401 for that one stops, unless a request with it was accepted.
    @Test func a401GetsOneFreshTokenThenStops() {
        var schedule = AccessTokenSchedule()
        schedule.fetched("a", lifetime: 3600, now: 0)
        #expect(schedule.refused(generation: 1) == .fetch)
        #expect(schedule.usable(now: 1) == nil)
        #expect(schedule.due(now: 1))
        // Requests on the wire with the same token come back 401 too: one fetch for all of them.
        #expect(schedule.refused(generation: 1) == .alreadyReplaced)
        schedule.fetched("b", lifetime: 3600, now: 2)
        #expect(schedule.refused(generation: 1) == .alreadyReplaced)
        #expect(schedule.refused(generation: 2) == .stop)

        var recovering = AccessTokenSchedule()
        recovering.fetched("a", lifetime: 3600, now: 0)
        #expect(recovering.refused(generation: 1) == .fetch)
        recovering.fetched("b", lifetime: 3600, now: 2)
        recovering.accepted(generation: 2)
        #expect(recovering.refused(generation: 2) == .fetch)
    }

    /// Another node's token is taken when it outlives ours; a retired one never comes back.
    @Test func aSharedTokenIsAdoptedWhenItOutlivesOurs() {
        var schedule = AccessTokenSchedule()
        #expect(adopt(&schedule, "x", 3600, 0) == true)
        #expect(adopt(&schedule, "y", 3000, 0) == false)
        #expect(adopt(&schedule, "z", 30, 0) == false)
        #expect(adopt(&schedule, "w", 3700, 0) == true)
        #expect(schedule.refused(generation: 2) == .fetch)
        #expect(adopt(&schedule, "w", 3700, 1) == false)
        #expect(adopt(&schedule, "v", 3500, 1) == true)
        #expect(schedule.usable(now: 2)?.bearer == "v")
        // The adopted token replaced a refused one: a 401 for it stops too.
        #expect(schedule.refused(generation: 3) == .stop)
    }

    func adopt(_ schedule: inout AccessTokenSchedule, _ token: String, _ expires: Double, _ now: Double) -> Bool {
        schedule.adopt(token, expires: expires, now: now)
    }

    @Test func theJournalKeepsExpiryAndToken() {
        let shared = SharedAccessToken(token: "ya29.a b", expires: 1_800_003_600.7)
        #expect(shared.encoded == "1800003600 ya29.a b")
        #expect(
            SharedAccessToken(encoded: shared.encoded) == SharedAccessToken(token: "ya29.a b", expires: 1_800_003_600)
        )
        for bad in ["", "123", "x y", "123 "] { #expect(SharedAccessToken(encoded: bad) == nil, "\(bad)") }
    }
}
