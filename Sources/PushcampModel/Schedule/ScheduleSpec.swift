/// When a campaign is sent, from its `schedule:` mapping:
///
/// ```yaml
/// schedule: { at: 2027-03-20T09:00:00Z }                          # once
/// schedule: { at: "2027-03-20T09:00", timezone: Europe/Paris }    # once, a wall time in a zone
/// schedule: { cron: "0 9 * * MON-FRI", timezone: Europe/Paris }   # recurring
/// schedule: { every: 6h, from: 2027-03-01T00:00:00Z, until: 2027-04-01T00:00:00Z }
/// ```
///
/// with what `pushcamp serve` does about slots it could not fire on time (`catch_up`) and about a
/// slot that comes due while the previous slot's run is still sending (`overlap`).
public struct ScheduleSpec: Hashable, Sendable, CustomStringConvertible {
    public enum Rule: Hashable, Sendable {
        /// One slot.
        case at(Timestamp)
        /// One wall time, reached in each recipient's own zone: the run starts at `LocalDelivery.slot`
        /// and sends each recipient when their clock shows the time.
        case local(LocalDelivery)
        /// A slot at every time the expression names, as wall times in `zone`.
        case cron(CronExpression)
        /// A slot every span, counted from `from` (or from 1970-01-01T00:00:00Z, so `every: 6h` fires
        /// at 00:00, 06:00, 12:00 and 18:00 UTC whenever `serve` was started).
        case every(TimeSpan)
    }

    public var rule: Rule
    /// The zone of a cron expression's times and of a local `at`; UTC when not given.
    public var zone: Zone
    /// No slot before `from` nor after `until` (recurring schedules).
    public var from: Timestamp?
    public var until: Timestamp?
    public var catchUp: CatchUp
    public var overlap: Overlap

    public init(
        rule: Rule,
        zone: Zone = .utc,
        from: Timestamp? = nil,
        until: Timestamp? = nil,
        catchUp: CatchUp = CatchUp(),
        overlap: Overlap = .skip
    ) {
        self.rule = rule
        self.zone = zone
        self.from = from
        self.until = until
        self.catchUp = catchUp
        self.overlap = overlap
    }

    /// The instant of an `at` schedule (not of a recipient-local one: each recipient has their own).
    public var at: Timestamp? {
        if case .at(let time) = rule { return time }
        return nil
    }

    /// The one slot of a schedule that fires once (`at`, or recipient-local `at`).
    public var once: Int64? {
        switch rule {
        case .at(let time): return time.secondsSince1970
        case .local(let local): return local.slot
        case .cron, .every: return nil
        }
    }

    /// The recipient-local delivery, when the schedule is one.
    public var local: LocalDelivery? {
        if case .local(let local) = rule { return local }
        return nil
    }

    public var isRecurring: Bool { once == nil }

    /// How late a slot may still fire (seconds): `catch_up.within`, and for a recipient-local
    /// schedule also the 26 hours its run spans (UTC+14 to UTC-12): the zones still ahead are sent.
    public var lateness: Int64 { catchUp.within.seconds + (local != nil ? 26 * 3600 : 0) }

    /// The first slot strictly after `instant` (seconds since 1970), or nil when there is none.
    public func nextSlot(after instant: Int64) -> Int64? {
        var slot: Int64?
        switch rule {
        case .at, .local:
            slot = once.flatMap { $0 > instant ? $0 : nil }
        case .every(let span):
            let anchor = from?.secondsSince1970 ?? 0
            if instant < anchor {
                slot = anchor
            } else {
                slot = anchor + ((instant - anchor) / span.seconds + 1) * span.seconds
            }
        case .cron(let expression):
            let start = from.map { max(instant, $0.secondsSince1970 - 1) } ?? instant
            slot = expression.next(after: start, in: zone)
        }
        if let until, let found = slot, found > until.secondsSince1970 { return nil }
        return slot
    }

    /// The slots after `instant` through `end`, oldest first, at most `limit` of them.
    public func slots(after instant: Int64, through end: Int64, limit: Int = .max) -> [Int64] {
        var slots: [Int64] = []
        var cursor = instant
        while slots.count < limit, let slot = nextSlot(after: cursor), slot <= end {
            slots.append(slot)
            cursor = slot
        }
        return slots
    }

    /// `at 2027-03-20T09:00:00Z`, `cron "0 9 * * MON-FRI" in Europe/Paris`, `every 6h from … until …`.
    public var description: String {
        var text: String
        switch rule {
        case .at(let time): text = "at \(time)"
        case .local(let local):
            text = "at \(local.time) in each recipient's zone (\(local.zones.attribute), else \(local.zones.fallback))"
        case .cron(let expression): text = "cron \"\(expression)\" in \(zone)"
        case .every(let span): text = "every \(span)"
        }
        if let from { text += " from \(from)" }
        if let until { text += " until \(until)" }
        return text
    }
}

/// What `serve` does with slots that came due while it could not fire them (it was stopped, or
/// the machine slept): `catch_up: { within: 1h, mode: latest }`.
public struct CatchUp: Hashable, Sendable {
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        /// Of the slots missed within `within`, fire the newest; the older ones are skipped.
        case latest
        /// Fire every slot missed within `within`, oldest first, one run after the other.
        case all
        /// Fire no missed slot: only slots that come due while `serve` runs.
        case skip
    }

    /// How late a slot may still fire; older slots are skipped as missed.
    public var within: TimeSpan
    public var mode: Mode

    public static let defaultWithin = TimeSpan(seconds: 3600)

    public init(within: TimeSpan = CatchUp.defaultWithin, mode: Mode = .latest) {
        self.within = within
        self.mode = mode
    }
}

/// A slot that comes due while the campaign's previous slot is still sending.
public enum Overlap: String, Hashable, Sendable, CaseIterable {
    /// The slot is skipped (recorded as `overlap`).
    case skip
    /// The slot fires when the running one ends (if it is still within `catch_up.within`).
    case queue
}
