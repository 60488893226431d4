import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import ServiceLifecycle

/// `serve`'s scheduler: a swift-service-lifecycle `Service` that carries out what
/// `SchedulerStateMachine` decides. Once a second it looks at the campaign folders again (a file
/// that changed is read again; one that stops validating is reported and skipped) and asks the
/// machine which slots are due; a slot fires by loading its campaign file as it is at that moment
/// and sending it through `SendRun` with `.slot(slot)`, which claims the slot in the journal in
/// the transaction that creates the run. Skipped slots are recorded with their reason.
///
/// Trigger campaigns go the same way: the receiver records a firing with each notification that
/// matches one (through the shared `TriggerTable`, which this service keeps up to date), and once
/// a second the firings due are sent, each campaign's due firings in one run (`.trigger`), claimed
/// in the transaction that creates the run; firings whose subscription no audience row is joined
/// to are then marked `no-recipient`.
///
/// On start it resumes slot and trigger runs left unfinished by a killed `serve`, and every fifth
/// of a lease it takes over those of nodes whose lease expired; with slicing it joins the sliced
/// runs other nodes started. On graceful shutdown it fires nothing more, lets running sends drain
/// as `send` does (they resume on the next start), and ends.
///
/// The service is a thin driver: every decision is the machine's (`SchedulerStateMachine` and its
/// `+Driver`); here events (a tick, a launch's end, the shutdown) are read into it, the journal is
/// read where it asks, and its actions carried out — launches (`+Launch`) as child tasks whose end
/// comes back as an event.
public final class SchedulerService: Service, Sendable {
    public struct Configuration: Sendable {
        public var paths: ProjectPaths
        public var campaignFolders: [String]
        public var journal: any Journal
        /// The folder provider tokens are cached in between processes, or nil for none.
        public var tokenCache: String?
        /// Seconds a campaign's lease lasts unless renewed; a dead node's run is taken over this
        /// long after its last renewal, at the next look for runs nobody holds (five a lease).
        public var leaseDuration = SendLease.defaultDuration
        /// Where credentials named in pushcamp.yaml are read from.
        public var environment: [String: String]
        /// Seconds between looks at the folders and the clock.
        public var tickInterval: Double = 1
        public var stallTimeout: Double = 60
        /// Runs are cut into slices that every node sends (a shared journal), or sent whole.
        public var slicing: Slicing?
        /// Where the pushes go; the apps' connections from pushcamp.yaml unless given (the tests'
        /// in-memory transport, one per run).
        public var makeTransport: (@Sendable () -> SendRun.Transport)?

        var transport: SendRun.Transport {
            makeTransport?() ?? .app(paths: paths, environment: environment)
        }

        public init(paths: ProjectPaths, campaignFolders: [String], journal: any Journal, environment: [String: String])
        {
            self.paths = paths
            self.campaignFolders = campaignFolders
            self.journal = journal
            self.environment = environment
        }
    }

    enum Event: Sendable {
        case tick
        /// A launch (a slot, trigger or join the machine decided) ended, or never started.
        case ended(SchedulerStateMachine.Action, SchedulerStateMachine.LaunchEnd)
        case shutdown
    }

    let configuration: Configuration
    let clock: any WallClock
    let metrics: ServeMetrics
    let status: ServeStatus
    let logger: Logger
    let triggers: TriggerTable

    public init(
        configuration: Configuration,
        metrics: ServeMetrics,
        status: ServeStatus,
        logger: Logger,
        triggers: TriggerTable = TriggerTable(),
        clock: any WallClock = SystemWallClock()
    ) {
        self.configuration = configuration
        self.metrics = metrics
        self.status = status
        self.logger = logger
        self.triggers = triggers
        self.clock = clock
    }

