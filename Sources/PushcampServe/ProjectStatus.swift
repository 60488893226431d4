import Foundation
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampReport

/// `pushcamp status`: what a team looks at first — runs being sent or interrupted, the next slots
/// of scheduled campaigns, what went wrong in the last day (campaign files serve cannot read,
/// slots skipped, runs with failures), the dead tokens remembered, and the App Store
/// notifications received in the last day. Read from the project's folders and its journal only.
public struct ProjectStatus: Sendable {
    public struct Run: Sendable {
        public var record: RunRecord
        public var counts: RecipientCounts
        /// The campaign file to send to resume it, as printed.
        public var file: String?
    }

    public struct NextSlot: Sendable {
        public var campaign: String
        public var file: String
        public var at: Int64
        public var schedule: String
    }

    public struct Problem: Sendable {
        /// When it happened, if known.
        public var at: Double?
        /// What it concerns: a campaign file, a campaign's slot, a run.
        public var subject: String
        public var message: String
    }

    public struct DeadTokens: Sendable {
        public var topic: String
        public var total: Int
        public var lastDay: Int
    }

    public var journal: String
    public var now: Double
    public var runs: [Run]
    public var nextSlots: [NextSlot]
    public var problems: [Problem]
    public var deadTokens: [DeadTokens]
    /// App Store notifications received in the last day: stored and quarantined; `more` when
    /// there were more than were counted.
    public var notifications: (stored: Int, quarantined: Int, more: Bool)
    /// The schedules the status was read from (`pushcamp schedules`), for a caller that shows them too.
    public var schedules: ScheduleListing

    static let day = 86_400.0
    static let notificationsCounted = 10_000

    /// Reads the watched campaign folders and the journal (an empty one when nothing was sent yet).
    public static func read(
        paths: ProjectPaths,
        folders: [String],
        journal: any Journal,
        journalName: String,
        now: Double
    ) async throws(JournalError) -> ProjectStatus {
        let dayAgo = now - day
        let listing = try await ScheduleListing.read(paths: paths, folders: folders, journal: journal, now: now)
        var problems: [Problem] = []
        var nextSlots: [NextSlot] = []
        for entry in listing.entries {
            if let error = entry.error {
                problems.append(Problem(at: nil, subject: entry.file, message: "invalid, skipped by serve: \(error)"))
            }
            guard let campaign = entry.campaign, let schedule = entry.schedule else { continue }
            if let next = entry.nextSlots.first {
                nextSlots.append(NextSlot(campaign: campaign, file: entry.file, at: next, schedule: "\(schedule)"))
            }
            for slot in entry.skipped + entry.failed where slot.recordedAt >= dayAgo {
                let run = slot.outcome == .failed ? slot.run.map { "; `pushcamp report \($0)`" } ?? "" : ""
                problems.append(
                    Problem(
                        at: slot.recordedAt,
                        subject: "\(campaign) slot \(Timestamps.text(Double(slot.slot)))",
                        message: "\(slot.outcome.rawValue): \(slot.reason ?? "unknown")"
                            + (slot.detail.map { " (\($0))" } ?? "") + run
                    )
                )
            }
        }
        nextSlots.sort { ($0.at, $0.campaign) < ($1.at, $1.campaign) }

        var runs: [Run] = []
        for record in try await journal.runs(limit: 200) {
            let checked = await record.livenessChecked(journal)
            let recent = checked.updatedAt >= dayAgo
            guard checked.status == .running || checked.status == .interrupted || recent else { continue }
            let counts = try await journal.keptCounts(of: checked.id, stats: try await journal.stats(of: checked.id))
            if checked.status == .running || checked.status == .interrupted {
                runs.append(Run(record: checked, counts: counts, file: checked.file.map(paths.displayRelative)))
            }
            if recent && counts.failed > 0 {
                let why = RunListing.failureText(RunListing.failures(in: try await journal.stats(of: checked.id)))
                problems.append(
                    Problem(
                        at: checked.updatedAt,
                        subject: "run \(checked.id) (\(checked.campaign))",
                        message:
                            "\(counts.failed) of \(counts.total) failed"
                            + (why.isEmpty ? "" : " (\(why))") + "; `pushcamp report \(checked.id)` has the details"
                    )
                )
            }
        }
        problems.sort { ($0.at ?? .infinity, $0.subject) > ($1.at ?? .infinity, $1.subject) }

        let totals = try await journal.invalidTokenCounts(since: nil)
        let lastDay = Dictionary(
            uniqueKeysWithValues: try await journal.invalidTokenCounts(since: dayAgo).map { ($0.topic, $0.count) }
        )
        let deadTokens = totals.map { DeadTokens(topic: $0.topic, total: $0.count, lastDay: lastDay[$0.topic] ?? 0) }

        let received = try await journal.notifications(limit: notificationsCounted, quarantined: false)
        let recentNotifications = received.filter { $0.receivedAt >= dayAgo }
        let notifications = (
            stored: recentNotifications.filter { $0.disposition == .stored }.count,
            quarantined: recentNotifications.filter { $0.disposition == .quarantined }.count,
            more: received.count == notificationsCounted && recentNotifications.count == received.count
        )
        return ProjectStatus(
            journal: journalName,
            now: now,
            runs: runs,
            nextSlots: nextSlots,
            problems: problems,
            deadTokens: deadTokens,
            notifications: notifications,
            schedules: listing
        )
    }

