import Foundation
import GRDB
import GRDBSQLite
import PushcampModel

/// The embedded journal: one SQLite file (WAL, so `pushcamp runs` and `cancel` can read and write
/// it from another process while a send runs). Schema changes go through numbered migrations from
/// the first version on; a file written by a newer Pushcamp is refused rather than misread.
///
/// Durability: `synchronous = NORMAL` in WAL mode keeps every committed transaction across a
/// killed process (the case resume is for); a power cut may lose the last few, never corrupt the
/// file.
public final class SQLiteJournal: JournalStore, TokenHistoryStore {
    public let path: String
    private let database: DatabaseQueue

    /// Opens (creating and migrating when needed) the journal at `path`. `lockWait` is how long to
    /// wait for another process holding it locked before giving up with `.locked`.
    ///
    /// Only a missing file means "new": an empty file, a folder, or a SQLite file that is not a
    /// Pushcamp journal is an error that says what to do, so a truncated journal never silently
    /// loses the run history, dead tokens and frequency caps. A journal that cannot be written (a
    /// read-only file or folder) is opened read-only for the commands that only read it.
    /// `readOnly` opens an existing journal without ever writing to it: what commands that only
    /// read (`runs`, `report`, `plan`, `tokens`) use.
    public init(path: String, lockWait: TimeInterval = 2, readOnly: Bool = false) throws(JournalError) {
        self.path = path
        try Self.checkExisting(path)
        if readOnly {
            guard FileManager.default.fileExists(atPath: path) else {
                throw JournalError(.cannotOpen, "no journal at \(path)")
            }
            database = try Self.openReadOnly(path, lockWait: lockWait)
            return
        }
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(lockWait)
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        if FileManager.default.fileExists(atPath: path), !Self.writable(path) {
            database = try Self.openReadOnly(path, lockWait: lockWait)
            return
        }
        if !FileManager.default.fileExists(atPath: path) {
            try Self.create(path, configuration: configuration)
        }
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
            // A first look outside any transaction: a file that is not a database must fail here, not
            // inside a transaction that then cannot be rolled back.
            try database.writeWithoutTransaction { db in
                _ = try Int.fetchOne(db, sql: "PRAGMA schema_version")
            }
            try database.write { db in
                try Self.checkIsJournal(db, path: path)
                if try Self.migrator.hasBeenSuperseded(db) {
                    throw JournalError(.newerVersion, "\(path) was written by a newer Pushcamp; upgrade to use it")
                }
            }
            try Self.migrate(database)
        } catch let error as JournalError {
            throw error
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// Makes a new journal at `path`, whole: built and migrated in a file of its own beside it,
    /// then linked into place only if `path` is still free (`link(2)` never replaces a file). Of
    /// two processes creating one journal at once, one links its file and the other opens it, so
    /// nobody ever sees a journal half made (an empty file, tables missing).
    static func create(_ path: String, configuration: Configuration) throws(JournalError) {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let draft = ((directory.isEmpty ? "." : directory) as NSString).appendingPathComponent(
            ".\(name).new-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        )
        defer {
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(draft + suffix) }
        }
        do {
            let database = try DatabaseQueue(path: draft, configuration: configuration)
            try migrator.migrate(database)
            // Closed before it is linked: its write-ahead log is folded into the file.
            try database.close()
        } catch {
            throw translate(error, path: path)
        }
        if link(draft, path) != 0, errno != EEXIST {
            throw JournalError(
                .cannotOpen,
                "cannot create the journal \(path): \(String(cString: strerror(errno)))"
            )
        }
    }

    /// Brings a journal to this build's schema. Two processes upgrading one journal at once may
    /// both find a migration to apply; the one that loses finds it applied and goes on.
    static func migrate(_ database: DatabaseQueue) throws {
        do {
            try migrator.migrate(database)
        } catch {
            guard try database.read({ try migrator.hasCompletedMigrations($0) }) else { throw error }
        }
    }

    /// An existing file must be a non-empty regular file.
    static func checkExisting(_ path: String) throws(JournalError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        if isDirectory.boolValue {
            throw JournalError(
                .cannotOpen,
                "\(path) is a folder, not a journal; journal.path in pushcamp.yaml names the file"
            )
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        if size == 0 {
            throw JournalError(
                .corrupt,
                "\(path) is empty (0 bytes), so the run history, dead tokens and frequency caps it held are not "
                    + "there (Pushcamp never leaves a journal empty: it creates one whole, then puts it in place); "
                    + "restore it from a backup, or move it aside to start a new journal"
            )
        }
    }

    /// A SQLite file with tables of its own but none of Pushcamp's migrations is someone else's database.
    static func checkIsJournal(_ db: Database, path: String) throws {
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
        if !tables.isEmpty, !tables.contains("grdb_migrations") {
            throw JournalError(
                .corrupt,
                "\(path) is a SQLite database but not a Pushcamp journal (it has tables \(tables.prefix(3).joined(separator: ", "))); "
                    + "point journal.path in pushcamp.yaml elsewhere"
            )
        }
    }

    static func writable(_ path: String) -> Bool {
        let directory = (path as NSString).deletingLastPathComponent
        return access(path, W_OK) == 0 && access(directory.isEmpty ? "." : directory, W_OK) == 0
    }

    /// A journal this process may not write: readable by `runs`, `report`, `plan` and `tokens`;
    /// a send fails at its first write with a message that says so.
    static func openReadOnly(_ path: String, lockWait: TimeInterval) throws(JournalError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(lockWait)
        do {
            let database = try DatabaseQueue(path: path, configuration: configuration)
            try database.read { db in
                try checkIsJournal(db, path: path)
                guard try migrator.hasCompletedMigrations(db) else {
                    throw JournalError(
                        .cannotOpen,
                        "\(path) is read-only and needs an upgrade this Pushcamp would write; make it writable"
                    )
                }
            }
            return database
        } catch let error as JournalError {
            throw error
        } catch {
            throw JournalError(
                .cannotOpen,
                "\(path) is read-only and cannot be read as it is (\(translate(error, path: path).message)); "
                    + "make it and its folder writable"
            )
        }
    }

    /// How many schema versions this build knows (v1 … vN).
    public static var schemaVersion: Int { migrator.migrations.count }

    /// The schema versions applied to this journal.
    public func appliedVersion() async throws(JournalError) -> Int {
        try await read { db in try Self.migrator.appliedIdentifiers(db).count }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: runs, recipients, invalid tokens") { db in
            try db.execute(
                sql: """
                    CREATE TABLE run (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        campaign TEXT NOT NULL,
                        revision TEXT NOT NULL,
                        status TEXT NOT NULL,
                        started_at REAL NOT NULL,
                        updated_at REAL NOT NULL,
                        cancel_requested INTEGER NOT NULL DEFAULT 0,
                        possible_duplicates INTEGER NOT NULL DEFAULT 0,
                        planned INTEGER
                    );
                    CREATE INDEX run_by_campaign ON run(campaign, status);
                    CREATE TABLE recipient (
                        run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                        seq INTEGER NOT NULL,
                        token TEXT NOT NULL,
                        state TEXT NOT NULL,
                        attempt INTEGER NOT NULL,
                        status INTEGER,
                        reason TEXT,
                        apns_timestamp INTEGER,
                        retry_at REAL,
                        updated_at REAL NOT NULL,
                        PRIMARY KEY (run, seq)
                    ) WITHOUT ROWID;
                    -- First attempts go out in batches: each batch is one range here, in flight until
                    -- its recipients get rows of their own.
                    CREATE TABLE dispatch (
                        run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                        first_seq INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL,
                        PRIMARY KEY (run, first_seq)
                    ) WITHOUT ROWID;
                    CREATE TABLE invalid_token (
                        topic TEXT NOT NULL,
                        token TEXT NOT NULL,
                        reason TEXT NOT NULL,
                        apns_timestamp INTEGER,
                        seen_at REAL NOT NULL,
                        PRIMARY KEY (topic, token)
                    ) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v2: delivered ranges") { db in
            try db.execute(
                sql: """
                    -- First attempts delivered, as runs of consecutive seqs: most recipients never get
                    -- a row in recipient. tokens: their device tokens in seq order, one per line.
                    CREATE TABLE delivery (
                        run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                        first_seq INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL,
                        delivered_at REAL NOT NULL,
                        tokens TEXT NOT NULL,
                        PRIMARY KEY (run, first_seq)
                    ) WITHOUT ROWID;
                    CREATE INDEX delivery_by_time ON delivery(delivered_at);
                    CREATE INDEX recipient_delivered_by_time ON recipient(updated_at) WHERE state = 'delivered';
                    """
            )
        }
        migrator.registerMigration("v3: run file and replays") { db in
            try db.execute(
                sql: """
                    ALTER TABLE run ADD COLUMN file TEXT;
                    -- A replay: the run it replays and the reasons it replays, one per line.
                    ALTER TABLE run ADD COLUMN replay_of INTEGER REFERENCES run(id);
                    ALTER TABLE run ADD COLUMN replay_reasons TEXT;
                    """
            )
        }
        migrator.registerMigration("v4: run statistics") { db in
            try db.execute(
                sql: """
                    -- What a run's sends measured (latency buckets, retries by cause, time spent), as
                    -- JSON; replaced about once a second while sending.
                    CREATE TABLE run_stats (
                        run INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
                        stats TEXT NOT NULL,
                        updated_at REAL NOT NULL
                    );
                    """
            )
        }
        migrator.registerMigration("v5: delivered token hashes") { db in
            try db.execute(
                sql: """
                    -- Delivered ranges keep the StableHash of each token (8 bytes, little-endian, in seq
                    -- order) instead of the token: a quarter of the bytes written while sending. Rows
                    -- written before keep their tokens (and a NULL here).
                    ALTER TABLE delivery ADD COLUMN token_hashes BLOB;
                    """
            )
        }
        migrator.registerMigration("v6: schedule slots") { db in
            try db.execute(
                sql: """
                    -- Every slot of a scheduled campaign that `serve` fired or skipped, once: the primary
                    -- key is what keeps a slot from firing twice (a restart, a crash between firing and
                    -- sending, a second serve on the journal). A fired slot's run is created in the same
                    -- transaction. Slots missed together are one row, from slot through `through`.
                    CREATE TABLE schedule_slot (
                        campaign TEXT NOT NULL,
                        slot INTEGER NOT NULL,
                        outcome TEXT NOT NULL,
                        reason TEXT,
                        detail TEXT,
                        run INTEGER REFERENCES run(id),
                        through INTEGER,
                        count INTEGER NOT NULL DEFAULT 1,
                        recorded_at REAL NOT NULL,
                        PRIMARY KEY (campaign, slot)
                    ) WITHOUT ROWID;
                    -- When serve first saw each scheduled campaign: recurring slots before it never fire.
                    CREATE TABLE schedule_watch (
                        campaign TEXT PRIMARY KEY,
                        since REAL NOT NULL
                    ) WITHOUT ROWID;
                    ALTER TABLE run ADD COLUMN slot INTEGER;
                    """
            )
        }
        migrator.registerMigration("v7: App Store notifications") { db in
            try db.execute(
                sql: """
                    -- Every App Store Server Notification received, once per notificationUUID, with its
                    -- raw signed payload: stored for a configured app, or quarantined (with the reason).
                    CREATE TABLE appstore_notification (
                        uuid TEXT PRIMARY KEY,
                        type TEXT NOT NULL,
                        subtype TEXT,
                        signed_date REAL,
                        environment TEXT,
                        bundle_id TEXT,
                        app TEXT,
                        disposition TEXT NOT NULL,
                        reason TEXT,
                        original_transaction_id TEXT,
                        product_id TEXT,
                        app_account_token TEXT,
                        signed_payload TEXT NOT NULL,
                        received_at REAL NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX appstore_notification_by_time ON appstore_notification(received_at);
                    -- Each subscription as the latest notification about it (by signed_date) left it.
                    CREATE TABLE subscription (
                        original_transaction_id TEXT PRIMARY KEY,
                        app TEXT,
                        product_id TEXT,
                        status TEXT,
                        auto_renew INTEGER,
                        expires_at REAL,
                        grace_period_expires_at REAL,
                        app_account_token TEXT,
                        last_type TEXT NOT NULL,
                        last_subtype TEXT,
                        signed_date REAL NOT NULL,
                        notification TEXT NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX subscription_by_status ON subscription(status, product_id);
                    """
            )
        }
        migrator.registerMigration("v8: trigger firings") { db in
            try db.execute(
                sql: """
                    -- Each (trigger campaign, App Store notification) that fires it, once: recorded in the
                    -- transaction that stores the notification, then claimed by the run that sends it.
                    CREATE TABLE trigger_firing (
                        campaign TEXT NOT NULL,
                        notification TEXT NOT NULL,
                        subscription_key TEXT,
                        due_at REAL NOT NULL,
                        status TEXT NOT NULL,
                        detail TEXT,
                        run INTEGER,
                        recorded_at REAL NOT NULL,
                        PRIMARY KEY (campaign, notification)
                    ) WITHOUT ROWID;
                    CREATE INDEX trigger_firing_due ON trigger_firing(status, due_at);
                    CREATE INDEX trigger_firing_run ON trigger_firing(run);
                    """
            )
        }
        migrator.registerMigration("v9: leases") { db in
            try db.execute(
                sql: """
                    -- Who sends what: a row per resource (a run), its owner, a fence that rises on every
                    -- claim, and when the lease ends (seconds since 1970 on this machine's clock).
                    CREATE TABLE lease (
                        resource TEXT PRIMARY KEY,
                        owner TEXT NOT NULL,
                        fence INTEGER NOT NULL,
                        expires_at REAL NOT NULL
                    ) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v10: provider tokens") { db in
            try db.execute(
                sql: """
                    -- The provider token the processes on this journal share, per Apple key.
                    CREATE TABLE provider_token (key TEXT PRIMARY KEY, token TEXT NOT NULL) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v11: run snapshots, slices and possible duplicates") { db in
            try db.execute(sql: SQLiteJournal.slicesSchema)
        }
        migrator.registerMigration("v12: broadcast channels") { db in
            try db.execute(sql: SQLiteJournal.channelsSchema)
        }
        migrator.registerMigration("v13: engagement") { db in
            try db.execute(sql: SQLiteJournal.engagementSchema)
        }
        migrator.registerMigration("v14: assignments kept at send time, and what an event was worth") { db in
            try db.execute(sql: SQLiteJournal.assignmentSchema)
            try db.execute(sql: "ALTER TABLE engagement ADD COLUMN value REAL")
        }
        migrator.registerMigration("v15: provider token holds") { db in
            try db.execute(
                sql: """
                    -- APNs refused a provider token as too frequent: no process mints one for the
                    -- key before held_until (seconds since 1970).
                    CREATE TABLE provider_token_hold (key TEXT PRIMARY KEY, held_until REAL NOT NULL) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v16: delivered ranges in a rowid table") { db in
            // A range's token hashes (8 bytes a recipient, about 1 KB a batch) outgrew what a
            // WITHOUT ROWID row keeps on its page (about 1 KB of 4): each spilled into an overflow
            // page of its own, three quarters empty, and the table was four times its data. A rowid
            // table keeps rows up to about 4 KB on the page.
            try db.execute(
                sql: """
                    CREATE TABLE delivery_rows (
                        run INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
                        first_seq INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL,
                        delivered_at REAL NOT NULL,
                        tokens TEXT NOT NULL,
                        token_hashes BLOB,
                        PRIMARY KEY (run, first_seq)
                    );
                    INSERT INTO delivery_rows (run, first_seq, last_seq, delivered_at, tokens, token_hashes)
                        SELECT run, first_seq, last_seq, delivered_at, tokens, token_hashes FROM delivery
                        ORDER BY run, first_seq;
                    DROP TABLE delivery;
                    ALTER TABLE delivery_rows RENAME TO delivery;
                    CREATE INDEX delivery_by_time ON delivery(delivered_at);
                    """
            )
        }
        migrator.registerMigration("v17: when a run was pruned") { db in
            // Retention's pass selects the runs not pruned yet, instead of reading every old run's
            // statistics each hour to skip it.
            try db.execute(
                sql: """
                    ALTER TABLE run ADD COLUMN pruned_at REAL;
                    UPDATE run SET pruned_at = (
                        SELECT json_extract(stats, '$.pruned.at') FROM run_stats WHERE run_stats.run = run.id
                    );
                    """
            )
        }
        migrator.registerMigration("v18: Android pushes and moments in a run's snapshot") { db in
            // NULL: iOS, and due at once, as every push written before.
            try db.execute(sql: "ALTER TABLE snapshot ADD COLUMN platform TEXT")
            try db.execute(sql: "ALTER TABLE snapshot ADD COLUMN due INTEGER")
        }
        return migrator
    }

    // MARK: runs

    public func unfinishedRun(campaign: String) async throws(JournalError) -> RunRecord? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT * FROM run WHERE campaign = ? AND status IN ('running', 'interrupted') AND replay_of IS NULL
                    ORDER BY id DESC
                    """,
                arguments: [campaign]
            ).map(Self.run(from:))
        }
    }

    public func latestRun(campaign: String) async throws(JournalError) -> RunRecord? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM run WHERE campaign = ? AND replay_of IS NULL ORDER BY id DESC",
                arguments: [campaign]
            ).map(Self.run(from:))
        }
    }

    public func unfinishedReplay(of run: RunID) async throws(JournalError) -> RunRecord? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM run WHERE replay_of = ? AND status IN ('running', 'interrupted') ORDER BY id DESC",
                arguments: [run.rawValue]
            ).map(Self.run(from:))
        }
    }

    public func createRun(
        campaign: String,
        revision: String,
        now: Double,
        file: String?,
        replay: ReplayOrigin?
    ) async throws(JournalError) -> RunRecord {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO run (campaign, revision, status, started_at, updated_at, file, replay_of, replay_reasons)
                    VALUES (?, ?, 'running', ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    campaign, revision, now, now, file, replay?.run.rawValue,
                    replay?.reasons.joined(separator: "\n"),
                ]
            )
            return RunRecord.started(
                id: RunID(db.lastInsertedRowID),
                campaign: campaign,
                revision: revision,
                now: now,
                file: file,
                replay: replay
            )
        }
    }

    public func run(_ id: RunID) async throws(JournalError) -> RunRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM run WHERE id = ?", arguments: [id.rawValue]).map(Self.run(from:))
        }
    }

    public func runs(limit: Int) async throws(JournalError) -> [RunRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM run ORDER BY id DESC LIMIT ?", arguments: [limit])
                .map(Self.run(from:))
        }
    }

    public func setStatus(_ status: RunStatus, of run: RunID, now: Double) async throws(JournalError) {
        try await changeRun(
            run,
            sql: "UPDATE run SET status = ?, updated_at = ? WHERE id = ?",
            [status.rawValue.databaseValue, now.databaseValue]
        )
    }

    public func requestCancel(_ run: RunID, now: Double) async throws(JournalError) {
        try await changeRun(
            run,
            sql: "UPDATE run SET cancel_requested = 1, updated_at = ? WHERE id = ?",
            [now.databaseValue]
        )
    }

    public func cancelRequested(_ run: RunID) async throws(JournalError) -> Bool {
        guard let record = try await self.run(run) else { throw JournalError(.notFound, "no run \(run) in \(path)") }
        return record.cancelRequested
    }

    private func changeRun(_ run: RunID, sql: String, _ values: [DatabaseValue]) async throws(JournalError) {
        let changed = try await write { db in
            try db.execute(sql: sql, arguments: StatementArguments(values + [run.rawValue.databaseValue]))
            return db.changesCount
        }
        if changed == 0 { throw JournalError(.notFound, "no run \(run) in \(path)") }
    }

    public func setPlanned(_ count: Int, of run: RunID) async throws(JournalError) {
        try await changeRun(run, sql: "UPDATE run SET planned = ? WHERE id = ?", [count.databaseValue])
    }

    static func run(from row: Row) -> RunRecord {
        RunRecord(
            id: RunID(row["id"]),
            campaign: row["campaign"],
            revision: row["revision"],
            status: RunStatus(rawValue: row["status"]) ?? .running,
            startedAt: row["started_at"],
            updatedAt: row["updated_at"],
            cancelRequested: row["cancel_requested"],
            possibleDuplicates: row["possible_duplicates"],
            planned: row["planned"],
            file: row["file"],
            slot: row["slot"],
            replay: (row["replay_of"] as Int64?).map { run in
                ReplayOrigin(
                    run: RunID(run),
                    reasons: (row["replay_reasons"] as String?)?.split(separator: "\n").map(String.init) ?? []
                )
            }
        )
    }

    // MARK: recipients

    public func record(_ batch: JournalBatch, run: RunID, now: Double) async throws(JournalError) {
        guard !batch.isEmpty else { return }
        try await write { db in try Self.insert(batch, run: run, now: now, in: db) }
    }

    /// The measured group commit: a thread of its own commits each batch where it is, without a
    /// hop to another executor and back on the send's critical path.
    public var recorder: any RunRecorder {
        ThreadRecorder { [self] (batch, run, now) throws(JournalError) in
            try write { db in try Self.insert(batch, run: run, now: now, in: db) }
        }
    }

    /// One batch, inside the transaction `db` is in.
    private static func insert(_ batch: JournalBatch, run: RunID, now: Double, in db: Database) throws {
        try checkFence(batch.lease, in: db)
        if !batch.invalidTokens.isEmpty { try Self.remember(batch.invalidTokens, in: db) }
        if let stats = batch.stats {
            try db.execute(
                sql: "INSERT OR REPLACE INTO run_stats (run, stats, updated_at) VALUES (?, ?, ?)",
                arguments: [run.rawValue, stats.encoded(), now]
            )
            // About once a second: a running (or killed) run's last update stays near its last send.
            try db.execute(sql: "UPDATE run SET updated_at = ? WHERE id = ?", arguments: [now, run.rawValue])
        }
        if batch.possibleDuplicates > 0 {
            try db.execute(
                sql: "UPDATE run SET possible_duplicates = possible_duplicates + ? WHERE id = ?",
                arguments: [batch.possibleDuplicates, run.rawValue]
            )
        }
        for duplicate in batch.duplicates {
            try db.execute(
                sql: "INSERT OR IGNORE INTO possible_duplicate (run, seq, token) VALUES (?, ?, ?)",
                arguments: [run.rawValue, duplicate.seq, duplicate.token]
            )
        }
        let ranges = try db.cachedStatement(
            sql: """
                INSERT INTO dispatch (run, first_seq, last_seq) VALUES (?, ?, ?)
                ON CONFLICT (run, first_seq) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)
                """
        )
        for range in batch.dispatched {
            ranges.setUncheckedArguments([run.rawValue, range.lowerBound, range.upperBound])
            try ranges.execute()
        }
        let delivered = try db.cachedStatement(
            sql: """
                INSERT INTO delivery (run, first_seq, last_seq, delivered_at, tokens, token_hashes)
                VALUES (?, ?, ?, ?, '', ?)
                """
        )
        for range in batch.delivered {
            delivered.setUncheckedArguments([
                run.rawValue, range.seqs.lowerBound, range.seqs.upperBound, now, Data(range.encodedHashes),
            ])
            try delivered.execute()
        }
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO recipient (run, seq, token, state, attempt, status, reason, apns_timestamp,
                                       retry_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (run, seq) DO UPDATE SET
                    state = excluded.state, attempt = excluded.attempt, status = excluded.status,
                    reason = excluded.reason, apns_timestamp = excluded.apns_timestamp,
                    retry_at = excluded.retry_at, updated_at = excluded.updated_at
                """
        )
        // SQLite's C API directly: one row per answer at a hundred thousand answers a second, where
        // GRDB's StatementArguments (an array of existentials per row) cost more than SQLite did.
        let handle = statement.sqliteStatement
        for update in batch.updates {
            sqlite3_reset(handle)
            sqlite3_bind_int64(handle, 1, run.rawValue)
            sqlite3_bind_int64(handle, 2, Int64(update.seq))
            bindText(handle, 3, update.token)
            bindText(handle, 4, update.state.name)
            sqlite3_bind_int64(handle, 5, Int64(update.state.attempt))
            var status: Int?
            var reason: String?
            var apnsTimestamp: Int64?
            var retryAt: Double?
            switch update.state {
            case .failed(let code, let why, let stamp): (status, reason, apnsTimestamp) = (code, why, stamp)
            case .waiting(let until, _): retryAt = until
            default: break
            }
            if let status { sqlite3_bind_int64(handle, 6, Int64(status)) } else { sqlite3_bind_null(handle, 6) }
            if let reason { bindText(handle, 7, reason) } else { sqlite3_bind_null(handle, 7) }
            if let apnsTimestamp {
                sqlite3_bind_int64(handle, 8, apnsTimestamp)
            } else {
                sqlite3_bind_null(handle, 8)
            }
            if let retryAt { sqlite3_bind_double(handle, 9, retryAt) } else { sqlite3_bind_null(handle, 9) }
            sqlite3_bind_double(handle, 10, now)
            let code = sqlite3_step(handle)
            guard code == SQLITE_DONE else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                    sql: statement.sql
                )
            }
        }
        sqlite3_reset(handle)
        if let close = batch.close {
            try db.execute(
                sql: "UPDATE run SET status = ?, updated_at = ?, planned = coalesce(?, planned) WHERE id = ?",
                arguments: [close.status.rawValue, now, close.planned, run.rawValue]
            )
        }
    }

    public func dispatched(
        of run: RunID,
        within seqs: ClosedRange<Int>?
    ) async throws(JournalError)
        -> [ClosedRange<Int>]
    {
        try await ranges(in: .dispatch, of: run, within: seqs)
    }

    public func delivered(
        of run: RunID,
        within seqs: ClosedRange<Int>?
    ) async throws(JournalError)
        -> [ClosedRange<Int>]
    {
        try await ranges(in: .delivery, of: run, within: seqs)
    }

    /// The two tables of seq ranges.
    private enum RangeTable: String {
        case dispatch, delivery
    }

    /// The ranges of `run` in `table`; within `seqs`, those starting in them (by the key) and the
    /// one before, when it reaches into them: nothing else of the run is read.
    private func ranges(
        in table: RangeTable,
        of run: RunID,
        within seqs: ClosedRange<Int>? = nil
    ) async throws(JournalError) -> [ClosedRange<Int>] {
        try await read { db in
            func fetch(_ sql: String, _ arguments: StatementArguments) throws -> [ClosedRange<Int>] {
                try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in (row[0] as Int)...(row[1] as Int) }
            }
            let table = table.rawValue
            guard let seqs else {
                return try fetch(
                    "SELECT first_seq, last_seq FROM \(table) WHERE run = ? ORDER BY first_seq",
                    [run.rawValue]
                )
            }
            let before = try fetch(
                "SELECT first_seq, last_seq FROM \(table) WHERE run = ? AND first_seq < ? ORDER BY first_seq DESC LIMIT 1",
                [run.rawValue, seqs.lowerBound]
            )
            let starting = try fetch(
                """
                SELECT first_seq, last_seq FROM \(table) WHERE run = ? AND first_seq BETWEEN ? AND ?
                ORDER BY first_seq
                """,
                [run.rawValue, seqs.lowerBound, seqs.upperBound]
            )
            return before.filter { $0.upperBound >= seqs.lowerBound } + starting
        }
    }

