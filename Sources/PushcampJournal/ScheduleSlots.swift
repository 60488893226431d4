import GRDB

/// A slot of a scheduled campaign as `pushcamp serve` recorded it: fired (with its run) or skipped
/// (with the reason). Each (campaign, slot) is recorded once, whatever the number of processes.
public struct SlotRecord: Sendable, Hashable {
    public enum Outcome: String, Sendable {
        case fired
        case skipped
        /// Fired, and its run finally failed (a broadcast APNs refused, or that could not go
        /// however often it was tried): `reason` and `detail` say why.
        case failed
    }

    public var campaign: String
    /// Seconds since 1970.
    public var slot: Int64
    public var outcome: Outcome
    /// Why a slot was skipped (`missed`, `superseded`, `overlap`, `not-caught-up`, `invalid`,
    /// `refused`, `sent`) or failed (APNs' reason, `connection-lost`, `cannot-connect`), and what
    /// happened in words.
    public var reason: String?
    public var detail: String?
    public var run: RunID?
    /// The last slot of a group of slots skipped together, and how many there were.
    public var through: Int64?
    public var count: Int
    public var recordedAt: Double

    public init(
        campaign: String,
        slot: Int64,
        outcome: Outcome,
        reason: String? = nil,
        detail: String? = nil,
        run: RunID? = nil,
        through: Int64? = nil,
        count: Int = 1,
        recordedAt: Double
    ) {
        self.campaign = campaign
        self.slot = slot
        self.outcome = outcome
        self.reason = reason
        self.detail = detail
        self.run = run
        self.through = through
        self.count = count
        self.recordedAt = recordedAt
    }

    /// The latest slot this record accounts for.
    public var last: Int64 { through ?? slot }
}

/// Schedule slots: which slot of which scheduled campaign fired (with the run it created) or was
/// skipped (and why). Each (campaign, slot) is recorded once across every process on the journal;
/// the claim and its run are one transaction, so a slot never fires twice and never without a run.
public protocol ScheduleSlotStore: Sendable {
    /// Records `slot` as fired and creates its run, in one transaction; nil when the slot is
    /// recorded already (fired or skipped, by this process or another).
    func claimSlot(
        campaign: String,
        slot: Int64,
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord?

    /// Records slots `first` through `through` (`count` of them) as skipped for `reason`, unless
    /// `first` is recorded already; returns whether this call recorded them.
    @discardableResult
    func recordSkipped(
        campaign: String,
        first: Int64,
        through: Int64,
        count: Int,
        reason: String,
        detail: String?,
        now: Double
    ) async throws(JournalError) -> Bool

    /// Marks the fired `slot` as failed, for `reason`: its run ended without doing what the slot
    /// was for (its broadcast refused, or never answered however often it went). False when the
    /// slot is not recorded as fired.
    @discardableResult
    func recordSlotFailed(
        campaign: String,
        slot: Int64,
        reason: String,
        detail: String?
    ) async throws(JournalError) -> Bool

    /// The record of `slot` of `campaign`, if any.
    func slot(campaign: String, at slot: Int64) async throws(JournalError) -> SlotRecord?

    /// The latest slot recorded for `campaign` (by the slot it accounts for up to), if any.
    func latestSlot(campaign: String) async throws(JournalError) -> SlotRecord?

    /// The newest slot of `campaign` recorded as fired (or fired and failed), if any.
    func latestFiredSlot(campaign: String) async throws(JournalError) -> Int64?

    /// Recorded slots, newest first: of one campaign, or of all.
    func slots(campaign: String?, limit: Int) async throws(JournalError) -> [SlotRecord]

    /// When `serve` first saw `campaign` scheduled: `now` the first time any process asks.
    func watchStart(campaign: String, now: Double) async throws(JournalError) -> Double

    /// Unfinished runs fired for a slot, oldest first: what a restarted `serve` resumes.
    func unfinishedSlotRuns() async throws(JournalError) -> [RunRecord]
}

extension SQLiteJournal: ScheduleSlotStore {
    public func claimSlot(
        campaign: String,
        slot: Int64,
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord? {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO schedule_slot (campaign, slot, outcome, recorded_at)
                    VALUES (?, ?, 'fired', ?)
                    """,
                arguments: [campaign, slot, now]
            )
            guard db.changesCount == 1 else { return nil }
            try db.execute(
                sql: """
                    INSERT INTO run (campaign, revision, status, started_at, updated_at, file, slot)
                    VALUES (?, ?, 'running', ?, ?, ?, ?)
                    """,
                arguments: [campaign, revision, now, now, file, slot]
            )
            let id = db.lastInsertedRowID
            try db.execute(
                sql: "UPDATE schedule_slot SET run = ? WHERE campaign = ? AND slot = ?",
                arguments: [id, campaign, slot]
            )
            var run = RunRecord.started(
                id: RunID(id),
                campaign: campaign,
                revision: revision,
                now: now,
                file: file,
                replay: nil
            )
            run.slot = slot
            return run
        }
    }

    @discardableResult
    public func recordSkipped(
        campaign: String,
        first: Int64,
        through: Int64,
        count: Int,
        reason: String,
        detail: String?,
        now: Double
    ) async throws(JournalError) -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO schedule_slot (campaign, slot, outcome, reason, detail, through, count, recorded_at)
                    VALUES (?, ?, 'skipped', ?, ?, ?, ?, ?)
                    """,
                arguments: [campaign, first, reason, detail, through == first ? nil : through, count, now]
            )
            return db.changesCount == 1
        }
    }

