import PostgresNIO
import PushcampJournal

/// Engagement with runs, shared by every node on the journal.
extension PostgresJournal: EngagementStore {
    public func recordEngagement(
        _ events: [EngagementEvent],
        run: RunID,
        now: Double
    ) async throws(JournalError)
        -> Int
    {
        guard !events.isEmpty else { return 0 }
        // Variant and locale names are never empty: '' stands for NULL in the arrays.
        let rows = try await rows(
            """
            INSERT INTO engagement (run, seq, event, variant, locale, at, recorded_at, value)
            SELECT \(run.rawValue), s, e, NULLIF(v, ''), NULLIF(l, ''), a, \(now), CASE WHEN hv THEN val END
            FROM unnest(\(events.map { Int64($0.seq) })::bigint[], \(events.map(\.event))::text[],
                \(events.map { $0.variant ?? "" })::text[], \(events.map { $0.locale ?? "" })::text[],
                \(events.map(\.at))::float8[], \(events.map { $0.value ?? 0 })::float8[],
                \(events.map { $0.value != nil })::boolean[]) AS u(s, e, v, l, a, val, hv)
            ON CONFLICT DO NOTHING
            RETURNING seq
            """
        )
        return rows.count
    }

    public func engagementCounts(of run: RunID) async throws(JournalError) -> [EngagementCount] {
        let rows = try await rows(
            """
            SELECT event, variant, locale, count(*) AS n, coalesce(sum(value), 0) AS v,
                coalesce(sum(value * value), 0) AS v2, count(value) AS valued
            FROM engagement WHERE run = \(run.rawValue) GROUP BY event, variant, locale
            """
        )
        var counts: [EngagementCount] = []
        for row in rows {
            counts.append(
                EngagementCount(
                    event: try decode(row, "event", String.self),
                    variant: try decode(row, "variant", String?.self),
                    locale: try decode(row, "locale", String?.self),
                    count: Int(try decode(row, "n", Int64.self)),
                    value: try decode(row, "v", Double.self),
                    valueSquares: try decode(row, "v2", Double.self),
                    valued: Int(try decode(row, "valued", Int64.self))
                )
            )
        }
        return counts
    }

    public func engagementOverTime(
        of run: RunID,
        event: String,
        from start: Double,
        width: Double
    ) async throws(JournalError) -> [EngagementBucket] {
        let rows = try await rows(
            """
            SELECT variant, greatest(0, floor((at - \(start)) / \(width)))::bigint AS bucket, count(*) AS n
            FROM engagement WHERE run = \(run.rawValue) AND event = \(event) GROUP BY 1, 2
            """
        )
        var buckets: [EngagementBucket] = []
        for row in rows {
            buckets.append(
                EngagementBucket(
                    variant: try decode(row, "variant", String?.self),
                    bucket: Int(try decode(row, "bucket", Int64.self)),
                    count: Int(try decode(row, "n", Int64.self))
                )
            )
        }
        return buckets
    }
}

/// Assignments kept at send time, shared by every node on the journal.
extension PostgresJournal {
    public func keepAssignmentHeader(_ header: AssignmentHeader, of run: RunID) async throws(JournalError) {
        let text = try header.encoded()
        try await execute(
            """
            INSERT INTO assignment_run (run, header) VALUES (\(run.rawValue), \(text))
            ON CONFLICT (run) DO UPDATE SET header = excluded.header
            """
        )
    }

    public func assignmentHeader(of run: RunID) async throws(JournalError) -> AssignmentHeader? {
        let texts = try await rows("SELECT header FROM assignment_run WHERE run = \(run.rawValue)") { row in
            try row["header"].decode(String.self)
        }
        return try texts.first.map(AssignmentHeader.decode)
    }

    public func keepAssignments(_ batch: [KeptAssignment], of run: RunID) async throws(JournalError) {
        guard !batch.isEmpty else { return }
        // -1 stands for NULL in the arrays: indexes and seqs are never negative; a person's hash
        // may be anything, so it goes with a flag.
        try await execute(
            """
            INSERT INTO assignment_added (run, id_high, id_low, seq, person, variant, locale)
            SELECT \(run.rawValue), h, l, s, CASE WHEN hp THEN p END, NULLIF(v, -1), NULLIF(lc, -1)
            FROM unnest(\(batch.map(\.id.high))::bigint[], \(batch.map(\.id.low))::bigint[],
                \(batch.map { Int64($0.seq) })::bigint[], \(batch.map { $0.person ?? 0 })::bigint[],
                \(batch.map { $0.person != nil })::boolean[], \(batch.map { Int16($0.variant ?? -1) })::smallint[],
                \(batch.map { Int16($0.locale ?? -1) })::smallint[]) AS u(h, l, s, p, hp, v, lc)
            ON CONFLICT DO NOTHING
            """
        )
    }

