import PushcampAPNsCore
import PushcampModel
import Synchronization

/// The in-memory twin of `SQLiteJournal`: the same behaviour, nothing on disk. For tests and as
/// the baseline the journal's cost is measured against.
public final class MemoryJournal: JournalStore, TokenHistoryStore {
    struct State {
        var runs: [RunRecord] = []
        var recipients: [RunID: [Int: RecipientRecord]] = [:]
        var dispatched: [RunID: [ClosedRange<Int>]] = [:]
        var delivered: [RunID: [(range: DeliveredRange, at: Double)]] = [:]
        var invalid: [String: InvalidToken] = [:]
        var stats: [RunID: RunStats] = [:]
        var records = 0
        var sharedRecords = 0
        var slots: [String: [Int64: SlotRecord]] = [:]
        var watched: [String: Double] = [:]
        /// By campaign and notification, in the order recorded.
        var firings: [String: TriggerFiring] = [:]
        var firingOrder: [String] = []
        var notifications: [String: AppStoreNotificationRecord] = [:]
        var subscriptions: [String: SubscriptionState] = [:]
        var notificationFailure: JournalError?
        var notificationDelay: Duration?
        var leases: [String: Lease] = [:]
        var providerTokens: [String: String] = [:]
        /// Until when (on `clock`) no token is minted, per key.
        var providerTokenHolds: [String: Double] = [:]
        var snapshots: [RunID: [Int: SnapshotPush]] = [:]
        var slices: [RunID: [MemorySlice]] = [:]
        var duplicates: [RunID: [Int: PossibleDuplicate]] = [:]
        var channels: [ChannelRecord] = []
        var engagement: [EngagementKey: EngagementEvent] = [:]
        var assignmentHeaders: [RunID: AssignmentHeader] = [:]
        var assignments: [RunID: [AssignmentID: KeptAssignment]] = [:]
        var assignmentsAdded: [RunID: [Int: KeptAssignment]] = [:]

        /// Appends a new run, as `createRun` does.
        mutating func startRun(
            campaign: String,
            revision: String,
            now: Double,
            file: String?,
            replay: ReplayOrigin?
        ) -> RunRecord {
            let run = RunRecord.started(
                id: RunID(Int64(runs.count + 1)),
                campaign: campaign,
                revision: revision,
                now: now,
                file: file,
                replay: replay
            )
            runs.append(run)
            return run
        }
    }

    let state = Mutex(State())
    /// Every `record` after this many fails as a full disk would (nil: never).
    private let recordsBeforeFailure: Int?

    /// The clock leases are held on: the store's clock, as `now()` on the database is for the
    /// others.
    let clock: any WallClock

    /// Whether a commit costs what it holds (as with SQLite), or a round trip however small (as
    /// with PostgreSQL): the writer then never splits a dispatch's commit from the answers before it.
    private let committedInPlace: Bool

    /// `failingAfter` records, every later one fails with "disk full": how tests see what a send
    /// does when its journal stops taking writes. `clock` times leases. `awaitsCommits`: a
    /// commit costs a round trip, as with PostgreSQL.
    public init(failingAfter records: Int? = nil, clock: any WallClock = SystemWallClock(), awaitsCommits: Bool = false)
    {
        recordsBeforeFailure = records
        self.clock = clock
        committedInPlace = !awaitsCommits
    }

    /// How many batches were recorded.
    public var recordCount: Int { state.withLock { $0.records } }
    /// Commits that carried both dispatches and answers (deliveries or recipients' new states).
    public var sharedRecordCount: Int { state.withLock { $0.sharedRecords } }

    public func unfinishedRun(campaign: String) async throws(JournalError) -> RunRecord? {
        state.withLock { state in
            state.runs.last { $0.campaign == campaign && $0.status.isUnfinished && $0.replay == nil }
        }
    }

    public func latestRun(campaign: String) async throws(JournalError) -> RunRecord? {
        state.withLock { state in state.runs.last { $0.campaign == campaign && $0.replay == nil } }
    }

    public func unfinishedReplay(of run: RunID) async throws(JournalError) -> RunRecord? {
        state.withLock { state in state.runs.last { $0.replay?.run == run && $0.status.isUnfinished } }
    }

