import Foundation
import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("Schedule slots, on every journal")
struct ScheduleSlotTests {
    @Test(arguments: Store.allCases)
    func aSlotIsClaimedOnceWithItsRunAndConcurrentClaimsLeaveOneRun(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try #require(
            try await journal.claimSlot(campaign: "news", slot: 1000, revision: "r1", file: nil, now: 5)
        )
        #expect(run.slot == 1000)
        #expect(try await journal.run(run.id)?.slot == 1000)
        #expect(try await journal.claimSlot(campaign: "news", slot: 1000, revision: "r1", file: nil, now: 6) == nil)
        // Eight processes' worth of claims of the next slot, each on its own connection.
        let handles = try (0..<8).map { _ in try store.another(of: journal, in: project) }
        let claimed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for own in handles {
                group.addTask {
                    try await own.claimSlot(campaign: "news", slot: 2000, revision: "r1", file: nil, now: 7) != nil
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(claimed == 1)
        #expect(try await journal.runs(limit: 10).count == 2)
        let record = try #require(try await journal.slot(campaign: "news", at: 2000))
        #expect(record.outcome == .fired)
        #expect(record.run != nil)
        #expect(try await journal.latestFiredSlot(campaign: "news") == 2000)
        #expect(try await journal.latestFiredSlot(campaign: "other") == nil)
    }

    /// Issue 43: a fired slot whose run finally failed is recorded as failed with its reason; it
    /// still counts as fired (the newest fired slot), and a skipped or unknown slot cannot fail.
    @Test(arguments: Store.allCases)
    func aFiredSlotIsMarkedFailedWithItsReason(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try #require(
            try await journal.claimSlot(campaign: "end", slot: 1000, revision: "r1", file: nil, now: 5)
        )
        #expect(
            try await journal.recordSlotFailed(
                campaign: "end",
                slot: 1000,
                reason: "TooManyRequests",
                detail: "429 TooManyRequests (5 attempts)"
            )
        )
        let record = try #require(try await journal.slot(campaign: "end", at: 1000))
        #expect(record.outcome == .failed && record.run == run.id)
        #expect(record.reason == "TooManyRequests" && record.detail == "429 TooManyRequests (5 attempts)")
        #expect(try await journal.latestFiredSlot(campaign: "end") == 1000)
        // Once only, and never a slot that did not fire.
        #expect(!(try await journal.recordSlotFailed(campaign: "end", slot: 1000, reason: "x", detail: nil)))
        #expect(!(try await journal.recordSlotFailed(campaign: "end", slot: 2000, reason: "x", detail: nil)))
        try await journal.recordSkipped(
            campaign: "end",
            first: 3000,
            through: 3000,
            count: 1,
            reason: "overlap",
            detail: nil,
            now: 6
        )
        #expect(!(try await journal.recordSlotFailed(campaign: "end", slot: 3000, reason: "x", detail: nil)))
        #expect(try await journal.slot(campaign: "end", at: 3000)?.outcome == .skipped)
    }

    @Test(arguments: Store.allCases)
    func skippedSlotsAreRecordedOnceAndTheLatestCountsTheirRange(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        #expect(
            try await journal.recordSkipped(
                campaign: "news",
                first: 100,
                through: 500,
                count: 5,
                reason: "missed",
                detail: nil,
                now: 1
            )
        )
        #expect(
            !(try await journal.recordSkipped(
                campaign: "news",
                first: 100,
                through: 100,
                count: 1,
                reason: "overlap",
                detail: nil,
                now: 2
            ))
        )
        // A skipped slot cannot be fired afterwards either.
        #expect(try await journal.claimSlot(campaign: "news", slot: 100, revision: "r", file: nil, now: 3) == nil)
        _ = try await journal.claimSlot(campaign: "news", slot: 300, revision: "r", file: nil, now: 3)
        let latest = try #require(try await journal.latestSlot(campaign: "news"))
        #expect(latest.slot == 100 && latest.last == 500 && latest.count == 5 && latest.reason == "missed")
        #expect(latest.outcome == .skipped && latest.run == nil && latest.recordedAt == 1)
        #expect(try await journal.slots(campaign: "news", limit: 10).map(\.slot) == [300, 100])
        #expect(try await journal.slots(campaign: "news", limit: 1).map(\.slot) == [300])
        #expect(try await journal.latestSlot(campaign: "other") == nil)
        _ = try await journal.recordSkipped(
            campaign: "other",
            first: 200,
            through: 200,
            count: 1,
            reason: "invalid",
            detail: "line 3: schedule.cron: not a cron expression",
            now: 4
        )
        let other = try #require(try await journal.slot(campaign: "other", at: 200))
        #expect(other.through == nil && other.count == 1 && other.detail?.hasPrefix("line 3") == true)
        #expect(try await journal.slots(campaign: nil, limit: 10).map(\.slot) == [300, 200, 100])
    }

    @Test(arguments: Store.allCases)
    func theWatchStartIsTheFirstTimeACampaignWasSeen(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        #expect(try await journal.watchStart(campaign: "news", now: 10) == 10)
        #expect(try await journal.watchStart(campaign: "news", now: 20) == 10)
        #expect(try await journal.unfinishedSlotRuns().isEmpty)
        let run = try #require(
            try await journal.claimSlot(campaign: "news", slot: 60, revision: "r", file: nil, now: 61)
        )
        _ = try await journal.createRun(campaign: "news", revision: "r", now: 62)  // a `send`, not a slot
        #expect(try await journal.unfinishedSlotRuns().map(\.id) == [run.id])
        try await journal.setStatus(.finished, of: run.id, now: 62)
        #expect(try await journal.unfinishedSlotRuns().isEmpty)
    }
}
