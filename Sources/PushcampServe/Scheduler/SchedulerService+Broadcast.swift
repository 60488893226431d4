import Logging
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend

extension SchedulerService {
    /// Fires a slot of a broadcast campaign: its one request, claimed with the slot and sent until
    /// it settles (`BroadcastRun`). It waits while an earlier step of its sequence (another
    /// campaign on its channel, `steps`) is unfinished, so the steps reach the channel in order.
    /// A step that finally fails is recorded as a failed slot with its reason, counted, and
    /// reported as an error.
    func fireBroadcast(_ loaded: LoadedCampaign, _ launch: Launch, slot: Int64, steps: Set<String>) async -> LaunchEnd {
        let options = options(for: launch)
        let journal = configuration.journal
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
            return await refused(launch, error)
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
}
