import Foundation
import PushcampAPNsCore
import PushcampJournal
import PushcampPlanner

/// The run a send records into — the campaign's unfinished run (resumed) or a new one — with the
/// lease that keeps a second process, on this machine or another, from sending the same campaign.
struct OpenedRun {
    var journal: RunJournal
    var resume: ResumePoint
    /// The campaign's lease, held while the run is sent.
    var lease: SendLease
    /// What to tell the user before sending (resuming, giving up an old run).
    var note: String?
    /// For the run of trigger firings: the subscriptions they are about.
    var triggerKeys: [String]?
    /// The campaign as the run was planned, when it was planned from another revision than this
    /// process's files and is finished from its snapshot (`SendRun.pinned`).
    var pinned: LoadedCampaign?

    /// Throws `RunRefusal` only.
    static func open(
        _ campaign: LoadedCampaign,
        options: SendRun.Options,
        now: Double,
        clock: any WallClock
    ) async throws(RunRefusal) -> OpenedRun {
        let store = options.journal
        let lease = try await SendLease.claim(
            campaign: campaign.id,
            store: store,
            owner: options.owner,
            duration: options.leaseDuration,
            clock: clock
        )
        do {
            switch options.kind {
            case .replay(let selection):
                return try await replay(
                    selection.original,
                    reasons: selection.reasons,
                    campaign: campaign,
                    store: store,
                    lease: lease,
                    now: now
                )
            case .slot(let slot):
                return try await slotRun(slot, campaign: campaign, store: store, lease: lease, now: now)
            case .trigger(let notifications):
                var opened = try await triggerRun(
                    notifications,
                    campaign: campaign,
                    store: store,
                    lease: lease,
                    now: now
                )
                opened.triggerKeys = try await store.firings(run: opened.journal.run.id).compactMap(\.subscriptionKey)
                return opened
            case .send, .rehearsal:
                return try await sendOrRehearse(campaign, options: options, store: store, lease: lease, now: now)
            }
        } catch {
            await lease.release()
            if let refusal = error as? RunRefusal { throw refusal }
            if let error = error as? JournalError { throw RunRefusal(.journal, error.message + "; nothing was sent") }
            throw RunRefusal(.journal, "the journal cannot be used: \(error); nothing was sent")
        }
    }

    /// A send's run: the unfinished one resumed, or a new one, unless the campaign was sent already.
    private static func sendOrRehearse(
        _ campaign: LoadedCampaign,
        options: SendRun.Options,
        store: any Journal,
        lease: SendLease,
        now: Double
    ) async throws -> OpenedRun {
        var note: String?
        if let unfinished = try await store.unfinishedRun(campaign: campaign.id) {
            if unfinished.revision == campaign.revision && !options.newRun {
                return try await resuming(
                    unfinished,
                    in: store,
                    lease: lease,
                    named: "run \(unfinished.id) of \(campaign.id)",
                    now: now
                )
            }
            if !options.newRun, options.kind == .send,
                let opened = try await finishing(unfinished, campaign, store: store, lease: lease, now: now)
            {
                return opened
            }
            guard options.newRun || options.kind == .rehearsal else {
                throw RunRefusal(
                    .refused,
                    """
                    campaign \(campaign.id) has an unfinished run \(unfinished.id) (started \
                    \(Timestamps.text(unfinished.startedAt))) from revision \(unfinished.revision), but \
                    the campaign file, its templates or its audience changed since (revision now \
                    \(campaign.revision)); resuming would send a different plan. Restore the files to \
                    finish run \(unfinished.id), or start over with `pushcamp send --new-run` (recipients \
                    run \(unfinished.id) reached may get it again)
                    """
                )
            }
            try await store.setStatus(.superseded, of: unfinished.id, now: now)
            note =
                "run \(unfinished.id) of \(campaign.id) given up for a new run"
                + (options.newRun ? " (--new-run)" : " (the campaign changed since)")
        } else if options.kind == .send, !options.newRun, let last = try await store.latestRun(campaign: campaign.id),
            last.status == .finished || last.status == .cancelled
        {
            let counts = try await store.keptCounts(of: last.id, stats: try await store.stats(of: last.id))
            throw RunRefusal(
                .refused,
                """
                campaign \(campaign.id) was already sent: run \(last.id) \(last.status.rawValue) at \
                \(Timestamps.text(last.updatedAt)) (\(counts.delivered) delivered, \(counts.failed) failed). \
                Sending it again would reach the same people again, so nothing was sent. To send it again on \
                purpose: `pushcamp send --new-run`; to send again only to those who failed: `pushcamp replay \
                \(last.id) --reason REASON`
                """
            )
        }
        let run = try await store.createRun(
            campaign: campaign.id,
            revision: campaign.revision,
            now: now,
            file: URL(fileURLWithPath: campaign.path).standardizedFileURL.path,
            replay: nil
        )
        return OpenedRun(
            journal: RunJournal(store: store, run: run, lease: lease),
            resume: ResumePoint(),
            lease: lease,
            note: note
        )
    }

