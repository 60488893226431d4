import Foundation
import PushcampAudience
import PushcampModel
import PushcampPostgres
import PushcampTestSupport
import Testing

/// `PostgresAudienceSource` against a real server: every type a team's table may hold arrives as
/// an attribute, page after page, in the query's order, and the columns are known without a row.
@Suite("PostgreSQL audiences")
struct PostgresAudienceTests {
    static func source(_ query: String, url: String, pageSize: Int = 5_000) throws -> PostgresAudienceSource {
        var source = try #require(
            try PostgresAudiences(environment: [:]).postgres(
                url: url,
                query: query,
                tokenColumn: "token",
                location: SourceLocation(path: "c.yaml", line: 4)
            ) as? PostgresAudienceSource
        )
        source.pageSize = pageSize
        return source
    }

    @Test func everyTypeArrivesAsAnAttributePageAfterPage() throws {
        let (name, url) = try TestPostgres.newDatabase()
        let server = try TestPostgres.server().on(database: name)
        try TestPostgres.psql(
            server,
            """
            CREATE TYPE tier AS ENUM ('gold', 'silver');
            CREATE TABLE devices (id int PRIMARY KEY, token bytea, opted_in bool, visits bigint, score numeric,
              ratio float8, seen timestamptz, born date, level tier, tags text[], note text);
            INSERT INTO devices SELECT i, decode(lpad(to_hex(i), 64, '0'), 'hex'), i % 2 = 0, i * 1000000000::bigint,
              i / 4.0, i * 0.5, timestamptz '2026-11-21 09:30:00.75+01' + i * interval '1 hour',
              date '2026-01-01', 'gold', ARRAY['a', 'b'], NULL FROM generate_series(1, 7) i;
            """
        )
        let source = try Self.source(
            "SELECT token, opted_in, visits, score, ratio, seen, born, level, tags, note FROM devices ORDER BY id;",
            url: url,
            pageSize: 3
        )
        #expect(
            try source.columns() == [
                "token", "opted_in", "visits", "score", "ratio", "seen", "born", "level", "tags", "note",
            ]
        )
        var rows: [SourceRow] = []
        try source.forEachRow(tokensOnly: false) { rows.append($0) }
        #expect(rows.map(\.row) == Array(1...7))
        let first = try #require(rows.first)
        #expect(first.token == String(repeating: "0", count: 63) + "1")
        #expect(first.attributes["opted_in"] == .bool(false))
        #expect(first.attributes["visits"] == .integer(1_000_000_000))
        #expect(first.attributes["score"] == .number(0.25))
        #expect(first.attributes["ratio"] == .number(0.5))
        #expect(first.attributes["seen"] == .string("2026-11-21T09:30:00Z"))
        #expect(first.attributes["born"] == .string("2026-01-01"))
        #expect(first.attributes["level"] == .string("gold"))
        #expect(first.attributes["tags"] == .string("{a,b}"))
        #expect(first.attributes["note"] == nil)
        #expect(rows.last?.attributes["seen"] == .string("2026-11-21T15:30:00Z"))
        var tokens: [String?] = []
        try source.forEachRow(tokensOnly: true) { tokens.append($0.token) }
        #expect(tokens == rows.map(\.token))
    }

    @Test func timestampsReadToTheSecondInUTC() {
        #expect(PostgresAudienceSource.timestamp("2026-11-21 09:30:00+00") == "2026-11-21T09:30:00Z")
        #expect(PostgresAudienceSource.timestamp("2026-11-21 09:30:00.123456+00") == "2026-11-21T09:30:00Z")
        #expect(PostgresAudienceSource.timestamp("infinity") == nil)
        #expect(PostgresAudienceSource.timestamp("0044-03-15 12:00:00+00 BC") == "0044-03-15T12:00:00Z")
    }
}
