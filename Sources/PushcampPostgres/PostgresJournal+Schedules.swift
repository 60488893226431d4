import PostgresNIO
import PushcampJournal

/// Schedule slots and trigger firings on PostgreSQL: a slot is claimed by the insert of its key
/// (whichever node gets there first creates the run, in the same transaction), a firing by a row
/// lock that other nodes skip (`FOR UPDATE SKIP LOCKED`), so no two nodes claim the same one and
/// none waits for another.
extension PostgresJournal: ScheduleSlotStore {
    public func claimSlot(
        campaign: String,
        slot: Int64,
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord? {
        let logger = self.logger
        let id: Int64? = try await transaction { connection in
            let claimed = try await Self.rows(
                """
                INSERT INTO schedule_slot (campaign, slot, outcome, recorded_at) VALUES (\(campaign), \(slot), 'fired', \(now))
                ON CONFLICT (campaign, slot) DO NOTHING RETURNING slot
                """,
                on: connection,
                logger: logger
            )
            guard !claimed.isEmpty else { return nil }
            let run = try await Self.rows(
                """
                INSERT INTO run (campaign, revision, status, started_at, updated_at, file, slot)
                VALUES (\(campaign), \(revision), 'running', \(now), \(now), \(file), \(slot)) RETURNING id
                """,
                on: connection,
                logger: logger
            )
            let id = try run.first?["id"].decode(Int64.self)
            _ = try await Self.rows(
                "UPDATE schedule_slot SET run = \(id) WHERE campaign = \(campaign) AND slot = \(slot)",
                on: connection,
                logger: logger
            )
            return id
        }
        guard let id else { return nil }
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
        let through: Int64? = through == first ? nil : through
        return
            !(try await rows(
                """
                INSERT INTO schedule_slot (campaign, slot, outcome, reason, detail, through, count, recorded_at)
                VALUES (\(campaign), \(first), 'skipped', \(reason), \(detail), \(through), \(count), \(now))
                ON CONFLICT (campaign, slot) DO NOTHING RETURNING slot
                """
            ).isEmpty)
    }

    @discardableResult
    public func recordSlotFailed(
        campaign: String,
        slot: Int64,
        reason: String,
        detail: String?
    ) async throws(JournalError) -> Bool {
        !(try await rows(
            """
            UPDATE schedule_slot SET outcome = 'failed', reason = \(reason), detail = \(detail)
            WHERE campaign = \(campaign) AND slot = \(slot) AND outcome = 'fired' RETURNING slot
            """
        ).isEmpty)
    }

    public func slot(campaign: String, at slot: Int64) async throws(JournalError) -> SlotRecord? {
        try await slots("SELECT * FROM schedule_slot WHERE campaign = \(campaign) AND slot = \(slot)").first
    }

    public func latestSlot(campaign: String) async throws(JournalError) -> SlotRecord? {
        try await slots(
            "SELECT * FROM schedule_slot WHERE campaign = \(campaign) ORDER BY coalesce(through, slot) DESC LIMIT 1"
        ).first
    }

    public func latestFiredSlot(campaign: String) async throws(JournalError) -> Int64? {
        let rows = try await rows(
            "SELECT max(slot) AS slot FROM schedule_slot WHERE campaign = \(campaign) AND outcome IN ('fired', 'failed')"
        )
        return try decode(rows.first, "slot", Int64?.self)
    }

    public func slots(campaign: String?, limit: Int) async throws(JournalError) -> [SlotRecord] {
        try await slots(
            """
            SELECT * FROM schedule_slot WHERE \(campaign)::text IS NULL OR campaign = \(campaign)
            ORDER BY slot DESC LIMIT \(limit)
            """
        )
    }

    public func watchStart(campaign: String, now: Double) async throws(JournalError) -> Double {
        let rows = try await rows(
            """
            INSERT INTO schedule_watch (campaign, since) VALUES (\(campaign), \(now))
            ON CONFLICT (campaign) DO UPDATE SET since = schedule_watch.since RETURNING since
            """
        )
        return try decode(rows.first, "since", Double.self)
    }

    public func unfinishedSlotRuns() async throws(JournalError) -> [RunRecord] {
        try await runs(
            """
            SELECT \(unescaped: Self.runColumns) FROM run
            WHERE slot IS NOT NULL AND status IN ('running', 'interrupted') ORDER BY id
            """
        )
    }

    private func slots(_ query: PostgresQuery) async throws(JournalError) -> [SlotRecord] {
        try await rows(query) { row in
            SlotRecord(
                campaign: try row["campaign"].decode(String.self),
                slot: try row["slot"].decode(Int64.self),
                outcome: SlotRecord.Outcome(rawValue: try row["outcome"].decode(String.self)) ?? .skipped,
                reason: try row["reason"].decode(String?.self),
                detail: try row["detail"].decode(String?.self),
                run: try row["run"].decode(Int64?.self).map(RunID.init),
                through: try row["through"].decode(Int64?.self),
                count: try row["count"].decode(Int.self),
                recordedAt: try row["recorded_at"].decode(Double.self)
            )
        }
    }
}

extension PostgresJournal: TriggerFiringStore {
    static func insert(_ firings: [TriggerFiring], on connection: PostgresConnection, logger: Logger) async throws {
        for firing in firings {
            _ = try await rows(
                """
                INSERT INTO trigger_firing (campaign, notification, subscription_key, due_at, status, detail, recorded_at)
                VALUES (\(firing.campaign), \(firing.notification), \(firing.subscriptionKey), \(firing.dueAt),
                    \(firing.status.rawValue), \(firing.detail), \(firing.recordedAt))
                ON CONFLICT (campaign, notification) DO NOTHING
                """,
                on: connection,
                logger: logger
            )
        }
    }

