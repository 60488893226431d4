import Foundation
import GRDB
import PushcampModel

extension SQLiteJournal: SliceStore {
    static let slicesSchema = """
        -- The plan of a run several workers send, as its creator planned it: one row per push.
        CREATE TABLE snapshot (
            run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            token TEXT NOT NULL,
            payload BLOB NOT NULL,
            variant TEXT NOT NULL,
            locale TEXT,
            collapse_id TEXT,
            expiration INTEGER,
            PRIMARY KEY (run, seq)
        ) WITHOUT ROWID;
        -- Its slices: contiguous seq ranges, each sent under a lease of its own.
        CREATE TABLE slice (
            run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            done INTEGER NOT NULL DEFAULT 0,
            stats TEXT,
            PRIMARY KEY (run, first_seq)
        ) WITHOUT ROWID;
        -- Recipients sent again while an earlier request of theirs may have reached APNs.
        CREATE TABLE possible_duplicate (
            run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            token TEXT NOT NULL,
            PRIMARY KEY (run, seq)
        ) WITHOUT ROWID;
        """

    /// Refuses a write under `lease`, inside the transaction `db` is in, once it is no longer the
    /// resource's.
    static func checkFence(_ lease: Lease?, in db: Database) throws {
        guard let lease else { return }
        let current = try Row.fetchOne(db, sql: "SELECT * FROM lease WHERE resource = ?", arguments: [lease.resource])
            .map(Self.lease(from:))
        guard current?.owner == lease.owner, current?.fence == lease.fence else {
            throw JournalError.fenced(lease, current: current)
        }
    }

