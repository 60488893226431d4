import Crypto
import PushcampAPNs
import PushcampAPNsCore
import PushcampSimulator
import PushcampTestSupport
import Synchronization
import Testing

@Suite("Provider tokens")
struct ProviderTokenTests {
    @Test func scheduleRefreshesBeforeAnHourAndNotWithinTwentyMinutes() {
        var schedule = ProviderTokenSchedule()
        #expect(schedule.needsToken(now: 0))
        schedule.minted(at: 0)
        #expect(!schedule.needsToken(now: 49 * 60))
        #expect(schedule.needsToken(now: 50 * 60))
        #expect(schedule.expired(generation: 1, now: 10 * 60) == .clockSkew(ageSeconds: 600))
        #expect(schedule.expired(generation: 1, now: 30 * 60) == .mint)
        schedule.minted(at: 30 * 60)
        #expect(schedule.expired(generation: 1, now: 31 * 60) == .alreadyReplaced)
    }

    @Test func manyExpiredReportsMintOneToken() {
        let clock = ManualClock(1_800_000_000)
        let tokens = ProviderTokens(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            key: P256.Signing.PrivateKey(),
            clock: clock
        )
        let first = tokens.current()
        clock.advance(45 * 60)
        for _ in 0..<50 { _ = tokens.expired(generation: first.generation) }
        #expect(tokens.mintedCount == 2)
        #expect(tokens.current().generation == first.generation + 1)
    }

    @Test func aLongRunNeverProvokesTooManyProviderTokenUpdatesOrExpiry() {
        let clock = ManualClock(1_800_000_000)
        let key = P256.Signing.PrivateKey()
        let tokens = ProviderTokens(teamID: "TEAM123456", keyID: "KEY1234567", key: key, clock: clock)
        let verifier = ProviderTokenVerifier(
            publicKey: key.publicKey,
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            clock: clock
        )
        // 30 hours of sending, a request every 3 seconds.
        for _ in 0..<36_000 {
            #expect(verifier.check(tokens.current().bearer) == nil)
            clock.advance(3)
        }
        #expect(verifier.statistics.tooManyUpdates == 0)
        #expect(tokens.mintedCount == 36)  // one per 50 minutes: at 0, 50, …, 1750
    }

    @Test func theVerifierRefusesWhatAPNsRefuses() {
        let clock = ManualClock(1_800_000_000)
        let key = P256.Signing.PrivateKey()
        let verifier = ProviderTokenVerifier(
            publicKey: key.publicKey,
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            clock: clock
        )
        let good = ProviderTokenJWT.make(teamID: "TEAM123456", keyID: "KEY1234567", issuedAt: 1_800_000_000, key: key)
        let otherKey = ProviderTokenJWT.make(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            issuedAt: 1_800_000_000,
            key: P256.Signing.PrivateKey()
        )
        let wrongTeam = ProviderTokenJWT.make(
            teamID: "OTHER12345",
            keyID: "KEY1234567",
            issuedAt: 1_800_000_000,
            key: key
        )
        let old = ProviderTokenJWT.make(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            issuedAt: 1_800_000_000 - 3601,
            key: key
        )
        #expect(verifier.check(nil) == .missingProviderToken)
        #expect(verifier.check("bearer " + otherKey) == .invalidProviderToken)
        #expect(verifier.check("bearer " + wrongTeam) == .invalidProviderToken)
        #expect(verifier.check("bearer " + old) == .expiredProviderToken)
        #expect(verifier.check("bearer " + good) == nil)
        clock.advance(60)
        let tooSoon = ProviderTokenJWT.make(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            issuedAt: 1_800_000_060,
            key: key
        )
        #expect(verifier.check("bearer " + tooSoon) == .tooManyProviderTokenUpdates)
    }
}
