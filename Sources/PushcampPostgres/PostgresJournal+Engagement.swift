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
            INSERT INTO engagement (run, seq, event, variant, locale, at, recorded_at)
            SELECT \(run.rawValue), s, e, NULLIF(v, ''), NULLIF(l, ''), a, \(now)
            FROM unnest(\(events.map { Int64($0.seq) })::bigint[], \(events.map(\.event))::text[],
                \(events.map { $0.variant ?? "" })::text[], \(events.map { $0.locale ?? "" })::text[],
                \(events.map(\.at))::float8[]) AS u(s, e, v, l, a)
            ON CONFLICT DO NOTHING
            RETURNING seq
            """
        )
        return rows.count
    }

    public func engagementCounts(of run: RunID) async throws(JournalError) -> [EngagementCount] {
        let rows = try await rows(
            """
            SELECT event, variant, locale, count(*) AS n FROM engagement WHERE run = \(run.rawValue)
            GROUP BY event, variant, locale
            """
        )
        var counts: [EngagementCount] = []
        for row in rows {
            counts.append(
                EngagementCount(
                    event: try decode(row, "event", String.self),
                    variant: try decode(row, "variant", String?.self),
                    locale: try decode(row, "locale", String?.self),
                    count: Int(try decode(row, "n", Int64.self))
                )
            )
        }
        return counts
    }
}
