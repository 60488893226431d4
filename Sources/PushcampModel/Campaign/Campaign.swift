import Yams

/// A campaign file as written: what to send, to whom, how fast. Paths are as written in the file
/// (relative to the project root); the planner's loader resolves and compiles them.
public struct Campaign {
    public var id: String
    public var description: String?
    /// The first app `app:` names.
    public var app: String
    /// Every app `app:` names (`app: [shop-ios, shop-android]`): one APNs app, one FCM app, or one of
    /// each; in file order, each with where it is written.
    public var apps: [(name: String, location: SourceLocation)] = []
    public var variables: [(name: String, value: AttributeValue)]
    public var audience: AudienceSpec
    public var message: MessageSpec
    public var schedule: ScheduleSpec?
    /// `trigger:` — sent by `pushcamp serve` to a subscription's recipients when an App Store
    /// notification about it arrives.
    public var trigger: TriggerSpec?
    /// Hours no push may land in, for every send of the campaign.
    public var quietHours: QuietHours?
    public var throttle: ThrottleSpec
    public var retry: RetrySpec
    /// `frequency_cap:` as written: nil when absent (the project's default applies).
    public var frequencyCap: FrequencyCapSetting?
    /// The file this campaign was read from, as printed in diagnostics.
    public var path: String
    /// Where the `app:` key is, for problems with the app it names.
    public var appLocation: SourceLocation
    /// `channel:` — a broadcast campaign: one request to this channel of pushcamp.yaml instead of
    /// one per device of an audience.
    public var channel: (name: String, location: SourceLocation)? = nil
    /// `readout:` — what the A/B readout leads with and how it counts events.
    public var readout: ReadoutSpec? = nil
}

/// `readout:` — declared before the send, kept with the run: the metric the test is for, those it
/// must not harm, the events the holdout cannot have, and how long after the send an event counts.
public struct ReadoutSpec: Sendable, Hashable, Codable {
    /// The default `not_in_holdout`: an open needs a push, and the holdout was sent none.
    public static let defaultNotInHoldout = ["opened"]

    /// The event the test is for: the readout leads with its verdict.
    public var primary: String?
    /// Events a winner must not make worse (unsubscribes, uninstalls): shown right after it.
    public var guardrails: [String]
    /// Events the holdout cannot have, so no lift against it.
    public var notInHoldout: [String]
    /// Seconds after the run's start an event still counts (nil: any time after the start).
    public var window: Int64?

    public init(
        primary: String? = nil,
        guardrails: [String] = [],
        notInHoldout: [String] = Self.defaultNotInHoldout,
        window: Int64? = nil
    ) {
        self.primary = primary
        self.guardrails = guardrails
        self.notInHoldout = notInHoldout
        self.window = window
    }

    /// When an event counts, for a run that started at `start`: from the start (a push cannot
    /// cause what came before it; the holdout's recipients are measured from the same moment) to
    /// the end of `window`, or without end when there is none.
    public func attributionWindow(from start: Double) -> ClosedRange<Double> {
        start...(window.map { start + Double($0) } ?? .greatestFiniteMagnitude)
    }

    enum CodingKeys: String, CodingKey {
        case primary, guardrails, window
        case notInHoldout = "not_in_holdout"
    }
}

/// Where recipients come from.
public struct SourceSpec {
    public enum Kind {
        case csv(path: String, delimiter: UInt8)
        case jsonLines(path: String)
        case sqlite(path: String, query: String)
        /// A query on a PostgreSQL server, named by a `postgres://` URL (written with `${env:…}`
        /// when it carries a password: the campaign file never does).
        case postgres(url: String, query: String)
        /// Rows written in the campaign: each is a token or a mapping with a token and attributes.
        case inline([InlineRow])
    }

    public var kind: Kind
    /// The column (or JSON key) holding the device token.
    public var tokenColumn: String
    public var location: SourceLocation
}

public struct InlineRow: Sendable, Hashable {
    public var values: [(name: String, value: AttributeValue)]
    public var line: Int

    public init(values: [(name: String, value: AttributeValue)], line: Int) {
        self.values = values
        self.line = line
    }