    /// How many seqs the ranges of `run` in `table` cover.
    private static func rangeTotal(in table: RangeTable, of run: RunID, _ db: Database) throws -> Int {
        try Int.fetchOne(
            db,
            sql: "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM \(table.rawValue) WHERE run = ?",
            arguments: [run.rawValue]
        ) ?? 0
    }

    public func deliveryHashes(since: Double) async throws(JournalError) -> [UInt64] {
        try await read { db in
            var hashes: [UInt64] = []
            let rows = try String.fetchCursor(
                db,
                sql: "SELECT token FROM recipient WHERE state = 'delivered' AND updated_at >= ?",
                arguments: [since]
            )
            while let token = try rows.next() { hashes.append(StableHash.hash(token)) }
            let ranges = try Row.fetchCursor(
                db,
                sql: "SELECT tokens, token_hashes FROM delivery WHERE delivered_at >= ?",
                arguments: [since]
            )
            while let range = try ranges.next() {
                if let encoded = range["token_hashes"] as Data? {
                    encoded.withUnsafeBytes { DeliveredRange.forEachHash(in: $0) { hashes.append($0) } }
                } else {
                    // Written before v5: the tokens themselves, one per line.
                    for token in (range["tokens"] as String).split(separator: "\n") {
                        hashes.append(StableHash.hash(token))
                    }
                }
            }
            return hashes
        }
    }

