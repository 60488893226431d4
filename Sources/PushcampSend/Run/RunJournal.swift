import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import Synchronization

/// The executor's side of the journal: what goes in each group commit, and when.
///
/// Requests are recorded in flight before they reach the transport (`dispatch` returns once that is
/// committed); answers are recorded shortly after they come (`settle` only queues them). Whatever is
/// queued when the store's writer (its `RunRecorder`, run by `write()` as a child of the send's task
/// group) wakes goes in one commit, so a busy send makes a few hundred commits a second however many
/// pushes it sends. First attempts are recorded as seq ranges, one per batch; only retries and
/// answers get rows of their own.
public final class RunJournal: Sendable {
    public let store: any Journal
    public let run: RunRecord
    /// The campaign's lease this send holds: every batch carries it, so none is recorded once
    /// another process took the run over. Nil: nobody else can see the journal.
    public let lease: SendLease?
    /// The slice of the run this send works on (under `lease`, the slice's), or nil for the whole
    /// run: a slice's statistics and end go to the slice (`closeSlice`), never to the run's own.
    public let slice: RunSlice?
    private let queue: RecordingQueue
    /// The store's writer.
    private let recorder: any RunRecorder
    /// What each commit's time is read from.
    private let clock: any WallClock
    /// Seqs a resume found with a row but never sent, with their tokens: their first attempt is a
    /// row, not a range.
    private let unsentRows: [Int: String]
    /// What the sends before this one (of a resumed run) measured.
    private let previousStats: RunStats
    /// Seqs a resume found in flight (APNs may have them): sending them again makes them possible
    /// duplicates, recorded by name.
    private let inFlightBefore: Set<Int>
    /// This send's statistics, for a slice: saved to the slice when the send ends.
    private let sliceStats = Mutex<RunStats?>(nil)

    /// `gatherWindow`: how long answers wait for company before they are committed with nobody
    /// waiting.
    public init(
        store: any Journal,
        run: RunRecord,
        resume: ResumePoint = ResumePoint(),
        lease: SendLease? = nil,
        slice: RunSlice? = nil,
        gatherWindow: Double = 0.005,
        clock: any WallClock = SystemWallClock()
    ) {
        self.store = store
        self.clock = clock
        self.run = run
        self.lease = lease
        self.slice = slice
        self.inFlightBefore = Set(
            resume.pending.compactMap { seq, pending in
                if case .unknown = pending { return seq }
                return nil
            }
        )
        self.recorder = store.recorder
        self.queue = RecordingQueue(gatherWindow: gatherWindow, clock: clock) { lease?.lease }
        self.unsentRows = resume.unsentTokens
        self.previousStats = resume.stats
    }

    /// Commits what the send queues, with the store's writer, until the journal is closed: a child
    /// of the send's task group, ended by `finishWriting()` (or a cancellation, which leaves the rest
    /// to `close`).
    package func write() async {
        await queue.write(with: recorder, run: run.id)
    }

    /// Where `write()` runs best: the store's say (nil: where the send's loop runs).
    package var writerExecutor: (any TaskExecutor)? { recorder.executor }

    /// Stops the writer once it has committed what is queued, and returns when it has.
    package func finishWriting() async {
        await queue.finishWriting()
    }

    /// Records `requests` as in flight, durably, before they are handed to the transport, then
    /// calls `done` from the writer (with the journal's failure, if any). `possibleDuplicates`
    /// of them are resumed requests whose first send may have arrived.
    ///
    /// A callback rather than `async`: the executor hears of the commit straight from the writer,
    /// without a task of its own to resume on the event loop first (one hop less while the
    /// connection's queue runs dry).
    package func dispatch(
        _ requests: borrowing [APNsRequest],
        possibleDuplicates: Int = 0,
        then done: @escaping @Sendable (JournalError?) -> Void
    ) {
        var ranges: [ClosedRange<Int>] = []
        var rows: [RecipientUpdate] = []
        var duplicates: [PossibleDuplicate] = []
        for index in requests.indices {
            let (seq, attempt) = (requests[index].tag, requests[index].attempt)
            if attempt == 0 && !hasRow(seq) {
                if let last = ranges.last, last.upperBound + 1 == seq {
                    ranges[ranges.count - 1] = last.lowerBound...seq
                } else {
                    ranges.append(seq...seq)
                }
            } else {
                rows.append(
                    RecipientUpdate(
                        seq: seq,
                        token: requests[index].deviceToken,
                        state: .inFlight(attempt: attempt + 1)
                    )
                )
                if inFlightBefore.contains(seq) {
                    duplicates.append(PossibleDuplicate(seq: seq, token: requests[index].deviceToken))
                }
            }
        }
        queue.add(waiter: done) { pending, _ in
            pending.dispatched.append(contentsOf: ranges)
            pending.updates.append(contentsOf: rows)
            pending.possibleDuplicates += possibleDuplicates
            pending.duplicates.append(contentsOf: duplicates)
        }
    }

