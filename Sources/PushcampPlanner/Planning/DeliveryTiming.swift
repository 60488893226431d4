import PushcampModel

/// When each recipient's push is due: at the schedule's wall time on the recipient's own clock
/// (`timezone: recipient`), then moved out of the campaign's quiet hours (or dropped), never past
/// the push's expiration.
///
/// Everything here depends on the recipient's zone only, so verdicts are cached by the zone
/// attribute's raw value: a million recipients in 300 zones cost 300 computations and a million
/// dictionary lookups.
struct DeliveryTiming {
    enum Verdict: Equatable {
        /// `due` seconds since 1970; `expiresAt` the absolute `apns-expiration` when the campaign's
        /// expiration is relative (it counts from the recipient's own moment, before any deferral).
        case due(Int64, deferred: Bool, fellBack: Bool, expiresAt: Int64?)
        case dropped(PlanSummary.Timing.Drop, fellBack: Bool)
        /// The zone attribute is not a zone, and the campaign refuses such recipients.
        case invalidZone(String)
    }

    let local: LocalDelivery?
    let quiet: QuietHours?
    let expiration: ExpirationSpec?
    /// When the run starts.
    let start: Int64
    private var cache: [String: Verdict] = [:]

    /// Nil when the campaign has neither a recipient-local schedule nor quiet hours.
    init?(campaign: LoadedCampaign, start: Int64) {
        local = campaign.schedule?.local
        quiet = campaign.quietHours
        guard local != nil || quiet != nil else { return nil }
        expiration = campaign.expiration
        self.start = start
        var names: [String] = []
        if let local { names.append(local.zones.attribute) }
        if case .recipient(let zones)? = quiet?.clock, !names.contains(zones.attribute) {
            names.append(zones.attribute)
        }
        attributes = names
    }

    /// The attributes whose values decide a recipient's timing (one, unless the schedule and the
    /// quiet hours read different ones).
    private let attributes: [String]

    mutating func verdict(for recipient: Recipient) -> Verdict {
        // The common case, one attribute: its value is the key, with no string built per recipient.
        let key =
            attributes.count == 1
            ? recipient.attributes[attributes[0]]?.text ?? ""
            : attributes.map { recipient.attributes[$0]?.text ?? "" }.joined(separator: "\u{1F}")
        if let cached = cache[key] { return cached }
        var values: [String: String] = [:]
        for name in attributes { values[name] = recipient.attributes[name]?.text ?? "" }
        let verdict = compute(values: values)
        if cache.count < 100_000 { cache[key] = verdict }
        return verdict
    }

    /// The zone a recipient's `value` of `zones.attribute` names: the fallback when empty, nil
    /// when it is not a zone and the campaign refuses those.
    private func zone(_ value: String, _ zones: RecipientZones) -> (zone: Zone, fellBack: Bool)? {
        if value.isEmpty { return (zones.fallback, true) }
        if let zone = Zone.named(value) { return (zone, false) }
        return zones.invalid == .fallback ? (zones.fallback, true) : nil
    }

    func compute(values: [String: String]) -> Verdict {
        var fellBack = false
        var due = start
        if let local {
            let value = values[local.zones.attribute] ?? ""
            guard let (zone, fallback) = zone(value, local.zones) else {
                return .invalidZone(
                    "\(local.zones.attribute) '\(value.excerpt())' is not a time zone (write an IANA name such as Europe/Paris)"
                )
            }
            fellBack = fallback
            due = zone.instant(of: local.time)
            if due < start {
                switch local.onPassed {
                case .nextDay:
                    due = max(start, zone.instant(of: LocalDateTime(wallSeconds: local.time.wallSeconds + 86_400)))
                case .sendNow: due = start
                case .skip: return .dropped(.onPassed, fellBack: fellBack)
                }
            }
        }
        let planned = due
        var expiresAt: Int64?
        var deadline: Int64?
        switch expiration {
        case nil: break
        case .immediately?: deadline = planned
        case .after(let span)?:
            expiresAt = planned + span.seconds
            deadline = expiresAt
        case .at(let timestamp)?: deadline = timestamp.secondsSince1970
        }
        var deferred = false
        if let quiet {
            let quietZone: Zone
            switch quiet.clock {
            case .zone(let zone): quietZone = zone
            case .recipient(let zones):
                let value = values[zones.attribute] ?? ""
                guard let (zone, fallback) = zone(value, zones) else {
                    return .invalidZone(
                        "\(zones.attribute) '\(value.excerpt())' is not a time zone (write an IANA name such as Europe/Paris)"
                    )
                }
                fellBack = fellBack || fallback
                quietZone = zone
            }
            if let end = quiet.end(containing: due, in: quietZone) {
                if quiet.action == .drop { return .dropped(.quietHours, fellBack: fellBack) }
                if let deadline, end > deadline { return .dropped(.quietHoursExpired, fellBack: fellBack) }
                due = end
                deferred = true
            }
        }
        return .due(due, deferred: deferred, fellBack: fellBack, expiresAt: expiresAt)
    }
}

extension LoadedCampaign {
    /// Whether each recipient gets a moment of its own (a recipient-local schedule, quiet hours):
    /// such a plan is sent moment by moment, not from a snapshot cut into slices.
    public var timesEachRecipient: Bool { DeliveryTiming(campaign: self, start: 0) != nil }
}
