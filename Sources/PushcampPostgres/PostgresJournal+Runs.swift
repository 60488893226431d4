import Foundation
import PostgresNIO
import PushcampJournal
import PushcampModel

/// Runs, recipients, dead tokens and delivery history on PostgreSQL. A batch is one transaction of
/// a few statements whatever its size: rows go in as arrays (`unnest`), not one statement each.
extension PostgresJournal: JournalStore, TokenHistoryStore {
    static let runColumns =
        "id, campaign, revision, status, started_at, updated_at, cancel_requested, possible_duplicates, planned, file, replay_of, replay_reasons, slot"

    public func unfinishedRun(campaign: String) async throws(JournalError) -> RunRecord? {
        try await runs(
            """
            SELECT \(unescaped: Self.runColumns) FROM run
            WHERE campaign = \(campaign) AND status IN ('running', 'interrupted') AND replay_of IS NULL
            ORDER BY id DESC LIMIT 1
            """
        ).first
    }

    public func latestRun(campaign: String) async throws(JournalError) -> RunRecord? {
        try await runs(
            """
            SELECT \(unescaped: Self.runColumns) FROM run WHERE campaign = \(campaign) AND replay_of IS NULL
            ORDER BY id DESC LIMIT 1
            """
        ).first
    }

    public func unfinishedReplay(of run: RunID) async throws(JournalError) -> RunRecord? {
        try await runs(
            """
            SELECT \(unescaped: Self.runColumns) FROM run
            WHERE replay_of = \(run.rawValue) AND status IN ('running', 'interrupted') ORDER BY id DESC LIMIT 1
            """
        ).first
    }

    public func createRun(
        campaign: String,
        revision: String,
        now: Double,
        file: String?,
        replay: ReplayOrigin?
    ) async throws(JournalError) -> RunRecord {
        let reasons = replay?.reasons.joined(separator: "\n")
        let rows = try await rows(
            """
            INSERT INTO run (campaign, revision, status, started_at, updated_at, file, replay_of, replay_reasons)
            VALUES (\(campaign), \(revision), 'running', \(now), \(now), \(file), \(replay?.run.rawValue), \(reasons))
            RETURNING id
            """
        )
        return RunRecord.started(
            id: RunID(try decode(rows.first, "id", Int64.self)),
            campaign: campaign,
            revision: revision,
            now: now,
            file: file,
            replay: replay
        )
    }

    public func run(_ id: RunID) async throws(JournalError) -> RunRecord? {
        try await runs("SELECT \(unescaped: Self.runColumns) FROM run WHERE id = \(id.rawValue)").first
    }

    public func runs(limit: Int) async throws(JournalError) -> [RunRecord] {
        try await runs("SELECT \(unescaped: Self.runColumns) FROM run ORDER BY id DESC LIMIT \(limit)")
    }

    public func setStatus(_ status: RunStatus, of run: RunID, now: Double) async throws(JournalError) {
        try await changeRun(
            run,
            "UPDATE run SET status = \(status.rawValue), updated_at = \(now) WHERE id = \(run.rawValue) RETURNING id"
        )
    }

    public func requestCancel(_ run: RunID, now: Double) async throws(JournalError) {
        try await changeRun(
            run,
            "UPDATE run SET cancel_requested = true, updated_at = \(now) WHERE id = \(run.rawValue) RETURNING id"
        )
    }

    public func cancelRequested(_ run: RunID) async throws(JournalError) -> Bool {
        guard let record = try await self.run(run) else { throw JournalError(.notFound, "no run \(run) in \(name)") }
        return record.cancelRequested
    }

    public func setPlanned(_ count: Int, of run: RunID) async throws(JournalError) {
        try await changeRun(run, "UPDATE run SET planned = \(count) WHERE id = \(run.rawValue) RETURNING id")
    }

    private func changeRun(_ run: RunID, _ query: PostgresQuery) async throws(JournalError) {
        if try await rows(query).isEmpty { throw JournalError(.notFound, "no run \(run) in \(name)") }
    }

    func runs(_ query: PostgresQuery) async throws(JournalError) -> [RunRecord] {
        try await rows(query, Self.run(from:))
    }

