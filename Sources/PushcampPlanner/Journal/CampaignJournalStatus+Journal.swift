import Foundation
import PushcampJournal

extension CampaignJournalStatus {
    /// What `journal` (nil: none yet) says of `campaign`, as `send` will act on it: its unfinished run
    /// (resumed, refused when the campaign changed, or being sent elsewhere), else its last run
    /// (finished or cancelled: refused), else never sent. Replays aside. Reads without creating
    /// a journal where there is none.
    public static func read(
        for campaign: LoadedCampaign,
        journal: (any Journal)?
    ) async throws -> CampaignJournalStatus {
        guard let store = journal else { return .neverSent }
        if let unfinished = try await store.unfinishedRun(campaign: campaign.id) {
            let run = await unfinished.livenessChecked(store)
            var status = try await status(of: run, state: run.status == .running ? .running : .interrupted, in: store)
            status.at = Timestamps.text(run.startedAt)
            status.changedSince = run.revision != campaign.revision
            if let planned = run.total(stats: try await store.stats(of: run.id)) {
                let settled = status.delivered + status.failed
                status.left = max(0, planned - settled)
            }
            return status
        }
        if let last = try await store.latestRun(campaign: campaign.id) {
            switch last.status {
            case .finished: return try await status(of: last, state: .finished, in: store)
            case .cancelled: return try await status(of: last, state: .cancelled, in: store)
            default: return .neverSent  // superseded runs only: a new one starts
            }
        }
        return .neverSent
    }

    private static func status(of run: RunRecord, state: State, in store: any Journal) async throws -> Self {
        let counts = try await store.keptCounts(of: run.id, stats: try await store.stats(of: run.id))
        var status = CampaignJournalStatus(state: state)
        status.run = run.id.rawValue
        status.at = Timestamps.text(run.updatedAt)
        status.revision = run.revision
        status.delivered = counts.delivered
        status.failed = counts.failed
        return status
    }
}