    public func answersPerSecond(of run: RunID) async throws(JournalError) -> [AnswersInSecond] {
        try await read { db in
            var entries: [(at: Double, delivered: Int, failed: Int, retried: Int)] = []
            let ranges = try Row.fetchCursor(
                db,
                sql: """
                    SELECT CAST(delivered_at AS INTEGER) AS second, SUM(last_seq - first_seq + 1) AS count
                    FROM delivery WHERE run = ? GROUP BY second
                    """,
                arguments: [run.rawValue]
            )
            while let row = try ranges.next() { entries.append((row["second"], row["count"], 0, 0)) }
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT CAST(updated_at AS INTEGER) AS second, state, COUNT(*) AS count,
                        SUM(attempt > 1) AS retried FROM recipient
                    WHERE run = ? AND state IN ('delivered', 'failed') GROUP BY second, state
                    """,
                arguments: [run.rawValue]
            )
            while let row = try rows.next() {
                let count: Int = row["count"]
                let delivered = (row["state"] as String) == "delivered"
                entries.append((row["second"], delivered ? count : 0, delivered ? 0 : count, row["retried"]))
            }
            return AnswersInSecond.tally(entries)
        }
    }

    public func stats(of run: RunID) async throws(JournalError) -> RunStats? {
        // A sliced run's workers each saved their slices' own: added to the creator's.
        let texts = try await read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT stats FROM run_stats WHERE run = ?
                    UNION ALL SELECT stats FROM slice WHERE run = ? AND stats IS NOT NULL
                    """,
                arguments: [run.rawValue, run.rawValue]
            )
        }
        return try RunStats.sum(texts)
    }

    public func recipients(of run: RunID, after seq: Int, limit: Int) async throws(JournalError) -> [RecipientRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM recipient WHERE run = ? AND seq > ? ORDER BY seq LIMIT ?",
                arguments: [run.rawValue, seq, limit]
            ).map { row in
                RecipientRecord(
                    seq: row["seq"],
                    token: row["token"],
                    state: try Self.state(from: row),
                    updatedAt: row["updated_at"]
                )
            }
        }
    }

    public func counts(of run: RunID) async throws(JournalError) -> RecipientCounts {
        try await read { db in
            var counts = RecipientCounts()
            let dispatched = try Self.rangeTotal(in: .dispatch, of: run, db)
            counts.delivered = try Self.rangeTotal(in: .delivery, of: run, db)
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT state, count(*) AS n FROM recipient WHERE run = ? GROUP BY state",
                arguments: [run.rawValue]
            )
            while let row = try rows.next() {
                let count: Int = row["n"]
                switch row["state"] as String {
                case "planned": counts.planned += count
                case "in_flight": counts.inFlight += count
                case "delivered": counts.delivered += count
                case "failed": counts.failed += count
                case "waiting": counts.waiting += count
                default: counts.unknown += count
                }
            }
            counts.inFlight += max(0, dispatched - counts.total)
            return counts
        }
    }

    private static func state(from row: Row) throws -> RecipientState {
        let attempt: Int = row["attempt"]
        switch row["state"] as String {
        case "planned": return .planned
        case "in_flight": return .inFlight(attempt: attempt)
        case "delivered": return .delivered(attempt: attempt)
        case "failed":
            return .failed(status: row["status"], reason: row["reason"] ?? "", apnsTimestamp: row["apns_timestamp"])
        case "waiting": return .waiting(until: row["retry_at"] ?? 0, attempt: attempt)
        case "unknown": return .unknown(attempt: attempt)
        case let other: throw JournalError(.corrupt, "unknown recipient state '\(other)' in the journal")
        }
    }

    // MARK: invalid tokens

    public func rememberInvalidTokens(_ tokens: [InvalidToken]) async throws(JournalError) {
        guard !tokens.isEmpty else { return }
        try await write { db in try Self.remember(tokens, in: db) }
    }

    private static func remember(_ tokens: [InvalidToken], in db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO invalid_token (topic, token, reason, apns_timestamp, seen_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (topic, token) DO UPDATE SET
                    reason = CASE WHEN excluded.seen_at >= seen_at THEN excluded.reason ELSE reason END,
                    seen_at = max(seen_at, excluded.seen_at),
                    apns_timestamp = CASE
                        WHEN apns_timestamp IS NULL THEN excluded.apns_timestamp
                        WHEN excluded.apns_timestamp IS NULL THEN apns_timestamp
                        ELSE max(apns_timestamp, excluded.apns_timestamp) END
                """
        )
        for token in tokens {
            try statement.execute(arguments: [
                token.topic, token.token, token.reason, token.apnsTimestamp, token.seenAt,
            ])
        }
    }

    public func invalidTokens(topic: String?, since: Double?) async throws(JournalError) -> [InvalidToken] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM invalid_token WHERE (?1 IS NULL OR topic = ?1) AND (?2 IS NULL OR seen_at >= ?2)
                    ORDER BY seen_at, topic, token
                    """,
                arguments: [topic, since]
            ).map { row in
                InvalidToken(
                    topic: row["topic"],
                    token: row["token"],
                    reason: row["reason"],
                    apnsTimestamp: row["apns_timestamp"],
                    seenAt: row["seen_at"]
                )
            }
        }
    }

    public func invalidTokenCounts(since: Double?) async throws(JournalError) -> [(topic: String, count: Int)] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT topic, count(*) AS count FROM invalid_token WHERE (?1 IS NULL OR seen_at >= ?1)
                    GROUP BY topic ORDER BY topic
                    """,
                arguments: [since]
            ).map { row in (topic: row["topic"], count: row["count"]) }
        }
    }

    // MARK: access and errors

    func read<T>(_ body: (Database) throws -> T) throws(JournalError) -> T {
        do {
            return try database.read(body)
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(JournalError) -> T {
        do {
            return try database.write(body)
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// `read` for async callers: GRDB runs `body` on the journal's own queue, so waiting for a lock
    /// held by another process never blocks a thread of the cooperative pool.
    func read<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws(JournalError) -> T {
        do {
            return try await database.read(body)
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// `write` for async callers (see the async `read`).
    func write<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws(JournalError) -> T {
        do {
            return try await database.write(body)
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// `write` with a synchronous (FULL) commit: the transaction is on disk, not only in the
    /// write-ahead log's page cache, when this returns. For writes answered to someone else
    /// (Apple's notifications) that a power cut must not lose.
    func writeDurably<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws(JournalError) -> T {
        do {
            return try await database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    static func translate(_ error: any Error, path: String) -> JournalError {
        if let error = error as? JournalError { return error }
        if error is CancellationError {
            return JournalError(.failed, "the journal \(path) was not written: the task was cancelled (shutting down)")
        }
        guard let error = error as? DatabaseError else {
            return JournalError(.failed, "the journal \(path) failed: \(error)")
        }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return JournalError(
                .corrupt,
                "\(path) is not a Pushcamp journal or is damaged (SQLite: \(error.message ?? "\(error.resultCode)")); "
                    + "move it aside to start a new one"
            )
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return JournalError(
                .locked,
                "\(path) is locked by another process (another pushcamp send?); wait for it or stop it"
            )
        case .SQLITE_READONLY:
            return JournalError(
                .cannotOpen,
                "the journal \(path) is read-only: it can be read (runs, report, plan) but not sent from; make it and its folder writable"
            )
        case .SQLITE_CANTOPEN, .SQLITE_PERM:
            return JournalError(
                .cannotOpen,
                "cannot open the journal \(path): \(error.message ?? "\(error.resultCode)")"
            )
        case .SQLITE_FULL:
            return JournalError(.failed, "the disk holding the journal \(path) is full")
        default:
            return JournalError(.failed, "the journal \(path) failed: \(error.message ?? "\(error.resultCode)")")
        }
    }
}

/// Binds `text` to parameter `index` of `statement`; SQLite copies it.
private func bindText(_ statement: SQLiteStatement, _ index: Int32, _ text: String) {
    var text = text
    text.withUTF8 { bytes in
        _ = sqlite3_bind_text(
            statement,
            index,
            bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
            Int32(bytes.count),
            unsafeBitCast(-1, to: sqlite3_destructor_type.self)  // SQLITE_TRANSIENT
        )
    }
}
