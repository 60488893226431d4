import GRDB

/// A trigger campaign fired by an App Store notification, as the journal keeps it: recorded once per
/// (campaign, notification) in the transaction that stores the notification, then claimed by the
/// run that sends it, so an event fires a campaign at most once whatever restarts happen.
public struct TriggerFiring: Sendable, Hashable {
    public enum Status: String, Sendable {
        /// Waiting for its time (`delay`) and a run.
        case pending
        /// Claimed by `run`.
        case fired
        /// Fired, but no audience row is joined to its subscription (or the event names none):
        /// counted, not failed.
        case noRecipient = "no-recipient"
        /// Not sent, for `detail` (the campaign was removed, refused or invalid).
        case skipped
    }

    public var campaign: String
    /// The notification's `notificationUUID`.
    public var notification: String
    /// The subscription's app account token or original transaction id, as the campaign joins by;
    /// nil when the notification carries none.
    public var subscriptionKey: String?
    /// Seconds since 1970.
    public var dueAt: Double
    public var status: Status
    public var detail: String?
    public var run: RunID?
    public var recordedAt: Double

    public init(
        campaign: String,
        notification: String,
        subscriptionKey: String?,
        dueAt: Double,
        status: Status = .pending,
        detail: String? = nil,
        run: RunID? = nil,
        recordedAt: Double
    ) {
        self.campaign = campaign
        self.notification = notification
        self.subscriptionKey = subscriptionKey
        self.dueAt = dueAt
        self.status = status
        self.detail = detail
        self.run = run
        self.recordedAt = recordedAt
    }
}

/// Trigger firings: one per (campaign, notification), recorded in the transaction that stores the
/// notification (`NotificationStore`), claimed once across every process by the run that sends
/// it, and settled by that run.
public protocol TriggerFiringStore: Sendable {
    /// Pending firings due by `now`, oldest first.
    func dueFirings(now: Double, limit: Int) async throws(JournalError) -> [TriggerFiring]

    /// Firings, newest first: of one campaign, or of all.
    func firings(campaign: String?, limit: Int) async throws(JournalError) -> [TriggerFiring]

    /// The firing of `campaign` by `notification`, if recorded.
    func firing(campaign: String, notification: String) async throws(JournalError) -> TriggerFiring?

    /// The firings a run sends.
    func firings(run: RunID) async throws(JournalError) -> [TriggerFiring]

    /// Creates a run for the pending firings of `campaign` by `notifications` and marks them fired
    /// by it, in one transaction; nil when none of them is pending any more (claimed by this
    /// process or another, or skipped).
    func claimFirings(
        campaign: String,
        notifications: [String],
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord?

    /// Marks the firings of `run` whose subscription no audience row was joined to (their key,
    /// normalized, is not in `joined`) as `no-recipient`; returns how many.
    @discardableResult
    func settleFirings(
        run: RunID,
        joined: Set<String>,
        normalize: @escaping @Sendable (String) -> String
    ) async throws(JournalError) -> Int

    /// Marks pending firings as skipped (the campaign was removed, refused or invalid).
    func skipFirings(campaign: String, notifications: [String], detail: String) async throws(JournalError)

    /// Unfinished runs of trigger firings, oldest first: what a restarted `serve` resumes.
    func unfinishedTriggerRuns() async throws(JournalError) -> [RunRecord]
}

extension TriggerFiringStore {
    public func dueFirings(now: Double) async throws(JournalError) -> [TriggerFiring] {
        try await dueFirings(now: now, limit: 1000)
    }
}

extension SQLiteJournal: TriggerFiringStore {
    static func insert(_ firings: [TriggerFiring], in db: Database) throws {
        for firing in firings {
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO trigger_firing (campaign, notification, subscription_key, due_at, status, detail, recorded_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    firing.campaign, firing.notification, firing.subscriptionKey, firing.dueAt,
                    firing.status.rawValue, firing.detail, firing.recordedAt,
                ]
            )
        }
    }

