import PushcampJournal
import PushcampModel
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

    /// The readout's chart: one event's recipients per arm and stretch of time after the start.
    @Test(arguments: Store.allCases)
    func engagementIsCountedPerArmAndStretchOfTime(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "spring", revision: "r1", now: 1_700_000_000).id
        let other = try await journal.createRun(campaign: "autumn", revision: "r1", now: 1_700_000_000).id
        let start = 1_700_000_000.0
        func at(_ seq: Int, _ name: String, _ variant: String?, _ seconds: Double) -> EngagementEvent {
            EngagementEvent(seq: seq, event: name, variant: variant, locale: nil, at: start + seconds)
        }
        let events = [
            // Before the start (counted in the first stretch), in it, at its end, in the third.
            at(0, "converted", "control", -30), at(1, "converted", "control", 0), at(2, "converted", "control", 3599.5),
            at(3, "converted", "control", 3600), at(4, "converted", "control", 7300), at(5, "converted", nil, 10),
            at(6, "opened", "control", 10),
        ]
        #expect(try await journal.recordEngagement(events, run: run, now: start) == 7)
        #expect(try await journal.recordEngagement([at(0, "converted", "control", 10)], run: other, now: start) == 1)
        let buckets = Set(try await journal.engagementOverTime(of: run, event: "converted", from: start, width: 3600))
        #expect(
            buckets == [
                EngagementBucket(variant: "control", bucket: 0, count: 3),
                EngagementBucket(variant: "control", bucket: 1, count: 1),
                EngagementBucket(variant: "control", bucket: 2, count: 1),
                EngagementBucket(variant: nil, bucket: 0, count: 1),
            ]
        )
        #expect(try await journal.engagementOverTime(of: run, event: "installed", from: start, width: 60).isEmpty)
    }

    @Test(arguments: Store.allCases)
    func aRunsAssignmentIsKeptFoundByApnsIDOrPersonAndTallied(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "spring", revision: "r1", now: 1_700_000_000).id
        let other = try await journal.createRun(campaign: "autumn", revision: "r1", now: 1_700_000_000).id
        #expect(try await journal.assignmentHeader(of: run) == nil)
        var header = AssignmentHeader(
            variants: ["control", "urgency"],
            locales: ["en", "fr"],
            holdout: true,
            userKey: "user_id",
            readout: ReadoutSpec(primary: "converted", window: 259_200)
        )
        try await journal.keepAssignmentHeader(header, of: run)
        #expect(try await journal.assignmentHeader(of: run)?.isComplete == false)
        // Hashes of any sign, the full 128 bits of an apns-id; person 7 has three devices (all in
        // `urgency`, the first in French), person -9 one, seq 4 no person at all, seq 5 held out.
        func id(_ seq: Int) -> AssignmentID { AssignmentID(high: Int64.min + Int64(seq), low: -1 - Int64(seq)) }
        let kept = [
            KeptAssignment(seq: 0, id: id(0), person: 7, variant: 1, locale: 1),
            KeptAssignment(seq: 1, id: id(1), person: -9, variant: 0, locale: 0),
            KeptAssignment(seq: 2, id: id(2), person: 7, variant: 1, locale: 0),
            KeptAssignment(seq: 3, id: id(3), person: 7, variant: 1, locale: 0),
            KeptAssignment(seq: 4, id: id(4), person: nil, variant: 0, locale: nil),
            KeptAssignment(seq: 5, id: id(5), person: 11, variant: nil, locale: 0),
        ]
        try await journal.keepAssignments(Array(kept.prefix(4)), of: run)
        // A keeper stopped half-way and started again keeps each recipient once.
        try await journal.keepAssignments(kept, of: run)
        try await journal.keepAssignments([], of: run)
        try await journal.keepAssignments(
            [KeptAssignment(seq: 0, id: id(0), person: 1, variant: 0, locale: 0)],
            of: other
        )

        // Not found before they are sealed; sealed, found, and sealing again changes nothing.
        #expect(try await journal.assignments(of: run, ids: [id(4)]).isEmpty)
        #expect(try await journal.sealAssignments(of: other).count == 1)
        let sealed = Set(try await journal.sealAssignments(of: run))
        #expect(Set(try await journal.sealAssignments(of: run)) == sealed)
        let found = try await journal.assignments(of: run, ids: [id(4), id(1), id(1), id(9)])
        #expect(Set(found) == [kept[4], kept[1]])
        #expect(Set(try await journal.assignments(of: run, persons: [7, 42])) == [kept[0], kept[2], kept[3]])
        #expect(Set(try await journal.assignments(of: run, persons: [11])) == [kept[5]])
        #expect(try await journal.assignments(of: run, ids: []).isEmpty)
        #expect(try await journal.assignments(of: other, persons: [7]).isEmpty)

        // A person counts once, in the group of their first device (seq 0: urgency, French).
        let tally = sealed
        #expect(
            tally == [
                AssignmentTally(variant: 1, locale: 1, recipients: 1, persons: 1),
                AssignmentTally(variant: 1, locale: 0, recipients: 2, persons: 0),
                AssignmentTally(variant: 0, locale: 0, recipients: 1, persons: 1),
                AssignmentTally(variant: 0, locale: nil, recipients: 1, persons: 1),
                AssignmentTally(variant: nil, locale: 0, recipients: 1, persons: 1),
            ]
        )
        header.tally = Array(tally)
        try await journal.keepAssignmentHeader(header, of: run)
        let read = try #require(try await journal.assignmentHeader(of: run))
        #expect(read.isComplete && Set(read.tally ?? []) == tally)
        #expect(read.variants == header.variants && read.locales == header.locales && read.userKey == "user_id")
        #expect(read.readout == header.readout && read.holdout)
        #expect(read.variant(1) == "urgency" && read.variant(nil) == nil && read.locale(1) == "fr")
    }
}