    public static func == (lhs: InlineRow, rhs: InlineRow) -> Bool {
        lhs.line == rhs.line && lhs.values.map(\.name) == rhs.values.map(\.name)
            && lhs.values.map(\.value) == rhs.values.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(line)
        hasher.combine(values.map(\.name))
    }
}

public struct AudienceSpec {
    public var source: SourceSpec
    public var filter: FilterExpression?
    /// The filter as written, for reports.
    public var filterText: String?
    public var filterLocation: SourceLocation?
    public var exclude: [SourceSpec]
    /// The attribute holding when a recipient's token was registered (default `registered_at`): a
    /// token APNs called dead is sent again when registered after that.
    public var registeredAt: String?
    /// `subscriptions:` — only recipients whose App Store subscription is in the given state.
    public var subscriptions: SubscriptionAudienceSpec?
    /// The attribute that names a user (`user_key: user_id`): engagement events may name recipients
    /// by it instead of by `apns-id` (`pushcamp engagement import`).
    public var userKey: String? = nil
    /// `audience.platform`: the column naming each row's platform (default `platform`).
    public var platformColumn: String? = nil
    /// `audience.max_invalid`: rows with an invalid token `plan` tolerates before it fails (nil:
    /// any number; `plan --max-invalid` overrides it).
    public var maxInvalid: InvalidLimit? = nil
    /// `audience.sample`: a small audience with the real one's columns and made-up recipients
    /// (committed to git), which a review plans instead of the real one (`pushcamp review`,
    /// `plan --review`), so a pull request's CI needs no personal data.
    public var sample: SourceSpec? = nil

    /// No devices: the audience of a broadcast campaign, which sends to a channel.
    public static func none(at location: SourceLocation) -> AudienceSpec {
        AudienceSpec(
            source: SourceSpec(kind: .inline([]), tokenColumn: "token", location: location),
            exclude: []
        )
    }
}

/// `trigger: { app_store: DID_FAIL_TO_RENEW, subtype: GRACE_PERIOD, delay: 10m }`: when `pushcamp
/// serve` stores an App Store notification of this type (and one of these subtypes) for the
/// campaign's app, the campaign is sent — once per notification, after `delay` — to the audience
/// rows joined to the notification's subscription (see `SubscriptionAudienceSpec`).
public struct TriggerSpec: Hashable, Sendable, CustomStringConvertible {
    /// The notification types and subtypes Apple documents (`reference/appstore/README.md`).
    public static let appStoreTypes: [String: [String]] = [
        "SUBSCRIBED": ["INITIAL_BUY", "RESUBSCRIBE"],
        "DID_CHANGE_RENEWAL_PREF": ["UPGRADE", "DOWNGRADE"],
        "DID_CHANGE_RENEWAL_STATUS": ["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"],
        "OFFER_REDEEMED": ["INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE"],
        "DID_RENEW": ["BILLING_RECOVERY"],
        "EXPIRED": ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"],
        "DID_FAIL_TO_RENEW": ["GRACE_PERIOD"],
        "GRACE_PERIOD_EXPIRED": [],
        "PRICE_INCREASE": ["PENDING", "ACCEPTED"],
        "REFUND": [], "REFUND_DECLINED": [], "REFUND_REVERSED": [],
        "CONSUMPTION_REQUEST": [],
        "RENEWAL_EXTENDED": [],
        "RENEWAL_EXTENSION": ["SUMMARY", "FAILURE"],
        "REVOKE": [],
        "ONE_TIME_CHARGE": [],
        "EXTERNAL_PURCHASE_TOKEN": ["UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER"],
        "RESCIND_CONSENT": [],
        "PRICE_CHANGE": [], "METADATA_UPDATE": [], "MIGRATION": [],
        "TEST": [],
    ]

    public var appStoreType: String
    /// Empty: any subtype (or none).
    public var subtypes: [String]
    public var delay: TimeSpan
    public var location: SourceLocation

