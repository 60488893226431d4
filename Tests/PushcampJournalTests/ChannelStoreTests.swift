import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("Broadcast channels, on every journal")
struct ChannelStoreTests {
    static func channel(_ name: String, id: String, at time: Double = 1_700_000_000) -> ChannelRecord {
        ChannelRecord(
            name: name,
            bundleID: "com.example.shop",
            environment: "sandbox",
            channelID: id,
            storagePolicy: 1,
            createdAt: time
        )
    }

    @Test(arguments: Store.allCases)
    func aNameHasOneLiveChannel(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        #expect(try await journal.channels().isEmpty)
        #expect(try await journal.recordChannel(Self.channel("final", id: "YQ==")))
        #expect(try await journal.recordChannel(Self.channel("semi", id: "Yg==", at: 1_700_000_001)))
        // A second apply that created its own channel for the same name loses: the first stays.
        #expect(try await !journal.recordChannel(Self.channel("final", id: "Yw==")))
        #expect(
            try await journal.channels() == [
                Self.channel("final", id: "YQ=="), Self.channel("semi", id: "Yg==", at: 1_700_000_001),
            ]
        )
        // Retired by an id that is no longer the live one (another apply replaced it): nothing.
        #expect(try await !journal.retireChannel(named: "final", channelID: "Yw==", now: 1_700_000_050))
        #expect(try await journal.channels().map(\.channelID) == ["YQ==", "Yg=="])
        // Deleted, the name is free again; retiring twice finds nothing the second time.
        #expect(try await journal.retireChannel(named: "final", channelID: "YQ==", now: 1_700_000_100))
        #expect(try await !journal.retireChannel(named: "final", channelID: nil, now: 1_700_000_101))
        #expect(try await journal.channels().map(\.name) == ["semi"])
        #expect(try await journal.recordChannel(Self.channel("final", id: "ZA==", at: 1_700_000_200)))
        #expect(try await journal.channels().map(\.channelID) == ["Yg==", "ZA=="])
        #expect(try await !journal.retireChannel(named: "never", channelID: nil, now: 1_700_000_300))
        #expect(try await journal.retireChannel(named: "semi", channelID: nil, now: 1_700_000_400))
    }
}