    static func run(from row: PostgresRandomAccessRow) throws -> RunRecord {
        RunRecord(
            id: RunID(try row["id"].decode(Int64.self)),
            campaign: try row["campaign"].decode(String.self),
            revision: try row["revision"].decode(String.self),
            status: RunStatus(rawValue: try row["status"].decode(String.self)) ?? .running,
            startedAt: try row["started_at"].decode(Double.self),
            updatedAt: try row["updated_at"].decode(Double.self),
            cancelRequested: try row["cancel_requested"].decode(Bool.self),
            possibleDuplicates: try row["possible_duplicates"].decode(Int.self),
            planned: try row["planned"].decode(Int?.self),
            file: try row["file"].decode(String?.self),
            slot: try row["slot"].decode(Int64?.self),
            replay: try row["replay_of"].decode(Int64?.self).map { run in
                ReplayOrigin(
                    run: RunID(run),
                    reasons: try row["replay_reasons"].decode(String?.self)?.split(separator: "\n").map(String.init)
                        ?? []
                )
            }
        )
    }

    /// `column` of `row`, or a clear error when the database answered nothing.
    func decode<T: PostgresDecodable>(
        _ row: PostgresRandomAccessRow?,
        _ column: String,
        _ type: T.Type
    ) throws(JournalError)
        -> T
    {
        guard let row else { throw JournalError(.failed, "the journal \(name) answered no row") }
        do {
            return try row[column].decode(T.self)
        } catch {
            throw translate(error)
        }
    }

    // MARK: recipients

    /// Stand-ins for NULL inside arrays (postgres-nio's arrays hold no optionals), turned back into
    /// NULL by `NULLIF` in the statement.
    static let noInteger = Int64.min
    static let noDouble = -Double.greatestFiniteMagnitude

    /// One batch in one statement, so one round trip: data-modifying CTEs, each writing only when
    /// the batch's lease is still the resource's (read `FOR SHARE`, so a takeover waits for this
    /// statement and a statement after a takeover sees the new fence). A single statement is its
    /// own transaction: all of it is recorded, or none.
    public func record(_ batch: JournalBatch, run: RunID, now: Double) async throws(JournalError) {
        guard !batch.isEmpty else { return }
        let statement = RecordStatement(query: Self.recordQuery(batch, run: run, now: now))
        let (client, logger) = (self.client, self.logger)
        let recorded = try await withDeadline {
            var answers: [Bool] = []
            for try await ok in try await client.execute(statement, logger: logger) { answers.append(ok) }
            return answers.first ?? false
        }
        guard let lease = batch.lease, !recorded else { return }
        throw JournalError.fenced(lease, current: try await self.lease(of: lease.resource))
    }

