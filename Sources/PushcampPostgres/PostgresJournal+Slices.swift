import NIOCore
import PostgresNIO
import PushcampJournal

/// A run's plan snapshotted once and cut into slices that every node claims with `FOR UPDATE SKIP
/// LOCKED`, each under a lease of its own on the database's clock.
extension PostgresJournal: SliceStore {
    /// Refuses the transaction on `connection` unless `lease` is still the resource's, holding its
    /// row `FOR SHARE` until the commit so a takeover waits for this transaction.
    static func checkFence(_ lease: Lease?, on connection: PostgresConnection, logger: Logger) async throws {
        guard let lease else { return }
        let held = try await rows(
            """
            SELECT 1 FROM lease WHERE resource = \(lease.resource) AND owner = \(lease.owner)
                AND fence = \(lease.fence) FOR SHARE
            """,
            on: connection,
            logger: logger
        )
        guard held.isEmpty else { return }
        let current = try await rows(
            "SELECT resource, owner, fence, expires_at FROM lease WHERE resource = \(lease.resource)",
            on: connection,
            logger: logger
        ).first.map(Self.lease(from:))
        throw JournalError.fenced(lease, current: current)
    }

    /// One row of `snapshot_page` (`SnapshotPage`'s bytes), in the transaction that checks the
    /// creator's fence.
    public func appendSnapshot(
        _ pushes: [SnapshotPush],
        opening slices: [ClosedRange<Int>],
        run: RunID,
        lease: Lease?
    ) async throws(JournalError) {
        guard !pushes.isEmpty || !slices.isEmpty else { return }
        let (logger, page) = (self.logger, SnapshotPage.encode(pushes))
        let (first, last) = (pushes.first?.seq, pushes.last?.seq)
        try await transaction { connection in
            try await Self.checkFence(lease, on: connection, logger: logger)
            if let first, let last {
                _ = try await Self.rows(
                    """
                    INSERT INTO snapshot_page (run, first_seq, last_seq, pushes)
                    VALUES (\(run.rawValue), \(Int64(first)), \(Int64(last)), \(page))
                    """,
                    on: connection,
                    logger: logger
                )
            }
            try await Self.open(slices, of: run, on: connection, logger: logger)
        }
    }

    /// Opens `slices` of `run` to the workers.
    static func open(
        _ slices: [ClosedRange<Int>],
        of run: RunID,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        guard !slices.isEmpty else { return }
        let firsts = slices.map { Int64($0.lowerBound) }
        let lasts = slices.map { Int64($0.upperBound) }
        _ = try await rows(
            """
            INSERT INTO slice (run, first_seq, last_seq)
            SELECT \(run.rawValue), f, l FROM unnest(\(firsts)::bigint[], \(lasts)::bigint[]) AS u(f, l)
            """,
            on: connection,
            logger: logger
        )
    }

    public func resumeSnapshot(run: RunID, lease: Lease?) async throws(JournalError) -> Int {
        let logger = self.logger
        return try await transaction { connection in
            try await Self.checkFence(lease, on: connection, logger: logger)
            // Pages never straddle slices: every page past the last slice opened is unread.
            let opened =
                try await Self.rows(
                    "SELECT coalesce(max(last_seq), -1) AS opened FROM slice WHERE run = \(run.rawValue)",
                    on: connection,
                    logger: logger
                ).first.map { row in try row["opened"].decode(Int64.self) } ?? -1
            _ = try await Self.rows(
                """
                DELETE FROM snapshot_page WHERE run = \(run.rawValue) AND last_seq > \(opened)
                    AND (SELECT planned FROM run WHERE id = \(run.rawValue)) IS NULL
                """,
                on: connection,
                logger: logger
            )
            return Int(opened)
        }
    }

    public func sealSnapshot(
        run: RunID,
        slices: [ClosedRange<Int>],
        planned: Int,
        lease: Lease?
    ) async throws(JournalError) {
        let logger = self.logger
        try await transaction { connection in
            // The run's row locked first, as a slice's end locks it: of a seal and the end of the
            // last slice opened before it, the second sees the first and finishes the run.
            _ = try await Self.rows(
                "SELECT 1 FROM run WHERE id = \(run.rawValue) FOR UPDATE",
                on: connection,
                logger: logger
            )
            try await Self.checkFence(lease, on: connection, logger: logger)
            try await Self.open(slices, of: run, on: connection, logger: logger)
            _ = try await Self.rows(
                """
                UPDATE run SET planned = \(Int64(planned)),
                    status = CASE WHEN NOT EXISTS (SELECT 1 FROM slice WHERE run = \(run.rawValue) AND NOT done)
                        AND status = 'running' THEN 'finished' ELSE status END,
                    updated_at = CASE WHEN NOT EXISTS (SELECT 1 FROM slice WHERE run = \(run.rawValue) AND NOT done)
                        AND status = 'running' THEN extract(epoch FROM clock_timestamp()) ELSE updated_at END
                WHERE id = \(run.rawValue)
                """,
                on: connection,
                logger: logger
            )
        }
    }

