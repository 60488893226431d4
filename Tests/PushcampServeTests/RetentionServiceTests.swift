import Logging
import PushcampJournal
import PushcampModel
import PushcampServe
import PushcampTestSupport
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// `journal.retention` on a node: at start and every hour after, runs that ended longer ago than
/// the retention lose their recipients' rows and keep their figures; younger ones stay whole until
/// they are old enough. A memory journal and a manual clock: days pass in no time.
@Suite("Retention on a serve node, in memory")
struct RetentionServiceTests {
    static let t0 = 1_800_000_000.0
    static let day = 86_400.0

    /// A finished run of `campaign` that ended at `end`, two recipients delivered.
    static func finishedRun(_ campaign: String, endedAt end: Double, in journal: MemoryJournal) async throws -> RunID {
        let run = try await journal.createRun(campaign: campaign, revision: "r", now: end - 10)
        try await journal.record(
            JournalBatch(
                dispatched: [0...1],
                delivered: [DeliveredRange(first: 0, tokens: [TemporaryProject.token(0), TemporaryProject.token(1)])],
                close: RunClose(status: .finished, planned: 2)
            ),
            run: run.id,
            now: end
        )
        return run.id
    }

    @Test func aNodePrunesWhatIsOlderThanItsRetentionAtStartAndEveryHour() async throws {
        let clock = ManualClock(Self.t0)
        let journal = MemoryJournal(clock: clock)
        let old = try await Self.finishedRun("old", endedAt: Self.t0 - 10 * Self.day, in: journal)
        let young = try await Self.finishedRun("young", endedAt: Self.t0 - 6.5 * Self.day, in: journal)
        let service = RetentionService(
            journal: journal,
            retention: TimeSpan(seconds: 7 * 86_400),
            clock: clock,
            logger: Logger(label: "test")
        )
        func pruned(_ run: RunID) async throws -> Bool { try await journal.stats(of: run)?.pruned != nil }

        try await testGracefulShutdown { shutdown in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                // The first pass, at start: the old run only.
                while try await !pruned(old) { try await Task.sleep(for: .milliseconds(1)) }
                #expect(try await !pruned(young))
                #expect(try await journal.delivered(of: old).isEmpty)
                #expect(try await journal.keptCounts(of: old, stats: journal.stats(of: old)).delivered == 2)
                // Half a day later the young run is old enough; the hourly passes find it.
                while try await !pruned(young) {
                    try await Task.sleep(for: .milliseconds(1))
                    if let next = clock.nextDeadline { clock.advance(to: next) }
                }
                // Not at the pass 12 hours in (it ended exactly 7 days before), at the next.
                #expect((13 * 3600...14 * 3600).contains(clock.now() - Self.t0), "\(clock.now() - Self.t0)")
                shutdown.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }
}
