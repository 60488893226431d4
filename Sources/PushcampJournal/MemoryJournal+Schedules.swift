import Synchronization

/// Schedule slots and trigger firings kept in memory, with the same answers as the SQLite and
/// PostgreSQL journals (the contract suite holds all three to them).
extension MemoryJournal: ScheduleSlotStore {
    public func claimSlot(
        campaign: String,
        slot: Int64,
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord? {
        state.withLock { state in
            guard state.slots[campaign]?[slot] == nil else { return nil }
            var run = state.startRun(campaign: campaign, revision: revision, now: now, file: file, replay: nil)
            run.slot = slot
            state.runs[state.runs.count - 1] = run
            state.slots[campaign, default: [:]][slot] = SlotRecord(
                campaign: campaign,
                slot: slot,
                outcome: .fired,
                run: run.id,
                recordedAt: now
            )
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
        state.withLock { state in
            guard state.slots[campaign]?[first] == nil else { return false }
            state.slots[campaign, default: [:]][first] = SlotRecord(
                campaign: campaign,
                slot: first,
                outcome: .skipped,
                reason: reason,
                detail: detail,
                through: through == first ? nil : through,
                count: count,
                recordedAt: now
            )
            return true
        }
    }

    @discardableResult
    public func recordSlotFailed(
        campaign: String,
        slot: Int64,
        reason: String,
        detail: String?
    ) async throws(JournalError) -> Bool {
        state.withLock { state in
            guard var record = state.slots[campaign]?[slot], record.outcome == .fired else { return false }
            record.outcome = .failed
            record.reason = reason
            record.detail = detail
            state.slots[campaign]![slot] = record
            return true
        }
    }

    public func slot(campaign: String, at slot: Int64) async throws(JournalError) -> SlotRecord? {
        state.withLock { state in state.slots[campaign]?[slot] }
    }

    public func latestSlot(campaign: String) async throws(JournalError) -> SlotRecord? {
        state.withLock { state in state.slots[campaign]?.values.max { $0.last < $1.last } }
    }

    public func latestFiredSlot(campaign: String) async throws(JournalError) -> Int64? {
        state.withLock { state in state.slots[campaign]?.values.filter { $0.outcome != .skipped }.map(\.slot).max() }
    }

    public func slots(campaign: String?, limit: Int) async throws(JournalError) -> [SlotRecord] {
        state.withLock { state in
            let records =
                campaign.map { Array((state.slots[$0] ?? [:]).values) } ?? state.slots.values.flatMap(\.values)
            return Array(records.sorted { $0.slot > $1.slot }.prefix(limit))
        }
    }

    public func watchStart(campaign: String, now: Double) async throws(JournalError) -> Double {
        state.withLock { state in
            if let since = state.watched[campaign] { return since }
            state.watched[campaign] = now
            return now
        }
    }

    public func unfinishedSlotRuns() async throws(JournalError) -> [RunRecord] {
        state.withLock { state in state.runs.filter { $0.slot != nil && $0.status.isUnfinished } }
    }
}

extension MemoryJournal: TriggerFiringStore {
    static func key(_ campaign: String, _ notification: String) -> String { campaign + "\u{0}" + notification }

    /// Records `firings` not recorded already, as the notification's transaction does.
    static func insert(_ firings: [TriggerFiring], into state: inout State) {
        for firing in firings {
            let key = key(firing.campaign, firing.notification)
            guard state.firings[key] == nil else { continue }
            state.firings[key] = firing
            state.firingOrder.append(key)
        }
    }

    private func allFirings() -> [TriggerFiring] {
        state.withLock { state in state.firingOrder.compactMap { state.firings[$0] } }
    }

    public func dueFirings(now: Double, limit: Int) async throws(JournalError) -> [TriggerFiring] {
        let due = allFirings().filter { $0.status == .pending && $0.dueAt <= now }
        return Array(due.sorted { $0.dueAt < $1.dueAt }.prefix(limit))
    }

    public func firings(campaign: String?, limit: Int) async throws(JournalError) -> [TriggerFiring] {
        let recorded = allFirings().filter { campaign == nil || $0.campaign == campaign }
        return Array(
            recorded.sorted { ($1.recordedAt, $0.notification) < ($0.recordedAt, $1.notification) }.prefix(limit)
        )
    }

    public func firing(campaign: String, notification: String) async throws(JournalError) -> TriggerFiring? {
        state.withLock { state in state.firings[Self.key(campaign, notification)] }
    }

    public func firings(run: RunID) async throws(JournalError) -> [TriggerFiring] {
        allFirings().filter { $0.run == run }.sorted { $0.notification < $1.notification }
    }

    public func claimFirings(
        campaign: String,
        notifications: [String],
        revision: String,
        file: String?,
        now: Double
    ) async throws(JournalError) -> RunRecord? {
        state.withLock { state in
            let keys = notifications.map { Self.key(campaign, $0) }.filter { state.firings[$0]?.status == .pending }
            guard !keys.isEmpty else { return nil }
            let run = state.startRun(campaign: campaign, revision: revision, now: now, file: file, replay: nil)
            for key in keys {
                state.firings[key]?.status = .fired
                state.firings[key]?.run = run.id
            }
            return run
        }
    }

    @discardableResult
    public func settleFirings(
        run: RunID,
        joined: Set<String>,
        normalize: @escaping @Sendable (String) -> String
    ) async throws(JournalError) -> Int {
        state.withLock { state in
            var count = 0
            for key in state.firingOrder {
                guard let firing = state.firings[key], firing.run == run, firing.status == .fired else { continue }
                guard firing.subscriptionKey.map({ !joined.contains(normalize($0)) }) ?? true else { continue }
                state.firings[key]?.status = .noRecipient
                state.firings[key]?.detail = "no audience row is joined to the subscription"
                count += 1
            }
            return count
        }
    }

    public func skipFirings(campaign: String, notifications: [String], detail: String) async throws(JournalError) {
        state.withLock { state in
            for key in notifications.map({ Self.key(campaign, $0) }) where state.firings[key]?.status == .pending {
                state.firings[key]?.status = .skipped
                state.firings[key]?.detail = detail
            }
        }
    }

    public func unfinishedTriggerRuns() async throws(JournalError) -> [RunRecord] {
        state.withLock { state in
            let fired = Set(state.firings.values.compactMap(\.run))
            return state.runs.filter { $0.status.isUnfinished && fired.contains($0.id) }
        }
    }
}
