import PushcampJournal
import PushcampModel

/// Decides which slots of which scheduled campaigns fire, and which are skipped and why. A plain
/// struct: it is told the campaigns, the time and the runs that ended, and returns actions for
/// `SchedulerService` to carry out (claim the slot and send, or record the skip). No clock, no
/// journal, no sleeping: the tests walk it through days of slots in memory.
///
/// Per campaign it keeps a cursor, the latest slot accounted for (fired, skipped or queued), read
/// from the journal at start; every slot after the cursor that is due is decided exactly once:
///
/// - slots due longer ago than `catch_up.within` are skipped as `missed`;
/// - of the slots due within it, `catch_up.mode` picks: `latest` fires the newest and skips the
///   others as `superseded`; `all` fires each, oldest first; `skip` fires only slots that came
///   due after `serve` started (the others are `not-caught-up`);
/// - a slot due while the campaign's previous slot is still sending is skipped as `overlap`, or
///   with `overlap: queue` fires when that run ends (skipped as `missed` if it waited longer than
///   `within`).
///
/// A slot run left unfinished (its `serve` was stopped or killed, or its node lost the journal for
/// longer than its lease) is finished before any newer slot of its campaign may start: the node
/// that finds it resumes it, whichever it sees first, the run or a newer slot (whose firing is then
/// refused, `behind`). It is closed instead only as `expired`, when its slot is older than
/// `catch_up.within` (or as `superseded` when a newer slot somehow fired already). The slots that
/// came due while it was sending, or while another process held the campaign sending an earlier
/// slot, are overlaps: skipped as `overlap`, or with `overlap: queue` (or `catch_up.mode: all`)
/// fired one after the other once it ends. Which node sees what first changes nothing.
///
/// Trigger campaigns (fired by App Store notifications) are decided here too: the due firings of a
/// campaign go out in one run, one run per campaign at a time (firings that come due meanwhile
/// wait for the next tick), and those of a campaign no longer in the folders are skipped.
///
/// It also keeps what the service would otherwise keep beside it (`+Driver`): the campaigns this
/// process sends, the sliced runs of other nodes it joined or may not join, when to look for runs
/// nobody holds and to check credentials again, and whether a graceful shutdown has drained.
public struct SchedulerStateMachine: Sendable {
    public enum SkipReason: String, Sendable, CaseIterable {
        /// Due longer ago than `catch_up.within` when it could be fired.
        case missed
        /// A newer slot was due too, and `catch_up.mode: latest` fires only the newest.
        case superseded
        /// The previous slot's run was still sending (`overlap: skip`).
        case overlap
        /// Due while `serve` was not running, with `catch_up.mode: skip`.
        case notCaughtUp = "not-caught-up"
    }

    /// Why an unfinished slot run is closed instead of resumed.
    public enum CloseReason: String, Sendable, CaseIterable {
        /// Its slot is older than `catch_up.within`.
        case expired
        /// A newer slot fired since, or is due now and fires instead.
        case superseded
    }

    /// Why trigger firings are skipped rather than sent.
    public enum FiringSkipReason: Sendable, Equatable {
        /// The campaign is no longer a trigger campaign in the campaign folders.
        case notTriggered

        public func detail(campaign: String) -> String {
            switch self {
            case .notTriggered: "campaign \(campaign) is no longer a trigger campaign in the campaign folders"
            }
        }
    }

    public enum Action: Sendable, Equatable {
        case fire(campaign: String, slot: Int64)
        /// Send the firings of `campaign` by `notifications` in one run (or resume the run that
        /// claimed them).
        case fireTrigger(campaign: String, notifications: [String])
        /// Record the firings as skipped, for `reason`.
        case skipFirings(campaign: String, notifications: [String], reason: FiringSkipReason)
        /// An unfinished trigger run of a campaign that is no longer a trigger campaign: left as it
        /// is (said in the log).
        case leaveTriggerRun(campaign: String, run: Int64)
        /// Resume the unfinished run of `slot`.
        case resume(campaign: String, slot: Int64)
        /// Work on the free slices of `run`, which another node cut and started.
        case join(RunRecord)
        /// An unfinished run nobody holds is about to be decided here (said and counted): the
        /// actions after it resume or close it.
        case takeOver(campaign: String, what: TakenOver)
        /// Close the unfinished run of `slot` without sending more of it.
        case close(campaign: String, slot: Int64, reason: CloseReason)
        /// `count` slots from `first` through `through`, skipped together.
        case skip(campaign: String, first: Int64, through: Int64, count: Int, reason: SkipReason)
    }

