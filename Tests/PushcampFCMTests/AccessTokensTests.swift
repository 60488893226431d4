import PushcampAPNs
import PushcampFCM
import PushcampFCMCore
import PushcampJournal
import PushcampTestSupport
import Synchronization
import Testing

/// One service account's access tokens: fetched when due, never used in their last minute, one fresh
/// token after a 401, and one token for every node on a journal.
@Suite("Access tokens")
struct AccessTokensTests {
    /// A token endpoint in memory: counts what it issued, each token named by its number.
    final class Endpoint: Sendable {
        let issued = Mutex(0)
        let lifetime: Double

        init(lifetime: Double = 3600) { self.lifetime = lifetime }

        func issue(_ account: ServiceAccount, _ now: Double) async throws(FCMClientError) -> TokenEndpoint.Issued {
            let number = issued.withLock { count in
                count += 1
                return count
            }
            return TokenEndpoint.Issued(token: "ya29.\(number)", lifetime: lifetime)
        }

        var count: Int { issued.withLock { $0 } }
    }

    static func tokens(_ endpoint: Endpoint, clock: ManualClock) -> AccessTokens {
        AccessTokens(account: ServiceAccountTests.account, clock: clock) { account, now throws(FCMClientError) in
            try await endpoint.issue(account, now)
        }
    }

    /// A token that expires mid-run is replaced ahead of time; between, no request could take it.
    @Test func aTokenExpiringMidRunIsReplacedAheadAndNeverUsedExpired() async throws {
        let clock = ManualClock(1_800_000_000)
        let endpoint = Endpoint(lifetime: 600)
        let tokens = Self.tokens(endpoint, clock: clock)
        #expect(tokens.current() == nil)
        try await tokens.refresh()
        #expect(tokens.current() == AccessTokens.Current(bearer: "Bearer ya29.1", generation: 1))
        try await tokens.refresh()
        #expect(endpoint.count == 1)
        #expect(tokens.renewAt == 1_800_000_300)
        clock.advance(to: 1_800_000_539)
        #expect(tokens.current()?.bearer == "Bearer ya29.1")
        clock.advance(to: 1_800_000_540)
        #expect(tokens.current() == nil, "a token in its last minute is never sent")
        try await tokens.refresh()
        #expect(tokens.current() == AccessTokens.Current(bearer: "Bearer ya29.2", generation: 2))
        #expect(tokens.fetchedCount == 2)
    }

    @Test func a401FetchesOnceThenStops() async throws {
        let clock = ManualClock(1_800_000_000)
        let endpoint = Endpoint()
        let tokens = Self.tokens(endpoint, clock: clock)
        try await tokens.refresh()
        #expect(tokens.refused(generation: 1) == .fetch)
        #expect(tokens.current() == nil)
        try await tokens.refresh()
        #expect(tokens.current()?.generation == 2)
        #expect(tokens.refused(generation: 1) == .alreadyReplaced)
        #expect(tokens.refused(generation: 2) == .stop)
        #expect(endpoint.count == 2)
    }

    /// Three nodes on one journal, synchronizing at once, use one token: one fetch for the cluster.
    @Test func nodesOnOneJournalShareOneToken() async throws {
        let clock = ManualClock(1_800_000_000)
        let endpoint = Endpoint()
        let journal = MemoryJournal()
        let nodes = (0..<3).map { _ in Self.tokens(endpoint, clock: clock) }
        let name = nodes[0].sharedName
        #expect(name.hasPrefix("fcm/pushcamp-sim@pushcamp-sim.iam.gserviceaccount.com/"))
        func synchronize(_ node: AccessTokens) async throws {
            try await node.synchronize(
                read: { try await journal.providerToken(for: name) },
                replace: { try await journal.replaceProviderToken(for: name, replacing: $0, with: $1) }
            )
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for node in nodes { group.addTask { try await synchronize(node) } }
            try await group.waitForAll()
        }
        // Each node fetched at most once, but only the winner's token is in use.
        let bearers = Set(nodes.compactMap { $0.current()?.bearer })
        #expect(bearers.count == 1)
        let stored = try await journal.providerToken(for: name)
        #expect(
            stored.flatMap(SharedAccessToken.init(encoded:))?.token == bearers.first.map { String($0.dropFirst(7)) }
        )
        // Later synchronizations fetch nothing while the token is good.
        let before = endpoint.count
        clock.advance(3000)
        for node in nodes { try await synchronize(node) }
        #expect(endpoint.count == before)
        // Within two minutes of the refresh time, one node fetches and the others adopt its token.
        clock.advance(200)
        for node in nodes { try await synchronize(node) }
        #expect(endpoint.count == before + 1)
        #expect(Set(nodes.compactMap { $0.current()?.bearer }).count == 1)
    }
}
