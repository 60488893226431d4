import Foundation
import GRDB
import PushcampJournal
import PushcampModel
import PushcampPostgres
import PushcampTestSupport
import Testing

/// The same behaviour from every journal: SQLite on disk, PostgreSQL (a throwaway cluster, a new
/// database per test) and the in-memory twin.
enum Store: String, CaseIterable, CustomTestStringConvertible {
    case memory, sqlite, postgres

    var testDescription: String { rawValue }

    func open() async throws -> (any Journal, TemporaryProject) {
        let project = try TemporaryProject(projectFile: nil)
        switch self {
        case .memory: return (MemoryJournal(), project)
        case .sqlite: return (try SQLiteJournal(path: project.path(".pushcamp/journal.sqlite")), project)
        case .postgres:
            let (_, url) = try TestPostgres.newDatabase()
            try project.write("postgres-url", url)
            let journal = try Self.postgres(url, in: project)
            try await journal.migrate()
            return (journal, project)
        }
    }

    /// Another handle on the journal `open` made in `project`, as another process would have
    /// (its own connections); the same store for the memory twin, which no other process sees.
    func another(of journal: any Journal, in project: TemporaryProject) throws -> any Journal {
        switch self {
        case .memory: return journal
        case .sqlite: return try SQLiteJournal(path: project.path(".pushcamp/journal.sqlite"), lockWait: 10)
        case .postgres:
            return try Self.postgres(
                String(
                    decoding: try Data(contentsOf: project.root.appendingPathComponent("postgres-url")),
                    as: UTF8.self
                ),
                in: project
            )
        }
    }

    /// A PostgreSQL journal at `url`, its client running until `project` is removed. The timeout
    /// and the idle limit inside a transaction are generous: tests elsewhere in the process (the
    /// CLI's, waiting for child processes) can hold the cooperative pool's threads for seconds,
    /// and the client's tasks wait for them.
    static func postgres(
        _ url: String,
        in project: TemporaryProject,
        timeout: Duration = .seconds(120),
        idleInTransaction: Duration = .seconds(120)
    ) throws -> PostgresJournal {
        let journal = try PostgresJournal.connect(
            PostgresJournal.Address(url: url),
            maximumConnections: 4,
            timeout: timeout,
            idleInTransaction: idleInTransaction
        )
        let running = Task { await journal.run() }
        project.onRemove { running.cancel() }
        return journal
    }
}

@Suite("Journal stores")
struct JournalStoreTests {
    static func update(_ seq: Int, _ state: RecipientState) -> RecipientUpdate {
        RecipientUpdate(seq: seq, token: TemporaryProject.token(seq), state: state)
    }

    @Test(arguments: Store.allCases)
    func runsAreFoundListedAndFinished(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        #expect(try await journal.unfinishedRun(campaign: "spring") == nil)
        let first = try await journal.createRun(campaign: "spring", revision: "r1", now: 100)
        let other = try await journal.createRun(campaign: "autumn", revision: "a1", now: 101)
        #expect(try await journal.unfinishedRun(campaign: "spring") == first)
        try await journal.setStatus(.interrupted, of: first.id, now: 102)
        #expect(try await journal.unfinishedRun(campaign: "spring")?.status == .interrupted)
        try await journal.setStatus(.finished, of: first.id, now: 103)
        #expect(try await journal.unfinishedRun(campaign: "spring") == nil)
        let second = try await journal.createRun(campaign: "spring", revision: "r2", now: 104)
        #expect(try await journal.runs(limit: 10).map(\.id) == [second.id, other.id, first.id])
        #expect(try await journal.runs(limit: 1).map(\.id) == [second.id])
        #expect(try await journal.run(first.id)?.updatedAt == 103)
        await #expect(throws: JournalError.self) { try await journal.setStatus(.finished, of: RunID(999), now: 1) }
    }

