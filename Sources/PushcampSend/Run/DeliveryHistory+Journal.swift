import Foundation
import PushcampJournal
import PushcampModel
import PushcampPlanner

extension DeliveryHistory {
    /// What `journal` knows that changes `campaign`'s plan: the dead tokens of its topic and, when
    /// it has a frequency cap, the deliveries within the cap's window before `now`.
    public static func read(
        for campaign: LoadedCampaign,
        from journal: any JournalStore,
        now: Date = Date()
    ) throws -> DeliveryHistory {
        var suppression = Suppression(registeredAtAttribute: campaign.registeredAtAttribute)
        for token in try journal.invalidTokens(topic: campaign.topic, since: nil) {
            suppression.add(token: token.token, apnsTimestamp: token.apnsTimestamp, seenAt: token.seenAt)
        }
        var history = DeliveryHistory(suppression: suppression)
        if let spec = campaign.frequencyCap {
            let since = now.timeIntervalSince1970 - Double(spec.per.seconds)
            history.frequencyCap = try FrequencyCap(spec) { try journal.forEachDelivery(since: since, $0) }
        }
        return history
    }

    /// For `plan`: the journal at `path` if there is one (a project that never sent has none, and
    /// planning does not create it).
    public static func read(for campaign: LoadedCampaign, journalPath path: String) throws -> DeliveryHistory {
        guard FileManager.default.fileExists(atPath: path) else {
            return DeliveryHistory(suppression: Suppression(registeredAtAttribute: campaign.registeredAtAttribute))
        }
        return try read(for: campaign, from: SQLiteJournal(path: path, readOnly: true))
    }
}

extension PlanSummary {
    /// `campaign` planned as `send` would send it with the journal at `journalPath` as it is now:
    /// what `plan` shows and what a production send asks about. Throws `AudienceError` for an
    /// audience that cannot be read, other errors for a journal that cannot be.
    public static func planned(
        _ campaign: LoadedCampaign,
        journalPath: String,
        sendTime: Timestamp?,
        sendTimeSource: String,
        samples: Int
    ) throws -> PlanSummary {
        var planner = Planner(
            campaign: campaign,
            sendTime: sendTime,
            sendTimeSource: sendTimeSource,
            sampleLimit: samples
        )
        planner.history = try DeliveryHistory.read(for: campaign, journalPath: journalPath)
        let journal = try CampaignJournalStatus.read(for: campaign, journalPath: journalPath)
        var summary = try planner.run()
        summary.journal = journal
        return summary
    }
}
