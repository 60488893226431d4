import PushcampAudience
import PushcampModel

/// Everything `plan` reports: where the audience went, what will be sent, what would be refused.
public struct PlanSummary: Sendable {
    public var campaign: String
    public var description: String?
    public var revision: String
    /// What the journal says of the campaign (never sent, already sent, a run to resume); nil when
    /// the plan was made without looking.
    public var journal: CampaignJournalStatus?
    public var app: String
    /// Where the iOS app's pushes go (its environment, or the custom endpoint); nil for a campaign
    /// without an iOS app.
    public var destination: Destination?
    /// The Android app and where its messages go (`→ FCM (fcm.googleapis.com)`), when there is one.
    public var android: (app: String, destination: String, project: String?)?
    /// Planned pushes by platform.
    public var platforms: [Platform: Int] = [:]
    /// Android messages' sizes (the `messages:send` body).
    public var androidPayloadSizes = SizeStatistics()
    /// What assigns arms and the holdout: `device`, or `person (user_id)`.
    public var assignmentUnit = "device"
    /// The campaign's `readout:`, kept with the run.
    public var readout: ReadoutSpec?
    public var pushType: PushType
    public var priority: Int
    public var topic: String
    public var expiration: ExpirationSpec?
    public var collapseID: String?
    public var filter: String?
    public var source: String
    public var audience: AudienceCounts
    public var heldOut = 0
    /// Recipients passed over unrendered: a resumed run's settled ones.
    public var skipped = 0
    /// The skipped ones by the variant and locale the plan gives them: they were sent, so a
    /// resumed run's funnel counts them as planned there.
    public var skippedVariants: [String: Int] = [:]
    public var skippedLocales: [String: Int] = [:]
    public var skippedPlatforms: [Platform: Int] = [:]
    /// Recipients passed over because APNs called their token dead for this topic.
    public var suppressed = 0
    /// Recipients held back by the frequency cap: delivered `max` notifications within its window.
    public var capped = 0
    /// Recipients passed over because no subscription of `audience.subscriptions` (or the
    /// trigger's) is joined to them.
    public var unsubscribed = 0
    public var subscriptions: SubscriptionAudienceSpec?
    /// How many subscriptions in the journal are in the selected states; nil when not looked up.
    public var subscriptionsMatched: Int?
    /// The subscription keys audience rows were joined to, when the match records them (triggers).
    public var joinedSubscriptions: Set<String> = []
    public var trigger: TriggerSpec?
    /// For a trigger campaign: the notifications of the last `days` days that would have fired it.
    public var triggerHistory: (days: Int, events: Int, subscriptions: Int)?
    public var holdout: Share
    /// Pushes that passed every pre-flight check and would be sent.
    public var planned = 0
    /// Pushes refused by at least one pre-flight check.
    public var failed = 0
    /// Planned pushes per variant, in the campaign's order (empty when the campaign has no variants).
    public var variants: [(name: String, weight: Int, planned: Int)] = []
    /// Planned pushes per locale, most first (empty when the campaign is not localized).
    public var locales: [(locale: String, planned: Int)] = []
    public var payloadSizes = SizeStatistics()
    public var failures: [PreflightReason: FailureStat] = [:]
    public var samples: [PlannedPush] = []
    /// Whose copy the samples show: audience rows, or a review's made-up recipients.
    public var sampleKind: SampleKind = .rows
    /// What a review read of the audience (nil: a plan, which reads it all or fails).
    public var review: AudienceReview?
    /// The first push of each variant and locale, in the campaign's variant order, then by locale.
    public var copies: [PlannedPush] = []
    public var rate: Rate
    public var rateIsDefault: Bool
    public var connections: Int
    public var sendTime: Timestamp?
    public var sendTimeSource: String?
    public var frequencyCap: FrequencyCapSpec?
    /// When pushes are due, for recipient-local schedules and quiet hours; nil when all go at once.
    public var timing: Timing?
    /// The campaign's schedule and, for a recurring one, its next slots (seconds since 1970).
    public var schedule: ScheduleSpec?
    public var nextSlots: [Int64] = []
    public var quietHours: QuietHours?