    struct Entry: Sendable {
        var schedule: ScheduleSpec
        var cursor: Int64
        /// The slot whose run this process is sending.
        var running: Int64?
        var queued: [Int64] = []
        /// Slots that could not be fired because another process held the campaign: fired again
        /// at the next tick until one process claims them (or they fall out of the window).
        var busy: [Int64] = []
    }

    /// When `serve` started (seconds since 1970): what `catch_up.mode: skip` counts from.
    public let startedAt: Int64
    private(set) var entries: [String: Entry] = [:]
    /// The trigger campaigns in the folders.
    private(set) var triggers: Set<String> = []
    /// Missed slots beyond this many are not looked at one by one (they are counted as this many).
    public static let countLimit = 100_000

    /// Campaigns this process sends a slot or trigger run of (a launch not yet ended).
    public internal(set) var launched: Set<String> = []
    /// Runs of other nodes this process works slices of, and those it may not (another revision,
    /// credentials): not tried again.
    public internal(set) var joined: Set<RunID> = []
    var refusedRuns: Set<RunID> = []
    /// A graceful shutdown began: nothing more is fired.
    public internal(set) var stopping = false
    var cadence: Cadence

    public init(startedAt: Int64, orphanLookInterval: Double = 3, credentialsRecheckInterval: Double = 30) {
        self.startedAt = startedAt
        cadence = Cadence(orphanLook: orphanLookInterval, credentialsRecheck: credentialsRecheckInterval)
    }

    /// A campaign to schedule, or its new schedule. `cursor` is the latest slot the journal has
    /// recorded for it, or, when none is, the moment `serve` first saw the campaign (so a new
    /// recurring campaign does not fire the slots before it). An `at` schedule's one slot is due
    /// even if it came before the campaign was first seen.
    public mutating func schedule(_ campaign: String, _ schedule: ScheduleSpec, cursor: Int64, recorded: Bool) {
        var cursor = cursor
        if !recorded, let once = schedule.once { cursor = min(cursor, once - 1) }
        if var entry = entries[campaign] {
            entry.schedule = schedule
            entries[campaign] = entry
        } else {
            entries[campaign] = Entry(schedule: schedule, cursor: cursor)
        }
    }

    /// `slot`'s run was left unfinished (its sender was killed, stopped, or lost the journal past
    /// its lease): resumed, unless its slot is older than `catch_up.within` (closed as `expired`)
    /// or a newer slot fired already (`superseded`; `newestFired` is the newest slot of the
    /// campaign the journal records as fired). Slots left to another process that came due after
    /// it are overlaps of the resumed run: queued behind it with `overlap: queue` or
    /// `catch_up.mode: all`, skipped as `overlap` otherwise.
    public mutating func unfinished(_ campaign: String, slot: Int64, newestFired: Int64?, now: Int64) -> [Action] {
        guard var entry = entries[campaign] else { return [] }
        let schedule = entry.schedule
        if slot < now - schedule.lateness {
            return [.close(campaign: campaign, slot: slot, reason: .expired)]
        }
        if let newestFired, newestFired > slot {
            return [.close(campaign: campaign, slot: slot, reason: .superseded)]
        }
        entry.running = slot
        launched.insert(campaign)
        entry.cursor = max(entry.cursor, slot)
        var actions: [Action] = [.resume(campaign: campaign, slot: slot)]
        let later = entry.busy.filter { $0 > slot }
        entry.busy.removeAll { $0 >= slot }
        if queues(schedule) {
            entry.queued = Array(Set(entry.queued + later)).sorted()
        } else {
            for overlap in later {
                actions.append(.skip(campaign: campaign, first: overlap, through: overlap, count: 1, reason: .overlap))
            }
        }
        entries[campaign] = entry
        return actions
    }

    /// `slot` was not fired because the campaign's run of the earlier slot `unfinished` is not
    /// finished (its sender stopped, or lost the journal past its lease): that run comes first,
    /// here, and `slot`, due while it was sending, is its overlap (see `unfinished`).
    public mutating func behind(
        _ campaign: String,
        slot: Int64,
        unfinished: Int64,
        newestFired: Int64?,
        now: Int64
    ) -> [Action] {
        guard var entry = entries[campaign] else { return [] }
        if entry.running == slot { entry.running = nil }
        if !entry.busy.contains(slot) { entry.busy.append(slot) }
        entry.busy.sort()
        entries[campaign] = entry
        return self.unfinished(campaign, slot: unfinished, newestFired: newestFired, now: now)
    }