    // MARK: output

    public func text() -> String {
        var out = "journal \(journal)\n\nRuns being sent or interrupted\n"
        if runs.isEmpty { out += "  none\n" }
        for run in runs {
            let record = run.record
            let answered = run.counts.delivered + run.counts.failed
            let planned = record.planned ?? run.counts.total
            out +=
                "  run \(record.id)  \(record.campaign)  \(record.status.rawValue)  since \(Timestamps.text(record.startedAt))"
            out += "  answered \(answered) of \(planned)\n"
            if record.status == .interrupted {
                if record.slot != nil {
                    out += "    serve resumes it while its slot is open\n"
                } else if let file = run.file {
                    out += "    `pushcamp send \(file)` resumes it; `pushcamp cancel \(record.id)` gives it up\n"
                }
            }
        }
        out += "\nNext slots\n"
        if nextSlots.isEmpty { out += "  none (no campaign in the watched folders has a schedule)\n" }
        for slot in nextSlots {
            out += "  \(Timestamps.text(Double(slot.at)))  \(slot.campaign)  \(slot.schedule)  (\(slot.file))\n"
        }
        out += "\nProblems (files serve cannot read, and the last day's skipped slots and failed pushes)\n"
        if problems.isEmpty { out += "  none\n" }
        for problem in problems {
            out +=
                "  " + (problem.at.map { Timestamps.text($0) + "  " } ?? "")
                + "\(problem.subject): \(problem.message)\n"
        }
        out += "\nDead tokens (APNs called them Unregistered, ExpiredToken or BadDeviceToken)\n"
        if deadTokens.isEmpty { out += "  none\n" }
        for tokens in deadTokens {
            out += "  \(tokens.topic)  \(tokens.total) (\(tokens.lastDay) in the last day)\n"
        }
        let (stored, quarantined, more) = notifications
        out += "\nApp Store notifications in the last day: "
        out +=
            stored + quarantined == 0
            ? "none\n" : "\(stored) stored, \(quarantined) quarantined\(more ? " (at least)" : "")\n"
        return out
    }

    public func json() -> String {
        let document: JSONValue = .object([
            ("journal", .string(journal)),
            ("at", .string(Timestamps.iso(now))),
            (
                "runs",
                .array(
                    runs.map { run in
                        .object([
                            ("run", .integer(Int(run.record.id.rawValue))), ("campaign", .string(run.record.campaign)),
                            ("status", .string(run.record.status.rawValue)),
                            ("started_at", .string(Timestamps.iso(run.record.startedAt))),
                            ("slot", run.record.slot.map { .string(Timestamps.iso(Double($0))) } ?? .null),
                            ("file", .optional(run.file)),
                            ("planned", .integer(run.record.planned ?? run.counts.total)),
                            ("delivered", .integer(run.counts.delivered)), ("failed", .integer(run.counts.failed)),
                        ])
                    }
                )
            ),
            (
                "next_slots",
                .array(
                    nextSlots.map { slot in
                        .object([
                            ("campaign", .string(slot.campaign)), ("file", .string(slot.file)),
                            ("at", .string(Timestamps.iso(Double(slot.at)))), ("schedule", .string(slot.schedule)),
                        ])
                    }
                )
            ),
            (
                "problems",
                .array(
                    problems.map { problem in
                        .object([
                            ("at", problem.at.map { .string(Timestamps.iso($0)) } ?? .null),
                            ("subject", .string(problem.subject)), ("message", .string(problem.message)),
                        ])
                    }
                )
            ),
            (
                "dead_tokens",
                .array(
                    deadTokens.map { tokens in
                        .object([
                            ("topic", .string(tokens.topic)), ("total", .integer(tokens.total)),
                            ("last_day", .integer(tokens.lastDay)),
                        ])
                    }
                )
            ),
            (
                "app_store_notifications_last_day",
                .object([
                    ("stored", .integer(notifications.stored)), ("quarantined", .integer(notifications.quarantined)),
                    ("at_least", .bool(notifications.more)),
                ])
            ),
        ])
        return document.text + "\n"
    }
}
