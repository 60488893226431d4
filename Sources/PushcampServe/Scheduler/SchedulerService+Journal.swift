import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner

/// What the scheduler reads from the journal at a tick, for its machine to decide: the campaigns'
/// cursors, runs nobody holds, sliced runs with a slice free, trigger firings due; and whether the
/// journal answers at all.
extension SchedulerService {
    /// Tells the machine the catalog's scheduled campaigns.
    func sync(
        _ machine: inout SchedulerStateMachine,
        with catalog: CampaignCatalog,
        journal: any Journal,
        now: Double
    ) async {
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
    }

    /// Unfinished slot runs nobody holds (left by a killed `serve` of this machine, or by a node
    /// whose lease expired), of campaigns still scheduled and not sent here; each with the newest
    /// slot its campaign fired.
    func orphanedSlots(
        _ journal: any Journal,
        scheduled: Set<String>,
        _ launched: Set<String>
    ) async -> [SchedulerStateMachine.OrphanedSlot] {
        let runs: [RunRecord]
        do {
            runs = try await journal.unfinishedSlotRuns()
        } catch {
            report("the journal cannot be read: \(error)")
            return []
        }
        var orphans: [SchedulerStateMachine.OrphanedSlot] = []
        for run in runs {
            guard let slot = run.slot, !launched.contains(run.campaign) else { continue }
            guard scheduled.contains(run.campaign) else {
                logger.warning(
                    "run \(run.id) of \(run.campaign) (slot \(Timestamps.text(Double(slot)))) is unfinished, but the campaign is no longer scheduled; it is left as it is"
                )
                continue
            }
            guard await isOrphaned(run.campaign, journal: journal) else { continue }
            let newestFired = try? await journal.latestFiredSlot(campaign: run.campaign)
            orphans.append(.init(campaign: run.campaign, slot: slot, newestFired: newestFired))
        }
        return orphans
    }

    /// Unfinished trigger runs nobody holds, of campaigns not sent here, with their notifications.
    func orphanedTriggerRuns(
        _ journal: any Journal,
        _ launched: Set<String>
    ) async -> [SchedulerStateMachine.OrphanedTriggerRun] {
        do {
            var orphans: [SchedulerStateMachine.OrphanedTriggerRun] = []
            for run in try await journal.unfinishedTriggerRuns() where !launched.contains(run.campaign) {
                guard await isOrphaned(run.campaign, journal: journal) else { continue }
                let notifications = try await journal.firings(run: run.id).map(\.notification)
                orphans.append(.init(campaign: run.campaign, run: run.id.rawValue, notifications: notifications))
            }
            return orphans
        } catch {
            report("the journal cannot be read: \(error)")
            return []
        }
    }

    /// Pending firings due now, oldest first, for the machine to decide.
    func dueFirings(_ journal: any Journal, now: Double) async -> [(campaign: String, notification: String)] {
        do {
            return try await journal.dueFirings(now: now).map { ($0.campaign, $0.notification) }
        } catch {
            report("the journal's trigger firings cannot be read: \(error)")
            return []
        }
    }

    /// Running runs cut into slices with a slice free to claim; none when runs are sent whole here.
    func runsWithFreeSlices(_ journal: any Journal) async -> [RunRecord] {
        guard configuration.slicing != nil else { return [] }
        do {
            return try await journal.runsWithFreeSlices()
        } catch {
            report("the journal's sliced runs cannot be read: \(error.message)")
            return []
        }
    }

    /// Asks the journal the time: whether it answers within 2 s (`/readyz`; a cut link would
    /// otherwise be noticed only at the journal's own timeout), and how fast (metrics).
    func probe(_ journal: any Journal) async {
        let started = clock.now()
        do {
            _ = try await withDeadline(.seconds(2), clock: clock, late: "no answer within 2 s") {
                () async throws(JournalError) in try await journal.clockNow()
            }
            metrics.journalAnswered(in: clock.now() - started)
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

    /// A run nobody holds, about to be decided here: said and counted.
    func tookOver(_ campaign: String, _ what: SchedulerStateMachine.TakenOver) {
        let text: String
        switch what {
        case .slot(let slot): text = "slot \(Timestamps.text(Double(slot)))"
        case .triggerRun(let run): text = "trigger run \(run)"
        }
        metrics.tookOver(campaign)
        logger.notice(
            "taking over \(text) of \(campaign): nobody holds it (its sender stopped, or lost the journal for longer than its lease)",
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
}