    /// The statement that records `batch`: its text is the same for every batch (every value is
    /// bound, arrays as one value each), so it is prepared once per connection.
    static func recordQuery(_ batch: JournalBatch, run: RunID, now: Double) -> PostgresQuery {
        let id = run.rawValue
        // One row per recipient and range: a later update of the same recipient wins, as in the
        // other journals (one statement may not change a row twice).
        var latest: [Int: RecipientUpdate] = [:]
        for update in batch.updates { latest[update.seq] = update }
        var dispatched: [Int: Int] = [:]
        for range in batch.dispatched {
            dispatched[range.lowerBound] = max(dispatched[range.lowerBound] ?? range.upperBound, range.upperBound)
        }
        let recipients = RecipientColumns(latest.values.sorted { $0.seq < $1.seq })
        let firsts = dispatched.keys.sorted()
        let lasts = firsts.map { Int64(dispatched[$0]!) }
        let invalid = Self.merged(batch.invalidTokens)
        let deliveredFirsts = batch.delivered.map { Int64($0.seqs.lowerBound) }
        let deliveredLasts = batch.delivered.map { Int64($0.seqs.upperBound) }
        let hashes = batch.delivered.map { ByteBuffer(bytes: $0.encodedHashes) }
        let lease = batch.lease
        let touchesRun = batch.stats != nil || batch.possibleDuplicates > 0 || batch.close != nil
        var duplicates: [Int: String] = [:]
        for duplicate in batch.duplicates { duplicates[duplicate.seq] = duplicate.token }
        let duplicateSeqs = duplicates.keys.sorted()
        return """
            WITH held AS (
                SELECT true AS ok WHERE \(lease?.resource)::text IS NULL
                UNION ALL
                SELECT true FROM (
                    SELECT 1 FROM lease
                    WHERE resource = \(lease?.resource) AND owner = \(lease?.owner) AND fence = \(lease?.fence)
                    FOR SHARE
                ) AS current
            ),
            fenced AS (SELECT EXISTS (SELECT 1 FROM held) AS ok),
            invalid AS (
                INSERT INTO invalid_token AS old (topic, token, reason, apns_timestamp, seen_at)
                SELECT t, k, r, NULLIF(a, \(Self.noInteger)), s
                FROM unnest(\(invalid.map(\.topic))::text[], \(invalid.map(\.token))::text[],
                    \(invalid.map(\.reason))::text[], \(invalid.map { $0.apnsTimestamp ?? Self.noInteger })::bigint[],
                    \(invalid.map(\.seenAt))::float8[]) AS u(t, k, r, a, s)
                WHERE (SELECT ok FROM fenced)
                \(unescaped: Self.invalidTokenMerge)
            ),
            stats AS (
                INSERT INTO run_stats (run, stats, updated_at)
                SELECT \(id), \(batch.stats?.encoded())::text, \(now)
                WHERE \(batch.stats?.encoded())::text IS NOT NULL AND (SELECT ok FROM fenced)
                ON CONFLICT (run) DO UPDATE SET stats = excluded.stats, updated_at = excluded.updated_at
            ),
            closed AS (
                UPDATE run SET
                    updated_at = CASE WHEN \(batch.stats != nil || batch.close != nil) THEN \(now) ELSE updated_at END,
                    possible_duplicates = possible_duplicates + \(batch.possibleDuplicates),
                    status = coalesce(\(batch.close?.status.rawValue)::text, status),
                    planned = coalesce(\(batch.close?.planned.map(Int64.init))::bigint, planned)
                WHERE id = \(id) AND \(touchesRun) AND (SELECT ok FROM fenced)
            ),
            duplicates AS (
                INSERT INTO possible_duplicate (run, seq, token)
                SELECT \(id), s, t FROM unnest(\(duplicateSeqs.map(Int64.init))::bigint[],
                    \(duplicateSeqs.map { duplicates[$0]! })::text[]) AS u(s, t)
                WHERE (SELECT ok FROM fenced)
                ON CONFLICT (run, seq) DO NOTHING
            ),
            ranges AS (
                INSERT INTO dispatch (run, first_seq, last_seq)
                SELECT \(id), f, l FROM unnest(\(firsts.map(Int64.init))::bigint[], \(lasts)::bigint[]) AS u(f, l)
                WHERE (SELECT ok FROM fenced)
                ON CONFLICT (run, first_seq) DO UPDATE SET last_seq = greatest(dispatch.last_seq, excluded.last_seq)
            ),
            delivered AS (
                INSERT INTO delivery (run, first_seq, last_seq, delivered_at, token_hashes)
                SELECT \(id), f, l, \(now), h
                FROM unnest(\(deliveredFirsts)::bigint[], \(deliveredLasts)::bigint[], \(hashes)::bytea[]) AS u(f, l, h)
                WHERE (SELECT ok FROM fenced)
            ),
            recipients AS (
                INSERT INTO recipient (run, seq, token, state, attempt, status, reason, apns_timestamp, retry_at,
                    updated_at)
                SELECT \(id), s, t, st, a, NULLIF(c, \(Self.noInteger)), CASE WHEN st = 'failed' THEN r END,
                    NULLIF(p, \(Self.noInteger)), NULLIF(w, \(Self.noDouble)), \(now)
                FROM unnest(\(recipients.seqs)::bigint[], \(recipients.tokens)::text[], \(recipients.states)::text[],
                    \(recipients.attempts)::bigint[], \(recipients.statuses)::bigint[], \(recipients.reasons)::text[],
                    \(recipients.stamps)::bigint[], \(recipients.retries)::float8[]) AS u(s, t, st, a, c, r, p, w)
                WHERE (SELECT ok FROM fenced)
                ON CONFLICT (run, seq) DO UPDATE SET
                    state = excluded.state, attempt = excluded.attempt, status = excluded.status,
                    reason = excluded.reason, apns_timestamp = excluded.apns_timestamp,
                    retry_at = excluded.retry_at, updated_at = excluded.updated_at
            )
            SELECT ok FROM fenced
            """
    }

