import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("Engagement with runs, on every journal")
struct EngagementStoreTests {
    static func event(_ seq: Int, _ name: String, _ variant: String?, _ locale: String? = nil) -> EngagementEvent {
        EngagementEvent(seq: seq, event: name, variant: variant, locale: locale, at: 1_700_000_000 + Double(seq))
    }

    @Test(arguments: Store.allCases)
    func eachRecipientCountsOncePerEvent(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "spring", revision: "r1", now: 1_700_000_000).id
        let other = try await journal.createRun(campaign: "autumn", revision: "r1", now: 1_700_000_000).id
        #expect(try await journal.engagementCounts(of: run).isEmpty)
        let first = [
            Self.event(0, "opened", "control", "en"), Self.event(1, "opened", "control", "fr"),
            Self.event(1, "converted", "control", "fr"), Self.event(2, "converted", nil, "en"),
            // The same (recipient, event) twice in one batch counts once.
            Self.event(3, "opened", "urgency", "en"), Self.event(3, "opened", "urgency", "en"),
        ]
        #expect(try await journal.recordEngagement(first, run: run, now: 1_700_000_100) == 5)
        // Imported again, with one new event: only the new one is recorded.
        let again = first + [Self.event(4, "converted", nil, nil)]
        #expect(try await journal.recordEngagement(again, run: run, now: 1_700_000_200) == 1)
        #expect(try await journal.recordEngagement([Self.event(0, "opened", "control")], run: other, now: 1) == 1)
        #expect(try await journal.recordEngagement([], run: run, now: 1) == 0)

        let counts = Set(try await journal.engagementCounts(of: run))
        #expect(
            counts == [
                EngagementCount(event: "opened", variant: "control", locale: "en", count: 1),
                EngagementCount(event: "opened", variant: "control", locale: "fr", count: 1),
                EngagementCount(event: "converted", variant: "control", locale: "fr", count: 1),
                EngagementCount(event: "converted", variant: nil, locale: "en", count: 1),
                EngagementCount(event: "converted", variant: nil, locale: nil, count: 1),
                EngagementCount(event: "opened", variant: "urgency", locale: "en", count: 1),
            ]
        )
    }
}
