import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner

/// Records engagement rows against a run: each row is matched to the recipient it names by
/// planning the run's campaign again (same files, same seq, `apns-id`, variant, holdout and
/// locale: planning is deterministic), then kept once per (recipient, event).
///
/// A sent recipient counts when the run dispatched it; a held-out one always (the holdout is the
/// baseline the readout compares with). Rows are matched a chunk at a time, each chunk one pass
/// over the audience, so a file of any size costs a bounded amount of memory.
public struct EngagementImport: Sendable {
    public struct Outcome: Sendable, Hashable {
        /// Events recorded now.
        public var recorded = 0
        /// Events the journal had already (imported or posted before).
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
    /// `pushcamp engagement import` and the console's engagement POST both resolve.
    public static func forRun(
        _ number: RunID?,
        of campaign: LoadedCampaign,
        in journal: any JournalStore
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
        return try EngagementImport(campaign: campaign, run: record)
    }

    /// Rows matched per pass over the audience.
    public static let chunkSize = 100_000

    public var campaign: LoadedCampaign
    public var run: RunRecord

    /// Checks that `run` can be matched with `campaign` as loaded now: the same campaign, planned
    /// from the same revision (the files it was planned from), and not a broadcast.
    public init(campaign: LoadedCampaign, run: RunRecord) throws(Refusal) {
        guard run.campaign == campaign.id else {
            throw Refusal(description: "run \(run.id) is of campaign '\(run.campaign)', not '\(campaign.id)'")
        }
        guard campaign.broadcast == nil else {
            throw Refusal(
                description: "'\(campaign.id)' is a broadcast: one request to a channel has no recipients to match"
            )
        }
        guard run.revision == campaign.revision else {
            throw Refusal(
                description:
                    "run \(run.id) was planned from revision \(run.revision), and the campaign's files are now at "
                    + "revision \(campaign.revision): its recipients can only be matched with the files it was "
                    + "planned from (check them out, e.g. with git, and import again)"
            )
        }
        self.campaign = campaign
        self.run = run
    }

    /// Matches `rows` (at most `chunkSize` or so) and records what matched.
    public func record(
        _ rows: [EngagementRow],
        in journal: any JournalStore & EngagementStore,
        now: Double
    ) async throws -> Outcome {
        guard !rows.isEmpty else { return Outcome() }
        var byAPNsID: [String: [Int]] = [:]
        var byUser: [String: [Int]] = [:]
        for (index, row) in rows.enumerated() {
            switch row.recipient {
            case .apnsID(let id): byAPNsID[id, default: []].append(index)
            case .user(let user): byUser[user, default: []].append(index)
            }
        }
        if !byUser.isEmpty, campaign.userKey == nil {
            throw Refusal(
                description:
                    "rows name recipients by 'user', and '\(campaign.id)' has no audience.user_key naming the "
                    + "attribute to match: add one (e.g. user_key: user_id), or give apns_id"
            )
        }
        let dispatched = Self.merged(try await journal.dispatched(of: run.id))
        let window = attributionWindow
        var matched = [Bool](repeating: false, count: rows.count)
        var events: [EngagementEvent] = []
        var outcome = Outcome()
        let userKey = campaign.userKey
        try Planner(campaign: campaign).forEachAssignment { recipient, assignment in
            var indexes = byAPNsID.isEmpty ? [] : byAPNsID[assignment.apnsID.description] ?? []
            if let userKey, !byUser.isEmpty, let user = recipient.attributes[userKey]?.text {
                indexes += byUser[user] ?? []
            }
            for index in indexes {
                matched[index] = true
                guard assignment.variant == nil || Self.contains(dispatched, assignment.seq) else {
                    outcome.notSent += 1
                    continue
                }
                let row = rows[index]
                guard window.contains(row.at) else {
                    outcome.outsideWindow += 1
                    continue
                }
                events.append(
                    EngagementEvent(
                        seq: assignment.seq,
                        event: row.event,
                        variant: assignment.variant,
                        locale: assignment.locale,
                        at: row.at
                    )
                )
            }
        }
        outcome.unmatched = matched.count { !$0 }
        var start = 0
        while start < events.count {
            let batch = Array(events[start..<min(events.count, start + 5_000)])
            let added = try await journal.recordEngagement(batch, run: run.id, now: now)
            outcome.recorded += added
            outcome.alreadyRecorded += batch.count - added
            start += batch.count
        }
        return outcome
    }

    /// When an event counts: from the run's start to the end of the campaign's `readout.window`.
    public var attributionWindow: ClosedRange<Double> {
        (campaign.readout ?? ReadoutSpec()).attributionWindow(from: run.startedAt)
    }

    /// Matches and records the `rows` well-formed rows of `file` a chunk at a time (the first
    /// chunk, `firstChunk`, already read), each chunk one pass over the audience: memory stays
    /// bounded whatever the file's size. `outcome` holds what was recorded, also when a chunk fails.
    public func record(
        _ file: EngagementFile,
        rows: Int,
        firstChunk: [EngagementRow],
        in journal: any JournalStore & EngagementStore,
        clock: any WallClock = SystemWallClock(),
        outcome: inout Outcome
    ) async throws {
        var first = 0
        while first < rows {
            let chunk = first == 0 ? firstChunk : try file.rows(from: first, count: Self.chunkSize)
            outcome = outcome + (try await record(chunk, in: journal, now: clock.now()))
            first += Self.chunkSize
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