    public func dispatched(
        of run: RunID,
        within seqs: ClosedRange<Int>?
    ) async throws(JournalError) -> [ClosedRange<Int>] {
        try await ranges(in: .dispatch, of: run, within: seqs)
    }

    public func delivered(
        of run: RunID,
        within seqs: ClosedRange<Int>?
    ) async throws(JournalError) -> [ClosedRange<Int>] {
        try await ranges(in: .delivery, of: run, within: seqs)
    }

    /// The two tables of seq ranges.
    private enum RangeTable: String {
        case dispatch, delivery
    }

    /// The ranges of `run` in `table`, in order; within `seqs`, those starting in them (by the
    /// key) and the one before, when it reaches into them: nothing else of the run is read.
    private func ranges(
        in table: RangeTable,
        of run: RunID,
        within seqs: ClosedRange<Int>?
    ) async throws(JournalError) -> [ClosedRange<Int>] {
        let name = table.rawValue
        let query: PostgresQuery =
            if let seqs {
                """
                (SELECT first_seq, last_seq FROM \(unescaped: name) WHERE run = \(run.rawValue)
                    AND first_seq < \(seqs.lowerBound) ORDER BY first_seq DESC LIMIT 1)
                UNION ALL
                (SELECT first_seq, last_seq FROM \(unescaped: name) WHERE run = \(run.rawValue)
                    AND first_seq BETWEEN \(seqs.lowerBound) AND \(seqs.upperBound) ORDER BY first_seq)
                """
            } else {
                "SELECT first_seq, last_seq FROM \(unescaped: name) WHERE run = \(run.rawValue) ORDER BY first_seq"
            }
        let ranges = try await rows(query) { row in
            try row["first_seq"].decode(Int.self)...row["last_seq"].decode(Int.self)
        }
        guard let seqs else { return ranges }
        return ranges.filter { $0.overlaps(seqs) }.sorted { $0.lowerBound < $1.lowerBound }
    }

    public func recipients(of run: RunID, after seq: Int, limit: Int) async throws(JournalError) -> [RecipientRecord] {
        try await rows(
            """
            SELECT seq, token, state, attempt, status, reason, apns_timestamp, retry_at, updated_at FROM recipient
            WHERE run = \(run.rawValue) AND seq > \(seq) ORDER BY seq LIMIT \(limit)
            """
        ) { row in
            RecipientRecord(
                seq: try row["seq"].decode(Int.self),
                token: try row["token"].decode(String.self),
                state: try Self.state(from: row),
                updatedAt: try row["updated_at"].decode(Double.self)
            )
        }
    }

    private static func state(from row: PostgresRandomAccessRow) throws -> RecipientState {
        let attempt = try row["attempt"].decode(Int.self)
        switch try row["state"].decode(String.self) {
        case "planned": return .planned
        case "in_flight": return .inFlight(attempt: attempt)
        case "delivered": return .delivered(attempt: attempt)
        case "failed":
            return .failed(
                status: try row["status"].decode(Int?.self),
                reason: try row["reason"].decode(String?.self) ?? "",
                apnsTimestamp: try row["apns_timestamp"].decode(Int64?.self)
            )
        case "waiting": return .waiting(until: try row["retry_at"].decode(Double?.self) ?? 0, attempt: attempt)
        case "unknown": return .unknown(attempt: attempt)
        case let other: throw JournalError(.corrupt, "unknown recipient state '\(other)' in the journal")
        }
    }

