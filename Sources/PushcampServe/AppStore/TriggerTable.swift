import Foundation
import PushcampAppStore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import Synchronization

/// A trigger campaign as the receiver needs it: which notifications fire it, for which app, and
/// which key of the subscription its audience is joined by.
public struct TriggerRule: Sendable, Hashable {
    public var campaign: String
    public var app: String
    public var spec: TriggerSpec
    public var key: SubscriptionAudienceSpec.Key

    public init(campaign: String, app: String, spec: TriggerSpec, key: SubscriptionAudienceSpec.Key) {
        self.campaign = campaign
        self.app = app
        self.spec = spec
        self.key = key
    }

    init?(_ campaign: LoadedCampaign) {
        // (A trigger campaign names an iOS app: the assembler refuses one naming only Android's.)
        guard let trigger = campaign.trigger, let app = campaign.app else { return nil }
        self.init(campaign: campaign.id, app: app.name, spec: trigger, key: campaign.subscriptionJoin.key)
    }
}

/// The trigger campaigns of `serve`'s campaign folders, shared by the scheduler (which reads the
/// folders and fires the firings) and the receiver (which records the firings of each notification
/// in the transaction that stores it).
public final class TriggerTable: Sendable {
    private let rules: Mutex<[TriggerRule]>

    public init(_ rules: [TriggerRule] = []) {
        self.rules = Mutex(rules)
    }

    /// The trigger campaigns of `folders` as they are now (what `serve` starts with, so no
    /// notification received before the scheduler's first look is missed).
    public convenience init(paths: ProjectPaths, folders: [String]) {
        var catalog = CampaignCatalog(paths: paths, folders: folders)
        _ = catalog.refresh()
        self.init(catalog.triggers.values.map(\.rule))
    }

    public var current: [TriggerRule] { rules.withLock { $0 } }

    func set(_ new: [TriggerRule]) {
        rules.withLock { $0 = new.sorted { $0.campaign < $1.campaign } }
    }

    /// The firings of a notification accepted for `app`, due `delay` after `now`. A notification
    /// that names no subscription key the campaign joins by is recorded as reaching nobody.
    public func firings(for notification: AppStoreNotification, app: String, now: Double) -> [TriggerFiring] {
        current.filter { $0.app == app && $0.spec.matches(type: notification.type, subtype: notification.subtype) }
            .map { rule in
                let key =
                    rule.key == .appAccountToken
                    ? notification.transaction?.appAccountToken ?? notification.renewal?.appAccountToken
                    : notification.originalTransactionID
                return TriggerFiring(
                    campaign: rule.campaign,
                    notification: notification.uuid,
                    subscriptionKey: key,
                    dueAt: now + Double(rule.spec.delay.seconds),
                    status: key == nil ? .noRecipient : .pending,
                    detail: key == nil ? "the notification names no \(rule.key.rawValue)" : nil,
                    recordedAt: now
                )
            }
    }
}
