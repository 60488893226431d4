import Foundation
import GRDB
import PushcampModel
import Synchronization

/// A recipient's apns-id as the journal keys it: its 16 bytes as two integers.
public struct AssignmentID: Sendable, Hashable {
    public var high: Int64
    public var low: Int64

    public init(high: Int64, low: Int64) {
        self.high = high
        self.low = low
    }
}

/// One recipient of a run as it was assigned at send time: where it stood in the plan, the
/// apns-id it was (or, held out, would have been) sent with, the person it belongs to, its arm
/// and its locale. Enough to match engagement without the campaign's files.
public struct KeptAssignment: Sendable, Hashable {
    /// Its place in the plan (`PlannedPush.seq`).
    public var seq: Int
    public var id: AssignmentID
    /// The person, as a hash of the value of `audience.user_key`; nil without one.
    public var person: Int64?
    /// Index into the header's `variants`; nil: held out.
    public var variant: Int?
    /// Index into the header's `locales`; nil when the campaign is not localized.
    public var locale: Int?

    public init(seq: Int, id: AssignmentID, person: Int64?, variant: Int?, locale: Int?) {
        self.seq = seq
        self.id = id
        self.person = person
        self.variant = variant
        self.locale = locale
    }
}

/// Recipients and people of a run's (variant, locale).
public struct AssignmentTally: Sendable, Hashable, Codable {
    /// Index into the header's `variants`; nil: the holdout.
    public var variant: Int?
    public var locale: Int?
    public var recipients: Int
    /// People counted in the group of their first recipient; equal to `recipients` without people.
    public var persons: Int

    public init(variant: Int?, locale: Int?, recipients: Int, persons: Int) {
        self.variant = variant
        self.locale = locale
        self.recipients = recipients
        self.persons = persons
    }
}

/// What a run kept of its assignment as a whole, written before its recipients: the names the
/// recipients' indexes stand for, whether it assigned people, its readout declaration, and, once
/// every recipient is kept, the tally (the readout's denominators).
public struct AssignmentHeader: Sendable, Hashable, Codable {
    public var variants: [String]
    public var locales: [String]
    /// The plan held some recipients out.
    public var holdout: Bool
    /// The attribute naming a person (`audience.user_key`): assignment, events and rates are per
    /// person; nil: per recipient (device).
    public var userKey: String?
    /// The campaign's `readout:` at send time.
    public var readout: ReadoutSpec?
    /// Nil until every recipient is kept.
    public var tally: [AssignmentTally]?

    public init(
        variants: [String],
        locales: [String],
        holdout: Bool,
        userKey: String?,
        readout: ReadoutSpec?,
        tally: [AssignmentTally]? = nil
    ) {
        self.variants = variants
        self.locales = locales
        self.holdout = holdout
        self.userKey = userKey
        self.readout = readout
        self.tally = tally
    }

    /// Every recipient is kept.
    public var isComplete: Bool { tally != nil }

    /// The name of variant index `index`; nil for the holdout (or an index out of range).
    public func variant(_ index: Int?) -> String? {
        index.flatMap { variants.indices.contains($0) ? variants[$0] : nil }
    }

    public func locale(_ index: Int?) -> String? {
        index.flatMap { locales.indices.contains($0) ? locales[$0] : nil }
    }
}

/// A tally's (variant, locale).
package struct TallyGroup: Hashable {
    package var variant: Int?
    package var locale: Int?

    package init(variant: Int?, locale: Int?) {
        self.variant = variant
        self.locale = locale
    }
}

extension AssignmentTally {
    /// `tally` as a list.
    package static func list(_ tally: [TallyGroup: (recipients: Int, persons: Int)]) -> [AssignmentTally] {
        tally.map {
            AssignmentTally(
                variant: $0.key.variant,
                locale: $0.key.locale,
                recipients: $0.value.recipients,
                persons: $0.value.persons
            )
        }
    }

    /// The tally of `kept`, counted in memory: what each store's query answers.
    static func of(_ kept: some Sequence<KeptAssignment>) -> [AssignmentTally] {
        var first: [Int64: Int] = [:]
        var all: [KeptAssignment] = []
        for assignment in kept {
            all.append(assignment)
            if let person = assignment.person { first[person] = min(first[person] ?? .max, assignment.seq) }
        }
        var tally: [TallyGroup: (recipients: Int, persons: Int)] = [:]
        for assignment in all {
            let group = TallyGroup(variant: assignment.variant, locale: assignment.locale)
            let isFirst = assignment.person.map { first[$0] == assignment.seq } ?? true
            tally[group, default: (0, 0)].recipients += 1
            if isFirst { tally[group, default: (0, 0)].persons += 1 }
        }
        return list(tally)
    }
}

