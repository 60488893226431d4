import GRDB
import Synchronization

/// Something a recipient of a run did after it: `opened`, `converted`… (imported by
/// `pushcamp engagement import` or posted to `serve`'s `/api/engagement`), already matched to the
/// recipient's place in the run's plan and to the variant, holdout and locale the plan gave it.
public struct EngagementEvent: Sendable, Hashable {
    /// The recipient's place in the run's plan (`PlannedPush.seq`).
    public var seq: Int
    public var event: String
    /// The variant it was sent; nil for a recipient the holdout kept back.
    public var variant: String?
    public var locale: String?
    /// When it happened, seconds since 1970.
    public var at: Double
    /// What it was worth (revenue), when the row said.
    public var value: Double?

    public init(seq: Int, event: String, variant: String?, locale: String?, at: Double, value: Double? = nil) {
        self.seq = seq
        self.event = event
        self.variant = variant
        self.locale = locale
        self.at = at
        self.value = value
    }
}

/// How many recipients did `event`, per variant (nil: the holdout) and locale.
public struct EngagementCount: Sendable, Hashable {
    public var event: String
    public var variant: String?
    public var locale: String?
    public var count: Int
    /// The sum of their values, and of the values' squares (for an interval of the mean).
    public var value: Double
    public var valueSquares: Double
    /// How many of them had a value.
    public var valued: Int

    public init(
        event: String,
        variant: String?,
        locale: String?,
        count: Int,
        value: Double = 0,
        valueSquares: Double = 0,
        valued: Int = 0
    ) {
        self.event = event
        self.variant = variant
        self.locale = locale
        self.count = count
        self.value = value
        self.valueSquares = valueSquares
        self.valued = valued
    }
}

/// How many recipients of a run did an event in one stretch of time, per variant (nil: the holdout).
public struct EngagementBucket: Sendable, Hashable {
    public var variant: String?
    /// The stretch: `bucket` × the width asked for after the start asked for.
    public var bucket: Int
    public var count: Int

    public init(variant: String?, bucket: Int, count: Int) {
        self.variant = variant
        self.bucket = bucket
        self.count = count
    }
}

/// Engagement with runs: at most one of each event per recipient of a run, however often it is
/// imported or posted.
public protocol EngagementStore: Sendable {
    /// Records `events` of `run` in one transaction; an event a recipient already has is left as it
    /// is (the first time stands). Returns how many were new.
    func recordEngagement(_ events: [EngagementEvent], run: RunID, now: Double) async throws(JournalError) -> Int
    /// Recipients per (event, variant, locale) of `run`, counted where they are kept.
    func engagementCounts(of run: RunID) async throws(JournalError) -> [EngagementCount]
    /// Recipients of `run` who did `event`, per variant and per `width` seconds after `start`
    /// (events before it in the first), buckets without any left out, in no particular order: the
    /// readout's chart over time.
    func engagementOverTime(
        of run: RunID,
        event: String,
        from start: Double,
        width: Double
    ) async throws(JournalError) -> [EngagementBucket]

    /// Writes (or rewrites) what `run` kept of its assignment as a whole: its arms, locales and
    /// readout, and, once every recipient is kept, the tally.
    func keepAssignmentHeader(_ header: AssignmentHeader, of run: RunID) async throws(JournalError)
    /// `run`'s header; nil when the run kept no assignment.
    func assignmentHeader(of run: RunID) async throws(JournalError) -> AssignmentHeader?
    /// Adds `batch` (one transaction, in plan order) to the recipients of `run` being kept; a
    /// recipient added already is left as it is. Found by `assignments` once sealed.
    func keepAssignments(_ batch: [KeptAssignment], of run: RunID) async throws(JournalError)
    /// Files the recipients added for `run` (by apns-id, and by person), in one transaction, and
    /// answers the tally: recipients and people kept per (variant, locale), a person counted once,
    /// in the group of their first recipient in plan order. Sealing again changes nothing.
    func sealAssignments(of run: RunID) async throws(JournalError) -> [AssignmentTally]
    /// The kept recipients of `run` among `ids`, in no particular order.
    func assignments(of run: RunID, ids: [AssignmentID]) async throws(JournalError) -> [KeptAssignment]
    /// Every kept recipient (every device) of the people `persons` in `run`, in no particular order.
    func assignments(of run: RunID, persons: [Int64]) async throws(JournalError) -> [KeptAssignment]
}