    /// Whether slots due while the campaign sends wait for it (rather than being skipped).
    private func queues(_ schedule: ScheduleSpec) -> Bool {
        schedule.overlap == .queue || schedule.catchUp.mode == .all
    }

    /// `slot` could not be fired: another process holds the campaign's lease. The slot belongs to
    /// whoever fires it first: it is fired again at the next tick, so a holder that dies before it
    /// fired the slot does not lose it; once any process claimed it, the next attempt finds it
    /// recorded and ends there. When the holder is sending an earlier slot of the campaign
    /// (`overlapping`), the slot came due while that slot's run was sending: with `overlap: skip`
    /// it is skipped as `overlap` here, as the holder would; otherwise it waits its turn. When a
    /// newer slot fires here first, it is skipped as `superseded` (unless `catch_up.mode: all`).
    public mutating func slotBusy(_ campaign: String, slot: Int64, overlapping: Bool = false) -> [Action] {
        guard var entry = entries[campaign] else { return [] }
        if overlapping, !queues(entry.schedule) {
            entry.busy.removeAll { $0 == slot }
            entries[campaign] = entry
            return [.skip(campaign: campaign, first: slot, through: slot, count: 1, reason: .overlap)]
        }
        if !entry.busy.contains(slot) { entry.busy.append(slot) }
        entries[campaign] = entry
        return []
    }

    /// A campaign no longer scheduled (its file removed, or its `schedule:` dropped).
    public mutating func unschedule(_ campaign: String) {
        entries[campaign] = nil
    }

    /// The trigger campaigns now in the folders.
    public mutating func setTriggers(_ campaigns: Set<String>) {
        triggers = campaigns
    }

    /// Pending firings due now, oldest first, as (campaign, notification): each campaign's go out
    /// in one run unless it is sending already (they wait); those of campaigns that are no longer
    /// trigger campaigns are skipped.
    public mutating func firingsDue(_ due: [(campaign: String, notification: String)]) -> [Action] {
        var order: [String] = []
        var byCampaign: [String: [String]] = [:]
        for (campaign, notification) in due {
            if byCampaign[campaign] == nil { order.append(campaign) }
            byCampaign[campaign, default: []].append(notification)
        }
        return order.compactMap { campaign in
            let notifications = byCampaign[campaign] ?? []
            guard triggers.contains(campaign) else {
                return .skipFirings(campaign: campaign, notifications: notifications, reason: .notTriggered)
            }
            guard !launched.contains(campaign) else { return nil }
            launched.insert(campaign)
            return .fireTrigger(campaign: campaign, notifications: notifications)
        }
    }

    /// A trigger run left unfinished by a stopped `serve`, with the notifications it sends:
    /// resumed, unless its campaign is no longer a trigger campaign (left as it is) or is sending.
    public mutating func unfinishedTriggerRun(_ campaign: String, run: Int64, notifications: [String]) -> [Action] {
        guard triggers.contains(campaign) else { return [.leaveTriggerRun(campaign: campaign, run: run)] }
        guard launched.insert(campaign).inserted else { return [] }
        return [.fireTrigger(campaign: campaign, notifications: notifications)]
    }

    public var campaigns: [String] { entries.keys.sorted() }

    public func isRunning(_ campaign: String) -> Bool { entries[campaign]?.running != nil }

    /// The next slot of `campaign` after those already decided.
    public func nextSlot(of campaign: String) -> Int64? {
        guard let entry = entries[campaign] else { return nil }
        return entry.queued.first ?? entry.schedule.nextSlot(after: entry.cursor)
    }

    /// The earliest moment a slot comes due, for the service's timer.
    public var nextDue: Int64? {
        entries.values.compactMap { $0.schedule.nextSlot(after: $0.cursor) }.min()
    }

    /// The slots due at `now`, decided.
    public mutating func tick(now: Int64) -> [Action] {
        var actions: [Action] = []
        for campaign in entries.keys.sorted() {
            actions += decide(campaign, now: now)
        }
        return actions
    }

