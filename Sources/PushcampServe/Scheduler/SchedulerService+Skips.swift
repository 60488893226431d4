import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel

/// What the scheduler records instead of sending: slots skipped (with their reason), trigger
/// firings skipped, and unfinished slot runs closed rather than resumed.
extension SchedulerService {
    func skipFirings(_ campaign: String, _ notifications: [String], detail: String, journal: any Journal) async {
        do {
            try await journal.skipFirings(campaign: campaign, notifications: notifications, detail: detail)
        } catch {
            report("campaign \(campaign): skipped trigger firings cannot be recorded: \(error)")
            return
        }
        for _ in notifications { metrics.triggerFired(campaign, outcome: "skipped") }
        logger.notice(
            "\(notifications.count) trigger firing(s) of \(campaign) skipped: \(detail)",
            metadata: Logger.fields("firings-skipped", campaign: campaign)
        )
    }

    /// Closes the unfinished run of `slot` (`expired`, `superseded`) instead of resuming it, unless
    /// another process is sending it.
    func close(
        _ campaign: String,
        slot: Int64,
        reason: SchedulerStateMachine.CloseReason,
        journal: any Journal
    ) async {
        let slotText = Timestamps.text(Double(slot))
        do {
            guard let run = try await journal.slot(campaign: campaign, at: slot)?.run else { return }
            let claim = try await journal.claim(
                LeaseResource.campaign(campaign),
                owner: .next(),
                duration: configuration.leaseDuration
            )
            guard case .held(let lease) = claim else {
                logger.notice(
                    "run \(run) of \(campaign) (slot \(slotText)) is being sent by another process; left to it",
                    metadata: Logger.fields("run-left", campaign: campaign, run: run, slot: slot)
                )
                return
            }
            // Read again under the lease: the run may have finished between the look for runs
            // nobody holds and this claim, and a finished run is never closed as anything else.
            guard try await journal.run(run)?.status.isUnfinished == true else {
                try? await journal.release(lease)
                return
            }
            let closed = RunClose(status: reason == .expired ? .expired : .superseded)
            do {
                try await journal.record(JournalBatch(lease: lease, close: closed), run: run, now: clock.now())
            } catch {
                try? await journal.release(lease)
                throw error
            }
            try? await journal.release(lease)
            metrics.runClosed(campaign, reason: reason.rawValue)
            let why =
                reason == .expired
                ? "its slot is older than catch_up.within"
                : "a newer slot fired since or is due now, and fires instead"
            logger.warning(
                "run \(run) of \(campaign) (slot \(slotText)) was left unfinished and is not resumed: \(reason.rawValue) (\(why)); recipients it reached keep their notification, the others get none from that slot",
                metadata: Logger.fields("run-closed", campaign: campaign, run: run, slot: slot)
            )
        } catch {
            report("campaign \(campaign): the unfinished run of slot \(slotText) cannot be closed: \(error)")
        }
    }

    func skip(
        _ campaign: String,
        first: Int64,
        through: Int64,
        count: Int,
        reason: String,
        detail: String?,
        journal: any Journal
    ) async {
        do {
            let recorded = try await journal.recordSkipped(
                campaign: campaign,
                first: first,
                through: through,
                count: count,
                reason: reason,
                detail: detail,
                now: clock.now()
            )
            guard recorded else { return }
        } catch {
            report("campaign \(campaign): a skipped slot cannot be recorded: \(error)")
            return
        }
        metrics.slotsSkipped(campaign, reason: reason, count: count)
        let slots =
            count == 1
            ? "slot \(Timestamps.text(Double(first)))"
            : "\(count) slots from \(Timestamps.text(Double(first))) to \(Timestamps.text(Double(through)))"
        let why = detail.map { " (\($0))" } ?? ""
        var fields = Logger.fields("slot-skipped", campaign: campaign, slot: first)
        fields["reason"] = .string(reason)
        logger.notice("\(slots) of \(campaign) skipped: \(reason)\(why)", metadata: fields)
    }
}