extension MemoryJournal: EngagementStore {
    struct EngagementKey: Hashable {
        var run: RunID
        var seq: Int
        var event: String
    }

    public func recordEngagement(
        _ events: [EngagementEvent],
        run: RunID,
        now: Double
    ) async throws(JournalError)
        -> Int
    {
        state.withLock { state in
            var added = 0
            for event in events {
                let key = EngagementKey(run: run, seq: event.seq, event: event.event)
                if state.engagement[key] == nil {
                    state.engagement[key] = event
                    added += 1
                }
            }
            return added
        }
    }

    public func engagementCounts(of run: RunID) async throws(JournalError) -> [EngagementCount] {
        state.withLock { state in
            var counts: [EngagementCount: EngagementCount] = [:]
            for (key, event) in state.engagement where key.run == run {
                let group = EngagementCount(event: event.event, variant: event.variant, locale: event.locale, count: 0)
                var count = counts[group] ?? group
                count.count += 1
                if let value = event.value {
                    count.value += value
                    count.valueSquares += value * value
                    count.valued += 1
                }
                counts[group] = count
            }
            return Array(counts.values)
        }
    }

    public func engagementOverTime(
        of run: RunID,
        event name: String,
        from start: Double,
        width: Double
    ) async throws(JournalError) -> [EngagementBucket] {
        state.withLock { state in
            var counts: [EngagementBucket: Int] = [:]
            for (key, event) in state.engagement where key.run == run && key.event == name {
                let bucket = EngagementBucket(
                    variant: event.variant,
                    bucket: Self.bucket(event.at, start, width),
                    count: 0
                )
                counts[bucket, default: 0] += 1
            }
            return counts.map { EngagementBucket(variant: $0.key.variant, bucket: $0.key.bucket, count: $0.value) }
        }
    }

    /// The bucket of an event at `at`: whole `width`s after `start`, never below 0.
    static func bucket(_ at: Double, _ start: Double, _ width: Double) -> Int {
        Int(min(max(0, ((at - start) / width).rounded(.down)), Double(Int32.max)))
    }
}

extension SQLiteJournal: EngagementStore {
    static let engagementSchema = """
        -- Engagement with a run, one row per (recipient, event): the recipient by its place in the
        -- plan, with the variant (NULL: held out) and locale the plan gave it.
        CREATE TABLE engagement (
            run INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            event TEXT NOT NULL,
            variant TEXT,
            locale TEXT,
            at REAL NOT NULL,
            recorded_at REAL NOT NULL,
            PRIMARY KEY (run, seq, event)
        ) WITHOUT ROWID;
        """

    public func recordEngagement(
        _ events: [EngagementEvent],
        run: RunID,
        now: Double
    ) async throws(JournalError)
        -> Int
    {
        try await write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO engagement (run, seq, event, variant, locale, at, recorded_at, value)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """
            )
            var added = 0
            for event in events {
                try statement.execute(arguments: [
                    run.rawValue, event.seq, event.event, event.variant, event.locale, event.at, now, event.value,
                ])
                added += db.changesCount
            }
            return added
        }
    }

    public func engagementCounts(of run: RunID) async throws(JournalError) -> [EngagementCount] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT event, variant, locale, count(*) AS n, total(value) AS v, total(value * value) AS v2,
                        count(value) AS valued
                    FROM engagement WHERE run = ? GROUP BY event, variant, locale
                    """,
                arguments: [run.rawValue]
            ).map { row in
                EngagementCount(
                    event: row["event"],
                    variant: row["variant"],
                    locale: row["locale"],
                    count: row["n"],
                    value: row["v"],
                    valueSquares: row["v2"],
                    valued: row["valued"]
                )
            }
        }
    }

    public func engagementOverTime(
        of run: RunID,
        event: String,
        from start: Double,
        width: Double
    ) async throws(JournalError) -> [EngagementBucket] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT variant, MAX(0, CAST((at - ?) / ? AS INTEGER)) AS bucket, count(*) AS n
                    FROM engagement WHERE run = ? AND event = ? GROUP BY variant, bucket
                    """,
                arguments: [start, width, run.rawValue, event]
            ).map { EngagementBucket(variant: $0["variant"], bucket: $0["bucket"], count: $0["n"]) }
        }
    }
}