    /// The run of schedule slot `slot`: its unfinished run resumed, or a new run claimed with the
    /// slot in one transaction. A slot recorded already is refused (`.recorded`); a new slot while
    /// the run of an earlier slot is unfinished is refused too (`.behind`): under the campaign's
    /// lease, so no node can start a newer slot in front of a run it should finish.
    private static func slotRun(
        _ slot: Int64,
        campaign: LoadedCampaign,
        store: any Journal,
        lease: SendLease,
        now: Double
    ) async throws -> OpenedRun {
        let file = URL(fileURLWithPath: campaign.path).standardizedFileURL.path
        if let unfinished = try await store.unfinishedRun(campaign: campaign.id), let earlier = unfinished.slot,
            earlier < slot
        {
            throw RunRefusal(
                .behind,
                "run \(unfinished.id) of \(campaign.id), slot \(Timestamps.text(Double(earlier))), is unfinished: it is finished before slot \(Timestamps.text(Double(slot))) may fire"
            )
        }
        if let run = try await store.claimSlot(
            campaign: campaign.id,
            slot: slot,
            revision: campaign.revision,
            file: file,
            now: now
        ) {
            return OpenedRun(
                journal: RunJournal(store: store, run: run, lease: lease),
                resume: ResumePoint(),
                lease: lease
            )
        }
        let slotText = Timestamps.text(Double(slot))
        return try await resumingRecorded(
            try await store.slot(campaign: campaign.id, at: slot)?.run,
            of: "slot \(slotText) of \(campaign.id)",
            named: ", slot \(slotText)",
            alreadyDone: "slot \(slotText) of \(campaign.id) is recorded already; it does not fire again",
            campaign: campaign,
            store: store,
            lease: lease,
            now: now
        )
    }

    /// The run of the trigger firings of `campaign` by `notifications`: a new run claimed with them
    /// in one transaction, or their unfinished run resumed. Firings claimed already (or skipped)
    /// are refused (`.recorded`).
    private static func triggerRun(
        _ notifications: [String],
        campaign: LoadedCampaign,
        store: any Journal,
        lease: SendLease,
        now: Double
    ) async throws -> OpenedRun {
        let file = URL(fileURLWithPath: campaign.path).standardizedFileURL.path
        if let run = try await store.claimFirings(
            campaign: campaign.id,
            notifications: notifications,
            revision: campaign.revision,
            file: file,
            now: now
        ) {
            return OpenedRun(
                journal: RunJournal(store: store, run: run, lease: lease),
                resume: ResumePoint(),
                lease: lease
            )
        }
        let events =
            notifications.count == 1 ? "notification \(notifications[0])" : "\(notifications.count) notifications"
        var firing: TriggerFiring?
        if let first = notifications.first {
            firing = try await store.firing(campaign: campaign.id, notification: first)
        }
        return try await resumingRecorded(
            firing?.run,
            of: "the trigger of \(campaign.id) by \(events)",
            named: ", fired by \(events)",
            alreadyDone: "the trigger of \(campaign.id) by \(events) fired already; it does not fire again",
            campaign: campaign,
            store: store,
            lease: lease,
            now: now
        )
    }

