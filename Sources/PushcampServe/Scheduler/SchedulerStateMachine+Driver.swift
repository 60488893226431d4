import PushcampJournal
import PushcampModel

/// What the service used to decide beside the machine: when to read the campaign folders and the
/// credentials again and when to look for runs nobody holds (`beginTick`), which of those runs are
/// taken over and which sliced runs of other nodes are joined (`tick(_:)`), what a launch's end
/// means (`ended`), and when a graceful shutdown has drained. The service reads the journal where
/// the machine asks and carries out the actions; the tests drive the same inputs in memory.
extension SchedulerStateMachine {
    /// When the periodic looks are due.
    struct Cadence: Sendable {
        /// Seconds between looks for runs nobody holds (five a lease: a dead node's run is taken
        /// over within a fifth of a lease after it expires).
        var orphanLook: Double
        /// Seconds between checks of credentials found unusable (a key file put in place, a
        /// certificate renewed), besides every change of the campaign files.
        var credentialsRecheck: Double
        var synced = false
        var nextOrphanLook = -Double.infinity
        var credentialsChecked = -Double.infinity
    }

    /// What to read before a tick is decided.
    public struct TickNeeds: Sendable, Equatable {
        /// Read the campaign folders into the machine (`schedule`, `unschedule`, `setTriggers`):
        /// the first tick, and whenever a file changed.
        public var sync = false
        /// Check the credentials of the apps campaigns send with.
        public var credentials = false
        /// Look for unfinished runs nobody holds (`Look.orphanedSlots`, `orphanedTriggerRuns`).
        public var orphans = false

        public init(sync: Bool = false, credentials: Bool = false, orphans: Bool = false) {
            self.sync = sync
            self.credentials = credentials
            self.orphans = orphans
        }
    }

    /// An unfinished slot run whose campaign's lease nobody holds.
    public struct OrphanedSlot: Sendable, Equatable {
        public var campaign: String
        public var slot: Int64
        /// The newest slot of the campaign the journal records as fired.
        public var newestFired: Int64?

        public init(campaign: String, slot: Int64, newestFired: Int64?) {
            self.campaign = campaign
            self.slot = slot
            self.newestFired = newestFired
        }
    }

    /// An unfinished trigger run whose campaign's lease nobody holds, with its notifications.
    public struct OrphanedTriggerRun: Sendable, Equatable {
        public var campaign: String
        public var run: Int64
        public var notifications: [String]

        public init(campaign: String, run: Int64, notifications: [String]) {
            self.campaign = campaign
            self.run = run
            self.notifications = notifications
        }
    }

    /// What the journal said at a tick, as `beginTick` asked.
    public struct Look: Sendable {
        public var now: Double
        public var orphanedSlots: [OrphanedSlot] = []
        public var orphanedTriggerRuns: [OrphanedTriggerRun] = []
        /// Running runs cut into slices, with a slice free to claim (none when this node sends runs
        /// whole).
        public var slicedRuns: [RunRecord] = []
        /// Pending trigger firings due now, oldest first.
        public var dueFirings: [(campaign: String, notification: String)] = []

        public init(now: Double) {
            self.now = now
        }
    }

    /// What became of a launch (a slot, trigger or join the service started).
    public enum LaunchEnd: Sendable, Equatable {
        /// Sent, found recorded already, or refused (recorded as such).
        case done
        /// Another process holds the campaign (`overlapping`: sending an earlier slot of it), or an
        /// earlier step of the campaign's broadcast sequence is unfinished: tried again.
        case busy(slot: Int64, overlapping: Bool)
        /// The campaign's run of the earlier slot `unfinished` is not finished, and nobody holds
        /// it: that run is resumed first.
        case behind(slot: Int64, unfinished: Int64, newestFired: Int64?)
        /// This node may not work on a joined run (another revision, credentials): not tried again.
        case refused
    }