    public func dueFirings(now: Double, limit: Int) async throws(JournalError) -> [TriggerFiring] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM trigger_firing WHERE status = 'pending' AND due_at <= ? ORDER BY due_at LIMIT ?",
                arguments: [now, limit]
            ).map(Self.firing(from:))
        }
    }

    public func firings(campaign: String?, limit: Int) async throws(JournalError) -> [TriggerFiring] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM trigger_firing \(campaign != nil ? "WHERE campaign = ?" : "")
                    ORDER BY recorded_at DESC, notification LIMIT ?
                    """,
                arguments: StatementArguments((campaign.map { [$0] } ?? []) as [any DatabaseValueConvertible] + [limit])
            ).map(Self.firing(from:))
        }
    }

    public func firing(campaign: String, notification: String) async throws(JournalError) -> TriggerFiring? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM trigger_firing WHERE campaign = ? AND notification = ?",
                arguments: [campaign, notification]
            ).map(Self.firing(from:))
        }
    }

    public func firings(run: RunID) async throws(JournalError) -> [TriggerFiring] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM trigger_firing WHERE run = ? ORDER BY notification",
                arguments: [run.rawValue]
            ).map(Self.firing(from:))
        }
    }

    public func claimFirings(
        campaign: String,
        notifications: [String],
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord? {
        try await write { db in
            let marks = databaseQuestionMarks(count: notifications.count)
            let pending = try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM trigger_firing
                    WHERE campaign = ? AND status = 'pending' AND notification IN (\(marks))
                    """,
                arguments: StatementArguments([campaign] + notifications)
            )
            guard let pending, pending > 0 else { return nil }
            try db.execute(
                sql: """
                    INSERT INTO run (campaign, revision, status, started_at, updated_at, file)
                    VALUES (?, ?, 'running', ?, ?, ?)
                    """,
                arguments: [campaign, revision, now, now, file]
            )
            let id = db.lastInsertedRowID
            try db.execute(
                sql: """
                    UPDATE trigger_firing SET status = 'fired', run = ?
                    WHERE campaign = ? AND status = 'pending' AND notification IN (\(marks))
                    """,
                arguments: StatementArguments([id, campaign] as [any DatabaseValueConvertible] + notifications)
            )
            return RunRecord.started(
                id: RunID(id),
                campaign: campaign,
                revision: revision,
                now: now,
                file: file,
                replay: nil
            )
        }
    }

    @discardableResult
    public func settleFirings(
        run: RunID,
        joined: Set<String>,
        normalize: @escaping @Sendable (String) -> String
    ) async throws(JournalError)
        -> Int
    {
        try await write { db in
            let firings = try Row.fetchAll(
                db,
                sql: "SELECT * FROM trigger_firing WHERE run = ? AND status = 'fired'",
                arguments: [run.rawValue]
            ).map(Self.firing(from:))
            var count = 0
            for firing in firings where firing.subscriptionKey.map({ !joined.contains(normalize($0)) }) ?? true {
                try db.execute(
                    sql: """
                        UPDATE trigger_firing SET status = 'no-recipient',
                            detail = 'no audience row is joined to the subscription'
                        WHERE campaign = ? AND notification = ?
                        """,
                    arguments: [firing.campaign, firing.notification]
                )
                count += 1
            }
            return count
        }
    }

    public func skipFirings(campaign: String, notifications: [String], detail: String) async throws(JournalError) {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE trigger_firing SET status = 'skipped', detail = ?
                    WHERE campaign = ? AND status = 'pending' AND notification IN (\(databaseQuestionMarks(count: notifications.count)))
                    """,
                arguments: StatementArguments([detail, campaign] + notifications)
            )
        }
    }

    public func unfinishedTriggerRuns() async throws(JournalError) -> [RunRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM run WHERE status IN ('running', 'interrupted')
                    AND id IN (SELECT run FROM trigger_firing WHERE run IS NOT NULL) ORDER BY id
                    """
            ).map(Self.run(from:))
        }
    }
}

extension SQLiteJournal {
    static func firing(from row: Row) -> TriggerFiring {
        TriggerFiring(
            campaign: row["campaign"],
            notification: row["notification"],
            subscriptionKey: row["subscription_key"],
            dueAt: row["due_at"],
            status: TriggerFiring.Status(rawValue: row["status"]) ?? .pending,
            detail: row["detail"],
            run: (row["run"] as Int64?).map(RunID.init),
            recordedAt: row["recorded_at"]
        )
    }
}
