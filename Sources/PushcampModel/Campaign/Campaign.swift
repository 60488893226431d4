import Yams

/// A campaign file as written: what to send, to whom, how fast. Paths are as written in the file
/// (relative to the project root); the planner's loader resolves and compiles them.
public struct Campaign {
    public var id: String
    public var description: String?
    public var app: String
    public var variables: [(name: String, value: AttributeValue)]
    public var audience: AudienceSpec
    public var message: MessageSpec
    public var schedule: ScheduleSpec?
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
}

/// Where recipients come from.
public struct SourceSpec {
    public enum Kind {
        case csv(path: String, delimiter: UInt8)
        case jsonLines(path: String)
        case sqlite(path: String, query: String)
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

    public init() {}
}
