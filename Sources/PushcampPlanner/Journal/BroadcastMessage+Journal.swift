import PushcampJournal
import PushcampModel

extension BroadcastMessage {
    /// `campaign`'s request at `now` with its channel's id as the journal recorded it (nil until
    /// `pushcamp channels apply`), and its `apns-request-id` made from the run (`run`, or 0 for a
    /// plan): what `plan` shows and `send` sends.
    public static func planned(
        _ campaign: LoadedCampaign,
        journal: any Journal,
        now: Double,
        run: RunID? = nil
    ) async throws(JournalError) -> (BroadcastMessage?, [Diagnostic]) {
        guard let target = campaign.broadcast else { return (nil, []) }
        let recorded = try await journal.channels().first { $0.name == target.channel.name }
        let namespace = UUIDv5.runNamespace(campaign: campaign.id, revision: campaign.revision)
        let requestID = UUIDv5.make(namespace: namespace, name: "broadcast-\(run?.rawValue ?? 0)").description
        return make(campaign, channelID: recorded?.channelID, now: now, requestID: requestID)
    }
}