    /// `dispatch(_:possibleDuplicates:then:)`, awaited.
    package func dispatch(_ requests: borrowing [APNsRequest], possibleDuplicates: Int = 0) async throws(JournalError) {
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<JournalError?, Never>) in
            dispatch(requests, possibleDuplicates: possibleDuplicates) { continuation.resume(returning: $0) }
        }
        if let failure { throw failure }
    }

    /// Queues recipients' new states (answers, retries); committed within `gatherWindow`. Those
    /// delivered on their first attempt join a delivered range instead of getting a row (unless a
    /// resume found them with a row).
    package func settle(
        _ updates: [RecipientUpdate],
        firstDeliveries: [FirstDelivery] = [],
        possibleDuplicates: Int = 0,
        invalidTokens: [InvalidToken] = []
    ) {
        guard !updates.isEmpty || !firstDeliveries.isEmpty || possibleDuplicates > 0 else { return }
        let unsentRows = self.unsentRows
        queue.add { pending, deliveries in
            pending.updates.append(contentsOf: updates)
            for update in updates {
                // Lost in flight: sent again, so a possible duplicate.
                if case .unknown = update.state {
                    pending.duplicates.append(PossibleDuplicate(seq: update.seq, token: update.token))
                }
            }
            if unsentRows.isEmpty {
                deliveries.append(contentsOf: firstDeliveries)
            } else {
                for delivery in firstDeliveries {
                    if let token = unsentRows[delivery.seq] {
                        pending.updates.append(
                            RecipientUpdate(seq: delivery.seq, token: token, state: .delivered(attempt: 1))
                        )
                    } else {
                        deliveries.append(delivery)
                    }
                }
            }
            pending.possibleDuplicates += possibleDuplicates
            pending.invalidTokens.append(contentsOf: invalidTokens)
        }
    }

    /// Queues this send's statistics so far (added to earlier sends' of the run) for the next commit.
    package func saveStats(_ stats: RunStats) {
        if slice != nil {
            // A slice's are added to the slice's own once, when the send ends.
            sliceStats.withLock { $0 = stats }
            return
        }
        let total = previousStats.adding(stats)
        queue.add { pending, _ in pending.stats = total }
    }

    /// Whether a first attempt of `seq` is a row rather than part of a range: a resume found it
    /// with a row but never sent.
    private func hasRow(_ seq: Int) -> Bool {
        !unsentRows.isEmpty && unsentRows[seq] != nil
    }

    /// The first write error, if any: the send must stop, it can no longer promise a resume.
    package var error: JournalError? { queue.failure }

    /// Why the send must stop because of its lease (taken over, or not renewed in time), if it must.
    package var leaseProblem: String? { lease?.problem() }

    /// Whether `pushcamp cancel` asked this run to stop.
    func cancelRequested() async -> Bool {
        (try? await store.cancelRequested(run.id)) ?? false
    }

    /// Commits what is queued, stops the writer and sets the run's final status.
    ///
    /// The writes are made whether or not the calling task was cancelled: a run stopped by a
    /// shutdown must still say so.
    package func close(status: RunStatus, planned: Int?) async throws(JournalError) {
        try await end(with: RunClose(status: status, planned: planned))
    }

    /// Commits what is queued (refused whole if the lease was taken over) and stops the writer,
    /// leaving the run's status alone: the run belongs to whoever holds its lease now.
    package func abandon() async {
        try? await end(with: nil)
    }

    private func end(with close: RunClose?) async throws(JournalError) {
        // Unstructured on purpose: a cancelled task cannot lease a PostgreSQL connection nor write
        // through GRDB, and a run stopped by a shutdown must still say so. Awaited here.
        let closed = await Task { [self] () -> JournalError? in
            await queue.finishWriting()
            // What the writer left (it was cancelled, or never ran) and the statistics queued since.
            if let rest = queue.takeAll(), queue.shouldCommit(rest) {
                do throws(JournalError) {
                    try await store.record(rest, run: run.id, now: clock.now())
                } catch {
                    queue.failed(error)
                }
            }
            if let failure = queue.failure { return failure }
            guard let close else { return nil }
            do throws(JournalError) {
                if let slice, let lease = lease?.lease {
                    _ = try await store.closeSlice(
                        slice,
                        status: close.status,
                        stats: sliceStats.withLock { $0 },
                        lease: lease
                    )
                } else {
                    try await store.record(
                        JournalBatch(lease: lease?.lease, close: close),
                        run: run.id,
                        now: clock.now()
                    )
                }
                return nil
            } catch {
                return error
            }
        }.value
        if let closed { throw closed }
    }
}
