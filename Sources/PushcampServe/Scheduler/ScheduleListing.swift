import Foundation
import PushcampJournal
import PushcampModel
import PushcampPlanner

/// What `pushcamp schedules` shows: each campaign file in the watched folders with a schedule (or
/// an error), its next slots, the last slot fired with its run, and the slots skipped or failed,
/// and why.
public struct ScheduleListing: Sendable {
    public struct Entry: Sendable {
        public var campaign: String?
        public var file: String
        public var schedule: ScheduleSpec?
        public var error: String?
        public var nextSlots: [Int64]
        public var lastFired: SlotRecord?
        public var lastRun: RunRecord?
        public var skipped: [SlotRecord]
        /// Slots that fired and whose run finally failed (a broadcast refused, or never answered).
        public var failed: [SlotRecord]
    }

    public var entries: [Entry]

    /// Reads the folders and, when there is one, the journal.
    public static func read(
        paths: ProjectPaths,
        folders: [String],
        journal: (any Journal)?,
        now: Double,
        nextCount: Int = 3,
        skippedCount: Int = 5
    ) async throws(JournalError) -> ScheduleListing {
        var catalog = CampaignCatalog(paths: paths, folders: folders)
        _ = catalog.refresh()
        var entries: [Entry] = []
        for entry in catalog.entries.values.sorted(by: { $0.path < $1.path }) {
            let file = paths.displayRelative(entry.path)
            if let error = entry.error {
                entries.append(
                    Entry(
                        campaign: entry.id,
                        file: file,
                        schedule: nil,
                        error: error,
                        nextSlots: [],
                        lastFired: nil,
                        lastRun: nil,
                        skipped: [],
                        failed: []
                    )
                )
                continue
            }
            guard let id = entry.id, let schedule = entry.schedule else { continue }
            var recorded: [SlotRecord] = []
            var latest: SlotRecord?
            if let journal {
                recorded = try await journal.slots(campaign: id, limit: 200)
                latest = try await journal.latestSlot(campaign: id)
            }
            let lastFired = recorded.first { $0.outcome != .skipped }
            var lastRun: RunRecord?
            if let run = lastFired?.run { lastRun = try await journal?.run(run) }
            var cursor = Int64(now)
            if let latest { cursor = max(cursor, latest.last) }
            var next = schedule.slots(after: cursor, through: .max, limit: nextCount)
            if latest == nil, let at = schedule.once, at <= Int64(now) {
                next = [at]  // not fired yet: serve fires it if within catch_up.within
            }
            entries.append(
                Entry(
                    campaign: id,
                    file: file,
                    schedule: schedule,
                    error: nil,
                    nextSlots: next,
                    lastFired: lastFired,
                    lastRun: lastRun,
                    skipped: Array(recorded.filter { $0.outcome == .skipped }.prefix(skippedCount)),
                    failed: Array(recorded.filter { $0.outcome == .failed }.prefix(skippedCount))
                )
            )
        }
        return ScheduleListing(entries: entries)
    }
}