    @Test(arguments: Store.allCases)
    func aRunKeepsItsPlannedCountAndPossibleDuplicates(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
        #expect(try await journal.run(run.id)?.planned == nil)
        try await journal.setPlanned(500, of: run.id)
        try await journal.record(JournalBatch(possibleDuplicates: 3), run: run.id, now: 2)
        try await journal.record(JournalBatch(possibleDuplicates: 2), run: run.id, now: 3)
        let stored = try await journal.run(run.id)
        #expect(stored?.planned == 500)
        #expect(stored?.possibleDuplicates == 5)
    }

    @Test(arguments: Store.allCases)
    func cancelIsAFlagAnotherProcessSets(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
        #expect(try await journal.cancelRequested(run.id) == false)
        try await journal.requestCancel(run.id, now: 2)
        #expect(try await journal.cancelRequested(run.id) == true)
    }

    @Test(arguments: Store.allCases)
    func theLatestStateOfEachRecipientWinsAndIsReadInPlanOrder(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
        try await journal.record(JournalBatch(dispatched: [0...3]), run: run.id, now: 2)
        try await journal.record(
            JournalBatch(updates: [Self.update(5, .inFlight(attempt: 2))], dispatched: [4...7]),
            run: run.id,
            now: 2
        )
        try await journal.record(
            JournalBatch(updates: [
                Self.update(4, .delivered(attempt: 1)),
                Self.update(1, .failed(status: 410, reason: "Unregistered", apnsTimestamp: 1_700_000_000_000)),
                Self.update(2, .waiting(until: 50.5, attempt: 1)),
                Self.update(3, .unknown(attempt: 1)),
                Self.update(0, .delivered(attempt: 2)),
            ]),
            run: run.id,
            now: 3
        )
        var seen: [RecipientRecord] = []
        try await journal.forEachRecipient(of: run.id) { seen.append($0) }
        #expect(seen.map(\.seq) == [0, 1, 2, 3, 4, 5])
        #expect(
            seen.map(\.state) == [
                .delivered(attempt: 2),
                .failed(status: 410, reason: "Unregistered", apnsTimestamp: 1_700_000_000_000),
                .waiting(until: 50.5, attempt: 1),
                .unknown(attempt: 1),
                .delivered(attempt: 1),
                .inFlight(attempt: 2),
            ]
        )
        #expect(seen[5].updatedAt == 2)
        #expect(seen[0].token == TemporaryProject.token(0))
        var expected = RecipientCounts()
        expected.delivered = 2
        expected.failed = 1
        expected.waiting = 1
        expected.unknown = 1
        // 5 has a row; 6 and 7 are in flight by their batch's range alone.
        expected.inFlight = 3
        #expect(try await journal.counts(of: run.id) == expected)
        #expect(try await journal.dispatched(of: run.id) == [0...3, 4...7])
        // Another run's rows are its own.
        let other = try await journal.createRun(campaign: "c", revision: "r", now: 4)
        #expect(try await journal.counts(of: other.id).total == 0)
    }

    @Test func deliveriesGroupIntoRangesOfConsecutiveSeqs() {
        let tokens = (0..<10).map(TemporaryProject.token)
        let ranges = DeliveredRange.ranges(of: [5, 3, 4, 9, 0, 4].map { FirstDelivery(seq: $0, token: tokens[$0]) })
        #expect(ranges.map(\.seqs) == [0...0, 3...5, 9...9])
        #expect(ranges[1].tokenHashes == [3, 4, 5].map { StableHash.hash(tokens[$0]) })
        #expect(ranges[1] == DeliveredRange(first: 3, tokens: [tokens[3], tokens[4], tokens[5]]))
    }

    @Test(arguments: Store.allCases)
    func deliveredRangesCountAndSettleWithoutRows(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
        let token = TemporaryProject.token
        try await journal.record(JournalBatch(dispatched: [0...9]), run: run.id, now: 2)
        try await journal.record(
            JournalBatch(
                updates: [Self.update(4, .failed(status: 400, reason: "BadDeviceToken", apnsTimestamp: nil))],
                delivered: [
                    DeliveredRange(first: 0, tokens: [token(0), token(1), token(2), token(3)]),
                    DeliveredRange(first: 6, tokens: [token(6)]),
                ]
            ),
            run: run.id,
            now: 3
        )
        try await journal.record(JournalBatch(updates: [Self.update(5, .delivered(attempt: 2))]), run: run.id, now: 5)
        #expect(try await journal.delivered(of: run.id) == [0...3, 6...6])
        var expected = RecipientCounts()
        expected.delivered = 6
        expected.failed = 1
        expected.inFlight = 3
        #expect(try await journal.counts(of: run.id) == expected)

        let resume = try await ResumePoint(journal: journal, run: run.id)
        #expect(resume.delivered == 6)
        #expect(resume.failed == 1)
        #expect((0...9).filter(resume.settled.contains) == [0, 1, 2, 3, 4, 5, 6])
        #expect(resume.pending == [7: .unknown(attempts: 1), 8: .unknown(attempts: 1), 9: .unknown(attempts: 1)])

        // A slice's part only: the ranges reaching into its seqs (whole), its rows alone.
        #expect(try await journal.delivered(of: run.id, within: 2...5) == [0...3])
        #expect(try await journal.delivered(of: run.id, within: 4...6) == [6...6])
        #expect(try await journal.delivered(of: run.id, within: 7...9) == [])
        #expect(try await journal.dispatched(of: run.id, within: 9...12) == [0...9])
        #expect(try await journal.dispatched(of: run.id, within: 10...12) == [])
        var rows: [Int] = []
        try await journal.forEachRecipient(of: run.id, within: 4...4, pageSize: 1) { rows.append($0.seq) }
        #expect(rows == [4])
        let slice = try await ResumePoint(journal: journal, slice: RunSlice(run: run.id, seqs: 3...7))
        #expect(slice.delivered == 3 && slice.failed == 1)
        #expect((0...9).filter(slice.settled.contains) == [3, 4, 5, 6])
        #expect(slice.pending == [7: .unknown(attempts: 1)])

        // Deliveries since a time, from ranges and rows alike, in any run.
        let other = try await journal.createRun(campaign: "d", revision: "r", now: 6)
        try await journal.record(
            JournalBatch(delivered: [DeliveredRange(first: 0, tokens: [token(0)])]),
            run: other.id,
            now: 7
        )
        func deliveries(since: Double) async throws -> [UInt64] {
            try await journal.deliveryHashes(since: since).sorted()
        }
        func hashes(_ indexes: [Int]) -> [UInt64] { indexes.map { StableHash.hash(token($0)) }.sorted() }
        await #expect(try deliveries(since: 0) == hashes([0, 0, 1, 2, 3, 5, 6]))
        await #expect(try deliveries(since: 4) == hashes([0, 5]))
        await #expect(try deliveries(since: 8) == [])

        // A journal written before v5 kept delivered ranges' tokens as text: they count the same.
        if store == .sqlite {
            let database = try DatabaseQueue(path: project.path(".pushcamp/journal.sqlite"))
            try await database.write { db in
                try db.execute(
                    sql: "INSERT INTO delivery (run, first_seq, last_seq, delivered_at, tokens) VALUES (?, 1, 2, 9, ?)",
                    arguments: [other.id.rawValue, token(7) + "\n" + token(8)]
                )
            }
            await #expect(try deliveries(since: 8) == hashes([7, 8]))
        }
    }

    @Test(arguments: Store.allCases)
    func deadTokensKeepTheirNewestTimestampPerTopic(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let token = TemporaryProject.token(1)
        try await journal.rememberInvalidTokens([
            InvalidToken(topic: "com.a", token: token, reason: "Unregistered", apnsTimestamp: 500, seenAt: 10),
            InvalidToken(topic: "com.b", token: token, reason: "BadDeviceToken", apnsTimestamp: nil, seenAt: 11),
        ])
        try await journal.rememberInvalidTokens([
            InvalidToken(topic: "com.a", token: token, reason: "Unregistered", apnsTimestamp: 900, seenAt: 20)
        ])
        try await journal.rememberInvalidTokens([
            // An older report arriving late changes nothing but what it knows better.
            InvalidToken(topic: "com.a", token: token, reason: "ExpiredToken", apnsTimestamp: 700, seenAt: 15)
        ])
        let all = try await journal.invalidTokens(topic: nil, since: nil)
        #expect(all.map(\.topic) == ["com.b", "com.a"])
        #expect(all[1].apnsTimestamp == 900)
        #expect(all[1].reason == "Unregistered")
        #expect(all[1].seenAt == 20)
        #expect(try await journal.invalidTokens(topic: "com.b", since: nil).count == 1)
        #expect(try await journal.invalidTokens(topic: nil, since: 12).map(\.topic) == ["com.a"])
        // Counted per topic, where they are kept.
        try await journal.rememberInvalidTokens([
            InvalidToken(
                topic: "com.a",
                token: TemporaryProject.token(2),
                reason: "Unregistered",
                apnsTimestamp: 1,
                seenAt: 30
            )
        ])
        let counts = try await journal.invalidTokenCounts(since: nil)
        #expect(counts.map(\.topic) == ["com.a", "com.b"])
        #expect(counts.map(\.count) == [2, 1])
        #expect(try await journal.invalidTokenCounts(since: 25).map(\.count) == [1])
        #expect(try await journal.invalidTokenCounts(since: 31).isEmpty)
    }
}

