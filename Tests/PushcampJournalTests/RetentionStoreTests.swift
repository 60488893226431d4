import PushcampJournal
import PushcampModel
import PushcampTestSupport
import Testing

/// Pruning on every journal: only runs ended for good before the cutoff are offered; a pruned
/// run drops its recipients' rows and keeps, with its statistics, every figure its report shows.
@Suite("Retention, on every journal")
struct RetentionStoreTests {
    @Test(arguments: Store.allCases)
    func aPrunedRunKeepsItsFiguresAndDropsItsRows(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let token = TemporaryProject.token
        let old = try await journal.createRun(campaign: "c", revision: "r", now: 100)
        try await journal.record(JournalBatch(dispatched: [0...9]), run: old.id, now: 101)
        var stats = RunStats()
        stats.seconds = 4
        try await journal.record(
            JournalBatch(
                updates: [
                    JournalStoreTests.update(4, .failed(status: 410, reason: "Unregistered", apnsTimestamp: 7)),
                    JournalStoreTests.update(8, .failed(status: 400, reason: "BadDeviceToken", apnsTimestamp: nil)),
                    JournalStoreTests.update(9, .failed(status: 400, reason: "BadDeviceToken", apnsTimestamp: nil)),
                ],
                delivered: [
                    DeliveredRange(first: 0, tokens: (0...3).map(token)),
                    DeliveredRange(first: 5, tokens: (5...7).map(token)),
                ],
                stats: stats,
                close: RunClose(status: .finished, planned: 10)
            ),
            run: old.id,
            now: 102
        )
        // Not offered: a run that may resume, and one that ended after the cutoff.
        let interrupted = try await journal.createRun(campaign: "d", revision: "r", now: 100)
        try await journal.setStatus(.interrupted, of: interrupted.id, now: 103)
        let recent = try await journal.createRun(campaign: "e", revision: "r", now: 100)
        try await journal.setStatus(.finished, of: recent.id, now: 500)
        #expect(try await journal.runsEnded(before: 400).map(\.id) == [old.id])

        let before = (
            counts: try await journal.counts(of: old.id),
            perSecond: try await journal.answersPerSecond(of: old.id)
        )
        #expect(before.counts.delivered == 7 && before.counts.failed == 3)
        let pruned = try await PrunedRun.read(old.id, from: journal, at: 450)
        #expect(
            pruned.failures == [
                PrunedRun.Failure(platform: .ios, status: 400, reason: "BadDeviceToken", count: 2),
                PrunedRun.Failure(platform: .ios, status: 410, reason: "Unregistered", count: 1),
            ]
        )
        #expect(try await journal.dropRecipients(of: old.id, keeping: pruned) == 3 + 1 + 2)
        // A second pass (another node's, which read nothing left) changes nothing.
        let late = try await PrunedRun.read(old.id, from: journal, at: 460)
        #expect(late.counts == RecipientCounts())
        #expect(try await journal.dropRecipients(of: old.id, keeping: late) == 0)
        // Once pruned, a run is no longer offered: a later pass reads nothing of it.
        #expect(try await journal.runsEnded(before: 400).isEmpty)

        // The rows are gone; the figures stay, in the statistics, beside what they already held.
        #expect(try await journal.delivered(of: old.id).isEmpty)
        #expect(try await journal.dispatched(of: old.id).isEmpty)
        #expect(try await journal.recipients(of: old.id, after: -1, limit: 10).isEmpty)
        let kept = try #require(try await journal.stats(of: old.id))
        #expect(kept.pruned == pruned)
        #expect(kept.seconds == 4)
        #expect(kept.pruned?.counts == before.counts)
        #expect(kept.pruned?.perSecond == before.perSecond)
        #expect(try await journal.keptCounts(of: old.id, stats: kept) == before.counts)
        // The run itself is listed as before; dead tokens are not the run's to drop.
        #expect(try await journal.run(old.id)?.status == .finished)
        #expect(try await journal.run(old.id)?.planned == 10)
    }
}
