import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("The shared provider token, on every journal")
struct ProviderTokenStoreTests {
    @Test(arguments: Store.allCases)
    func aTokenIsReplacedOnlyByWhoeverReadTheOneStored(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        #expect(try await journal.providerToken(for: "TEAM/KEY/f1") == nil)
        #expect(try await journal.replaceProviderToken(for: "TEAM/KEY/f1", replacing: nil, with: "jwt-1"))
        // A second node that also saw none loses: the first token stays.
        #expect(try await !journal.replaceProviderToken(for: "TEAM/KEY/f1", replacing: nil, with: "jwt-x"))
        #expect(try await journal.providerToken(for: "TEAM/KEY/f1") == "jwt-1")
        // Of two nodes refreshing from the same token, one wins.
        #expect(try await journal.replaceProviderToken(for: "TEAM/KEY/f1", replacing: "jwt-1", with: "jwt-2"))
        #expect(try await !journal.replaceProviderToken(for: "TEAM/KEY/f1", replacing: "jwt-1", with: "jwt-y"))
        #expect(try await journal.providerToken(for: "TEAM/KEY/f1") == "jwt-2")
        // Keys are apart.
        #expect(try await journal.providerToken(for: "TEAM/KEY/f2") == nil)
    }

    /// APNs's refusal of a token as too frequent is shared: every node sees how long no token may
    /// be minted, on the store's clock; a shorter hold never shortens a longer one.
    @Test(arguments: Store.allCases)
    func aHoldIsSharedOnTheStoresClockAndOnlyLengthens(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        #expect(try await journal.providerTokenHold(for: "TEAM/KEY/f1") == nil)
        try await journal.holdProviderToken(for: "TEAM/KEY/f1", seconds: 1_200)
        let left = try #require(try await journal.providerTokenHold(for: "TEAM/KEY/f1"))
        #expect(left > 1_190 && left <= 1_200, "\(left)")
        try await journal.holdProviderToken(for: "TEAM/KEY/f1", seconds: 60)
        #expect((try await journal.providerTokenHold(for: "TEAM/KEY/f1") ?? 0) > 1_190)
        // Keys are apart, and a hold that is over is none.
        #expect(try await journal.providerTokenHold(for: "TEAM/KEY/f2") == nil)
        try await journal.holdProviderToken(for: "TEAM/KEY/f2", seconds: -5)
        #expect(try await journal.providerTokenHold(for: "TEAM/KEY/f2") == nil)
    }
}