    public func snapshot(
        of run: RunID,
        in seqs: ClosedRange<Int>,
        after: Int,
        limit: Int
    ) async throws(JournalError)
        -> [SnapshotPush]
    {
        // A page at a time, from the one holding the first seq wanted: the creator cuts its pages
        // at slice boundaries, and workers read as many pushes as a page holds, so a page is read
        // once when a slice is sent from its start.
        var pushes: [SnapshotPush] = []
        var after = max(after, seqs.lowerBound - 1)
        while pushes.count < limit, after < seqs.upperBound {
            let pages = try await rows(
                """
                SELECT last_seq, pushes FROM snapshot_page
                WHERE run = \(run.rawValue) AND last_seq > \(Int64(after)) AND first_seq <= \(Int64(seqs.upperBound))
                ORDER BY first_seq LIMIT 1
                """
            ) { row in
                (last: Int(try row["last_seq"].decode(Int64.self)), page: try row["pushes"].decode(ByteBuffer.self))
            }
            guard let page = pages.first else { break }
            for push in try SnapshotPage.decode(page.page) where push.seq > after && push.seq <= seqs.upperBound {
                pushes.append(push)
                if pushes.count == limit { return pushes }
            }
            after = page.last
        }
        return pushes
    }

    public func slices(of run: RunID) async throws(JournalError) -> [SliceStatus] {
        try await rows(
            """
            SELECT s.first_seq, s.last_seq, s.done, l.resource, l.owner, l.fence, l.expires_at
            FROM slice s LEFT JOIN lease l ON l.resource = 'run:' || s.run || '/slice:' || s.first_seq
            WHERE s.run = \(run.rawValue) ORDER BY s.first_seq
            """
        ) { row in
            let first = Int(try row["first_seq"].decode(Int64.self))
            let last = Int(try row["last_seq"].decode(Int64.self))
            let lease = try row["resource"].decode(String?.self) == nil ? nil : try Self.lease(from: row)
            return SliceStatus(
                slice: RunSlice(run: run, seqs: first...last),
                done: try row["done"].decode(Bool.self),
                lease: lease
            )
        }
    }

    /// The first open slice nobody holds, locked with `SKIP LOCKED` (two nodes claiming at once
    /// get different slices), and its lease claimed in the same statement: only while the lease
    /// is still expired by then (the `WHERE` of `ON CONFLICT` reads the newest row).
    public func claimSlice(
        of run: RunID,
        owner: String,
        duration: Double
    ) async throws(JournalError) -> (
        RunSlice, Lease
    )? {
        let rows = try await rows(
            """
            WITH candidate AS (
                SELECT s.first_seq, s.last_seq FROM slice s
                LEFT JOIN lease l ON l.resource = 'run:' || s.run || '/slice:' || s.first_seq
                WHERE s.run = \(run.rawValue) AND NOT s.done
                    AND EXISTS (SELECT 1 FROM run WHERE id = s.run AND status = 'running')
                    AND (l.resource IS NULL OR l.expires_at <= extract(epoch FROM clock_timestamp()))
                ORDER BY s.first_seq
                LIMIT 1
                FOR UPDATE OF s SKIP LOCKED
            ),
            claimed AS (
                INSERT INTO lease AS held (resource, owner, fence, expires_at)
                SELECT 'run:' || \(run.rawValue) || '/slice:' || first_seq, \(owner), 1,
                    extract(epoch FROM clock_timestamp()) + \(duration)
                FROM candidate
                ON CONFLICT (resource) DO UPDATE SET
                    fence = held.fence + 1, owner = excluded.owner, expires_at = excluded.expires_at
                WHERE held.expires_at <= extract(epoch FROM clock_timestamp())
                RETURNING resource, owner, fence, expires_at
            )
            SELECT c.first_seq, c.last_seq, d.resource, d.owner, d.fence, d.expires_at
            FROM claimed d, candidate c
            """
        ) { row in
            (
                RunSlice(
                    run: run,
                    seqs: Int(try row["first_seq"].decode(Int64.self))...Int(try row["last_seq"].decode(Int64.self))
                ),
                try Self.lease(from: row)
            )
        }
        return rows.first
    }

