import Foundation
import PushcampJournal
import PushcampPlanner

extension Suppression {
    /// The dead tokens the journal remembers for `campaign`'s topic.
    static func read(for campaign: LoadedCampaign, from journal: any JournalStore) throws(JournalError) -> Suppression {
        var suppression = Suppression(registeredAtAttribute: campaign.registeredAtAttribute)
        for token in try journal.invalidTokens(topic: campaign.topic, since: nil) {
            suppression.add(token: token.token, apnsTimestamp: token.apnsTimestamp, seenAt: token.seenAt)
        }
        return suppression
    }

    /// For `plan`: the journal at `path` if there is one (a project that never sent has none, and
    /// planning does not create it).
    static func read(for campaign: LoadedCampaign, journalPath path: String) throws(JournalError) -> Suppression {
        guard FileManager.default.fileExists(atPath: path) else {
            return Suppression(registeredAtAttribute: campaign.registeredAtAttribute)
        }
        return try read(for: campaign, from: SQLiteJournal(path: path))
    }
}
