import Foundation
import PushcampJournal
import PushcampModel
import PushcampPostgres
import PushcampTestSupport
import Testing

/// A PostgreSQL journal keeps a run's snapshot a page per row in a binary format of its own: what
/// SQL reads of it (`pushcamp_snapshot(run)`, and the migration that packed the rows of earlier
/// schemas) must agree with what the journal writes and reads.
@Suite("A PostgreSQL journal's snapshot pages")
struct SnapshotPageTests {
    /// Every field as hexadecimal (texts hold tabs and line breaks), empty for NULL.
    static let columns = """
        seq, encode(convert_to(token, 'UTF8'), 'hex'), encode(payload, 'hex'),
        encode(convert_to(variant, 'UTF8'), 'hex'), encode(convert_to(locale, 'UTF8'), 'hex'),
        encode(convert_to(collapse_id, 'UTF8'), 'hex'), expiration, platform, due
        """

    static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// `push` as psql prints a row of `columns`.
    static func row(_ push: SnapshotPush) -> String {
        [
            String(push.seq), hex(push.token.utf8), hex(push.payload), hex(push.variant.utf8),
            push.locale.map { hex($0.utf8) } ?? "", push.collapseID.map { hex($0.utf8) } ?? "",
            push.expiration.map(String.init) ?? "", push.platform.rawValue, push.due.map(String.init) ?? "",
        ].joined(separator: "|")
    }

    static func database(of project: TemporaryProject) throws -> TestPostgres.Server {
        let url = try String(contentsOf: project.root.appendingPathComponent("postgres-url"), encoding: .utf8)
        let name = String(url.split(separator: "/").last?.split(separator: "?").first ?? "")
        return try TestPostgres.server().on(database: name)
    }

    @Test func sqlReadsTheSnapshotTheJournalWrote() async throws {
        let (journal, project) = try await Store.postgres.open()
        defer { project.remove() }
        let (run, pushes, _) = try await SliceStoreTests.slicedRun(journal, count: 40, size: 10)
        let rows = try TestPostgres.query(
            try Self.database(of: project),
            "SELECT \(Self.columns) FROM pushcamp_snapshot(\(run.id.rawValue))"
        )
        #expect(rows == pushes.map(Self.row))
        // A row per page the test wrote (seven pushes each, the last five), not per push.
        #expect(
            try TestPostgres.query(try Self.database(of: project), "SELECT count(*) FROM snapshot_page") == ["6"]
        )
    }

    @Test func rowsOfAnEarlierSchemaArePackedIntoPagesTheJournalReads() async throws {
        let (journal, project) = try await Store.postgres.open()
        defer { project.remove() }
        let server = try Self.database(of: project)
        let run = try await journal.createRun(campaign: "sale", revision: "r1", now: 1_000)
        // Seqs far apart: three pages of the migration's 5,000 seqs at most; iOS pushes due at
        // once, the only ones those schemas kept.
        let pushes = [0, 1, 4_998, 4_999, 5_000, 12_345].map { seq in
            var push = SliceStoreTests.push(seq)
            (push.platform, push.due) = (.ios, nil)
            return push
        }
        func text(_ value: String?) -> String {
            value.map { "convert_from(decode('\(Self.hex($0.utf8))', 'hex'), 'UTF8')" } ?? "NULL"
        }
        let values = pushes.map { push in
            """
            (\(run.id.rawValue), \(push.seq), \(text(push.token)), decode('\(Self.hex(push.payload))', 'hex'),
             \(text(push.variant)), \(text(push.locale)), \(text(push.collapseID)),
             \(push.expiration.map(String.init) ?? "NULL"))
            """
        }
        try TestPostgres.psql(
            server,
            """
            CREATE TABLE snapshot (
                run BIGINT NOT NULL, seq BIGINT NOT NULL, token TEXT NOT NULL, payload BYTEA NOT NULL,
                variant TEXT NOT NULL, locale TEXT, collapse_id TEXT, expiration BIGINT, PRIMARY KEY (run, seq)
            );
            INSERT INTO snapshot VALUES \(values.joined(separator: ", "));
            \(PostgresJournal.packSnapshotRows);
            DROP TABLE snapshot;
            """
        )
        #expect(
            try TestPostgres.query(server, "SELECT first_seq, last_seq FROM snapshot_page ORDER BY first_seq") == [
                "0|4999", "5000|5000", "12345|12345",
            ]
        )
        #expect(try await journal.snapshot(of: run.id, in: 0...20_000, after: -1, limit: 100) == pushes)
        #expect(try await journal.snapshot(of: run.id, in: 2...5_000, after: 1, limit: 2) == Array(pushes[2...3]))
    }
}