    /// In one transaction that first locks the run's row, so of two workers ending the last two
    /// slices at once the second sees the first's slice done and finishes the run.
    public func closeSlice(
        _ slice: RunSlice,
        status: RunStatus,
        stats: RunStats?,
        lease: Lease
    ) async throws(JournalError) -> RunStatus {
        let logger = self.logger
        let (run, first) = (slice.run.rawValue, Int64(slice.seqs.lowerBound))
        let statsText = stats?.encoded()
        let answer = try await transaction { connection -> String? in
            _ = try await Self.rows("SELECT 1 FROM run WHERE id = \(run) FOR UPDATE", on: connection, logger: logger)
            try await Self.checkFence(lease, on: connection, logger: logger)
            if let statsText {
                let saved = try await Self.rows(
                    "SELECT stats FROM slice WHERE run = \(run) AND first_seq = \(first)",
                    on: connection,
                    logger: logger
                ).first.flatMap { row in try row["stats"].decode(String?.self) }
                let merged = try saved.map { try RunStats.decode($0).adding(stats!).encoded() } ?? statsText
                _ = try await Self.rows(
                    "UPDATE slice SET stats = \(merged) WHERE run = \(run) AND first_seq = \(first)",
                    on: connection,
                    logger: logger
                )
            }
            switch status {
            case .finished:
                _ = try await Self.rows(
                    "UPDATE slice SET done = true WHERE run = \(run) AND first_seq = \(first)",
                    on: connection,
                    logger: logger
                )
                _ = try await Self.rows(
                    """
                    UPDATE run SET status = 'finished', updated_at = extract(epoch FROM clock_timestamp())
                    WHERE id = \(run) AND status = 'running' AND planned IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM slice WHERE run = \(run) AND NOT done)
                    """,
                    on: connection,
                    logger: logger
                )
            case .cancelled:
                _ = try await Self.rows(
                    """
                    UPDATE run SET status = 'cancelled', updated_at = extract(epoch FROM clock_timestamp())
                    WHERE id = \(run) AND status IN ('running', 'interrupted')
                    """,
                    on: connection,
                    logger: logger
                )
            default:
                break
            }
            return try await Self.rows("SELECT status FROM run WHERE id = \(run)", on: connection, logger: logger)
                .first.map { row in try row["status"].decode(String.self) }
        }
        guard let answer else { throw JournalError(.notFound, "run \(run) is not in the journal") }
        return RunStatus(rawValue: answer) ?? .running
    }

    public func stats(of slice: RunSlice) async throws(JournalError) -> RunStats? {
        let texts = try await rows(
            """
            SELECT stats FROM slice WHERE run = \(slice.run.rawValue) AND first_seq = \(Int64(slice.seqs.lowerBound))
                AND stats IS NOT NULL
            """
        ) { row in try row["stats"].decode(String.self) }
        return try RunStats.sum(texts)
    }

    public func runsWithFreeSlices() async throws(JournalError) -> [RunRecord] {
        try await runs(
            """
            SELECT \(unescaped: Self.runColumns) FROM run
            WHERE status = 'running' AND EXISTS (
                SELECT 1 FROM slice s
                LEFT JOIN lease l ON l.resource = 'run:' || s.run || '/slice:' || s.first_seq
                WHERE s.run = run.id AND NOT s.done
                    AND (l.resource IS NULL OR l.expires_at <= extract(epoch FROM clock_timestamp()))
            )
            ORDER BY id
            """
        )
    }

    public func liveSlices(of run: RunID) async throws(JournalError) -> Int {
        let rows = try await rows(
            """
            SELECT count(*)::bigint AS live FROM slice s
            JOIN lease l ON l.resource = 'run:' || s.run || '/slice:' || s.first_seq
            WHERE s.run = \(run.rawValue) AND NOT s.done AND l.expires_at > extract(epoch FROM clock_timestamp())
            """
        )
        return Int(try decode(rows.first, "live", Int64.self))
    }

    public func possibleDuplicates(of run: RunID) async throws(JournalError) -> [PossibleDuplicate] {
        try await rows("SELECT seq, token FROM possible_duplicate WHERE run = \(run.rawValue) ORDER BY seq") { row in
            PossibleDuplicate(seq: Int(try row["seq"].decode(Int64.self)), token: try row["token"].decode(String.self))
        }
    }
}