    public func counts(of run: RunID) async throws(JournalError) -> RecipientCounts {
        let id = run.rawValue
        let rows = try await rows(
            """
            SELECT 'dispatch' AS state, coalesce(sum(last_seq - first_seq + 1), 0)::bigint AS n FROM dispatch WHERE run = \(id)
            UNION ALL
            SELECT 'delivery', coalesce(sum(last_seq - first_seq + 1), 0)::bigint FROM delivery WHERE run = \(id)
            UNION ALL
            SELECT state, count(*) FROM recipient WHERE run = \(id) GROUP BY state
            """
        )
        var counts = RecipientCounts()
        var dispatched = 0
        do {
            for row in rows {
                let count = try row["n"].decode(Int.self)
                switch try row["state"].decode(String.self) {
                case "dispatch": dispatched = count
                case "delivery": counts.delivered += count
                case "planned": counts.planned += count
                case "in_flight": counts.inFlight += count
                case "delivered": counts.delivered += count
                case "failed": counts.failed += count
                case "waiting": counts.waiting += count
                default: counts.unknown += count
                }
            }
        } catch {
            throw translate(error)
        }
        counts.inFlight += max(0, dispatched - counts.total)
        return counts
    }

    public func answersPerSecond(of run: RunID) async throws(JournalError) -> [AnswersInSecond] {
        let id = run.rawValue
        let rows = try await rows(
            """
            SELECT floor(delivered_at)::bigint AS second, sum(last_seq - first_seq + 1)::bigint AS delivered,
                0::bigint AS failed, 0::bigint AS retried
            FROM delivery WHERE run = \(id) GROUP BY 1
            UNION ALL
            SELECT floor(updated_at)::bigint, count(*) FILTER (WHERE state = 'delivered'),
                count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE attempt > 1)
            FROM recipient WHERE run = \(id) AND state IN ('delivered', 'failed') GROUP BY 1
            """
        )
        do {
            return AnswersInSecond.tally(
                try rows.map { row in
                    (
                        at: Double(try row["second"].decode(Int64.self)),
                        delivered: try row["delivered"].decode(Int.self),
                        failed: try row["failed"].decode(Int.self),
                        retried: try row["retried"].decode(Int.self)
                    )
                }
            )
        } catch {
            throw translate(error)
        }
    }

    public func stats(of run: RunID) async throws(JournalError) -> RunStats? {
        // A sliced run's workers each saved their slices' own: added to the creator's.
        let texts = try await rows(
            """
            SELECT stats FROM (
                SELECT 0 AS part, stats FROM run_stats WHERE run = \(run.rawValue)
                UNION ALL SELECT 1 + first_seq, stats FROM slice WHERE run = \(run.rawValue) AND stats IS NOT NULL
            ) AS parts ORDER BY part
            """
        ) { row in try row["stats"].decode(String.self) }
        return try RunStats.sum(texts)
    }

    // MARK: dead tokens and delivery history

    /// One report per (topic, token): a statement may not change a row twice.
    static func merged(_ tokens: [InvalidToken]) -> [InvalidToken] {
        var merged: [String: InvalidToken] = [:]
        for token in tokens {
            let key = token.topic + "\u{0}" + token.token
            merged[key] = InvalidToken.newer(merged[key], token)
        }
        return merged.values.sorted { ($0.topic, $0.token) < ($1.topic, $1.token) }
    }

    /// How a dead token already known is merged with a new report of it: the newest report's
    /// reason, the latest APNs timestamp.
    static let invalidTokenMerge = """
        ON CONFLICT (topic, token) DO UPDATE SET
            reason = CASE WHEN excluded.seen_at >= old.seen_at THEN excluded.reason ELSE old.reason END,
            seen_at = greatest(old.seen_at, excluded.seen_at),
            apns_timestamp = CASE
                WHEN old.apns_timestamp IS NULL THEN excluded.apns_timestamp
                WHEN excluded.apns_timestamp IS NULL THEN old.apns_timestamp
                ELSE greatest(old.apns_timestamp, excluded.apns_timestamp) END
        """