    public func dueFirings(now: Double, limit: Int) async throws(JournalError) -> [TriggerFiring] {
        try await firings(
            """
            SELECT * FROM trigger_firing WHERE status = 'pending' AND due_at <= \(now)
            ORDER BY due_at, campaign, notification LIMIT \(limit)
            """
        )
    }

    public func firings(campaign: String?, limit: Int) async throws(JournalError) -> [TriggerFiring] {
        try await firings(
            """
            SELECT * FROM trigger_firing WHERE \(campaign)::text IS NULL OR campaign = \(campaign)
            ORDER BY recorded_at DESC, notification LIMIT \(limit)
            """
        )
    }

    public func firing(campaign: String, notification: String) async throws(JournalError) -> TriggerFiring? {
        try await firings(
            "SELECT * FROM trigger_firing WHERE campaign = \(campaign) AND notification = \(notification)"
        ).first
    }

    public func firings(run: RunID) async throws(JournalError) -> [TriggerFiring] {
        try await firings("SELECT * FROM trigger_firing WHERE run = \(run.rawValue) ORDER BY notification")
    }

    public func claimFirings(
        campaign: String,
        notifications: [String],
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord? {
        let logger = self.logger
        let id: Int64? = try await transaction { connection in
            // Rows another node is claiming right now are skipped, not waited for: whichever of
            // them it does not end up with are still pending for the next tick.
            let pending = try await Self.rows(
                """
                SELECT notification FROM trigger_firing
                WHERE campaign = \(campaign) AND status = 'pending' AND notification = ANY(\(notifications)::text[])
                FOR UPDATE SKIP LOCKED
                """,
                on: connection,
                logger: logger
            ).map { try $0["notification"].decode(String.self) }
            guard !pending.isEmpty else { return nil }
            let run = try await Self.rows(
                """
                INSERT INTO run (campaign, revision, status, started_at, updated_at, file)
                VALUES (\(campaign), \(revision), 'running', \(now), \(now), \(file)) RETURNING id
                """,
                on: connection,
                logger: logger
            )
            let id = try run.first?["id"].decode(Int64.self)
            _ = try await Self.rows(
                """
                UPDATE trigger_firing SET status = 'fired', run = \(id)
                WHERE campaign = \(campaign) AND notification = ANY(\(pending)::text[])
                """,
                on: connection,
                logger: logger
            )
            return id
        }
        guard let id else { return nil }
        return RunRecord.started(
            id: RunID(id),
            campaign: campaign,
            revision: revision,
            now: now,
            file: file,
            replay: nil
        )
    }

    @discardableResult
    public func settleFirings(
        run: RunID,
        joined: Set<String>,
        normalize: @escaping @Sendable (String) -> String
    ) async throws(JournalError) -> Int {
        let fired = try await firings(
            "SELECT * FROM trigger_firing WHERE run = \(run.rawValue) AND status = 'fired' ORDER BY notification"
        )
        let unreached = fired.filter { firing in firing.subscriptionKey.map { !joined.contains(normalize($0)) } ?? true
        }
        guard let campaign = unreached.first?.campaign else { return 0 }
        try await execute(
            """
            UPDATE trigger_firing SET status = 'no-recipient', detail = 'no audience row is joined to the subscription'
            WHERE campaign = \(campaign) AND notification = ANY(\(unreached.map(\.notification))::text[])
            """
        )
        return unreached.count
    }

    public func skipFirings(campaign: String, notifications: [String], detail: String) async throws(JournalError) {
        try await execute(
            """
            UPDATE trigger_firing SET status = 'skipped', detail = \(detail)
            WHERE campaign = \(campaign) AND status = 'pending' AND notification = ANY(\(notifications)::text[])
            """
        )
    }

    public func unfinishedTriggerRuns() async throws(JournalError) -> [RunRecord] {
        try await runs(
            """
            SELECT \(unescaped: Self.runColumns) FROM run WHERE status IN ('running', 'interrupted')
            AND id IN (SELECT run FROM trigger_firing WHERE run IS NOT NULL) ORDER BY id
            """
        )
    }

    private func firings(_ query: PostgresQuery) async throws(JournalError) -> [TriggerFiring] {
        try await rows(query) { row in
            TriggerFiring(
                campaign: try row["campaign"].decode(String.self),
                notification: try row["notification"].decode(String.self),
                subscriptionKey: try row["subscription_key"].decode(String?.self),
                dueAt: try row["due_at"].decode(Double.self),
                status: TriggerFiring.Status(rawValue: try row["status"].decode(String.self)) ?? .pending,
                detail: try row["detail"].decode(String?.self),
                run: try row["run"].decode(Int64?.self).map(RunID.init),
                recordedAt: try row["recorded_at"].decode(Double.self)
            )
        }
    }
}