    @discardableResult
    public func recordSlotFailed(
        campaign: String,
        slot: Int64,
        reason: String,
        detail: String?
    ) async throws(JournalError) -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE schedule_slot SET outcome = 'failed', reason = ?, detail = ?
                    WHERE campaign = ? AND slot = ? AND outcome = 'fired'
                    """,
                arguments: [reason, detail, campaign, slot]
            )
            return db.changesCount == 1
        }
    }

    public func slot(campaign: String, at slot: Int64) async throws(JournalError) -> SlotRecord? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM schedule_slot WHERE campaign = ? AND slot = ?",
                arguments: [campaign, slot]
            ).map(Self.slot(from:))
        }
    }

    public func latestSlot(campaign: String) async throws(JournalError) -> SlotRecord? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT * FROM schedule_slot WHERE campaign = ?
                    ORDER BY coalesce(through, slot) DESC LIMIT 1
                    """,
                arguments: [campaign]
            ).map(Self.slot(from:))
        }
    }

    public func latestFiredSlot(campaign: String) async throws(JournalError) -> Int64? {
        try await read { db in
            try Int64.fetchOne(
                db,
                sql: "SELECT max(slot) FROM schedule_slot WHERE campaign = ? AND outcome IN ('fired', 'failed')",
                arguments: [campaign]
            )
        }
    }

    public func slots(campaign: String?, limit: Int) async throws(JournalError) -> [SlotRecord] {
        try await read { db in
            if let campaign {
                return try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM schedule_slot WHERE campaign = ? ORDER BY slot DESC LIMIT ?",
                    arguments: [campaign, limit]
                ).map(Self.slot(from:))
            }
            return try Row.fetchAll(
                db,
                sql: "SELECT * FROM schedule_slot ORDER BY slot DESC LIMIT ?",
                arguments: [limit]
            ).map(Self.slot(from:))
        }
    }

    public func watchStart(campaign: String, now: Double) async throws(JournalError) -> Double {
        try await write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO schedule_watch (campaign, since) VALUES (?, ?)",
                arguments: [campaign, now]
            )
            return try Double.fetchOne(
                db,
                sql: "SELECT since FROM schedule_watch WHERE campaign = ?",
                arguments: [campaign]
            ) ?? now
        }
    }

    public func unfinishedSlotRuns() async throws(JournalError) -> [RunRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM run WHERE slot IS NOT NULL AND status IN ('running', 'interrupted') ORDER BY id"
            ).map(Self.run(from:))
        }
    }

    private static func slot(from row: Row) -> SlotRecord {
        SlotRecord(
            campaign: row["campaign"],
            slot: row["slot"],
            outcome: SlotRecord.Outcome(rawValue: row["outcome"]) ?? .skipped,
            reason: row["reason"],
            detail: row["detail"],
            run: (row["run"] as Int64?).map(RunID.init),
            through: row["through"],
            count: row["count"],
            recordedAt: row["recorded_at"]
        )
    }
}