    /// The timeline of a send whose pushes are due at different moments.
    public struct Timing: Sendable, Hashable {
        public enum Drop: String, Sendable, Hashable, CaseIterable {
            /// The recipient's local time had passed when the run started (`on_passed: skip`).
            case onPassed = "on-passed"
            /// It would land in quiet hours (`action: drop`).
            case quietHours = "quiet-hours"
            /// Deferring it out of quiet hours would pass its expiration.
            case quietHoursExpired = "quiet-hours-expired"
        }

        /// Planned pushes by the UTC hour they are due in (the hour's start, seconds since 1970).
        public var byHour: [Int64: Int] = [:]
        /// Recipients in the fallback zone (no zone attribute, or an invalid one with `invalid_zone: fallback`).
        public var fellBack = 0
        /// Pushes moved to the end of the recipient's quiet hours.
        public var deferred = 0
        public var dropped: [Drop: Int] = [:]
        public var first: Int64?
        public var last: Int64?

        public init() {}

        mutating func record(due: Int64, deferred: Bool, fellBack: Bool) {
            byHour[Timestamp.floorDivide(due, 3600) * 3600, default: 0] += 1
            if deferred { self.deferred += 1 }
            if fellBack { self.fellBack += 1 }
            first = min(first ?? due, due)
            last = max(last ?? due, due)
        }

        /// The distinct moments pushes are due at, each once, in order: what a send waits for.
        public var hours: [(start: Int64, count: Int)] { byHour.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }

    public struct FailureStat: Sendable, Hashable {
        public var count = 0
        public var examples: [Example] = []

        public struct Example: Sendable, Hashable {
            public var location: SourceLocation
            public var token: String
            public var detail: String
        }
    }

    public static let failureExampleLimit = 3

    /// Seconds the send would take at the campaign's rate.
    public var estimatedSeconds: Double { Double(planned) / rate.perSecond }
}

/// Payload sizes, exactly: a histogram by byte count, so the median of ten million payloads needs no
/// list of ten million numbers.
public struct SizeStatistics: Sendable, Hashable {
    static let limit = 65_536
    var counts: [Int32] = []
    public private(set) var total = 0
    public private(set) var minimum = Int.max
    public private(set) var maximum = 0

    public init() {}

    public mutating func record(_ size: Int) {
        if counts.isEmpty { counts = [Int32](repeating: 0, count: Self.limit + 1) }
        counts[min(size, Self.limit)] += 1
        total += 1
        minimum = min(minimum, size)
        maximum = max(maximum, size)
    }

    /// The lower median: the size at position (n - 1) / 2 in sorted order.
    public var median: Int {
        guard total > 0 else { return 0 }
        let target = (total - 1) / 2
        var seen = 0
        for (size, count) in counts.enumerated() {
            seen += Int(count)
            if seen > target { return size }
        }
        return maximum
    }
}

extension PlanSummary {
    /// Why a plan of `campaign` is no plan at all, located where the fault is: an audience with no
    /// recipients, or one nobody of which would be sent anything. A trigger campaign reaches whoever
    /// its notifications name: none joined yet is not a fault.
    public func emptiness(of campaign: LoadedCampaign) -> String? {
        if audience.read == 0 { return "\(source): error: the audience has no recipients" }
        guard planned == 0 && failed == 0 && campaign.trigger == nil else { return nil }
        let unsubscribed = campaign.subscriptions != nil ? ", with no subscription in the selected states" : ""
        return "\(campaign.path): error: nobody would be sent anything: all \(audience.read) rows were invalid, "
            + "duplicates, filtered out, excluded\(unsubscribed), suppressed, capped"
            + (timing == nil
                ? " or held out"
                : ", held out or dropped by the campaign's timing (quiet hours, on_passed; see the timeline)")
    }
}

extension PlanSummary {
    /// Why the plan fails its limit on invalid tokens (`limit`, from `--max-invalid` or the
    /// campaign's `audience.max_invalid`), located at the audience; nil when within it.
    public func invalidBeyond(_ limit: InvalidLimit) -> String? {
        let invalid = audience.invalidTotal
        guard !limit.allows(invalid, of: audience.read) else { return nil }
        return "\(source): error: \(invalid) of \(audience.read) rows have an invalid token, more than "
            + "max_invalid \(limit) allows (\(invalidText))"
    }
}