    public func createRun(
        campaign: String,
        revision: String,
        now: Double,
        file: String?,
        replay: ReplayOrigin?
    ) async throws(JournalError) -> RunRecord {
        state.withLock { state in
            state.startRun(campaign: campaign, revision: revision, now: now, file: file, replay: replay)
        }
    }

    public func run(_ id: RunID) async throws(JournalError) -> RunRecord? {
        state.withLock { state in state.runs.first { $0.id == id } }
    }

    public func runs(limit: Int) async throws(JournalError) -> [RunRecord] {
        state.withLock { state in Array(state.runs.reversed().prefix(limit)) }
    }

    public func setStatus(_ status: RunStatus, of run: RunID, now: Double) async throws(JournalError) {
        try update(run) { record in
            record.status = status
            record.updatedAt = now
        }
    }

    public func requestCancel(_ run: RunID, now: Double) async throws(JournalError) {
        try update(run) { record in
            record.cancelRequested = true
            record.updatedAt = now
        }
    }

    public func cancelRequested(_ run: RunID) async throws(JournalError) -> Bool {
        guard let record = try await self.run(run) else {
            throw JournalError(.notFound, "no run \(run) in the journal")
        }
        return record.cancelRequested
    }

    public func setPlanned(_ count: Int, of run: RunID) async throws(JournalError) {
        try update(run) { $0.planned = count }
    }

    public func record(_ batch: JournalBatch, run: RunID, now: Double) async throws(JournalError) {
        try recordNow(batch, run: run, now: now)
    }

    /// A writer in a task where the send's loop runs (a commit here needs no other thread), whose
    /// commits cost what they hold (as with SQLite) or a round trip (as with PostgreSQL, with
    /// `awaitsCommits`).
    public var recorder: any RunRecorder { TaskRecorder(store: self, splitsAnswers: committedInPlace) }

    private func recordNow(_ batch: JournalBatch, run: RunID, now: Double) throws(JournalError) {
        let shared = !batch.dispatched.isEmpty && !(batch.delivered.isEmpty && batch.updates.isEmpty)
        let count = state.withLock { state in
            state.records += 1
            if shared { state.sharedRecords += 1 }
            return state.records
        }
        if let recordsBeforeFailure, count > recordsBeforeFailure {
            throw JournalError(.failed, "the disk holding the journal is full (database or disk is full)")
        }
        try checkFence(batch.lease)
        if batch.possibleDuplicates > 0 { try update(run) { $0.possibleDuplicates += batch.possibleDuplicates } }
        if batch.stats != nil { try update(run) { $0.updatedAt = now } }
        if let close = batch.close {
            try update(run) { record in
                record.status = close.status
                record.updatedAt = now
                if let planned = close.planned { record.planned = planned }
            }
        }
        rememberNow(batch.invalidTokens)
        state.withLock { state in
            if let stats = batch.stats { state.stats[run] = stats }
            for duplicate in batch.duplicates { state.duplicates[run, default: [:]][duplicate.seq] = duplicate }
            if !batch.dispatched.isEmpty { state.dispatched[run, default: []].append(contentsOf: batch.dispatched) }
            if !batch.delivered.isEmpty {
                state.delivered[run, default: []].append(contentsOf: batch.delivered.map { ($0, now) })
            }
            for update in batch.updates {
                state.recipients[run, default: [:]][update.seq] = RecipientRecord(
                    seq: update.seq,
                    token: update.token,
                    state: update.state,
                    updatedAt: now
                )
            }
        }
    }

    public func dispatched(
        of run: RunID,
        within seqs: ClosedRange<Int>?
    ) async throws(JournalError)
        -> [ClosedRange<Int>]
    {
        state.withLock { state in
            (state.dispatched[run] ?? []).filter { seqs?.overlaps($0) ?? true }.sorted { $0.lowerBound < $1.lowerBound }
        }
    }

    public func delivered(
        of run: RunID,
        within seqs: ClosedRange<Int>?
    ) async throws(JournalError)
        -> [ClosedRange<Int>]
    {
        state.withLock { state in
            (state.delivered[run] ?? []).map(\.range.seqs).filter { seqs?.overlaps($0) ?? true }
                .sorted { $0.lowerBound < $1.lowerBound }
        }
    }

