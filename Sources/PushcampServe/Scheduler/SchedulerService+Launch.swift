import Foundation
import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import Synchronization

/// One launch routine for everything the scheduler sends: a slot (fired or resumed), a trigger
/// run, the slices of another node's run, and a broadcast slot. Each loads its campaign file as
/// it is at that moment, claims what it sends in the journal as the run opens (`SendRun`), sends
/// to the end or a graceful shutdown, and says how it ended; what differs is named by `Launch`.
extension SchedulerService {
    typealias LaunchEnd = SchedulerStateMachine.LaunchEnd

    /// What a launch claims, and the file its campaign is read from.
    struct Launch: Sendable {
        enum Claim: Sendable {
            /// `steps`: the other campaigns of a broadcast campaign's sequence (on its channel).
            case slot(Int64, steps: Set<String>)
            case trigger(notifications: [String])
            case join(RunRecord)
        }

        var campaign: String
        var claim: Claim
        var file: String

        /// How the log names it.
        var what: String {
            switch claim {
            case .slot(let slot, _):
                return "slot \(Timestamps.text(Double(slot))) of \(campaign)"
            case .trigger(let notifications):
                let events =
                    notifications.count == 1
                    ? "notification \(notifications[0])" : "\(notifications.count) notifications"
                return "trigger of \(campaign) by \(events)"
            case .join(let run):
                return "run \(run.id) of \(campaign)"
            }
        }

        var slot: Int64? {
            if case .slot(let slot, _) = claim { return slot }
            return nil
        }
    }

    /// The launch an action asks for, ready to run as a child task; nil when it is not a launch or
    /// its campaign's file is no longer in the catalog.
    func launch(
        of action: SchedulerStateMachine.Action,
        catalog: CampaignCatalog
    ) -> (@Sendable () async -> LaunchEnd)? {
        let launch: Launch
        switch action {
        case .fire(let campaign, let slot), .resume(let campaign, let slot):
            guard let file = catalog.scheduled[campaign]?.path else { return nil }
            let steps = catalog.sequences.values.first { $0.contains(campaign) }?.subtracting([campaign]) ?? []
            launch = Launch(campaign: campaign, claim: .slot(slot, steps: steps), file: file)
        case .fireTrigger(let campaign, let notifications):
            guard let file = catalog.triggers[campaign]?.path else { return nil }
            launch = Launch(campaign: campaign, claim: .trigger(notifications: notifications), file: file)
        case .join(let run):
            guard let file = catalog.scheduled[run.campaign]?.path ?? run.file else { return nil }
            launch = Launch(campaign: run.campaign, claim: .join(run), file: file)
        case .skipFirings, .leaveTriggerRun, .takeOver, .close, .skip:
            return nil
        }
        return { await self.launch(launch) }
    }

    func launch(_ launch: Launch) async -> LaunchEnd {
        let journal = configuration.journal
        let (loaded, error) = CampaignCatalog(paths: configuration.paths, folders: []).load(launch.file)
        guard let loaded else { return await notLoaded(launch, error ?? "the campaign file does not load") }
        if case .slot(let slot, let steps) = launch.claim {
            if loaded.schedule?.once != nil, let sent = try? await journal.latestRun(campaign: launch.campaign),
                sent.slot == nil
            {
                await skip(
                    launch.campaign,
                    first: slot,
                    through: slot,
                    count: 1,
                    reason: "sent",
                    detail: "sent by `pushcamp send` as run \(sent.id)",
                    journal: journal
                )
                return .done
            }
            if loaded.broadcast != nil {
                return await fireBroadcast(loaded, launch, slot: slot, steps: steps)
            }
        }
        let progress = ProgressCount(launch.campaign, metrics: metrics)
        let send: SendRun
        do {
            send = try await start(launch, loaded, progress: progress)
        } catch {
            return await refused(launch, error)
        }
        if case .join = launch.claim {
        } else {
            if launch.slot != nil { metrics.slotFired(launch.campaign) }
            logger.info(
                "\(launch.what): run \(send.run.id) sending (revision \(loaded.revision))\(send.note.map { "; \($0)" } ?? "")",
                metadata: Logger.fields("run-started", campaign: launch.campaign, run: send.run.id, slot: launch.slot)
            )
        }
        do {
            try await send.run()
        } catch {
            if case .join = launch.claim {
                report("\(launch.what): its slices failed here: \(error)")
            } else {
                report("\(launch.what): run \(send.run.id) failed: \(error)")
            }
        }
        guard let report = send.report else { return .done }
        metrics.ended(launch.campaign, report: report, lastProgress: progress.latest)
        await ended(launch, loaded, send: send, report: report)
        return .done
    }

    /// Opens the run a launch sends (claiming its slot or firings), or joins another node's.
    private func start(
        _ launch: Launch,
        _ loaded: LoadedCampaign,
        progress: ProgressCount
    ) async throws(RunRefusal) -> SendRun {
        let options = options(for: launch)
        if case .join(let run) = launch.claim {
            return try await SendRun.join(
                run,
                campaign: loaded,
                options: options,
                transport: configuration.transport,
                clock: clock,
                progress: progress.update
            )
        }
        return try await SendRun.prepare(
            loaded,
            options: options,
            transport: configuration.transport,
            clock: clock,
            progress: progress.update
        )
    }