    /// What a taken-over run is.
    public enum TakenOver: Sendable, Equatable {
        case slot(Int64)
        case triggerRun(Int64)
    }

    /// A tick begins at `now`: what the service reads before `tick(_:)` decides, or nil once
    /// stopping. `catalogChanged`: a campaign file changed since the last tick.
    /// `credentialsTroubled`: some app's credentials were found unusable (checked again every
    /// `credentialsRecheck` seconds until they are not).
    public mutating func beginTick(now: Double, catalogChanged: Bool, credentialsTroubled: Bool) -> TickNeeds? {
        guard !stopping else { return nil }
        var needs = TickNeeds()
        if catalogChanged || !cadence.synced {
            needs.sync = true
            needs.credentials = true
        } else if credentialsTroubled, now - cadence.credentialsChecked >= cadence.credentialsRecheck {
            needs.credentials = true
        }
        if needs.credentials { cadence.credentialsChecked = now }
        cadence.synced = true
        if now >= cadence.nextOrphanLook {
            needs.orphans = true
            cadence.nextOrphanLook = now + cadence.orphanLook
        }
        return needs
    }

    /// Decides a tick from what the journal said: runs nobody holds are taken over (resumed, or
    /// closed when too old), sliced runs of other nodes are joined, then the slots due fire and
    /// the trigger firings due go out. Campaigns this process sends are left alone.
    public mutating func tick(_ look: Look) -> [Action] {
        guard !stopping else { return [] }
        let now = Int64(look.now)
        var actions: [Action] = []
        for orphan in look.orphanedSlots where !launched.contains(orphan.campaign) && entries[orphan.campaign] != nil {
            actions.append(.takeOver(campaign: orphan.campaign, what: .slot(orphan.slot)))
            actions += unfinished(orphan.campaign, slot: orphan.slot, newestFired: orphan.newestFired, now: now)
        }
        for orphan in look.orphanedTriggerRuns where !launched.contains(orphan.campaign) {
            actions.append(.takeOver(campaign: orphan.campaign, what: .triggerRun(orphan.run)))
            actions += unfinishedTriggerRun(orphan.campaign, run: orphan.run, notifications: orphan.notifications)
        }
        for run in look.slicedRuns
        where !launched.contains(run.campaign) && !joined.contains(run.id) && !refusedRuns.contains(run.id) {
            joined.insert(run.id)
            actions.append(.join(run))
        }
        actions += tick(now: now)
        actions += firingsDue(look.dueFirings)
        return actions
    }

    /// A launch ended (or never started): its campaign is free again here, and what comes next is
    /// decided (nothing once stopping).
    public mutating func ended(_ launch: Action, _ end: LaunchEnd, now: Int64) -> [Action] {
        switch launch {
        case .join(let run):
            joined.remove(run.id)
            if end == .refused { refusedRuns.insert(run.id) }
            return []
        case .fire(let campaign, _), .resume(let campaign, _), .fireTrigger(let campaign, _):
            launched.remove(campaign)
            guard !stopping else { return [] }
            switch end {
            case .done, .refused:
                return runEnded(campaign, now: now)
            case .busy(let slot, let overlapping):
                return slotBusy(campaign, slot: slot, overlapping: overlapping) + runEnded(campaign, now: now)
            case .behind(let slot, let unfinished, let newestFired):
                // The campaign's earlier slot run is unfinished: it goes first.
                return [.takeOver(campaign: campaign, what: .slot(unfinished))]
                    + behind(campaign, slot: slot, unfinished: unfinished, newestFired: newestFired, now: now)
            }
        case .skipFirings, .leaveTriggerRun, .takeOver, .close, .skip:
            return []
        }
    }

    /// A graceful shutdown began: nothing more fires; the launches running go on to their end.
    public mutating func shutdown() {
        stopping = true
    }

    /// Stopping, and nothing of this process sends any more.
    public var isDrained: Bool { stopping && launched.isEmpty && joined.isEmpty }
}