    /// Event → machine → perform, until a graceful shutdown has drained every launch.
    public func run() async throws {
        status.update { $0.journalOpen = true }
        defer { status.update { $0.journalOpen = false } }
        var machine = SchedulerStateMachine(
            startedAt: Int64(clock.now()),
            orphanLookInterval: configuration.leaseDuration / 5,
            credentialsRecheckInterval: Self.credentialsRecheckInterval
        )
        var catalog = CampaignCatalog(paths: configuration.paths, folders: configuration.campaignFolders)
        let (events, continuation) = AsyncStream<Event>.makeStream()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                // The ticker: a child that ends when the loop below cancels the group.
                group.addTask { await self.tickOnWholeSeconds(continuation) }
                for await event in events {
                    let now = clock.now()
                    var actions: [SchedulerStateMachine.Action]
                    switch event {
                    case .tick:
                        actions = await self.tick(&machine, catalog: &catalog, now: now)
                    case .ended(let launch, let end):
                        actions = machine.ended(launch, end, now: Int64(now))
                    case .shutdown:
                        machine.shutdown()
                        actions = []
                    }
                    while !actions.isEmpty {
                        let action = actions.removeFirst()
                        guard let launch = self.launch(of: action, catalog: catalog) else {
                            actions += await self.perform(action, machine: &machine, now: now)
                            continue
                        }
                        // Each launch is a child of the service's group; its end comes back as an event.
                        group.addTask { continuation.yield(.ended(action, await launch())) }
                    }
                    status.update { $0.running = machine.launched.sorted() }
                    if machine.isDrained { break }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            continuation.yield(.shutdown)
        }
    }

    /// Ticks on whole seconds (slots are whole seconds), so a slot fires within milliseconds of
    /// its time, until cancelled.
    private func tickOnWholeSeconds(_ continuation: AsyncStream<Event>.Continuation) async {
        let interval = configuration.tickInterval
        while !Task.isCancelled {
            continuation.yield(.tick)
            let next = (clock.now() / interval).rounded(.down) * interval + interval + 0.002
            try? await clock.sleep(until: next)
        }
    }

    /// A tick: the journal asked whether it answers, the folders and the journal read as the
    /// machine asks, and the machine's decisions returned.
    private func tick(
        _ machine: inout SchedulerStateMachine,
        catalog: inout CampaignCatalog,
        now: Double
    ) async -> [SchedulerStateMachine.Action] {
        let journal = configuration.journal
        await probe(journal)
        metrics.leasesHeld(machine.launched.count)
        let changed = catalog.refresh()
        guard
            let needs = machine.beginTick(
                now: now,
                catalogChanged: changed,
                credentialsTroubled: !status.snapshot.credentials.isEmpty
            )
        else { return [] }
        if needs.sync {
            await sync(&machine, with: catalog, journal: journal, now: now)
            machine.setTriggers(Set(catalog.triggers.keys))
            triggers.set(catalog.triggers.values.map(\.rule))
        }
        if needs.credentials { checkCredentials(catalog) }
        var look = SchedulerStateMachine.Look(now: now)
        if needs.orphans {
            look.orphanedSlots = await orphanedSlots(journal, scheduled: Set(machine.campaigns), machine.launched)
            look.orphanedTriggerRuns = await orphanedTriggerRuns(journal, machine.launched)
        }
        look.slicedRuns = await runsWithFreeSlices(journal)
        look.dueFirings = await dueFirings(journal, now: now)
        let actions = machine.tick(look)
        metrics.ticked(at: now)
        for campaign in machine.campaigns {
            metrics.nextSlot(campaign, at: machine.nextSlot(of: campaign))
        }
        status.update { $0.lastTick = now }
        return actions
    }

    /// Carries out an action that is not a launch; returns what the machine decides next.
    private func perform(
        _ action: SchedulerStateMachine.Action,
        machine: inout SchedulerStateMachine,
        now: Double
    ) async -> [SchedulerStateMachine.Action] {
        let journal = configuration.journal
        switch action {
        case .skipFirings(let campaign, let notifications, let reason):
            await skipFirings(campaign, notifications, detail: reason.detail(campaign: campaign), journal: journal)
        case .leaveTriggerRun(let campaign, let run):
            logger.warning(
                "run \(run) of trigger campaign \(campaign) is unfinished, but the campaign is no longer a trigger campaign; it is left as it is",
                metadata: Logger.fields("run-left", campaign: campaign, run: RunID(run))
            )
        case .takeOver(let campaign, let what):
            tookOver(campaign, what)
        case .close(let campaign, let slot, let reason):
            await close(campaign, slot: slot, reason: reason, journal: journal)
        case .skip(let campaign, let first, let through, let count, let reason):
            await skip(
                campaign,
                first: first,
                through: through,
                count: count,
                reason: reason.rawValue,
                detail: nil,
                journal: journal
            )
        case .fire, .resume, .fireTrigger, .join:
            // Its campaign file is gone from the catalog: the launch ends before it starts.
            return machine.ended(action, .done, now: Int64(now))
        }
        return []
    }

    func report(_ error: String, _ fields: Logger.Metadata = ["event": "error"]) {
        logger.error("\(error)", metadata: fields)
        status.update { $0.lastError = error }
    }
}
