import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner

/// Records engagement rows against a run: each row is matched to the recipient it names through
/// the assignment the run kept at send time (`AssignmentKeeper`: place in the plan, apns-id,
/// person, variant, holdout and locale), then kept once per (recipient, event) — per person when
/// the run assigned people (`audience.user_key`): one person, one arm, one count.
///
/// A sent recipient counts when the run dispatched it (a person, when the run dispatched any of
/// their devices); a held-out one always (the holdout is the baseline the readout compares with).
/// Rows are matched a batch at a time by the journal's index, so a file of any size is read once
/// to check it and once to record it, in bounded memory.
public struct EngagementImport: Sendable {
    public struct Outcome: Sendable, Hashable {
        /// Events recorded now.
        public var recorded = 0
        /// Events the journal had already (imported or posted before, or another device of the
        /// same person).
        public var alreadyRecorded = 0
        /// Rows naming no recipient of the run's audience.
        public var unmatched = 0
        /// Rows naming a recipient the run planned but never sent (refused, dead, capped, or not
        /// reached yet).
        public var notSent = 0
        /// Rows dated before the run started, or after its attribution window (`readout.window`).
        public var outsideWindow = 0

        public init() {}

        public static func + (lhs: Outcome, rhs: Outcome) -> Outcome {
            var sum = lhs
            sum.recorded += rhs.recorded
            sum.alreadyRecorded += rhs.alreadyRecorded
            sum.unmatched += rhs.unmatched
            sum.notSent += rhs.notSent
            sum.outsideWindow += rhs.outsideWindow
            return sum
        }
    }