    public init(
        appStoreType: String,
        subtypes: [String] = [],
        delay: TimeSpan = TimeSpan(seconds: 0),
        location: SourceLocation
    ) {
        self.appStoreType = appStoreType
        self.subtypes = subtypes
        self.delay = delay
        self.location = location
    }

    /// Whether a notification of `type` and `subtype` fires the campaign.
    public func matches(type: String, subtype: String?) -> Bool {
        type == appStoreType && (subtypes.isEmpty || subtype.map(subtypes.contains) == true)
    }

    public var description: String {
        "App Store \(appStoreType)" + (subtypes.isEmpty ? "" : "/" + subtypes.joined(separator: "|"))
            + (delay.seconds > 0 ? ", after \(delay)" : "")
    }
}

/// `audience.subscriptions:` — keeps the recipients whose App Store subscription, as the
/// notifications `pushcamp serve` received left it, is in one of the given states. Each audience
/// row is joined to its subscription through an attribute holding the app account token (or the
/// original transaction id).
public struct SubscriptionAudienceSpec: Hashable, Sendable {
    /// What the joining attribute holds.
    public enum Key: String, Hashable, Sendable, CaseIterable {
        case appAccountToken = "app_account_token"
        case originalTransactionID = "original_transaction_id"
    }

    /// The states a subscription can be in, as the journal keeps them.
    public static let statuses = ["active", "expired", "billing-retry", "grace-period", "revoked"]

    /// Empty: any status.
    public var statuses: [String]
    /// Empty: any product.
    public var products: [String]
    public var autoRenew: Bool?
    /// The audience attribute holding each recipient's key.
    public var attribute: String
    public var key: Key
    public var location: SourceLocation

    public init(
        statuses: [String] = [],
        products: [String] = [],
        autoRenew: Bool? = nil,
        attribute: String = "app_account_token",
        key: Key = .appAccountToken,
        location: SourceLocation
    ) {
        self.statuses = statuses
        self.products = products
        self.autoRenew = autoRenew
        self.attribute = attribute
        self.key = key
        self.location = location
    }

    /// Whether a subscription with these facts is in the audience.
    public func admits(status: String?, product: String?, autoRenew: Bool?) -> Bool {
        (statuses.isEmpty || status.map(statuses.contains) == true)
            && (products.isEmpty || product.map(products.contains) == true)
            && (self.autoRenew == nil || autoRenew == self.autoRenew)
    }

    /// A key as the journal and the audience are compared: app account tokens (UUIDs) in lowercase.
    public func normalized(_ key: String) -> String {
        self.key == .appAccountToken ? key.lowercased() : key
    }

    /// The selection in words, for plans and logs.
    public var summary: String {
        var parts: [String] = []
        parts.append(statuses.isEmpty ? "any status" : "status " + statuses.joined(separator: " or "))
        if !products.isEmpty { parts.append("product " + products.joined(separator: " or ")) }
        if let autoRenew { parts.append("auto-renew " + (autoRenew ? "on" : "off")) }
        let what = key == .appAccountToken ? "app account token" : "original transaction id"
        return parts.joined(separator: ", ") + "; joined by the \(what) in \(attribute)"
    }
}

/// A payload template or a string table: a file to read, or a structure written in the campaign.
public enum TemplateSource {
    case file(path: String, location: SourceLocation)
    case inline(Node, path: String)
}

public enum ExpirationSpec: Hashable, Sendable {
    /// `apns-expiration: 0`: deliver now or never.
    case immediately
    /// A span after the send starts, turned into an absolute time once the send time is known.
    case after(TimeSpan)
    case at(Timestamp)
}

public struct LocaleSpec: Hashable, Sendable {
    /// The attribute holding each recipient's locale (`fr-CA`, `pt_BR`…), or nil for one locale for all.
    public var attribute: String?
    public var defaultLocale: String
}

public struct VariantSpec {
    public var name: String
    public var weight: Int
    public var payload: TemplateSource?
    public var strings: TemplateSource?
    public var variables: [(name: String, value: AttributeValue)]
    public var location: SourceLocation
}

/// A text the campaign writes (a title, a data value), templated, with the YAML node it was read
/// from: diagnostics point into it, and the APNs payload made from the message reuses it.
public struct TextSpec {
    public var text: String
    public var node: Node
    public var location: SourceLocation

