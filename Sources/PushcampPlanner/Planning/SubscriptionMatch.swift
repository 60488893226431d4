import PushcampAudience
import PushcampModel

/// The App Store subscriptions a campaign's audience is joined to (`audience.subscriptions`, or a
/// trigger's one subscription), read from the journal before planning: a recipient is planned
/// only when its joining attribute names one of them; the others are counted as "no subscription".
///
/// Memory: the keys of the matching subscriptions, whatever the audience size.
public struct SubscriptionMatch: Sendable {
    public var spec: SubscriptionAudienceSpec
    private var keys: Set<String>
    /// Whether the plan lists the keys rows were joined to (`PlanSummary.joinedSubscriptions`): for
    /// the few subscriptions of trigger firings, to tell the firings that reached nobody.
    public var recordsJoins = false

    /// `keys` as the journal keeps them (app account tokens or original transaction ids).
    public init(spec: SubscriptionAudienceSpec, keys: some Sequence<String>) {
        self.spec = spec
        self.keys = Set(keys.map(spec.normalized))
    }

    /// How many subscriptions the audience is joined to.
    public var count: Int { keys.count }

    /// The recipient's subscription key (normalized) when it is one of the matching subscriptions.
    func key(of recipient: Recipient) -> String? {
        guard !keys.isEmpty, let value = recipient.attributes[spec.attribute] else { return nil }
        let key = spec.normalized(value.text)
        return keys.contains(key) ? key : nil
    }
}