    /// Why rows cannot be matched to `run` at all.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// The run named is not in the journal (or the campaign has none yet).
        public var noSuchRun = false
    }

    /// Run `number` of `campaign` (nil: its latest), ready to match rows against: what
    /// `pushcamp engagement import` and the console's engagement POST both resolve. A run that
    /// kept no assignment (it was no test, or was sent before runs kept theirs) keeps it now when
    /// `campaign`'s files are still at the run's revision.
    public static func forRun(
        _ number: RunID?,
        of campaign: LoadedCampaign,
        in journal: any JournalStore & EngagementStore
    ) async throws -> EngagementImport {
        let record =
            if let number { try await journal.run(number) } else { try await journal.latestRun(campaign: campaign.id) }
        guard let record else {
            throw Refusal(
                description: number.map { "there is no run \($0) in the journal" }
                    ?? "'\(campaign.id)' has no run in the journal yet: send it first",
                noSuchRun: true
            )
        }
        guard record.campaign == campaign.id else {
            throw Refusal(description: "run \(record.id) is of campaign '\(record.campaign)', not '\(campaign.id)'")
        }
        guard campaign.broadcast == nil else {
            throw Refusal(
                description: "'\(campaign.id)' is a broadcast: one request to a channel has no recipients to match"
            )
        }
        var assignment = try await journal.assignmentHeader(of: record.id)
        if assignment?.isComplete != true {
            guard record.revision == campaign.revision else {
                throw Refusal(
                    description:
                        "run \(record.id) kept no assignment of its recipients (it was no test, or was sent by an "
                        + "earlier Pushcamp) and was planned from revision \(record.revision), while the campaign's "
                        + "files are now at revision \(campaign.revision): its recipients can only be matched with the "
                        + "files it was planned from (check them out, e.g. with git, and import again)"
                )
            }
            assignment = try await AssignmentKeeper.keep(campaign, run: record, in: journal)
        }
        return EngagementImport(
            run: record,
            assignment: assignment!,
            dispatched: merged(try await journal.dispatched(of: record.id))
        )
    }

    /// Rows matched per lookup in the journal.
    public static let batchSize = 5_000

    public var run: RunRecord
    /// What the run kept of its assignment: its arms, locales, people and readout.
    public var assignment: AssignmentHeader
    /// The seqs the run dispatched, sorted and joined.
    var dispatched: [ClosedRange<Int>]

    /// Matches `rows` (at most `batchSize` or so) and records what matched.
    public func record(
        _ rows: [EngagementRow],
        in journal: any EngagementStore,
        now: Double
    ) async throws -> Outcome {
        guard !rows.isEmpty else { return Outcome() }
        // Each row's key, read once: an apns-id, or a person.
        let keys: [(id: AssignmentID?, person: Int64?)] = rows.map { row in
            switch row.recipient {
            case .apnsID(let text): (AssignmentID(text: text), nil)
            case .user(let user): (nil, Planner.Assignment.person(user))
            }
        }
        let ids = keys.compactMap(\.id)
        var persons = keys.compactMap(\.person)
        if !persons.isEmpty, assignment.userKey == nil {
            throw Refusal(
                description:
                    "rows name recipients by 'user', and run \(run.id) assigned no people: '\(run.campaign)' had no "
                    + "audience.user_key when it was sent (give apns_id, or add a user_key, e.g. user_key: "
                    + "user_id, for the next run)"
            )
        }
        var byID: [AssignmentID: KeptAssignment] = [:]
        for kept in try await journal.assignments(of: run.id, ids: ids) { byID[kept.id] = kept }
        // A person is one unit, whichever device a row names: all their devices, read at once.
        if assignment.userKey != nil { persons += byID.values.compactMap(\.person) }
        var devices: [Int64: [KeptAssignment]] = [:]
        for kept in try await journal.assignments(of: run.id, persons: persons) {
            if let person = kept.person { devices[person, default: []].append(kept) }
        }
        let window = attributionWindow
        var events: [EngagementEvent] = []
        var outcome = Outcome()
        for (row, key) in zip(rows, keys) {
            let unit: [KeptAssignment]
            if let person = key.person {
                unit = devices[person] ?? []
            } else {
                let kept = key.id.flatMap { byID[$0] }
                unit = kept.map { kept in kept.person.flatMap { devices[$0] } ?? [kept] } ?? []
            }
            // The unit's first recipient in plan order stands for it: its arm, locale and seq.
            guard let first = unit.min(by: { $0.seq < $1.seq }) else {
                outcome.unmatched += 1
                continue
            }
            guard first.variant == nil || unit.contains(where: { Self.contains(dispatched, $0.seq) }) else {
                outcome.notSent += 1
                continue
            }
            guard window.contains(row.at) else {
                outcome.outsideWindow += 1
                continue
            }
            events.append(
                EngagementEvent(
                    seq: first.seq,
                    event: row.event,
                    variant: assignment.variant(first.variant),
                    locale: assignment.locale(first.locale),
                    at: row.at,
                    value: row.value
                )
            )
        }
        let added = try await journal.recordEngagement(events, run: run.id, now: now)
        outcome.recorded += added
        outcome.alreadyRecorded += events.count - added
        return outcome
    }

    /// When an event counts: from the run's start to the end of the `readout.window` it kept.
    public var attributionWindow: ClosedRange<Double> {
        (assignment.readout ?? ReadoutSpec()).attributionWindow(from: run.startedAt)
    }

    /// Matches and records every well-formed row of `file` (checked before: its bad rows are
    /// passed over), read once more as a stream and matched a batch at a time: memory stays
    /// bounded and time linear whatever the file's size. `outcome` holds what was recorded, also
    /// when a batch fails.
    public func record(
        _ file: EngagementFile,
        in journal: any EngagementStore,
        clock: any WallClock = SystemWallClock(),
        outcome: inout Outcome
    ) async throws {
        var total = outcome
        defer { outcome = total }
        _ = try await ThreadPages.run(name: "pushcamp-engagement") { (emit: ([EngagementRow]) throws -> Void) in
            var batch: [EngagementRow] = []
            batch.reserveCapacity(Self.batchSize)
            try file.forEachRow { row in
                batch.append(row)
                if batch.count == Self.batchSize {
                    try emit(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            } bad: { _ in
            }
            if !batch.isEmpty { try emit(batch) }
        } consume: { batch in
            total = total + (try await record(batch, in: journal, now: clock.now()))
        }
    }

    /// `ranges` sorted, with overlapping and adjacent ones joined.
    static func merged(_ ranges: [ClosedRange<Int>]) -> [ClosedRange<Int>] {
        var merged: [ClosedRange<Int>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound + 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// Whether sorted, non-overlapping `ranges` hold `seq`.
    static func contains(_ ranges: [ClosedRange<Int>], _ seq: Int) -> Bool {
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < seq { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].contains(seq)
    }
}

extension EngagementImport.Outcome {
    /// What `pushcamp engagement import` says when it is done: the events recorded from `rows`
    /// rows into `run`, and the rows left out, with why.
    public func summary(rows: Int, run: RunID, window: Int64? = nil) -> String {
        var lines = [
            "run \(run): \(recorded) event\(recorded == 1 ? "" : "s") recorded from \(rows) row\(rows == 1 ? "" : "s")"
        ]
        if alreadyRecorded > 0 { lines.append("  \(alreadyRecorded) already recorded") }
        if notSent > 0 { lines.append("  \(notSent) named a recipient the run did not send to (left out)") }
        if outsideWindow > 0 {
            let bounds =
                window.map { "outside the attribution window (the run's start to \(TimeSpan(seconds: $0)) after)" }
                ?? "before the run started"
            lines.append("  \(outsideWindow) dated \(bounds) (left out)")
        }
        if unmatched > 0 { lines.append("  \(unmatched) named no recipient of the run (left out)") }
        return lines.joined(separator: "\n")
    }
}