    public init(text: String, node: Node, location: SourceLocation) {
        self.text = text
        self.node = node
        self.location = location
    }
}

/// `message.android:` — FCM's own fields for Android recipients, each overriding the message's
/// platform-neutral part where both say something (`reference/FCM.md`, section 5).
public struct AndroidSpec {
    public var title: TextSpec?
    public var body: TextSpec?
    public var image: TextSpec?
    public var channelID: TextSpec?
    public var tag: TextSpec?
    public var clickAction: TextSpec?
    public var sound: TextSpec?
    public var icon: TextSpec?
    /// `#rrggbb`.
    public var color: TextSpec?
    public var notificationCount: Int?
    /// `ttl`: instead of the message's expiration, for Android.
    public var ttl: ExpirationSpec?
    public var collapseKey: TextSpec?
    /// `high` or `normal`: instead of the one the message's priority gives.
    public var highPriority: Bool?
    /// Replaces the message's `data` on Android.
    public var data: [(key: String, value: TextSpec)]?
    public var restrictedPackageName: String?
    public var location: SourceLocation

    public init(location: SourceLocation) { self.location = location }
}

public struct MessageSpec {
    public var pushType: PushType
    public var priority: Int?
    public var expiration: ExpirationSpec?
    public var collapseID: String?
    public var collapseIDLocation: SourceLocation?
    public var topic: String?
    public var topicLocation: SourceLocation?
    public var payload: TemplateSource?
    public var strings: TemplateSource?
    public var locale: LocaleSpec?
    public var variants: [VariantSpec]
    public var holdout: Share
    public var location: SourceLocation
    /// The platform-neutral part: what every platform shows, mapped to each provider.
    public var title: TextSpec? = nil
    public var body: TextSpec? = nil
    /// An image's URL.
    public var image: TextSpec? = nil
    /// Custom data: top-level keys beside `aps` for APNs, `message.data` (strings) for FCM.
    public var data: [(key: String, value: TextSpec)] = []
    /// `android:`: FCM's fields for Android recipients.
    public var android: AndroidSpec? = nil

    /// Whether the message says what a notification shows without a payload of its own.
    public var hasNeutralContent: Bool { title != nil || body != nil || !data.isEmpty }
}

public struct ThrottleSpec: Hashable, Sendable {
    public var rate: Rate?
    public var connections: Int?
}

/// `frequency_cap: { max: 2, per: 24h }`: a recipient already delivered `max` notifications (by
/// any campaign of the project) within the last `per` is held back.
public struct FrequencyCapSpec: Hashable, Sendable, CustomStringConvertible {
    public var max: Int
    public var per: TimeSpan

    public init(max: Int, per: TimeSpan) {
        self.max = max
        self.per = per
    }

    public var description: String { "at most \(max) per \(per)" }
}

/// A campaign's `frequency_cap:`: a cap of its own, or `off` to send regardless of the project's.
public enum FrequencyCapSetting: Hashable, Sendable {
    case cap(FrequencyCapSpec)
    case off
}

/// `retry:` — how many times a push may be sent, and the delay per retryable reason.
public struct RetrySpec: Hashable, Sendable {
    public enum Delay: Hashable, Sendable {
        case after(TimeSpan)
        case never
    }

    /// At most 100 (`max_attempts`).
    public var maxAttempts: Int?
    /// The longest delay `retry:` may give a reason: an hour.
    public static let longestDelay = TimeSpan(seconds: 3600)
    /// By Apple's reason name (`TooManyRequests`, `InternalServerError`, `ServiceUnavailable`, `Shutdown`)
    /// or `timeout`.
    public var delays: [String: Delay] = [:]
    /// Whether a recipient whose request was in flight when its sender stopped (killed, or its
    /// lease lost) is sent again when the run is resumed or its slice taken over
    /// (`resend_unknown`, default true): APNs may have had the first request, so it is a possible
    /// duplicate. False settles it as failed (`unknown-not-resent`) instead.
    public var resendUnknown = true

    public init() {}
}
