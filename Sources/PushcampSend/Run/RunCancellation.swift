import PushcampAPNsCore
import PushcampJournal

/// `pushcamp cancel RUN`: a run no process is sending is cancelled at once; a run being sent is
/// asked to stop (its process checks twice a second, drains and records it cancelled; every
/// worker on a run cut into slices does so and lets its slice go), and this waits for that.
public enum RunCancellation {
    public struct Outcome: Sendable {
        public var run: RunRecord
        public var counts: RecipientCounts
        /// How many the run was to send to, when known (see `RunRecord.total`).
        public var planned: Int?

        /// One line: how many recipients were sent to before the cancel, and what became of them.
        public var text: String {
            let sent = counts.total - counts.planned
            var line = "run \(run.id) of \(run.campaign) \(run.status.rawValue): \(sent) sent before the cancel "
            line += "(\(counts.delivered) delivered, \(counts.failed) failed"
            if counts.waiting > 0 { line += ", \(counts.waiting) waiting to retry" }
            if counts.inFlight + counts.unknown > 0 {
                line += ", \(counts.inFlight + counts.unknown) without an answer"
            }
            line += ")"
            if let planned { line += "; \(max(0, planned - sent)) of \(planned) planned never sent" }
            return line
        }
    }

    /// Cancels run `id` of `journal` (called `name` in messages), from any machine, waiting up to
    /// `wait` seconds for the process sending it. Refuses with exit 1 a run that does not exist or already ended, with exit 6 when
    /// the process has not stopped in time.
    public static func cancel(
        _ id: RunID,
        in journal: any Journal,
        name: String,
        wait: Double,
        clock: any WallClock = SystemWallClock()
    ) async throws(RunRefusal) -> Outcome {
        do {
            guard let record = try await journal.run(id) else {
                throw RunRefusal(.refused, "no run \(id) in \(name); `pushcamp runs` lists them")
            }
            guard record.status.isUnfinished else {
                throw RunRefusal(.refused, "run \(id) of \(record.campaign) is already \(record.status.rawValue)")
            }
            let now = clock.now()
            let resource = LeaseResource.campaign(record.campaign)
            // Workers sending slices of it hold their slices' leases, not the campaign's.
            let sending = try await journal.liveSlices(of: id) > 0
            if !sending, case .held(let lease) = try await journal.claim(resource, owner: .next(), duration: 30) {
                // Nobody is sending it: cancel it here and now, under the lease, so a sender that
                // starts meanwhile waits for this.
                let cancelled = JournalBatch(lease: lease, close: RunClose(status: .cancelled))
                do {
                    // A worker about to start a slice of it stops at its first check.
                    try await journal.requestCancel(id, now: now)
                    try await journal.record(cancelled, run: id, now: now)
                } catch {
                    try? await journal.release(lease)
                    throw error
                }
                try? await journal.release(lease)
            } else {
                try await journal.requestCancel(id, now: now)
                let deadline = clock.now() + wait
                // Stopped once no process sends it: the run no longer running, and no worker
                // still holding a slice of it (each drains and lets its slice go).
                while try await Self.isSending(id, in: journal) {
                    guard clock.now() < deadline else {
                        throw RunRefusal(
                            .notStopped,
                            "asked run \(id) to stop, but its process has not stopped after \(Int(wait)) s; "
                                + "it will stop when it next checks"
                        )
                    }
                    try await clock.sleep(for: 0.1)
                }
            }
            let run = try await journal.run(id) ?? record
            return Outcome(
                run: run,
                counts: try await journal.counts(of: id),
                planned: run.total(stats: try await journal.stats(of: id))
            )
        } catch let refusal as RunRefusal {
            throw refusal
        } catch let error as JournalError {
            throw RunRefusal(.journal, error.message)
        } catch {
            throw RunRefusal(.journal, "the journal \(name) cannot be used: \(error)")
        }
    }

    /// Whether a process still sends run `id`: it is recorded running, or a worker holds one of
    /// its slices.
    static func isSending(_ id: RunID, in journal: any Journal) async throws(JournalError) -> Bool {
        if try await journal.run(id)?.status == .running { return true }
        return try await journal.liveSlices(of: id) > 0
    }
}