    public func deliveryHashes(since: Double) async throws(JournalError) -> [UInt64] {
        let (rows, ranges) = state.withLock { state in (state.recipients, state.delivered) }
        var hashes: [UInt64] = []
        for row in rows.values.lazy.flatMap(\.values) {
            if case .delivered = row.state, row.updatedAt >= since { hashes.append(StableHash.hash(row.token)) }
        }
        for (range, at) in ranges.values.joined() where at >= since { hashes += range.tokenHashes }
        return hashes
    }

    public func answersPerSecond(of run: RunID) async throws(JournalError) -> [AnswersInSecond] {
        state.withLock { state in
            let ranges = (state.delivered[run] ?? []).map {
                (at: $0.at, delivered: $0.range.tokenHashes.count, failed: 0, retried: 0)
            }
            let rows = (state.recipients[run] ?? [:]).values.compactMap {
                row -> (at: Double, delivered: Int, failed: Int, retried: Int)? in
                let retried = row.state.attempt > 1 ? 1 : 0
                switch row.state {
                case .delivered: return (row.updatedAt, 1, 0, retried)
                case .failed: return (row.updatedAt, 0, 1, retried)
                default: return nil
                }
            }
            return AnswersInSecond.tally(ranges + rows)
        }
    }

    public func stats(of run: RunID) async throws(JournalError) -> RunStats? {
        state.withLock { state in
            (state.slices[run] ?? []).compactMap(\.stats).reduce(state.stats[run]) { $0?.adding($1) ?? $1 }
        }
    }

    public func recipients(of run: RunID, after seq: Int, limit: Int) async throws(JournalError) -> [RecipientRecord] {
        let rows = state.withLock { state in state.recipients[run] ?? [:] }
        return Array(rows.values.filter { $0.seq > seq }.sorted { $0.seq < $1.seq }.prefix(limit))
    }

    public func counts(of run: RunID) async throws(JournalError) -> RecipientCounts {
        state.withLock { state in
            var counts = RecipientCounts()
            let rows = state.recipients[run] ?? [:]
            for row in rows.values { counts.add(row.state) }
            counts.delivered += (state.delivered[run] ?? []).reduce(0) { $0 + $1.range.tokenHashes.count }
            let dispatched = (state.dispatched[run] ?? []).reduce(0) { $0 + $1.count }
            counts.inFlight += max(0, dispatched - counts.total)
            return counts
        }
    }

    public func rememberInvalidTokens(_ tokens: [InvalidToken]) async throws(JournalError) {
        rememberNow(tokens)
    }

    private func rememberNow(_ tokens: [InvalidToken]) {
        state.withLock { state in
            for token in tokens {
                let key = token.topic + "\u{0}" + token.token
                state.invalid[key] = InvalidToken.newer(state.invalid[key], token)
            }
        }
    }

    public func invalidTokens(topic: String?, since: Double?) async throws(JournalError) -> [InvalidToken] {
        state.withLock { state in
            state.invalid.values
                .filter { token in
                    (topic.map { $0 == token.topic } ?? true) && (since.map { token.seenAt >= $0 } ?? true)
                }
                .sorted { ($0.seenAt, $0.topic, $0.token) < ($1.seenAt, $1.topic, $1.token) }
        }
    }

    public func invalidTokenCounts(since: Double?) async throws(JournalError) -> [(topic: String, count: Int)] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for token in state.invalid.values where since.map({ token.seenAt >= $0 }) ?? true {
                counts[token.topic, default: 0] += 1
            }
            return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
    }

    func update(_ run: RunID, _ change: (inout RunRecord) -> Void) throws(JournalError) {
        let found = state.withLock { state in
            guard let index = state.runs.firstIndex(where: { $0.id == run }) else { return false }
            change(&state.runs[index])
            return true
        }
        if !found { throw JournalError(.notFound, "no run \(run) in the journal") }
    }
}

extension InvalidToken {
    /// What to keep when a token is reported dead again: the latest report, and the newest APNs
    /// timestamp either report carried.
    package static func newer(_ old: InvalidToken?, _ new: InvalidToken) -> InvalidToken {
        guard let old else { return new }
        var kept = new.seenAt >= old.seenAt ? new : old
        kept.apnsTimestamp = [old.apnsTimestamp, new.apnsTimestamp].compactMap { $0 }.max()
        return kept
    }
}
