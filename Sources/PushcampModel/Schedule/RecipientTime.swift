/// Where each recipient's time zone comes from, for a schedule at the recipient's local time and
/// for quiet hours in the recipient's zone: an audience attribute holding an IANA zone name, then
/// a fallback zone for recipients without one.
public struct RecipientZones: Hashable, Sendable {
    /// What a recipient whose attribute is not a zone (`Mars/Olympus`, `EST`) gets.
    public enum Invalid: String, Hashable, Sendable, CaseIterable {
        /// Counted as invalid by pre-flight, with its file and row (the default).
        case refuse
        /// Sent in the fallback zone, and counted as fallen back.
        case fallback
    }

    /// The attribute with each recipient's zone (default `timezone`).
    public var attribute: String
    /// The zone of recipients whose attribute is missing or empty (and, with `invalid: fallback`,
    /// not a zone); UTC when not given.
    public var fallback: Zone
    public var invalid: Invalid

    public static let defaultAttribute = "timezone"

    public init(attribute: String = RecipientZones.defaultAttribute, fallback: Zone = .utc, invalid: Invalid = .refuse)
    {
        self.attribute = attribute
        self.fallback = fallback
        self.invalid = invalid
    }
}

/// A schedule at each recipient's own wall time:
/// `schedule: { at: "2027-03-20T09:00", timezone: recipient, fallback: America/New_York }`.
public struct LocalDelivery: Hashable, Sendable {
    /// What to do for recipients whose local time has already passed when the run starts.
    public enum OnPassed: String, Hashable, Sendable, CaseIterable {
        /// The same wall time the next day (the default).
        case nextDay = "next_day"
        /// At once.
        case sendNow = "send_now"
        /// Not at all (counted as skipped, `on-passed`).
        case skip
    }

    public var time: LocalDateTime
    public var zones: RecipientZones
    public var onPassed: OnPassed

    public init(time: LocalDateTime, zones: RecipientZones = RecipientZones(), onPassed: OnPassed = .nextDay) {
        self.time = time
        self.zones = zones
        self.onPassed = onPassed
    }

    /// The run starts when the earliest zone (UTC+14, Kiribati) reaches the wall time, so that every
    /// zone's moment is still ahead.
    public var slot: Int64 { time.wallSeconds - 14 * 3600 }
}

/// `quiet_hours: { from: "21:00", to: "08:00", timezone: recipient, action: defer }`: no push lands
/// between `from` and `to` (a window may cross midnight) on the recipient's wall clock.
public struct QuietHours: Hashable, Sendable, CustomStringConvertible {
    public enum Action: String, Hashable, Sendable, CaseIterable {
        /// Sent when the window ends, unless that is past the push's expiration (then dropped as
        /// `quiet-hours-expired`).
        case `defer`
        /// Not sent (counted as `quiet-hours`).
        case drop
    }

    public enum Clock: Hashable, Sendable {
        /// Each recipient's zone.
        case recipient(RecipientZones)
        case zone(Zone)
    }

    /// Minutes after midnight.
    public var from: Int
    public var to: Int
    public var clock: Clock
    public var action: Action

    public init(from: Int, to: Int, clock: Clock, action: Action = .defer) {
        self.from = from
        self.to = to
        self.clock = clock
        self.action = action
    }

    /// Whether `minute` (after midnight) is inside the window.
    public func contains(minuteOfDay minute: Int) -> Bool {
        from <= to ? (minute >= from && minute < to) : (minute >= from || minute < to)
    }

    /// When the window holding `instant` ends, in `zone`; nil when `instant` is outside it.
    ///
    /// The end is the first moment after `instant` at which the clocks show `to`: on a night the
    /// clocks fall back, a window ending in the repeated hour ends at its second pass for an
    /// instant in that pass (New York's 22:00–01:30 holds 01:15 EST until 01:30 EST, not the
    /// 01:30 EDT an hour before it); an end the clocks skip moves forward by the gap.
    public func end(containing instant: Int64, in zone: Zone) -> Int64? {
        let local = zone.local(at: instant)
        guard contains(minuteOfDay: local.hour * 60 + local.minute) else { return nil }
        var end = LocalDateTime(year: local.year, month: local.month, day: local.day, hour: to / 60, minute: to % 60)
        // Past midnight in a window that crosses it, the end is later the same day; before it, the next day.
        if local.hour * 60 + local.minute >= to { end = LocalDateTime(wallSeconds: end.wallSeconds + 86_400) }
        if let next = zone.instants(of: end).first(where: { $0 > instant }) { return next }
        // The end falls in a gap: moved forward, and never earlier than the instant itself.
        return max(zone.instant(of: end), instant + 1)
    }

    public var description: String {
        func clock(_ minutes: Int) -> String {
            (minutes / 60 < 10 ? "0" : "") + "\(minutes / 60):" + (minutes % 60 < 10 ? "0" : "") + "\(minutes % 60)"
        }
        let zone: String
        switch self.clock {
        case .recipient: zone = "the recipient's zone"
        case .zone(let named): zone = named.identifier
        }
        return "\(clock(from))–\(clock(to)) in \(zone), \(action.rawValue)"
    }

    /// `21:00` → 1260.
    public static func parseClock(_ text: String) -> Result<Int, ValueError> {
        let parts = text.trimmingSpaces.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hour = Int(parts[0]),
            let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return .failure(ValueError("'\(text)' is not a time of day; write it like 21:00 or 08:30")) }
        return .success(hour * 60 + minute)
    }
}
