import PushcampAudience
import PushcampModel
import PushcampTemplates

/// A campaign with everything it refers to resolved and compiled: the app from `pushcamp.yaml`, the
/// payload templates and strings of each variant, the audience sources. This is what the planner expands.
public struct LoadedCampaign: Sendable {
    public struct Variant: Sendable {
        public var name: String
        public var weight: Int
        public var payload: PayloadTemplate
        public var strings: LocalizedStrings?
        public var variables: Attributes
        public var location: SourceLocation
    }

    public var id: String
    public var description: String?
    public var path: String
    /// The iOS app, when the campaign sends to one.
    public var app: AppConfig?
    /// What Android recipients get, when the campaign names an Android app.
    public var android: AndroidTarget? = nil
    public var pushType: PushType
    public var priority: Int
    public var expiration: ExpirationSpec?
    public var collapseID: MustacheTemplate?
    public var collapseIDLocation: SourceLocation?
    public var topic: String
    public var topicLocation: SourceLocation?
    /// Variants in file order; a campaign without `variants:` has one, named `default`.
    public var variants: [Variant]
    /// Whether the campaign declared variants (reports show a per-variant breakdown only then).
    public var hasVariants: Bool
    public var holdout: Share
    public var locale: LocaleSpec?
    public var audience: AudienceStream
    /// Whether the audience can change without any file changing (a PostgreSQL query): a run of
    /// it is planned once into the journal, and sent from there.
    public var audienceIsLive: Bool { audience.isLive }
    public var filterText: String?
    public var rate: Rate
    public var rateIsDefault: Bool
    public var connections: Int
    public var retry: RetrySpec
    /// When `pushcamp serve` sends it; nil for a campaign sent by `pushcamp send` alone.
    public var schedule: ScheduleSpec?
    /// Hours no push may land in (`quiet_hours`).
    public var quietHours: QuietHours?
    /// The one slot of an `at` schedule.
    public var scheduledAt: Timestamp? { schedule?.once.map { Timestamp(secondsSince1970: $0) } }
    /// A hash of the campaign file, its templates and its audience inputs: a changed file is a new revision.
    public var revision: String
    /// The files the campaign is made of, each with its SHA-256: what a plan file checks.
    public var inputs: [CampaignInput]
    public var messageLocation: SourceLocation
    /// The project's run journal (`journal` in pushcamp.yaml, its path resolved).
    public var journal: JournalSetting
    /// The project's SQLite journal file: the journal, unless `journal.url` names a PostgreSQL one.
    public var journalPath: String { journal.path }
    /// Where rehearsals of it are recorded: `rehearsal.sqlite` beside the project's journal file.
    public var rehearsalJournalPath: String { ProjectJournal.rehearsalPath(beside: journalPath) }
    /// The audience attribute with each token's registration time (`audience.registered_at`).
    public var registeredAtAttribute: String
    /// The campaign's `frequency_cap`, else the project's default; nil when there is none (or `off`).
    public var frequencyCap: FrequencyCapSpec?
    /// `audience.subscriptions`: only recipients whose App Store subscription is in these states.
    public var subscriptions: SubscriptionAudienceSpec? = nil
    /// `audience.user_key`: the attribute engagement events may name a recipient by.
    public var userKey: String? = nil
    /// `readout:`: what the A/B readout leads with and how it counts events (nil: the defaults).
    public var readout: ReadoutSpec? = nil
    /// `trigger:`: sent by `pushcamp serve` when an App Store notification arrives.
    public var trigger: TriggerSpec? = nil
    /// `channel:`: a broadcast campaign, sent as one request to this channel (its audience is empty).
    public var broadcast: BroadcastTarget? = nil
    /// `audience.max_invalid`: rows with an invalid token `plan` tolerates before it fails.
    public var maxInvalid: InvalidLimit? = nil
    /// What a review read of the audience (nil: the campaign was loaded to be sent or planned).
    public var review: AudienceReview? = nil

    /// The platforms the campaign sends to.
    public var platforms: Set<Platform> {
        var platforms: Set<Platform> = []
        if app != nil { platforms.insert(.ios) }
        if android != nil { platforms.insert(.android) }
        return platforms
    }

    /// The app names, as runs and reports name the campaign's destination: `shop`, or
    /// `shop-ios+shop-android` for a campaign reaching both platforms.
    public var appLabel: String {
        [app?.name, android?.app.name].compactMap { $0 }.joined(separator: "+")
    }

    /// The iOS app's environment (`production`, `development`), or `fcm` for an Android-only campaign.
    public var environmentLabel: String { app?.environment.rawValue ?? "fcm" }

    /// The variable templates name channels' ids by: `{{channels.final-2026}}`, for a push-to-start
    /// payload's `input-push-channel`, so ids are never copied by hand into campaign files.
    public static let channelsVariable = "channels"
    /// The send time in seconds since 1970 (`{{now}}`), for a Live Activity's `aps.timestamp`.
    public static let nowVariable = "now"

    /// How the audience is joined to App Store subscriptions: `audience.subscriptions`, else (for
    /// a trigger) the app account token in the `app_account_token` attribute.
    public var subscriptionJoin: SubscriptionAudienceSpec {
        subscriptions ?? SubscriptionAudienceSpec(location: trigger?.location ?? messageLocation)
    }
}

/// One file a campaign is made of, with a digest of its bytes.
public struct CampaignInput: Sendable, Hashable {
    public enum Role: String, Sendable, Hashable {
        case campaign
        /// A payload template or a strings file.
        case template
        /// An audience source or exclusion.
        case audience
        /// `pushcamp.yaml`: the app, its environment and credentials.
        case project
    }

    public var role: Role
    /// As written in the project's files: relative to the project root.
    public var path: String
    /// Lowercase hex.
    public var sha256: String

    public init(role: Role, path: String, sha256: String) {
        self.role = role
        self.path = path
        self.sha256 = sha256
    }
}