    public func rememberInvalidTokens(_ tokens: [InvalidToken]) async throws(JournalError) {
        let merged = Self.merged(tokens)
        guard !merged.isEmpty else { return }
        try await execute(
            """
            INSERT INTO invalid_token AS old (topic, token, reason, apns_timestamp, seen_at)
            SELECT t, k, r, NULLIF(a, \(Self.noInteger)), s
            FROM unnest(\(merged.map(\.topic))::text[], \(merged.map(\.token))::text[], \(merged.map(\.reason))::text[],
                \(merged.map { $0.apnsTimestamp ?? Self.noInteger })::bigint[], \(merged.map(\.seenAt))::float8[])
                AS u(t, k, r, a, s)
            \(unescaped: Self.invalidTokenMerge)
            """
        )
    }

    public func invalidTokens(topic: String?, since: Double?) async throws(JournalError) -> [InvalidToken] {
        try await rows(
            """
            SELECT topic, token, reason, apns_timestamp, seen_at FROM invalid_token
            WHERE (\(topic)::text IS NULL OR topic = \(topic)) AND (\(since)::float8 IS NULL OR seen_at >= \(since))
            ORDER BY seen_at, topic, token
            """
        ) { row in
            InvalidToken(
                topic: try row["topic"].decode(String.self),
                token: try row["token"].decode(String.self),
                reason: try row["reason"].decode(String.self),
                apnsTimestamp: try row["apns_timestamp"].decode(Int64?.self),
                seenAt: try row["seen_at"].decode(Double.self)
            )
        }
    }

    public func invalidTokenCounts(since: Double?) async throws(JournalError) -> [(topic: String, count: Int)] {
        try await rows(
            """
            SELECT topic, count(*) AS count FROM invalid_token WHERE (\(since)::float8 IS NULL OR seen_at >= \(since))
            GROUP BY topic ORDER BY topic
            """
        ) { row in (topic: try row["topic"].decode(String.self), count: Int(try row["count"].decode(Int64.self))) }
    }

    public func deliveryHashes(since: Double) async throws(JournalError) -> [UInt64] {
        var hashes: [UInt64] = []
        let tokens = try await rows(
            "SELECT token FROM recipient WHERE state = 'delivered' AND updated_at >= \(since)"
        )
        let ranges = try await rows("SELECT token_hashes FROM delivery WHERE delivered_at >= \(since)")
        do {
            for row in tokens { hashes.append(StableHash.hash(try row["token"].decode(String.self))) }
            for row in ranges {
                let bytes = try row["token_hashes"].decode(ByteBuffer.self)
                bytes.withUnsafeReadableBytes { DeliveredRange.forEachHash(in: $0) { hashes.append($0) } }
            }
        } catch {
            throw translate(error)
        }
        return hashes
    }
}

/// Recipients' new states as columns, for `unnest` (NULLs as the journal's stand-ins).
struct RecipientColumns {
    var seqs: [Int64] = []
    var tokens: [String] = []
    var states: [String] = []
    var attempts: [Int64] = []
    var statuses: [Int64] = []
    var reasons: [String] = []
    var stamps: [Int64] = []
    var retries: [Double] = []

    init(_ updates: [RecipientUpdate]) {
        for update in updates {
            seqs.append(Int64(update.seq))
            tokens.append(update.token)
            states.append(update.state.name)
            attempts.append(Int64(update.state.attempt))
            var (status, reason, stamp, retry) = (
                PostgresJournal.noInteger, "", PostgresJournal.noInteger, PostgresJournal.noDouble
            )
            switch update.state {
            case .failed(let code, let why, let apns):
                (status, reason, stamp) = (
                    code.map(Int64.init) ?? PostgresJournal.noInteger, why, apns ?? PostgresJournal.noInteger
                )
            case .waiting(let until, _): retry = until
            default: break
            }
            statuses.append(status)
            reasons.append(reason)
            stamps.append(stamp)
            retries.append(retry)
        }
    }
}

/// `recordQuery` as a prepared statement: parsed and planned once per connection, not per batch.
struct RecordStatement: PostgresPreparedStatement {
    static let name = "pushcamp_record_batch"
    static let sql = PostgresJournal.recordQuery(
        JournalBatch(stats: RunStats(), lease: Lease(resource: "", owner: "", fence: 0, expiresAt: 0)),
        run: RunID(0),
        now: 0
    ).sql
    typealias Row = Bool

    let query: PostgresQuery

    func makeBindings() throws -> PostgresBindings { query.binds }

    func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
}
