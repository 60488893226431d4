import GRDB
import PushcampModel
import Synchronization

/// What a pruned run keeps of its recipients' rows: every figure its report and listings show,
/// kept with its statistics (`RunStats.pruned`) when the rows are dropped.
public struct PrunedRun: Sendable, Equatable {
    /// A final failure's kind and how many recipients ended with it.
    public struct Failure: Sendable, Equatable {
        /// From the tokens' shape, as the report groups them.
        public var platform: Platform
        public var status: Int?
        public var reason: String
        public var count: Int

        public init(platform: Platform, status: Int?, reason: String, count: Int) {
            self.platform = platform
            self.status = status
            self.reason = reason
            self.count = count
        }
    }

    /// When it was pruned (seconds since 1970).
    public var at: Double
    public var counts: RecipientCounts
    public var failures: [Failure]
    /// Final answers per second, as `JournalStore.answersPerSecond` read them.
    public var perSecond: [AnswersInSecond]

    public init(at: Double, counts: RecipientCounts, failures: [Failure], perSecond: [AnswersInSecond]) {
        self.at = at
        self.counts = counts
        self.failures = failures
        self.perSecond = perSecond
    }

    /// Reads what `run` must keep from `store`: its counts, its failures by kind, its answers per
    /// second (one page of recipients in memory at a time).
    public static func read(
        _ run: RunID,
        from store: any JournalStore,
        at now: Double
    ) async throws -> PrunedRun {
        var failures: [String: Failure] = [:]
        try await store.forEachRecipient(of: run) { row in
            guard case .failed(let status, let reason, _) = row.state else { return }
            let kind = Platform(tokenShape: row.token)
            failures[
                "\(kind) \(status.map(String.init) ?? "-") \(reason)",
                default: Failure(
                    platform: kind,
                    status: status,
                    reason: reason,
                    count: 0
                )
            ].count += 1
        }
        return PrunedRun(
            at: now,
            counts: try await store.counts(of: run),
            failures: failures.keys.sorted().compactMap { failures[$0] },
            perSecond: try await store.answersPerSecond(of: run)
        )
    }
}

/// Retention: a journal keeps every run, and drops the rows of each recipient of runs that ended
/// long ago once their figures are kept with their statistics. Dead tokens, possible duplicates,
/// schedule slots, a test's assignments and engagement stay.
public protocol RetentionStore: Sendable {
    /// Runs that ended for good (finished, cancelled, superseded, expired: never resumed), last
    /// changed before `cutoff` (seconds since 1970) and not pruned yet, oldest first.
    func runsEnded(before cutoff: Double) async throws(JournalError) -> [RunRecord]
    /// In one transaction: `pruned` kept in the run's own statistics, and its recipients' rows
    /// dropped (recipients, dispatched and delivered ranges, the snapshot of a sliced run).
    /// Answers how many rows were dropped: none when the run was pruned already (two nodes pruning
    /// at once: the first keeps its figures, the second changes nothing).
    func dropRecipients(of run: RunID, keeping pruned: PrunedRun) async throws(JournalError) -> Int
}

extension RunStatus {
    /// The statuses a run never leaves: what retention may prune.
    public static let ended: [RunStatus] = [.finished, .cancelled, .superseded, .expired]
}

extension JournalStore {
    /// `counts(of:)`, or what a pruned run kept of them.
    public func keptCounts(of run: RunID, stats: RunStats?) async throws(JournalError) -> RecipientCounts {
        if let pruned = stats?.pruned { return pruned.counts }
        return try await counts(of: run)
    }
}

extension MemoryJournal: RetentionStore {
    public func runsEnded(before cutoff: Double) async throws(JournalError) -> [RunRecord] {
        state.withLock { state in
            state.runs.filter {
                RunStatus.ended.contains($0.status) && $0.updatedAt < cutoff && state.stats[$0.id]?.pruned == nil
            }
            .sorted { ($0.updatedAt, $0.id.rawValue) < ($1.updatedAt, $1.id.rawValue) }
        }
    }

    public func dropRecipients(of run: RunID, keeping pruned: PrunedRun) async throws(JournalError) -> Int {
        state.withLock { state in
            var stats = state.stats[run] ?? RunStats()
            guard stats.pruned == nil else { return 0 }  // another pass pruned it first
            stats.pruned = pruned
            state.stats[run] = stats
            let dropped =
                (state.recipients[run]?.count ?? 0) + (state.dispatched[run]?.count ?? 0)
                + (state.delivered[run]?.count ?? 0) + (state.snapshots[run]?.count ?? 0)
            (state.recipients[run], state.dispatched[run], state.delivered[run], state.snapshots[run]) = (
                nil, nil, nil, nil
            )
            return dropped
        }
    }
}

extension SQLiteJournal: RetentionStore {
    public func runsEnded(before cutoff: Double) async throws(JournalError) -> [RunRecord] {
        let ended = RunStatus.ended.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        return try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM run WHERE status IN (\(ended)) AND updated_at < ? AND pruned_at IS NULL
                    ORDER BY updated_at, id
                    """,
                arguments: [cutoff]
            ).map(Self.run(from:))
        }
    }

    public func dropRecipients(of run: RunID, keeping pruned: PrunedRun) async throws(JournalError) -> Int {
        try await write { db in
            // The run's own statistics (a sliced run's slices keep theirs), with the figures kept.
            let text = try String.fetchOne(
                db,
                sql: "SELECT stats FROM run_stats WHERE run = ?",
                arguments: [run.rawValue]
            )
            var stats = try text.map { text throws(JournalError) in try RunStats.decode(text) } ?? RunStats()
            guard stats.pruned == nil else { return 0 }  // another pass pruned it first
            stats.pruned = pruned
            try db.execute(
                sql: "INSERT OR REPLACE INTO run_stats (run, stats, updated_at) VALUES (?, ?, ?)",
                arguments: [run.rawValue, stats.encoded(), pruned.at]
            )
            try db.execute(sql: "UPDATE run SET pruned_at = ? WHERE id = ?", arguments: [pruned.at, run.rawValue])
            var dropped = 0
            for table in ["recipient", "dispatch", "delivery", "snapshot"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE run = ?", arguments: [run.rawValue])
                dropped += db.changesCount
            }
            return dropped
        }
    }
}

/// One pass of retention over a journal: `pushcamp journal prune`, and `serve` with
/// `journal.retention`.
public enum Retention {
    /// A run pruned (or, in a dry run, that would be), and how many rows it dropped.
    public struct Pruned: Sendable, Equatable {
        public var run: RunRecord
        public var rows: Int
    }

    /// Prunes every run that ended for good before `cutoff` and still has its recipients' rows,
    /// oldest first: its figures kept with its statistics, then its rows dropped, one run per
    /// transaction (a pass stopped midway leaves whole runs, pruned or not). With `dryRun`, only
    /// says which (rows 0). Runs pruned before are not read again: the store marks them.
    public static func prune(
        _ journal: any Journal,
        endedBefore cutoff: Double,
        now: Double,
        dryRun: Bool = false
    ) async throws -> [Pruned] {
        var pruned: [Pruned] = []
        for run in try await journal.runsEnded(before: cutoff) {
            try Task.checkCancellation()
            guard !dryRun else {
                pruned.append(Pruned(run: run, rows: 0))
                continue
            }
            let kept = try await PrunedRun.read(run.id, from: journal, at: now)
            pruned.append(Pruned(run: run, rows: try await journal.dropRecipients(of: run.id, keeping: kept)))
        }
        return pruned
    }
}