    public func assignments(of run: RunID, ids: [AssignmentID]) async throws(JournalError) -> [KeptAssignment] {
        guard !ids.isEmpty else { return [] }
        let unique = Array(Set(ids))
        return try await rows(
            """
            SELECT a.id_high, a.id_low, a.seq, a.person, a.variant, a.locale
            FROM unnest(\(unique.map(\.high))::bigint[], \(unique.map(\.low))::bigint[]) AS u(h, l)
            JOIN assignment a ON a.run = \(run.rawValue) AND a.id_high = u.h AND a.id_low = u.l
            """
        ) { row in try Self.assignment(from: row) }
    }

    public func sealAssignments(of run: RunID) async throws(JournalError) -> [AssignmentTally] {
        let (id, logger) = (run.rawValue, logger)
        // Every recipient of a run filed in one transaction: ten million take minutes, not the
        // seconds a journal statement is given.
        return try await transaction(within: .seconds(1_800)) { connection in
            _ = try await Self.rows(
                """
                INSERT INTO assignment (run, id_high, id_low, seq, person, variant, locale)
                SELECT run, id_high, id_low, seq, person, variant, locale FROM assignment_added
                WHERE run = \(id) ORDER BY id_high, id_low ON CONFLICT DO NOTHING
                """,
                on: connection,
                logger: logger
            )
            _ = try await Self.rows(
                """
                INSERT INTO assignment_person (run, person, seq, id_high, id_low, variant, locale)
                SELECT run, person, seq, id_high, id_low, variant, locale FROM assignment_added
                WHERE run = \(id) AND person IS NOT NULL ORDER BY person, seq ON CONFLICT DO NOTHING
                """,
                on: connection,
                logger: logger
            )
            _ = try await Self.rows("DELETE FROM assignment_added WHERE run = \(id)", on: connection, logger: logger)
            // Recipients per group from every row; people from each person's first row, plus
            // recipients of no person.
            var tally: [TallyGroup: (recipients: Int, persons: Int)] = [:]
            let groups = try await Self.rows(
                """
                SELECT variant, locale, count(*) AS n, count(*) FILTER (WHERE person IS NULL) AS alone
                FROM assignment WHERE run = \(id) GROUP BY variant, locale
                """,
                on: connection,
                logger: logger
            )
            for row in groups {
                let group = try Self.tallyGroup(of: row)
                tally[group, default: (0, 0)].recipients += Int(try row["n"].decode(Int64.self))
                tally[group, default: (0, 0)].persons += Int(try row["alone"].decode(Int64.self))
            }
            let people = try await Self.rows(
                """
                SELECT variant, locale, count(*) AS n FROM (
                    SELECT DISTINCT ON (person) variant, locale FROM assignment_person WHERE run = \(id)
                    ORDER BY person, seq
                ) AS first GROUP BY variant, locale
                """,
                on: connection,
                logger: logger
            )
            for row in people {
                let group = try Self.tallyGroup(of: row)
                tally[group, default: (0, 0)].persons += Int(try row["n"].decode(Int64.self))
            }
            return AssignmentTally.list(tally)
        }
    }

    public func assignments(of run: RunID, persons: [Int64]) async throws(JournalError) -> [KeptAssignment] {
        guard !persons.isEmpty else { return [] }
        return try await rows(
            """
            SELECT id_high, id_low, seq, person, variant, locale FROM assignment_person
            WHERE run = \(run.rawValue) AND person = ANY(\(Array(Set(persons)))::bigint[])
            """
        ) { row in try Self.assignment(from: row) }
    }

    /// The (variant, locale) a tally's row counts.
    static func tallyGroup(of row: PostgresRandomAccessRow) throws -> TallyGroup {
        TallyGroup(
            variant: try row["variant"].decode(Int16?.self).map(Int.init),
            locale: try row["locale"].decode(Int16?.self).map(Int.init)
        )
    }

    static func assignment(from row: PostgresRandomAccessRow) throws -> KeptAssignment {
        KeptAssignment(
            seq: Int(try row["seq"].decode(Int64.self)),
            id: AssignmentID(high: try row["id_high"].decode(Int64.self), low: try row["id_low"].decode(Int64.self)),
            person: try row["person"].decode(Int64?.self),
            variant: try row["variant"].decode(Int16?.self).map(Int.init),
            locale: try row["locale"].decode(Int16?.self).map(Int.init)
        )
    }
}
