import Foundation
import PushcampAPNsCore
import PushcampJournal
import PushcampModel

extension DeliveryHistory {
    /// What `journal` knows that changes `campaign`'s plan: the dead tokens of its topic; when it
    /// has a frequency cap, the deliveries within the cap's window before `now`; when its audience
    /// is joined to App Store subscriptions, those in the selected states — only those keyed by
    /// `triggerKeys` for the run of trigger firings.
    public static func read(
        for campaign: LoadedCampaign,
        from journal: any Journal,
        clock: any WallClock = SystemWallClock(),
        triggerKeys: [String]? = nil
    ) async throws -> DeliveryHistory {
        let now = clock.now()
        var suppression = Suppression(registeredAtAttribute: campaign.registeredAtAttribute)
        var topics: [String] = []
        if campaign.app != nil { topics.append(campaign.topic) }
        if campaign.android != nil { topics.append(InvalidToken.fcmTopic) }
        for topic in topics {
            for token in try await journal.invalidTokens(topic: topic, since: nil) {
                suppression.add(token: token.token, apnsTimestamp: token.apnsTimestamp, seenAt: token.seenAt)
            }
        }
        var history = DeliveryHistory(suppression: suppression)
        if let spec = campaign.frequencyCap {
            let since = now - Double(spec.per.seconds)
            let hashes = try await journal.deliveryHashes(since: since)
            history.frequencyCap = try FrequencyCap(spec) { body in for hash in hashes { try body(hash) } }
        }
        if campaign.subscriptions != nil || campaign.trigger != nil || triggerKeys != nil {
            history.subscriptions = try await subscriptionMatch(for: campaign, from: journal, only: triggerKeys)
        }
        return history
    }

    /// The subscriptions `campaign`'s audience is joined to: those of its app in the states of
    /// `audience.subscriptions` (any state without it: what a trigger can reach), limited to `keys`
    /// when given.
    static func subscriptionMatch(
        for campaign: LoadedCampaign,
        from journal: any Journal,
        only keys: [String]?
    ) async throws -> SubscriptionMatch {
        let join = campaign.subscriptionJoin
        let spec = campaign.subscriptions
        if spec == nil, let keys {
            var match = SubscriptionMatch(spec: join, keys: keys)
            match.recordsJoins = true
            return match
        }
        let wanted = keys.map { Set($0.map(join.normalized)) }
        var selected: [String] = []
        try await journal.forEachSubscription(app: campaign.appLabel) { subscription in
            guard
                spec?.admits(
                    status: subscription.status,
                    product: subscription.productID,
                    autoRenew: subscription.autoRenew
                ) ?? true,
                let key = join.key == .appAccountToken
                    ? subscription.appAccountToken : subscription.originalTransactionID
            else { return }
            if let wanted, !wanted.contains(join.normalized(key)) { return }
            selected.append(key)
        }
        var match = SubscriptionMatch(spec: join, keys: selected)
        match.recordsJoins = keys != nil
        return match
    }

    /// For `plan`: the project's journal if there is one (a project that never sent has none, and
    /// planning does not create it).
    public static func read(
        for campaign: LoadedCampaign,
        journal: (any Journal)?,
        clock: any WallClock = SystemWallClock()
    ) async throws -> DeliveryHistory {
        guard let journal else {
            // A project that never received App Store notifications has no subscription to join.
            return DeliveryHistory(
                suppression: Suppression(registeredAtAttribute: campaign.registeredAtAttribute),
                subscriptions: campaign.subscriptions != nil || campaign.trigger != nil
                    ? SubscriptionMatch(spec: campaign.subscriptionJoin, keys: []) : nil
            )
        }
        return try await read(for: campaign, from: journal, clock: clock)
    }
}

extension PlanSummary {
    /// `campaign` planned as `send` would send it with `journal` as it is now (nil: none yet):
    /// what `plan` shows and what a production send asks about. Throws `AudienceError` for an
    /// audience that cannot be read, other errors for a journal that cannot be.
    public static func planned(
        _ campaign: LoadedCampaign,
        journal: (any Journal)?,
        sendTime: Timestamp?,
        sendTimeSource: String,
        samples: Int,
        clock: any WallClock = SystemWallClock()
    ) async throws -> PlanSummary {
        let campaign = try await campaign.resolvingBuiltins(
            in: journal,
            now: sendTime.map { Double($0.secondsSince1970) } ?? clock.now()
        )
        var planner = Planner(
            campaign: campaign,
            sendTime: sendTime,
            sendTimeSource: sendTimeSource,
            sampleLimit: samples,
            clock: clock
        )
        planner.history = try await DeliveryHistory.read(for: campaign, journal: journal, clock: clock)
        let status = try await CampaignJournalStatus.read(for: campaign, journal: journal)
        var summary = try planner.run()
        summary.journal = status
        if let trigger = campaign.trigger {
            summary.triggerHistory = try await triggerHistory(
                trigger,
                app: campaign.appLabel,
                journal: journal,
                now: clock.now()
            )
        }
        return summary
    }

    /// How many notifications of the last `days` days would have fired `trigger`.
    static func triggerHistory(
        _ trigger: TriggerSpec,
        app: String,
        journal: (any Journal)?,
        days: Int = 30,
        now: Double
    ) async throws -> (days: Int, events: Int, subscriptions: Int) {
        guard let journal else { return (days, 0, 0) }
        let counts = try await journal.countNotifications(
            app: app,
            type: trigger.appStoreType,
            subtypes: trigger.subtypes,
            since: now - Double(days * 86_400)
        )
        return (days, counts.events, counts.subscriptions)
    }
}