extension AssignmentHeader {
    /// As stored: JSON. Written twice per run, so Foundation's encoder is fine here.
    public func encoded() throws(JournalError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        } catch {
            throw JournalError(.failed, "a run's assignment header cannot be written: \(error)")
        }
    }

    public static func decode(_ text: String) throws(JournalError) -> AssignmentHeader {
        do {
            return try JSONDecoder().decode(AssignmentHeader.self, from: Data(text.utf8))
        } catch {
            throw JournalError(.corrupt, "a run's assignment header is not the JSON Pushcamp writes")
        }
    }
}

extension MemoryJournal {
    public func keepAssignmentHeader(_ header: AssignmentHeader, of run: RunID) async throws(JournalError) {
        state.withLock { $0.assignmentHeaders[run] = header }
    }

    public func assignmentHeader(of run: RunID) async throws(JournalError) -> AssignmentHeader? {
        state.withLock { $0.assignmentHeaders[run] }
    }

    public func keepAssignments(_ batch: [KeptAssignment], of run: RunID) async throws(JournalError) {
        state.withLock { state in
            for assignment in batch where state.assignmentsAdded[run]?[assignment.seq] == nil {
                state.assignmentsAdded[run, default: [:]][assignment.seq] = assignment
            }
        }
    }

    public func sealAssignments(of run: RunID) async throws(JournalError) -> [AssignmentTally] {
        state.withLock { state in
            for assignment in (state.assignmentsAdded.removeValue(forKey: run) ?? [:]).values
            where state.assignments[run]?[assignment.id] == nil {
                state.assignments[run, default: [:]][assignment.id] = assignment
            }
            return AssignmentTally.of((state.assignments[run] ?? [:]).values)
        }
    }

    public func assignments(of run: RunID, ids: [AssignmentID]) async throws(JournalError) -> [KeptAssignment] {
        state.withLock { state in Set(ids).compactMap { state.assignments[run]?[$0] } }
    }

    public func assignments(of run: RunID, persons: [Int64]) async throws(JournalError) -> [KeptAssignment] {
        let wanted = Set(persons)
        return state.withLock { state in
            (state.assignments[run] ?? [:]).values.filter { $0.person.map(wanted.contains) ?? false }
        }
    }
}

extension SQLiteJournal {
    static let assignmentSchema = """
        -- What a run kept of its assignment at send time, so engagement is matched without the
        -- campaign's files: a header per run (its arms, locales, readout, and the tally once every
        -- recipient is kept); a row per recipient keyed by its apns-id, with its place in the plan,
        -- its person (a hash of audience.user_key's value), and its variant (NULL: held out) and
        -- locale as indexes into the header's lists; the same per person. Recipients are added in
        -- plan order to assignment_added, then filed in key order when sealed: apns-ids and people
        -- are hashes, and a B-tree filled in hash order rewrites pages all over for every batch.
        CREATE TABLE assignment_run (run INTEGER PRIMARY KEY, header TEXT NOT NULL);
        CREATE TABLE assignment_added (
            run INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            id_high INTEGER NOT NULL,
            id_low INTEGER NOT NULL,
            person INTEGER,
            variant INTEGER,
            locale INTEGER,
            PRIMARY KEY (run, seq)
        ) WITHOUT ROWID;
        CREATE TABLE assignment (
            run INTEGER NOT NULL,
            id_high INTEGER NOT NULL,
            id_low INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            person INTEGER,
            variant INTEGER,
            locale INTEGER,
            PRIMARY KEY (run, id_high, id_low)
        ) WITHOUT ROWID;
        CREATE TABLE assignment_person (
            run INTEGER NOT NULL,
            person INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            id_high INTEGER NOT NULL,
            id_low INTEGER NOT NULL,
            variant INTEGER,
            locale INTEGER,
            PRIMARY KEY (run, person, seq)
        ) WITHOUT ROWID;
        """