    /// The unfinished run a slot or trigger firing recorded, resumed; given up (superseded) when the
    /// campaign changed since it was planned. Refused (`.recorded`) when there is no such run:
    /// the slot or firing is done. `what` names the slot or firing in messages; the resumed run is
    /// logged as "run N of CAMPAIGN" followed by `suffix`.
    private static func resumingRecorded(
        _ id: RunID?,
        of what: String,
        named suffix: String,
        alreadyDone: String,
        campaign: LoadedCampaign,
        store: any Journal,
        lease: SendLease,
        now: Double
    ) async throws -> OpenedRun {
        guard let id, let run = try await store.run(id), run.status.isUnfinished else {
            throw RunRefusal(.recorded, alreadyDone)
        }
        if run.revision != campaign.revision,
            let opened = try await finishing(run, campaign, store: store, lease: lease, now: now)
        {
            return opened
        }
        guard run.revision == campaign.revision else {
            try await store.setStatus(.superseded, of: run.id, now: now)
            throw RunRefusal(
                .givenUp,
                """
                run \(run.id) of \(what) was planned from revision \(run.revision), and the campaign changed \
                since (revision now \(campaign.revision)); resuming would send a different plan, so the run was \
                given up (recipients it reached keep their notification, the others get none)
                """
            )
        }
        return try await resuming(
            run,
            in: store,
            lease: lease,
            named: "run \(run.id) of \(campaign.id)\(suffix)",
            now: now
        )
    }

    /// The replay run of `original` for `reasons`: an unfinished one resumed, or a new one.
    private static func replay(
        _ original: RunRecord,
        reasons: [String],
        campaign: LoadedCampaign,
        store: any Journal,
        lease: SendLease,
        now: Double
    ) async throws -> OpenedRun {
        if let unfinished = try await store.unfinishedReplay(of: original.id) {
            if unfinished.replay?.reasons.sorted() == reasons.sorted() {
                return try await resuming(
                    unfinished,
                    in: store,
                    lease: lease,
                    named: "replay run \(unfinished.id) of run \(original.id)",
                    now: now
                )
            }
            try await store.setStatus(.superseded, of: unfinished.id, now: now)
        }
        let run = try await store.createRun(
            campaign: campaign.id,
            revision: campaign.revision,
            now: now,
            file: original.file,
            replay: ReplayOrigin(run: original.id, reasons: reasons)
        )
        return OpenedRun(journal: RunJournal(store: store, run: run, lease: lease), resume: ResumePoint(), lease: lease)
    }

    /// Picks up the unfinished `run`, saying so in the note (`name` is how it calls the run).
    /// Run `run`, planned from another revision than `campaign`'s, resumed as it was planned when
    /// its snapshot holds the plan (a rolling deploy: the old revision's recipients get the old
    /// revision's pushes); nil when it cannot be.
    private static func finishing(
        _ run: RunRecord,
        _ campaign: LoadedCampaign,
        store: any Journal,
        lease: SendLease,
        now: Double
    ) async throws -> OpenedRun? {
        guard let pinned = try await SendRun.pinned(campaign, to: run, in: store) else { return nil }
        var opened = try await resuming(
            run,
            in: store,
            lease: lease,
            named: "run \(run.id) of \(campaign.id), planned from revision \(run.revision) (this one is "
                + "\(campaign.revision)), from its snapshot",
            now: now
        )
        opened.pinned = pinned
        return opened
    }

    private static func resuming(
        _ run: RunRecord,
        in store: any Journal,
        lease: SendLease,
        named name: String,
        now: Double
    ) async throws -> OpenedRun {
        let resume = try await ResumePoint(journal: store, run: run.id)
        try await store.setStatus(.running, of: run.id, now: now)
        let duplicates = resume.possibleDuplicates
        // Killed before planning read the whole audience: what is left is unknown until it is
        // planned again, so say what is known rather than a count that looks like the total.
        var toPickUp =
            "\(resume.pending.count) in flight or waiting to retry, and the rest of the audience (not yet planned when it stopped)"
        if let planned = run.planned {
            toPickUp = "\(max(0, planned - resume.settled.count)) of \(planned) left"
        }
        let note =
            "resuming \(name): \(resume.delivered) delivered and \(resume.failed) failed before, \(toPickUp)"
            + (duplicates > 0 ? " (\(duplicates) were in flight: sent again, possible duplicates)" : "")
        return OpenedRun(
            journal: RunJournal(store: store, run: run, resume: resume, lease: lease),
            resume: resume,
            lease: lease,
            note: note
        )
    }
}
