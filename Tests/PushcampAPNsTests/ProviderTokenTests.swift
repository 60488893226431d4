import Crypto
import Foundation
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

    @Test func aRefusedTokenGivesWayToTheOneBeforeAndNothingIsMintedFor20Minutes() {
        var schedule = ProviderTokenSchedule()
        schedule.minted(at: 0)
        schedule.minted(at: 55 * 60)  // the refresh, refused by APNs: another process minted at 54 min
        #expect(schedule.refused(generation: 1, now: 55 * 60) == .alreadyReplaced)
        #expect(schedule.refused(generation: 2, now: 55 * 60) == .reverted)
        #expect(schedule.generation == 3 && schedule.issuedAt == 0)
        // The old token is used up to its 59th minute, then a new one is minted anyway.
        #expect(!schedule.needsToken(now: 58 * 60))
        #expect(schedule.needsToken(now: 59 * 60))
        // With no earlier token to go back to, the refusal stands, and minting waits 20 minutes.
        var fresh = ProviderTokenSchedule()
        fresh.minted(at: 0)
        #expect(fresh.refused(generation: 1, now: 10) == .stands)
        fresh.minted(at: 0)
        #expect(!fresh.needsToken(now: 50 * 60 - 1))
    }

    /// Issue #27, case 1, in one process: ten runs of one app start together (each asking the
    /// process's owners for the key's tokens, as `SendRun` does) and ask for a token at once.
    @Test func tenRunsStartingTogetherShareOneToken() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(1_800_000_000)
        let key = P256.Signing.PrivateKey()
        let owners = ProviderTokenOwners()
        let bearers = await withTaskGroup(of: String.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    owners.tokens(
                        teamID: "TEAM123456",
                        keyID: "KEY1234567",
                        key: key,
                        clock: clock,
                        cacheDirectory: directory
                    )
                    .current().bearer
                }
            }
            return await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(bearers.count == 1)
        let owner = owners.tokens(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            key: key,
            clock: clock,
            cacheDirectory: directory
        )
        #expect(owner.mintedCount == 1)
        // Another key with the same ids has an owner of its own.
        let other = owners.tokens(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            key: P256.Signing.PrivateKey(),
            clock: clock,
            cacheDirectory: directory
        )
        #expect(other !== owner)
    }

    /// Issue #27, case 1, across processes (two owners on one cache folder stand for two processes
    /// beside one journal): from a cold start and from a 55-minute-old cached token, one mint, and
    /// the simulator's verifier (APNs' rules) refuses nothing.
    @Test(arguments: [nil, 55.0 * 60])
    func ownersBesideOneJournalMintOnce(cachedAge: Double?) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(1_800_000_000 - (cachedAge ?? 0))
        let key = P256.Signing.PrivateKey()
        let verifier = ProviderTokenVerifier(
            publicKey: key.publicKey,
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            clock: clock
        )
        var cached: String?
        if let cachedAge {
            let first = ProviderTokens(
                teamID: "TEAM123456",
                keyID: "KEY1234567",
                key: key,
                clock: clock,
                cacheDirectory: directory
            )
            cached = first.current().bearer
            #expect(verifier.check(cached) == nil)
            clock.advance(cachedAge)
        }
        let processes = (0..<10).map { _ in
            ProviderTokens(teamID: "TEAM123456", keyID: "KEY1234567", key: key, clock: clock, cacheDirectory: directory)
        }
        let bearers = Set(processes.map { $0.current().bearer })
        #expect(bearers.count == 1)
        #expect(bearers.first != cached)
        #expect(processes.map(\.mintedCount).reduce(0, +) == 1)
        for bearer in bearers { #expect(verifier.check(bearer) == nil) }
        #expect(verifier.statistics.tooManyUpdates == 0)
    }

    /// A token APNs refused as too frequent never stays in use or in the cache: the one before it
    /// comes back, for this process and for the next one.
    @Test func aRefusedTokenNeverReplacesTheGoodOne() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(1_800_000_000)
        let key = P256.Signing.PrivateKey()
        let make = {
            ProviderTokens(teamID: "TEAM123456", keyID: "KEY1234567", key: key, clock: clock, cacheDirectory: directory)
        }
        let good = make().current()
        clock.advance(55 * 60)
        let tokens = make()
        let refreshed = tokens.current()
        #expect(refreshed.bearer != good.bearer)
        #expect(tokens.refused(generation: refreshed.generation) == .reverted)
        #expect(tokens.current().bearer == good.bearer)
        #expect(make().current().bearer == good.bearer)
        let cacheFile = try #require(tokens.cacheFile)
        let cached = try String(contentsOfFile: cacheFile, encoding: .utf8)
        #expect(cached.hasPrefix(String(good.bearer.dropFirst(7)) + "\nhold-until "), "\(cached)")
    }

    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "pushcamp-tokens-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
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