    /// The run of `campaign`'s current slot or firings ended (or never started): a queued slot may
    /// fire, and firings of the campaign that came due meanwhile go out at the next tick.
    public mutating func runEnded(_ campaign: String, now: Int64) -> [Action] {
        launched.remove(campaign)
        guard var entry = entries[campaign] else { return [] }
        entry.running = nil
        var actions: [Action] = []
        let oldest = now - entry.schedule.lateness
        while let slot = entry.queued.first {
            entry.queued.removeFirst()
            if slot < oldest {
                actions.append(.skip(campaign: campaign, first: slot, through: slot, count: 1, reason: .missed))
                continue
            }
            entry.running = slot
            launched.insert(campaign)
            actions.append(.fire(campaign: campaign, slot: slot))
            break
        }
        entries[campaign] = entry
        return actions
    }

    private mutating func decide(_ campaign: String, now: Int64) -> [Action] {
        var actions = decideDue(campaign, now: now)
        // A slot left to another process is tried again once nothing of this process sends the
        // campaign (never before the due slots: that would make them overlap).
        guard var entry = entries[campaign], entry.running == nil, !entry.busy.isEmpty else { return actions }
        let slot = entry.busy.removeFirst()
        if slot < now - entry.schedule.lateness {
            actions.append(.skip(campaign: campaign, first: slot, through: slot, count: 1, reason: .missed))
        } else {
            entry.running = slot
            launched.insert(campaign)
            actions.append(.fire(campaign: campaign, slot: slot))
        }
        entries[campaign] = entry
        return actions
    }

    private mutating func decideDue(_ campaign: String, now: Int64) -> [Action] {
        guard var entry = entries[campaign] else { return [] }
        let schedule = entry.schedule
        guard let first = schedule.nextSlot(after: entry.cursor), first <= now else { return [] }
        var actions: [Action] = []
        let oldest = now - schedule.lateness
        // Missed: due before the catch-up window; counted, never fired.
        if first < oldest {
            var count = 0
            var last = first
            var cursor = entry.cursor
            while let slot = schedule.nextSlot(after: cursor), slot < oldest {
                count += 1
                last = slot
                cursor = slot
                if count == Self.countLimit {
                    // Jump to the window: what lies between is counted as the limit.
                    last = oldest - 1
                    break
                }
            }
            actions.append(.skip(campaign: campaign, first: first, through: last, count: count, reason: .missed))
            entry.cursor = max(last, cursor)
        }
        var due = schedule.slots(after: entry.cursor, through: now, limit: Self.countLimit)
        if let last = due.last { entry.cursor = last }
        switch schedule.catchUp.mode {
        case .all:
            break
        case .latest:
            if due.count > 1 {
                let older = due.dropLast()
                actions.append(
                    .skip(
                        campaign: campaign,
                        first: older.first!,
                        through: older.last!,
                        count: older.count,
                        reason: .superseded
                    )
                )
                due = [due.last!]
            }
        case .skip:
            let before = due.filter { $0 <= startedAt }
            if !before.isEmpty {
                actions.append(
                    .skip(
                        campaign: campaign,
                        first: before.first!,
                        through: before.last!,
                        count: before.count,
                        reason: .notCaughtUp
                    )
                )
            }
            due = Array(due.drop { $0 <= startedAt }.suffix(1))
        }
        for slot in due {
            if entry.running == nil && entry.queued.isEmpty {
                // Slots found held by another process that nobody claimed since are superseded by
                // this newer one (its holder died or lost the journal before firing them), except
                // with `catch_up.mode: all`, where each slot goes out. Left waiting here, they would
                // fire after the newer slot, or be lost when this process stops.
                if schedule.catchUp.mode != .all {
                    for held in entry.busy where held < slot {
                        actions.append(
                            .skip(campaign: campaign, first: held, through: held, count: 1, reason: .superseded)
                        )
                    }
                    entry.busy.removeAll { $0 < slot }
                }
                entry.running = slot
                launched.insert(campaign)
                actions.append(.fire(campaign: campaign, slot: slot))
            } else if schedule.overlap == .queue || schedule.catchUp.mode == .all {
                entry.queued.append(slot)
            } else {
                actions.append(.skip(campaign: campaign, first: slot, through: slot, count: 1, reason: .overlap))
            }
        }
        entries[campaign] = entry
        return actions
    }
}
