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

    /// A store of one key's token and hold, as the journal keeps them (hold on `clock`).
    final class SharedStore: Sendable {
        let token = Mutex<String?>(nil)
        let holdUntil = Mutex<Double?>(nil)
        let clock: ManualClock
        init(clock: ManualClock) { self.clock = clock }

        func synchronize(_ tokens: ProviderTokens) async throws {
            try await tokens.synchronizeHold(
                read: { self.holdUntil.withLock { $0 }.map { $0 - self.clock.now() }.flatMap { $0 > 0 ? $0 : nil } },
                hold: { seconds in self.holdUntil.withLock { $0 = max($0 ?? 0, self.clock.now() + seconds) } },
                replace: { replacing, new in self.replace(replacing, new) }
            )
            try await tokens.synchronize(read: { self.token.withLock { $0 } }, replace: { self.replace($0, $1) })
        }

        func replace(_ replacing: String?, _ new: String) -> Bool {
            token.withLock { stored in
                guard stored == replacing else { return false }
                stored = new
                return true
            }
        }
    }

    /// Issue 48: a refusal as too frequent is the cluster's, as the token is. The node refused
    /// stores the hold and puts back the token it returned to; a node that starts meanwhile keeps
    /// the hold, adopts the good token and mints nothing. With nothing to return to, the refused
    /// token gives way to an empty one no node adopts, and a node without a token is held back.
    @Test func aHoldIsSharedThroughTheStoreAndNoNodeMintsIntoIt() async throws {
        let clock = ManualClock(1_800_000_000)
        let key = P256.Signing.PrivateKey()
        let store = SharedStore(clock: clock)
        let make = { ProviderTokens(teamID: "TEAM123456", keyID: "KEY1234567", key: key, clock: clock) }
        let first = make()
        try await store.synchronize(first)
        let good = try #require(store.token.withLock { $0 })
        #expect(first.mintedCount == 1 && first.current().bearer == "bearer " + good)
        // 49 minutes on the node refreshes; APNs refuses the new token (a process elsewhere minted).
        clock.advance(49 * 60)
        try await store.synchronize(first)
        let refused = first.current()
        #expect(first.mintedCount == 2 && refused.bearer != "bearer " + good)
        #expect(first.refused(generation: refused.generation) == .reverted)
        #expect(first.hasNews && first.heldBack == nil)
        try await store.synchronize(first)
        #expect(!first.hasNews)
        #expect(store.token.withLock { $0 } == good)
        #expect(store.holdUntil.withLock { $0 } == clock.now() + 20 * 60)

        // Another node starts five minutes later: it keeps the hold and the good token.
        clock.advance(5 * 60)
        let second = make()
        try await store.synchronize(second)
        #expect(second.mintedCount == 0 && second.current().bearer == "bearer " + good && second.heldBack == nil)
        // The good token grows too old to send with during the hold: a node with nothing else is
        // held back, and says until when.
        clock.advance(6 * 60)
        let late = make()
        try await store.synchronize(late)
        let held = try #require(late.heldBack)
        #expect(held.contains("TooManyProviderTokenUpdates") && held.contains("9 min from now"), "\(held)")
        #expect(late.mintedCount == 0)

        // A node refused with nothing to return to leaves an empty token in the store.
        let fresh = SharedStore(clock: clock)
        let alone = make()
        try await fresh.synchronize(alone)
        #expect(alone.refused(generation: alone.current().generation) == .stands)
        try await fresh.synchronize(alone)
        #expect(fresh.token.withLock { $0 } == "" && fresh.holdUntil.withLock { $0 } != nil)
        let next = make()
        try await fresh.synchronize(next)
        #expect(next.mintedCount == 0 && next.heldBack != nil)
        // Once the hold is over, a node mints and stores in place of the empty token.
        clock.advance(20 * 60 + 1)
        try await fresh.synchronize(next)
        #expect(next.mintedCount == 1 && next.heldBack == nil && fresh.token.withLock { $0 } != "")
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