    func options(for launch: Launch) -> SendRun.Options {
        var options = sendOptions()
        switch launch.claim {
        case .slot(let slot, _): options.kind = .slot(slot)
        case .trigger(let notifications): options.kind = .trigger(notifications)
        case .join: break
        }
        return options
    }

    /// A launch whose campaign file does not load: the slot is skipped as `invalid`, the firings
    /// as skipped, a joined run is left to the other nodes.
    private func notLoaded(_ launch: Launch, _ error: String) async -> LaunchEnd {
        let journal = configuration.journal
        switch launch.claim {
        case .slot(let slot, _):
            await skip(
                launch.campaign,
                first: slot,
                through: slot,
                count: 1,
                reason: "invalid",
                detail: error,
                journal: journal
            )
            return .done
        case .trigger(let notifications):
            await skipFirings(launch.campaign, notifications, detail: error, journal: journal)
            return .done
        case .join:
            report("\(launch.what): its campaign file cannot be loaded, so this node sends none of it: \(error)")
            return .refused
        }
    }

    /// A launch that does not start: recorded already, given up, another process's (the slot is
    /// tried again, the firings wait), or refused (recorded as skipped, with why).
    func refused(_ launch: Launch, _ error: RunRefusal) async -> LaunchEnd {
        let campaign = launch.campaign
        let journal = configuration.journal
        if case .join = launch.claim {
            metrics.slicesRefused(campaign)
            logger.warning(
                "\(error.message)",
                metadata: Logger.fields("slices-refused", campaign: campaign, run: launch.joinedRun)
            )
            return .refused
        }
        switch error.code {
        case .recorded:
            logger.debug("\(launch.what): \(error.message)")
        case .givenUp:
            report(error.message, Logger.fields("run-given-up", campaign: campaign, slot: launch.slot))
        case .busy, .held:
            // Another process sends the campaign (usual with several nodes), or the app's provider
            // token is held (APNs refused one as too frequent). The slot belongs to whoever fires
            // it: recording it as skipped here could leave it unsent. It is tried again at the next
            // tick, until some process claimed it, unless the holder sends an earlier slot: then
            // this one came due while that one was sending. Firings wait.
            guard let slot = launch.slot else { return .done }
            logger.debug(
                "\(launch.what): \(error.message); tried again at the next tick",
                metadata: Logger.fields("slot-left", campaign: campaign, slot: slot)
            )
            let earlier = await unfinishedSlot(of: campaign)
            return .busy(slot: slot, overlapping: earlier.map { $0 < slot } ?? false)
        case .behind where launch.slot != nil:
            let slot = launch.slot!
            guard let earlier = await unfinishedSlot(of: campaign) else {
                return .busy(slot: slot, overlapping: false)
            }
            let newestFired = try? await journal.latestFiredSlot(campaign: campaign)
            return .behind(slot: slot, unfinished: earlier, newestFired: newestFired)
        default:
            metrics.runRefused(campaign)
            switch launch.claim {
            case .slot(let slot, _):
                await skip(
                    campaign,
                    first: slot,
                    through: slot,
                    count: 1,
                    reason: "refused",
                    detail: error.message,
                    journal: journal
                )
            case .trigger(let notifications):
                await skipFirings(campaign, notifications, detail: error.message, journal: journal)
            case .join:
                break
            }
            report("\(launch.what) was refused: \(error.message)")
        }
        return .done
    }

    /// A launch's end in the log: a trigger run's firings settled first (those whose subscription
    /// no audience row joined are marked `no-recipient`).
    private func ended(_ launch: Launch, _ loaded: LoadedCampaign, send: SendRun, report: SendReport) async {
        let campaign = launch.campaign
        switch launch.claim {
        case .slot(let slot, _):
            logEnd(launch.what, send: send, report: report, slot: slot, counts: "")
        case .trigger:
            if report.planFinished {
                let journal = configuration.journal
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
                launch.what,
                send: send,
                report: report,
                slot: nil,
                counts: ", \(report.unsubscribed) rows not joined"
            )
        case .join(let run):
            logger.info(
                "\(launch.what): this node sent \(send.worker?.reports.count ?? 0) of its slices: \(report.delivered) delivered, \(report.failed) failed",
                metadata: Logger.fields("slices-sent", campaign: campaign, run: run.id)
            )
        }
    }

    /// The slot of `campaign`'s unfinished slot run, if it has one.
    private func unfinishedSlot(of campaign: String) async -> Int64? {
        (try? await configuration.journal.unfinishedRun(campaign: campaign))?.flatMap(\.slot)
    }
}

extension SchedulerService {
    /// The options every run this service starts shares.
    func sendOptions() -> SendRun.Options {
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
}

extension SchedulerService.Launch {
    var joinedRun: RunID? {
        if case .join(let run) = claim { return run.id }
        return nil
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
