import Foundation
import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("Schedule slots in the SQLite journal")
struct ScheduleSlotTests {
    func journal() throws -> (SQLiteJournal, TemporaryProject) {
        let project = try TemporaryProject(projectFile: nil)
        return (try SQLiteJournal(path: project.path("journal.sqlite")), project)
    }

    @Test func aSlotIsClaimedOnceWithItsRunAndConcurrentClaimsLeaveOneRun() async throws {
        let (journal, project) = try journal()
        defer { project.remove() }
        let run = try #require(try journal.claimSlot(campaign: "news", slot: 1000, revision: "r1", file: nil, now: 5))
        #expect(run.slot == 1000)
        #expect(try journal.run(run.id)?.slot == 1000)
        #expect(try journal.claimSlot(campaign: "news", slot: 1000, revision: "r1", file: nil, now: 6) == nil)
        // Eight processes' worth of claims of the next slot, each on its own connection.
        let path = project.path("journal.sqlite")
        let claimed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let own = try SQLiteJournal(path: path, lockWait: 10)
                    return try own.claimSlot(campaign: "news", slot: 2000, revision: "r1", file: nil, now: 7) != nil
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(claimed == 1)
        #expect(try journal.runs(limit: 10).count == 2)
        let record = try #require(try journal.slot(campaign: "news", at: 2000))
        #expect(record.outcome == .fired)
        #expect(record.run != nil)
    }

    @Test func skippedSlotsAreRecordedOnceAndTheLatestCountsTheirRange() throws {
        let (journal, project) = try journal()
        defer { project.remove() }
        #expect(
            try journal.recordSkipped(
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
            !(try journal.recordSkipped(
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
        #expect(try journal.claimSlot(campaign: "news", slot: 100, revision: "r", file: nil, now: 3) == nil)
        _ = try journal.claimSlot(campaign: "news", slot: 300, revision: "r", file: nil, now: 3)
        let latest = try #require(try journal.latestSlot(campaign: "news"))
        #expect(latest.slot == 100 && latest.last == 500 && latest.count == 5 && latest.reason == "missed")
        #expect(try journal.slots(campaign: "news", limit: 10).map(\.slot) == [300, 100])
        #expect(try journal.latestSlot(campaign: "other") == nil)
    }

    @Test func theWatchStartIsTheFirstTimeACampaignWasSeen() throws {
        let (journal, project) = try journal()
        defer { project.remove() }
        #expect(try journal.watchStart(campaign: "news", now: 10) == 10)
        #expect(try journal.watchStart(campaign: "news", now: 20) == 10)
        #expect(try journal.unfinishedSlotRuns().isEmpty)
        let run = try #require(try journal.claimSlot(campaign: "news", slot: 60, revision: "r", file: nil, now: 61))
        #expect(try journal.unfinishedSlotRuns().map(\.id) == [run.id])
        try journal.setStatus(.finished, of: run.id, now: 62)
        #expect(try journal.unfinishedSlotRuns().isEmpty)
    }
}