    public func keepAssignmentHeader(_ header: AssignmentHeader, of run: RunID) async throws(JournalError) {
        let text = try header.encoded()
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO assignment_run (run, header) VALUES (?, ?)
                    ON CONFLICT (run) DO UPDATE SET header = excluded.header
                    """,
                arguments: [run.rawValue, text]
            )
        }
    }

    public func assignmentHeader(of run: RunID) async throws(JournalError) -> AssignmentHeader? {
        let text = try await read { db in
            try String.fetchOne(db, sql: "SELECT header FROM assignment_run WHERE run = ?", arguments: [run.rawValue])
        }
        return try text.map(AssignmentHeader.decode)
    }

    public func keepAssignments(_ batch: [KeptAssignment], of run: RunID) async throws(JournalError) {
        guard !batch.isEmpty else { return }
        try await write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO assignment_added (run, seq, id_high, id_low, person, variant, locale)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """
            )
            for kept in batch {
                try statement.execute(arguments: [
                    run.rawValue, kept.seq, kept.id.high, kept.id.low, kept.person, kept.variant, kept.locale,
                ])
            }
        }
    }

    public func sealAssignments(of run: RunID) async throws(JournalError) -> [AssignmentTally] {
        try await write { db in
            let arguments: StatementArguments = [run.rawValue]
            try db.execute(
                sql: """
                    INSERT INTO assignment (run, id_high, id_low, seq, person, variant, locale)
                    SELECT run, id_high, id_low, seq, person, variant, locale FROM assignment_added
                    WHERE run = ? ORDER BY id_high, id_low ON CONFLICT DO NOTHING
                    """,
                arguments: arguments
            )
            try db.execute(
                sql: """
                    INSERT INTO assignment_person (run, person, seq, id_high, id_low, variant, locale)
                    SELECT run, person, seq, id_high, id_low, variant, locale FROM assignment_added
                    WHERE run = ? AND person IS NOT NULL ORDER BY person, seq ON CONFLICT DO NOTHING
                    """,
                arguments: arguments
            )
            try db.execute(sql: "DELETE FROM assignment_added WHERE run = ?", arguments: arguments)
            // Recipients per group from every row; people from each person's first row (SQLite
            // takes a bare column from the row that holds the min), plus recipients of no person.
            var tally: [TallyGroup: (recipients: Int, persons: Int)] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT variant, locale, count(*) AS n, count(*) FILTER (WHERE person IS NULL) AS alone
                    FROM assignment WHERE run = ? GROUP BY variant, locale
                    """,
                arguments: arguments
            ) {
                tally[TallyGroup(variant: row["variant"], locale: row["locale"]), default: (0, 0)].recipients +=
                    row["n"]
                tally[TallyGroup(variant: row["variant"], locale: row["locale"]), default: (0, 0)].persons +=
                    row["alone"]
            }
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT variant, locale, count(*) AS n FROM (
                        SELECT variant, locale, min(seq) FROM assignment_person WHERE run = ? GROUP BY person
                    ) GROUP BY variant, locale
                    """,
                arguments: arguments
            ) {
                tally[TallyGroup(variant: row["variant"], locale: row["locale"]), default: (0, 0)].persons += row["n"]
            }
            return AssignmentTally.list(tally)
        }
    }

    public func assignments(of run: RunID, ids: [AssignmentID]) async throws(JournalError) -> [KeptAssignment] {
        guard !ids.isEmpty else { return [] }
        return try await read { db in
            let statement = try db.cachedStatement(
                sql: "SELECT seq, person, variant, locale FROM assignment WHERE run = ? AND id_high = ? AND id_low = ?"
            )
            var found: [KeptAssignment] = []
            for id in Set(ids) {
                if let row = try Row.fetchOne(statement, arguments: [run.rawValue, id.high, id.low]) {
                    found.append(
                        KeptAssignment(
                            seq: row["seq"],
                            id: id,
                            person: row["person"],
                            variant: row["variant"],
                            locale: row["locale"]
                        )
                    )
                }
            }
            return found
        }
    }

    public func assignments(of run: RunID, persons: [Int64]) async throws(JournalError) -> [KeptAssignment] {
        guard !persons.isEmpty else { return [] }
        return try await read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT id_high, id_low, seq, person, variant, locale FROM assignment_person
                    WHERE run = ? AND person = ?
                    """
            )
            var found: [KeptAssignment] = []
            for person in Set(persons) {
                for row in try Row.fetchAll(statement, arguments: [run.rawValue, person]) {
                    found.append(
                        KeptAssignment(
                            seq: row["seq"],
                            id: AssignmentID(high: row["id_high"], low: row["id_low"]),
                            person: row["person"],
                            variant: row["variant"],
                            locale: row["locale"]
                        )
                    )
                }
            }
            return found
        }
    }
}
