import Foundation
import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import ServiceLifecycle
import Synchronization

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
/// On start it resumes slot and trigger runs left unfinished by a killed `serve`. On graceful
/// shutdown it fires nothing more, lets running sends drain as `send` does (they resume on the next
/// start), and ends.
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
        /// A slot's or trigger's send ended, or never started (`Firing` says why).
        case ended(String, Firing)
        /// This node stopped working on the slices of a run it joined; `refused` when it may not
        /// (another revision, credentials), so it does not try that run again.
        case left(RunID, refused: Bool)
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

    public func run() async throws {
        let journal = configuration.journal
        status.update { $0.journalOpen = true }
        defer { status.update { $0.journalOpen = false } }
        var machine = SchedulerStateMachine(startedAt: Int64(clock.now()))
        var catalog = CampaignCatalog(paths: configuration.paths, folders: configuration.campaignFolders)
        var paths: [String: String] = [:]
        /// Per scheduled broadcast campaign, the other scheduled campaigns on its channel: the
        /// steps of its sequence, which go one at a time.
        var sequences: [String: Set<String>] = [:]
        var triggered: [String: String] = [:]
        let (events, continuation) = AsyncStream<Event>.makeStream()
        let clock = self.clock
        let interval = configuration.tickInterval

        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    // Ticks on whole seconds (slots are whole seconds), so a slot fires within
                    // milliseconds of its time.
                    while !Task.isCancelled {
                        continuation.yield(.tick)
                        let next = (clock.now() / interval).rounded(.down) * interval + interval + 0.002
                        try? await clock.sleep(until: next)
                    }
                }
                var running: Set<String> = []
                /// Runs of other nodes this node works slices of, and those it may not.
                var joined: Set<RunID> = []
                var refused: Set<RunID> = []
                var stopping = false
                func start(_ campaign: String, slot: Int64) {
                    guard let path = paths[campaign] else { return }
                    running.insert(campaign)
                    status.update { $0.running = running.sorted() }
                    let steps = sequences[campaign] ?? []
                    group.addTask {
                        let firing = await self.fire(campaign, slot: slot, path: path, steps: steps, journal: journal)
                        continuation.yield(.ended(campaign, firing))
                    }
                }
                func startTrigger(_ campaign: String, notifications: [String]) {
                    guard let path = triggered[campaign] else {
                        continuation.yield(.ended(campaign, .done))
                        return
                    }
                    running.insert(campaign)
                    status.update { $0.running = running.sorted() }
                    group.addTask {
                        await self.fireTrigger(campaign, notifications: notifications, path: path, journal: journal)
                        continuation.yield(.ended(campaign, .done))
                    }
                }
                func perform(_ actions: [SchedulerStateMachine.Action]) async {
                    for action in actions {
                        switch action {
                        case .fire(let campaign, let slot), .resume(let campaign, let slot):
                            start(campaign, slot: slot)
                        case .fireTrigger(let campaign, let notifications):
                            startTrigger(campaign, notifications: notifications)
                        case .skipFirings(let campaign, let notifications, let reason):
                            await self.skipFirings(
                                campaign,
                                notifications,
                                detail: reason.detail(campaign: campaign),
                                journal: journal
                            )
                        case .leaveTriggerRun(let campaign, let run):
                            self.logger.warning(
                                "run \(run) of trigger campaign \(campaign) is unfinished, but the campaign is no longer a trigger campaign; it is left as it is",
                                metadata: Logger.fields("run-left", campaign: campaign, run: RunID(run))
                            )
                        case .close(let campaign, let slot, let reason):
                            await self.close(campaign, slot: slot, reason: reason, journal: journal)
                        case .skip(let campaign, let first, let through, let count, let reason):
                            await self.skip(
                                campaign,
                                first: first,
                                through: through,
                                count: count,
                                reason: reason.rawValue,
                                detail: nil,
                                journal: journal
                            )
                        }
                    }
                }
                var resumed = false
                var nextOrphanLook = -Double.infinity
                var credentialsChecked = -Double.infinity
                for await event in events {
                    let now = clock.now()
                    switch event {
                    case .tick:
                        guard !stopping else { break }
                        await self.probe(journal)
                        self.metrics.leasesHeld(running.count)
                        if catalog.refresh() || !resumed {
                            paths = await self.sync(&machine, with: catalog, journal: journal, now: now)
                            triggered = catalog.triggers.mapValues(\.path)
                            sequences = [:]
                            for steps in catalog.sequences.values {
                                for step in steps { sequences[step] = steps.subtracting([step]) }
                            }
                            machine.setTriggers(Set(triggered.keys))
                            self.triggers.set(catalog.triggers.values.map(\.rule))
                            self.checkCredentials(catalog)
                            credentialsChecked = now
                        } else if !status.snapshot.credentials.isEmpty,
                            now - credentialsChecked >= Self.credentialsRecheckInterval
                        {
                            self.checkCredentials(catalog)
                            credentialsChecked = now
                        }
                        resumed = true
                        if now >= nextOrphanLook {
                            // Runs nobody holds: left by a killed `serve` of this machine, or by a
                            // node whose lease expired. Taken over and resumed.
                            nextOrphanLook = now + configuration.leaseDuration / 5
                            for (campaign, slot) in await self.unfinishedSlots(journal, scheduled: paths)
                            where !running.contains(campaign) {
                                guard await self.isOrphaned(campaign, journal: journal) else { continue }
                                self.tookOver(campaign, "slot \(Timestamps.text(Double(slot)))")
                                let newestFired = try? await journal.latestFiredSlot(campaign: campaign)
                                await perform(
                                    machine.unfinished(campaign, slot: slot, newestFired: newestFired, now: Int64(now))
                                )
                            }
                            for (run, notifications) in await self.unfinishedTriggerRuns(journal)
                            where !running.contains(run.campaign) {
                                guard await self.isOrphaned(run.campaign, journal: journal) else { continue }
                                self.tookOver(run.campaign, "trigger run \(run.id)")
                                await perform(
                                    machine.unfinishedTriggerRun(
                                        run.campaign,
                                        run: run.id.rawValue,
                                        notifications: notifications
                                    )
                                )
                            }
                        }
                        // Runs cut into slices that another node started, with a slice free: every
                        // node sends some, joining at the first tick one is free.
                        for run in await self.runsWithFreeSlices(journal)
                        where !running.contains(run.campaign) && !joined.contains(run.id)
                            && !refused.contains(run.id)
                        {
                            guard let path = paths[run.campaign] ?? run.file else { continue }
                            joined.insert(run.id)
                            group.addTask {
                                let refused = await self.join(run, path: path, journal: journal)
                                continuation.yield(.left(run.id, refused: refused))
                            }
                        }
                        await perform(machine.tick(now: Int64(now)))
                        await perform(machine.firingsDue(await self.dueFirings(journal, now: now)))
                        self.metrics.ticked(at: now)
                        for campaign in machine.campaigns {
                            self.metrics.nextSlot(campaign, at: machine.nextSlot(of: campaign))
                        }
                        status.update { $0.lastTick = now }
                    case .ended(let campaign, let firing):
                        running.remove(campaign)
                        status.update { $0.running = running.sorted() }
                        guard !stopping else { break }
                        switch firing {
                        case .done:
                            await perform(machine.runEnded(campaign, now: Int64(now)))
                        case .busy(let slot, let overlapping):
                            await perform(machine.slotBusy(campaign, slot: slot, overlapping: overlapping))
                            await perform(machine.runEnded(campaign, now: Int64(now)))
                        case .behind(let slot, let unfinished):
                            // The campaign's earlier slot run is unfinished: it goes first.
                            self.tookOver(campaign, "slot \(Timestamps.text(Double(unfinished)))")
                            let newestFired = try? await journal.latestFiredSlot(campaign: campaign)
                            await perform(
                                machine.behind(
                                    campaign,
                                    slot: slot,
                                    unfinished: unfinished,
                                    newestFired: newestFired,
                                    now: Int64(now)
                                )
                            )
                        }
                    case .left(let run, let wasRefused):
                        joined.remove(run)
                        if wasRefused { refused.insert(run) }
                    case .shutdown:
                        stopping = true
                    }
                    if stopping && running.isEmpty && joined.isEmpty { break }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            continuation.yield(.shutdown)
        }
    }

    /// Tells the machine the catalog's scheduled campaigns; returns their files by campaign.
    private func sync(
        _ machine: inout SchedulerStateMachine,
        with catalog: CampaignCatalog,
        journal: any Journal,
        now: Double
    ) async -> [String: String] {
        let scheduled = catalog.scheduled
        for campaign in machine.campaigns where scheduled[campaign] == nil {
            machine.unschedule(campaign)
            logger.info("campaign \(campaign) is no longer scheduled")
        }
        for (campaign, entry) in scheduled {
            do {
                let latest = try await journal.latestSlot(campaign: campaign)
                let since = try await journal.watchStart(campaign: campaign, now: now)
                let isNew = !machine.campaigns.contains(campaign)
                machine.schedule(
                    campaign,
                    entry.schedule,
                    cursor: latest?.last ?? Int64(since),
                    recorded: latest != nil
                )
                if isNew {
                    let next = machine.nextSlot(of: campaign).map { Timestamps.text(Double($0)) } ?? "none"
                    logger.info(
                        "scheduled \(campaign) (\(entry.schedule)); next slot \(next)",
                        metadata: Logger.fields("scheduled", campaign: campaign)
                    )
                }
            } catch {
                report("campaign \(campaign): the journal cannot be read: \(error)")
            }
        }
        let invalid = catalog.invalid.map { (file: configuration.paths.displayRelative($0.file), error: $0.error) }
        for (file, error) in invalid
        where !status.snapshot.invalid.contains(where: { $0.file == file && $0.error == error }) {
            logger.error("\(error)")
        }
        status.update {
            $0.scheduled = scheduled.keys.sorted()
            $0.invalid = invalid
        }
        metrics.campaigns(scheduled: scheduled.count, invalid: invalid.count)
        return scheduled.mapValues(\.path)
    }

    /// Slot runs a killed `serve` left unfinished, for campaigns still scheduled.
    private func unfinishedSlots(_ journal: any Journal, scheduled: [String: String]) async -> [(String, Int64)] {
        do {
            return try await journal.unfinishedSlotRuns().compactMap { run in
                guard let slot = run.slot else { return nil }
                guard scheduled[run.campaign] != nil else {
                    logger.warning(
                        "run \(run.id) of \(run.campaign) (slot \(Timestamps.text(Double(slot)))) is unfinished, but the campaign is no longer scheduled; it is left as it is"
                    )
                    return nil
                }
                return (run.campaign, slot)
            }
        } catch {
            report("the journal cannot be read: \(error)")
            return []
        }
    }

    /// Pending firings due now, oldest first, for the machine to decide.
    private func dueFirings(_ journal: any Journal, now: Double) async -> [(campaign: String, notification: String)] {
        do {
            return try await journal.dueFirings(now: now).map { ($0.campaign, $0.notification) }
        } catch {
            report("the journal's trigger firings cannot be read: \(error)")
            return []
        }
    }

    /// Trigger runs a killed `serve` left unfinished, with their notifications.
    private func unfinishedTriggerRuns(_ journal: any Journal) async -> [(RunRecord, [String])] {
        do {
            var unfinished: [(RunRecord, [String])] = []
            for run in try await journal.unfinishedTriggerRuns() {
                unfinished.append((run, try await journal.firings(run: run.id).map(\.notification)))
            }
            return unfinished
        } catch {
            report("the journal cannot be read: \(error)")
            return []
        }
    }

    /// Sends the firings of `campaign` by `notifications` in one run: the campaign as its file is
    /// now, to the audience rows joined to their subscriptions.
    private func fireTrigger(_ campaign: String, notifications: [String], path: String, journal: any Journal) async {
        let events =
            notifications.count == 1 ? "notification \(notifications[0])" : "\(notifications.count) notifications"
        let (loaded, error) = CampaignCatalog(paths: configuration.paths, folders: []).load(path)
        guard let loaded else {
            await skipFirings(
                campaign,
                notifications,
                detail: error ?? "the campaign file does not load",
                journal: journal
            )
            return
        }
        var options = sendOptions()
        options.kind = .trigger(notifications)
        let send: SendRun
        do {
            send = try await SendRun.prepare(
                loaded,
                options: options,
                transport: .app(paths: configuration.paths, environment: configuration.environment),
                clock: clock
            )
        } catch {
            switch error.code {
            case .recorded:
                logger.debug("trigger of \(campaign) by \(events): \(error.message)")
            case .givenUp:
                report(error.message, Logger.fields("run-given-up", campaign: campaign))
            case .busy:
                break  // another process sends the campaign; the firings wait for it
            default:
                metrics.runRefused(campaign)
                await skipFirings(campaign, notifications, detail: error.message, journal: journal)
                report("the trigger of \(campaign) by \(events) was refused: \(error.message)")
            }
            return
        }
        let note = send.note.map { "; \($0)" } ?? ""
        logger.info(
            "trigger of \(campaign) by \(events): run \(send.run.id) sending (revision \(loaded.revision))\(note)",
            metadata: Logger.fields("run-started", campaign: campaign, run: send.run.id)
        )
        do {
            try await send.run()
        } catch {
            report("trigger of \(campaign): run \(send.run.id) failed: \(error)")
        }
        guard let report = send.report else { return }
        metrics.ended(campaign, report: report, lastProgress: nil)
        if report.planFinished {
            do {
                let firings = try await journal.firings(run: send.run.id)
                let unreached = try await journal.settleFirings(
                    run: send.run.id,
                    joined: report.joinedSubscriptions,
                    normalize: loaded.subscriptionJoin.normalized
                )
                for _ in 0..<unreached { metrics.triggerFired(campaign, outcome: "no_recipient") }
                for _ in 0..<max(0, firings.count - unreached) { metrics.triggerFired(campaign, outcome: "sent") }
            } catch {
                self.report("trigger of \(campaign): run \(send.run.id)'s firings cannot be settled: \(error)")
            }
        }
        logEnd(
            "trigger of \(campaign) by \(events)",
            send: send,
            report: report,
            slot: nil,
            counts: ", \(report.unsubscribed) rows not joined"
        )
    }

    /// Whether a slot was fired (or found recorded), left for now to another process, or held
    /// back behind an earlier slot's unfinished run.
    enum Firing: Sendable, Equatable {
        case done
        /// Another process holds the campaign (`overlapping`: sending an earlier slot of it), or
        /// an earlier step of the campaign's broadcast sequence is unfinished: tried again.
        case busy(slot: Int64, overlapping: Bool)
        /// The campaign's run of the earlier slot `unfinished` is not finished, and nobody holds
        /// it: that run is resumed first.
        case behind(slot: Int64, unfinished: Int64)
    }

    /// Fires one slot: the campaign as its file is now, claimed and sent (or resumed). `steps`
    /// are the other campaigns of a broadcast campaign's sequence (on its channel).
    private func fire(
        _ campaign: String,
        slot: Int64,
        path: String,
        steps: Set<String>,
        journal: any Journal
    ) async -> Firing {
        let slotText = Timestamps.text(Double(slot))
        let (loaded, error) = CampaignCatalog(paths: configuration.paths, folders: []).load(path)
        guard let loaded else {
            await skip(
                campaign,
                first: slot,
                through: slot,
                count: 1,
                reason: "invalid",
                detail: error,
                journal: journal
            )
            return .done
        }
        if loaded.schedule?.once != nil, let sent = try? await journal.latestRun(campaign: campaign), sent.slot == nil {
            await skip(
                campaign,
                first: slot,
                through: slot,
                count: 1,
                reason: "sent",
                detail: "sent by `pushcamp send` as run \(sent.id)",
                journal: journal
            )
            return .done
        }
        var options = sendOptions()
        options.kind = .slot(slot)
        options.stallTimeout = configuration.stallTimeout
        if loaded.broadcast != nil {
            return await fireBroadcast(loaded, slot: slot, options: options, steps: steps, journal: journal)
        }
        let progress = ProgressCount(campaign, metrics: metrics)
        let send: SendRun
        do {
            send = try await SendRun.prepare(
                loaded,
                options: options,
                transport: .app(paths: configuration.paths, environment: configuration.environment),
                clock: clock,
                progress: progress.update
            )
        } catch {
            return await refused(campaign, slot: slot, error, journal: journal)
        }
        metrics.slotFired(campaign)
        let note = send.note.map { "; \($0)" } ?? ""
        logger.info(
            "slot \(slotText) of \(campaign): run \(send.run.id) sending (revision \(loaded.revision))\(note)",
            metadata: Logger.fields("run-started", campaign: campaign, run: send.run.id, slot: slot)
        )
        do {
            try await send.run()
        } catch {
            report("slot \(slotText) of \(campaign): run \(send.run.id) failed: \(error)")
        }
        guard let report = send.report else { return .done }
        metrics.ended(campaign, report: report, lastProgress: progress.latest)
        logEnd("slot \(slotText) of \(campaign)", send: send, report: report, slot: slot, counts: "")
        return .done
    }

    /// A slot's run that does not start: recorded already, given up, another process's, or refused
    /// (recorded as skipped, with why).
    private func refused(_ campaign: String, slot: Int64, _ error: RunRefusal, journal: any Journal) async -> Firing {
        let slotText = Timestamps.text(Double(slot))
        switch error.code {
        case .recorded:
            logger.debug("slot \(slotText) of \(campaign): \(error.message)")
        case .givenUp:
            report(error.message, Logger.fields("run-given-up", campaign: campaign, slot: slot))
        case .busy:
            // Another process sends the campaign (usual with several nodes). The slot belongs
            // to whoever fires it: recording it as skipped here could leave it unsent. It is
            // tried again at the next tick, until some process claimed it, unless the holder
            // sends an earlier slot: then this one came due while that one was sending.
            logger.debug(
                "slot \(slotText) of \(campaign): \(error.message); tried again at the next tick",
                metadata: Logger.fields("slot-left", campaign: campaign, slot: slot)
            )
            let earlier = await unfinishedSlot(of: campaign, journal: journal)
            return .busy(slot: slot, overlapping: earlier.map { $0 < slot } ?? false)
        case .behind:
            guard let earlier = await unfinishedSlot(of: campaign, journal: journal) else {
                return .busy(slot: slot, overlapping: false)
            }
            return .behind(slot: slot, unfinished: earlier)
        default:
            metrics.runRefused(campaign)
            await skip(
                campaign,
                first: slot,
                through: slot,
                count: 1,
                reason: "refused",
                detail: error.message,
                journal: journal
            )
            report("slot \(slotText) of \(campaign) was refused: \(error.message)")
        }
        return .done
    }

    /// The slot of `campaign`'s unfinished slot run, if it has one.
    private func unfinishedSlot(of campaign: String, journal: any Journal) async -> Int64? {
        (try? await journal.unfinishedRun(campaign: campaign))?.flatMap(\.slot)
    }

    /// Fires a slot of a broadcast campaign: its one request, claimed with the slot and sent until
    /// it settles (`BroadcastRun`). It waits while an earlier step of its sequence (another
    /// campaign on its channel, `steps`) is unfinished, so the steps reach the channel in order.
    /// A step that finally fails is recorded as a failed slot with its reason, counted, and
    /// reported as an error.
    private func fireBroadcast(
        _ loaded: LoadedCampaign,
        slot: Int64,
        options: SendRun.Options,
        steps: Set<String>,
        journal: any Journal
    ) async -> Firing {
        let campaign = loaded.id
        let slotText = Timestamps.text(Double(slot))
        if !steps.isEmpty {
            do {
                if let earlier = try await journal.unfinishedSlotRuns().first(where: {
                    steps.contains($0.campaign) && ($0.slot ?? .max) <= slot
                }) {
                    logger.debug(
                        "slot \(slotText) of \(campaign) waits for run \(earlier.id) of \(earlier.campaign), an earlier step on channel \(loaded.broadcast!.channel.name)",
                        metadata: Logger.fields("slot-waits", campaign: campaign, slot: slot)
                    )
                    return .busy(slot: slot, overlapping: false)
                }
            } catch {
                report("slot \(slotText) of \(campaign): the journal cannot be read: \(error.message)")
                return .busy(slot: slot, overlapping: false)
            }
        }
        let outcome: BroadcastRun.Outcome
        do {
            outcome = try await BroadcastRun.send(
                loaded,
                options: options,
                paths: configuration.paths,
                variables: configuration.environment,
                clock: clock,
                willSend: { [logger] run, message in
                    logger.info(
                        "slot \(Timestamps.text(Double(slot))) of \(campaign): run \(run) broadcasting to channel \(message.channel.name)",
                        metadata: Logger.fields("run-started", campaign: campaign, run: run, slot: slot)
                    )
                }
            )
        } catch {
            return await refused(campaign, slot: slot, error, journal: journal)
        }
        metrics.slotFired(campaign)
        let note = outcome.note.map { "; \($0)" } ?? ""
        let what = "slot \(slotText) of \(campaign): run \(outcome.run)"
        if let stopped = outcome.stopped {
            logger.warning(
                "\(what) stopped before its broadcast settled: \(stopped); it is resumed by whichever node takes the campaign next",
                metadata: Logger.fields("run-stopped", campaign: campaign, run: outcome.run, slot: slot)
            )
            return .done
        }
        let channel = outcome.message.channel.name
        metrics.broadcastSettled(
            campaign,
            channel: channel,
            outcome: outcome.delivered ? "delivered" : outcome.reason ?? "HTTP \(outcome.status ?? 0)"
        )
        guard outcome.delivered || outcome.reason == nil else {
            let reason = outcome.reason ?? "failed"
            metrics.slotFailed(campaign, reason: reason)
            do {
                try await journal.recordSlotFailed(
                    campaign: campaign,
                    slot: slot,
                    reason: reason,
                    detail: outcome.answer
                )
            } catch {
                report("\(what): the failed slot cannot be recorded: \(error.message)")
            }
            report(
                "\(what) broadcast to channel \(channel) failed: \(outcome.answer)\(note)",
                Logger.fields("slot-failed", campaign: campaign, run: outcome.run, slot: slot)
            )
            return .done
        }
        logger.info(
            "\(what) broadcast to channel \(channel): \(outcome.answer)\(note)",
            metadata: Logger.fields("run-finished", campaign: campaign, run: outcome.run, slot: slot)
        )
        return .done
    }

    /// Running runs cut into slices with a slice free to claim; none when runs are sent whole here.
    private func runsWithFreeSlices(_ journal: any Journal) async -> [RunRecord] {
        guard configuration.slicing != nil else { return [] }
        do {
            return try await journal.runsWithFreeSlices()
        } catch {
            report("the journal's sliced runs cannot be read: \(error.message)")
            return []
        }
    }

    /// Works on the free slices of `run`, which another node created, until none is free; true
    /// when this node may not (the campaign here is another revision, or its credentials fail).
    private func join(_ run: RunRecord, path: String, journal: any Journal) async -> Bool {
        let campaign = run.campaign
        let (loaded, error) = CampaignCatalog(paths: configuration.paths, folders: []).load(path)
        guard let loaded else {
            report(
                "run \(run.id) of \(campaign): its campaign file cannot be loaded, so this node sends none of it: \(error ?? "")"
            )
            return true
        }
        let progress = ProgressCount(campaign, metrics: metrics)
        let send: SendRun
        do {
            send = try await SendRun.join(
                run,
                campaign: loaded,
                options: sendOptions(),
                transport: .app(paths: configuration.paths, environment: configuration.environment),
                clock: clock,
                progress: progress.update
            )
        } catch {
            metrics.slicesRefused(campaign)
            logger.warning(
                "\(error.message)",
                metadata: Logger.fields("slices-refused", campaign: campaign, run: run.id)
            )
            return true
        }
        do {
            try await send.run()
        } catch {
            report("run \(run.id) of \(campaign): its slices failed here: \(error)")
        }
        guard let report = send.report else { return false }
        metrics.ended(campaign, report: report, lastProgress: progress.latest)
        logger.info(
            "run \(run.id) of \(campaign): this node sent \(send.worker?.reports.count ?? 0) of its slices: \(report.delivered) delivered, \(report.failed) failed",
            metadata: Logger.fields("slices-sent", campaign: campaign, run: run.id)
        )
        return false
    }

    /// The options every run this service starts shares.
    private func sendOptions() -> SendRun.Options {
        var options = SendRun.Options(journal: configuration.journal)
        options.tokenCache = configuration.tokenCache
        options.leaseDuration = configuration.leaseDuration
        options.stallTimeout = configuration.stallTimeout
        options.slicing = configuration.slicing
        let logger = self.logger
        let duration = configuration.leaseDuration
        options.sliceClaimed = { slice, lease in
            var fields = Logger.fields("slice-claimed", run: slice.run, slice: slice)
            fields["fence"] = "\(lease.fence)"
            // On the journal's clock: when the fence moved to this node.
            fields["claimed_at"] = .string(String(format: "%.3f", lease.expiresAt - duration))
            if lease.fence > 1 {
                logger.info(
                    "\(slice) taken over here (fence \(lease.fence)) from the node that held it before",
                    metadata: fields
                )
            } else {
                logger.debug("\(slice) claimed here", metadata: fields)
            }
        }
        options.sliceEnded = { slice, report in
            let fields = Logger.fields("slice-ended", campaign: report.campaign, run: slice.run, slice: slice)
            let outcome =
                "\(slice) of \(report.campaign) ended here (\(ServeMetrics.end(of: report))): \(report.delivered) delivered, \(report.failed) failed"
            switch report.stop {
            case .leaseLost(let message)?:
                var lost = fields
                lost["event"] = "lease-lost"
                logger.warning(
                    "\(outcome); \(message); the slice is left to the node that holds it now",
                    metadata: lost
                )
            case nil:
                logger.debug("\(outcome)", metadata: fields)
            case let stop?:
                logger.info("\(outcome) (\(stop))", metadata: fields)
            }
        }
        return options
    }

    /// Asks the journal the time: whether it answers within 2 s (`/readyz`; a cut link would
    /// otherwise be noticed only at the journal's own timeout), and how fast (metrics).
    private func probe(_ journal: any Journal) async {
        let started = ContinuousClock.now
        do {
            _ = try await withDeadline(.seconds(2), late: "no answer within 2 s") {
                () async throws(JournalError) in try await journal.clockNow()
            }
            let elapsed = ContinuousClock.now - started
            metrics.journalAnswered(
                in: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            )
            if status.snapshot.journalProblem != nil {
                logger.notice("the journal answers again", metadata: ["event": "journal"])
                status.update { $0.journalProblem = nil }
            }
        } catch {
            metrics.journalFailed()
            if status.snapshot.journalProblem == nil {
                logger.error("the journal cannot be reached: \(error.message)", metadata: ["event": "journal"])
            }
            status.update { $0.journalProblem = error.message }
        }
    }

    /// A run nobody holds, about to be resumed here: said and counted.
    private func tookOver(_ campaign: String, _ what: String) {
        metrics.tookOver(campaign)
        logger.notice(
            "taking over \(what) of \(campaign): nobody holds it (its sender stopped, or lost the journal for longer than its lease)",
            metadata: Logger.fields("run-taken-over", campaign: campaign)
        )
    }

    /// Whether nobody sends `campaign`: its lease is free (expired on the journal's clock, or its
    /// owner was a process of this machine that is gone).
    private func isOrphaned(_ campaign: String, journal: any Journal) async -> Bool {
        do {
            return try await journal.isFree(LeaseResource.campaign(campaign))
        } catch {
            report("campaign \(campaign): the journal's leases cannot be read: \(error)")
            return false
        }
    }

    func report(_ error: String, _ fields: Logger.Metadata = ["event": "error"]) {
        logger.error("\(error)", metadata: fields)
        status.update { $0.lastError = error }
    }
}

/// A send's progress as the metrics last counted it: each update counts the answers since the
/// one before, and the last is kept for the send's end.
final class ProgressCount: Sendable {
    private let campaign: String
    private let metrics: ServeMetrics
    private let last = Mutex<SendProgress?>(nil)

    init(_ campaign: String, metrics: ServeMetrics) {
        self.campaign = campaign
        self.metrics = metrics
    }

    var latest: SendProgress? { last.withLock { $0 } }

    func update(_ progress: SendProgress) {
        last.withLock { last in
            metrics.progressed(campaign, from: last, to: progress)
            last = progress
        }
    }
}
