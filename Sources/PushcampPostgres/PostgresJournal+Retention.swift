import Logging
import PostgresNIO
import PushcampJournal

extension PostgresJournal: RetentionStore {
    public func runsEnded(before cutoff: Double) async throws(JournalError) -> [RunRecord] {
        try await runs(
            """
            SELECT \(unescaped: Self.runColumns) FROM run
            WHERE status = ANY(\(RunStatus.ended.map(\.rawValue))::text[]) AND updated_at < \(cutoff)
                AND pruned_at IS NULL
            ORDER BY updated_at, id
            """
        )
    }

    public func dropRecipients(of run: RunID, keeping pruned: PrunedRun) async throws(JournalError) -> Int {
        let logger = self.logger
        // A run of ten million has as many snapshot rows: more than the journal's usual deadline.
        return try await transaction(within: .seconds(600)) { connection in
            // The run's own statistics (a sliced run's slices keep theirs), with the figures kept.
            // The run's row locked first: a second node pruning it at once waits, then finds it done.
            _ = try await Self.rows(
                "SELECT 1 FROM run WHERE id = \(run.rawValue) FOR UPDATE",
                on: connection,
                logger: logger
            )
            let texts = try await Self.rows(
                "SELECT stats FROM run_stats WHERE run = \(run.rawValue)",
                on: connection,
                logger: logger
            )
            var stats =
                try texts.first.map { row in try RunStats.decode(try row["stats"].decode(String.self)) } ?? RunStats()
            guard stats.pruned == nil else { return 0 }  // another pass pruned it first
            stats.pruned = pruned
            _ = try await Self.rows(
                """
                INSERT INTO run_stats (run, stats, updated_at) VALUES (\(run.rawValue), \(stats.encoded()), \(pruned.at))
                ON CONFLICT (run) DO UPDATE SET stats = excluded.stats, updated_at = excluded.updated_at
                """,
                on: connection,
                logger: logger
            )
            _ = try await Self.rows(
                "UPDATE run SET pruned_at = \(pruned.at) WHERE id = \(run.rawValue)",
                on: connection,
                logger: logger
            )
            let dropped = try await Self.rows(
                """
                WITH r AS (DELETE FROM recipient WHERE run = \(run.rawValue) RETURNING 1),
                    d AS (DELETE FROM dispatch WHERE run = \(run.rawValue) RETURNING 1),
                    v AS (DELETE FROM delivery WHERE run = \(run.rawValue) RETURNING 1),
                    s AS (DELETE FROM snapshot_page WHERE run = \(run.rawValue) RETURNING 1)
                SELECT (SELECT count(*) FROM r) + (SELECT count(*) FROM d) + (SELECT count(*) FROM v)
                    + (SELECT count(*) FROM s) AS n
                """,
                on: connection,
                logger: logger
            )
            return Int(try dropped.first?["n"].decode(Int64.self) ?? 0)
        }
    }
}
