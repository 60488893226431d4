import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import ServiceLifecycle

/// `journal.retention`: the node prunes the journal on its own, at start and then every hour: the
/// per-recipient rows of runs that ended for good longer ago than the retention are dropped, their
/// reports' figures kept (`Retention.prune`). Every node may run it; two at once prune each run
/// once. A graceful shutdown stops it between two runs (each run is pruned in one transaction).
public final class RetentionService: Service, Sendable {
    let journal: any Journal
    /// Seconds a run's rows are kept after it ended.
    let retention: Double
    let interval: Double
    let clock: any WallClock
    let logger: Logger

    public init(
        journal: any Journal,
        retention: TimeSpan,
        interval: Double = 3_600,
        clock: any WallClock = SystemWallClock(),
        logger: Logger
    ) {
        self.journal = journal
        self.retention = Double(retention.seconds)
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    await self.pass()
                    try await self.clock.sleep(for: self.interval)
                }
            }
        } catch is CancellationError {
            return  // shut down between two passes, or two runs
        }
    }

    /// One pass; a journal that does not answer is tried again at the next (the scheduler's
    /// readiness says so meanwhile).
    func pass() async {
        let now = clock.now()
        do {
            let pruned = try await Retention.prune(journal, endedBefore: now - retention, now: now)
            guard !pruned.isEmpty else { return }
            let rows = pruned.reduce(0) { $0 + $1.rows }
            let ids = pruned.map { "\($0.run.id)" }.joined(separator: ", ")
            logger.notice(
                "pruned \(pruned.count) run\(pruned.count == 1 ? "" : "s") ended before \(Timestamps.text(now - retention)) (\(ids)): \(rows) rows dropped",
                metadata: ["event": "journal-pruned", "runs": "\(pruned.count)", "rows": "\(rows)"]
            )
        } catch is CancellationError {
            return
        } catch {
            logger.error(
                "the journal could not be pruned: \(error); tried again in an hour",
                metadata: ["event": "journal-prune-failed"]
            )
        }
    }
}