    public func appendSnapshot(
        _ pushes: [SnapshotPush],
        opening slices: [ClosedRange<Int>],
        run: RunID,
        lease: Lease?
    ) async throws(JournalError) {
        try await write { db in
            try Self.checkFence(lease, in: db)
            try Self.insert(slices, of: run, in: db)
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO snapshot
                        (run, seq, token, payload, variant, locale, collapse_id, expiration, platform, due)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            )
            for push in pushes {
                try statement.execute(arguments: [
                    run.rawValue, push.seq, push.token, Data(push.payload), push.variant, push.locale,
                    push.collapseID, push.expiration, push.platform == .ios ? nil : push.platform.rawValue,
                    push.due,
                ])
            }
        }
    }

    public func resumeSnapshot(run: RunID, lease: Lease?) async throws(JournalError) -> Int {
        try await write { db in
            try Self.checkFence(lease, in: db)
            let opened =
                try Int.fetchOne(db, sql: "SELECT max(last_seq) FROM slice WHERE run = ?", arguments: [run.rawValue])
                ?? -1
            try db.execute(
                sql: """
                    DELETE FROM snapshot WHERE run = ? AND seq > ?
                        AND (SELECT planned FROM run WHERE id = ?) IS NULL
                    """,
                arguments: [run.rawValue, opened, run.rawValue]
            )
            return opened
        }
    }

    /// Opens `slices` of `run` to the workers.
    static func insert(_ slices: [ClosedRange<Int>], of run: RunID, in db: Database) throws {
        for slice in slices {
            try db.execute(
                sql: "INSERT INTO slice (run, first_seq, last_seq) VALUES (?, ?, ?)",
                arguments: [run.rawValue, slice.lowerBound, slice.upperBound]
            )
        }
    }

    public func sealSnapshot(
        run: RunID,
        slices: [ClosedRange<Int>],
        planned: Int,
        lease: Lease?
    ) async throws(JournalError) {
        try await write { db in
            try Self.checkFence(lease, in: db)
            try Self.insert(slices, of: run, in: db)
            try db.execute(sql: "UPDATE run SET planned = ? WHERE id = ?", arguments: [planned, run.rawValue])
            try db.execute(
                sql: """
                    UPDATE run SET status = 'finished', updated_at = \(Self.sqliteNow)
                    WHERE id = ? AND status = 'running' AND NOT EXISTS (SELECT 1 FROM slice WHERE run = ? AND NOT done)
                    """,
                arguments: [run.rawValue, run.rawValue]
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
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM snapshot WHERE run = ? AND seq BETWEEN ? AND ? AND seq > ? ORDER BY seq LIMIT ?
                    """,
                arguments: [run.rawValue, seqs.lowerBound, seqs.upperBound, after, limit]
            ).map { row in
                SnapshotPush(
                    seq: row["seq"],
                    token: row["token"],
                    payload: [UInt8](row["payload"] as Data),
                    variant: row["variant"],
                    locale: row["locale"],
                    collapseID: row["collapse_id"],
                    expiration: row["expiration"],
                    platform: try Self.platform(row["platform"]),
                    due: row["due"]
                )
            }
        }
    }

    /// A snapshot row's platform: NULL for iOS (and in rows written before Android pushes were
    /// kept there).
    static func platform(_ name: String?) throws -> Platform {
        guard let name else { return .ios }
        guard let platform = Platform(rawValue: name) else {
            throw JournalError(.corrupt, "a push of a run's snapshot names a platform this build does not know")
        }
        return platform
    }

    public func slices(of run: RunID) async throws(JournalError) -> [SliceStatus] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT first_seq, last_seq, done FROM slice WHERE run = ? ORDER BY first_seq",
                arguments: [run.rawValue]
            ).map { row in
                let slice = RunSlice(run: run, seqs: (row["first_seq"] as Int)...(row["last_seq"] as Int))
                let lease = try Row.fetchOne(
                    db,
                    sql: "SELECT * FROM lease WHERE resource = ?",
                    arguments: [slice.resource]
                ).map(Self.lease(from:))
                return SliceStatus(slice: slice, done: row["done"], lease: lease)
            }
        }
    }

    public func claimSlice(
        of run: RunID,
        owner: String,
        duration: Double
    ) async throws(JournalError) -> (
        RunSlice, Lease
    )? {
        // One writer at a time on SQLite: the transaction is the lock `SKIP LOCKED` is elsewhere.
        try await write { db -> (RunSlice, Lease)? in
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT first_seq, last_seq FROM slice WHERE run = ? AND NOT done
                        AND EXISTS (SELECT 1 FROM run WHERE id = slice.run AND status = 'running')
                    ORDER BY first_seq
                    """,
                arguments: [run.rawValue]
            ) {
                let slice = RunSlice(run: run, seqs: (row["first_seq"] as Int)...(row["last_seq"] as Int))
                let claimed = try Row.fetchOne(
                    db,
                    sql: """
                        INSERT INTO lease (resource, owner, fence, expires_at) VALUES (?, ?, 1, \(Self.sqliteNow) + ?)
                        ON CONFLICT (resource) DO UPDATE SET
                            fence = lease.fence + 1, owner = excluded.owner, expires_at = excluded.expires_at
                        WHERE lease.expires_at <= \(Self.sqliteNow)
                        RETURNING resource, owner, fence, expires_at
                        """,
                    arguments: [slice.resource, owner, duration]
                ).map(Self.lease(from:))
                if let claimed { return (slice, claimed) }
            }
            return nil
        }
    }

    public func closeSlice(
        _ slice: RunSlice,
        status: RunStatus,
        stats: RunStats?,
        lease: Lease
    ) async throws(JournalError) -> RunStatus {
        try await write { db -> RunStatus in
            try Self.checkFence(lease, in: db)
            let (run, first) = (slice.run.rawValue, slice.seqs.lowerBound)
            if let stats {
                let saved = try String.fetchOne(
                    db,
                    sql: "SELECT stats FROM slice WHERE run = ? AND first_seq = ?",
                    arguments: [run, first]
                ).map(RunStats.decode)
                try db.execute(
                    sql: "UPDATE slice SET stats = ? WHERE run = ? AND first_seq = ?",
                    arguments: [(saved?.adding(stats) ?? stats).encoded(), run, first]
                )
            }
            if status == .finished {
                try db.execute(
                    sql: "UPDATE slice SET done = 1 WHERE run = ? AND first_seq = ?",
                    arguments: [run, first]
                )
                try db.execute(
                    sql: """
                        UPDATE run SET status = 'finished', updated_at = \(Self.sqliteNow)
                        WHERE id = ? AND status = 'running' AND planned IS NOT NULL
                            AND NOT EXISTS (SELECT 1 FROM slice WHERE run = ? AND NOT done)
                        """,
                    arguments: [run, run]
                )
            } else if status == .cancelled {
                try db.execute(
                    sql: """
                        UPDATE run SET status = 'cancelled', updated_at = \(Self.sqliteNow)
                        WHERE id = ? AND status IN ('running', 'interrupted')
                        """,
                    arguments: [run]
                )
            }
            guard let now = try String.fetchOne(db, sql: "SELECT status FROM run WHERE id = ?", arguments: [run]) else {
                throw JournalError(.notFound, "run \(run) is not in the journal")
            }
            return RunStatus(rawValue: now) ?? .running
        }
    }

    public func stats(of slice: RunSlice) async throws(JournalError) -> RunStats? {
        try await read { db in
            try String.fetchOne(
                db,
                sql: "SELECT stats FROM slice WHERE run = ? AND first_seq = ?",
                arguments: [slice.run.rawValue, slice.seqs.lowerBound]
            ).map(RunStats.decode)
        }
    }

    public func runsWithFreeSlices() async throws(JournalError) -> [RunRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM run WHERE status = 'running'
                        AND EXISTS (
                            SELECT 1 FROM slice
                            LEFT JOIN lease ON lease.resource = 'run:' || slice.run || '/slice:' || slice.first_seq
                            WHERE slice.run = run.id AND NOT slice.done
                                AND (lease.resource IS NULL OR lease.expires_at <= \(Self.sqliteNow))
                        )
                    ORDER BY id
                    """
            ).map(Self.run(from:))
        }
    }

    public func liveSlices(of run: RunID) async throws(JournalError) -> Int {
        try await read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM slice JOIN lease ON lease.resource = 'run:' || slice.run || '/slice:' || slice.first_seq
                    WHERE slice.run = ? AND NOT slice.done AND lease.expires_at > \(Self.sqliteNow)
                    """,
                arguments: [run.rawValue]
            ) ?? 0
        }
    }

    public func possibleDuplicates(of run: RunID) async throws(JournalError) -> [PossibleDuplicate] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT seq, token FROM possible_duplicate WHERE run = ? ORDER BY seq",
                arguments: [run.rawValue]
            ).map { PossibleDuplicate(seq: $0["seq"], token: $0["token"]) }
        }
    }
}