@Suite("SQLite journal on disk")
struct SQLiteJournalTests {
    @Test func whatWasCommittedIsThereWhenTheFileIsOpenedAgain() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = project.path("journal.sqlite")
        let run: RunRecord
        do {
            let journal = try SQLiteJournal(path: path)
            run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
            try await journal.record(
                JournalBatch(updates: [JournalStoreTests.update(7, .delivered(attempt: 1))], dispatched: [0...9]),
                run: run.id,
                now: 2
            )
        }
        let reopened = try SQLiteJournal(path: path)
        #expect(try await reopened.unfinishedRun(campaign: "c") == run)
        #expect(try await reopened.counts(of: run.id).delivered == 1)
    }

    @Test func aFileThatIsNotAJournalGetsAClearError() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = try project.write("journal.sqlite", String(repeating: "not a database\n", count: 300))
        do {
            _ = try SQLiteJournal(path: path)
            Issue.record("opened a file that is not a journal")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.hasPrefix("\(path) is not a Pushcamp journal or is damaged"))
        }
    }

    @Test func aJournalLockedByAnotherWriterGetsAClearErrorAfterTheWait() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = project.path("journal.sqlite")
        let journal = try SQLiteJournal(path: path, lockWait: 0.2)
        let run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
        // Another connection (as another process would) holds the write lock meanwhile.
        var unsafe = Configuration()
        unsafe.allowsUnsafeTransactions = true  // the lock is held across the awaited write below
        let other = try DatabaseQueue(path: path, configuration: unsafe)
        try other.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        var outcome: JournalError?
        do throws(JournalError) {
            try await journal.record(
                JournalBatch(updates: [JournalStoreTests.update(1, .planned)]),
                run: run.id,
                now: 2
            )
        } catch {
            outcome = error
        }
        try other.inDatabase { db in try db.execute(sql: "ROLLBACK") }
        #expect(outcome?.code == .locked)
        #expect(
            outcome?.message == "\(path) is locked by another process (another pushcamp send?); wait for it or stop it"
        )
        // Once the other writer is gone, the same write goes through.
        try await journal.record(JournalBatch(updates: [JournalStoreTests.update(1, .planned)]), run: run.id, now: 3)
        #expect(try await journal.counts(of: run.id).planned == 1)
    }

    @Test func aJournalFromANewerPushcampIsRefused() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = project.path("journal.sqlite")
        _ = try SQLiteJournal(path: path)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        do {
            _ = try SQLiteJournal(path: path)
            Issue.record("opened a newer journal")
        } catch {
            #expect(error.code == .newerVersion)
        }
    }
}
