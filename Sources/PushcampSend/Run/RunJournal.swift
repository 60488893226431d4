import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import Synchronization

/// The executor's side of the journal: one writer thread, group commit.
///
/// Requests are recorded in flight before they reach the transport (`dispatch` returns once that is
/// committed); answers are recorded shortly after they come (`settle` only queues them). Whatever is
/// queued when the writer wakes goes in one transaction (two when a dispatch waits: its own first,
/// then the first deliveries and statistics), so a busy send makes a few hundred commits a second
/// however many pushes it sends. First attempts are recorded as seq ranges, one per batch;
/// only retries and answers get rows of their own.
public final class RunJournal: @unchecked Sendable {
    public let store: any Journal
    public let run: RunRecord
    /// The campaign's lease this send holds: every batch carries it, so none is recorded once
    /// another process took the run over. Nil: nobody else can see the journal.
    public let lease: SendLease?
    /// The slice of the run this send works on (under `lease`, the slice's), or nil for the whole
    /// run: a slice's statistics and end go to the slice (`closeSlice`), never to the run's own.
    public let slice: RunSlice?
    /// The store's `synchronousRecord`, read once.
    private let synchronousRecord: (@Sendable (JournalBatch, RunID, Double) throws(JournalError) -> Void)?
    /// How long the writer gathers answers before committing them when nobody waits.
    let gatherWindow: TimeInterval
    /// What each commit's time is read from.
    private let clock: any WallClock

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending = JournalBatch()
    /// First attempts delivered since the last commit; made into `pending.delivered` ranges then.
    private var deliveries: [FirstDelivery] = []
    private var waiters: [@Sendable (JournalError?) -> Void] = []
    private var closing = false
    private var failure: JournalError?
    private var writerDone = false
    /// The `close` waiting for the writer to end.
    private var closeWaiter: CheckedContinuation<Void, Never>?
    /// Seqs a resume found with a row but never sent, with their tokens: their first attempt is a
    /// row, not a range.
    private let unsentRows: [Int: String]
    /// What the sends before this one (of a resumed run) measured.
    private let previousStats: RunStats
    /// Seqs a resume found in flight (APNs may have them): sending them again makes them possible
    /// duplicates, recorded by name.
    private let inFlightBefore: Set<Int>
    /// This send's statistics, for a slice: saved to the slice when the send ends.
    private var sliceStats: RunStats?

    public init(
        store: any Journal,
        run: RunRecord,
        resume: ResumePoint = ResumePoint(),
        lease: SendLease? = nil,
        slice: RunSlice? = nil,
        gatherWindow: TimeInterval = 0.005,
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
        self.synchronousRecord = store.synchronousRecord
        self.gatherWindow = gatherWindow
        self.unsentRows = resume.unsentTokens
        self.previousStats = resume.stats
        let thread = Thread { [self] in write() }
        thread.name = "pushcamp-journal"
        thread.start()
    }

    /// Records `requests` as in flight, durably, before they are handed to the transport, then
    /// calls `done` on the writer's thread (with the journal's failure, if any). `possibleDuplicates`
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
        condition.lock()
        if let failure {
            condition.unlock()
            done(failure)
            return
        }
        pending.dispatched.append(contentsOf: ranges)
        pending.updates.append(contentsOf: rows)
        pending.possibleDuplicates += possibleDuplicates
        pending.duplicates.append(contentsOf: duplicates)
        waiters.append(done)
        condition.signal()
        condition.unlock()
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
        condition.lock()
        let wasEmpty = isIdle
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
        if wasEmpty { condition.signal() }
        condition.unlock()
    }

    /// Queues this send's statistics so far (added to earlier sends' of the run) for the next commit.
    package func saveStats(_ stats: RunStats) {
        if slice != nil {
            // A slice's are added to the slice's own once, when the send ends.
            condition.lock()
            sliceStats = stats
            condition.unlock()
            return
        }
        let total = previousStats.adding(stats)
        condition.lock()
        let wasEmpty = isIdle
        pending.stats = total
        if wasEmpty { condition.signal() }
        condition.unlock()
    }

    /// This send's statistics as last saved, for a slice.
    private var savedSliceStats: RunStats? {
        condition.lock()
        defer { condition.unlock() }
        return sliceStats
    }

    /// Whether a first attempt of `seq` is a row rather than part of a range: a resume found it
    /// with a row but never sent.
    private func hasRow(_ seq: Int) -> Bool {
        !unsentRows.isEmpty && unsentRows[seq] != nil
    }

    /// Nothing queued (guarded by `condition`).
    private var isIdle: Bool { pending.isEmpty && deliveries.isEmpty }

    /// The first write error, if any: the send must stop, it can no longer promise a resume.
    package var error: JournalError? {
        condition.lock()
        defer { condition.unlock() }
        return failure
    }

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
        let (store, run, lease, clock) = (self.store, self.run, self.lease, self.clock)
        let closed = await Task { [self] () -> JournalError? in
            // The writer resumes this once it has committed what is queued and ended.
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                condition.lock()
                guard !writerDone else {
                    condition.unlock()
                    continuation.resume()
                    return
                }
                closing = true
                closeWaiter = continuation
                condition.signal()
                condition.unlock()
            }
            if let failure = error { return failure }
            guard let close else { return nil }
            if let slice, let lease = lease?.lease {
                do throws(JournalError) {
                    _ = try await store.closeSlice(slice, status: close.status, stats: savedSliceStats, lease: lease)
                    return nil
                } catch {
                    return error
                }
            }
            do throws(JournalError) {
                let batch = JournalBatch(lease: lease?.lease, close: close)
                try await store.record(batch, run: run.id, now: clock.now())
                return nil
            } catch {
                return error
            }
        }.value
        if let closed { throw closed }
    }

    private func write() {
        condition.lock()
        while true {
            while isIdle && !closing { condition.wait() }
            if isIdle && closing { break }
            if waiters.isEmpty && !closing {
                // Only answers so far: let more gather, unless a dispatch comes and wants a commit now.
                _ = condition.wait(until: Date(timeIntervalSinceNow: gatherWindow))
            }
            var batch = pending
            let delivered = deliveries
            let waiting = waiters
            pending = JournalBatch()
            deliveries.removeAll(keepingCapacity: true)
            waiters = []
            condition.unlock()
            let ranges = DeliveredRange.ranges(of: delivered)
            // A store that waits on the network (PostgreSQL) pays a round trip per commit, however
            // small: everything queued goes in one. Splitting pays off only where a commit's cost
            // is its size (SQLite, below).
            if waiting.isEmpty || synchronousRecord == nil {
                batch.delivered = ranges
                commit(batch)
                resume(waiting)
            } else {
                // A dispatch waits for its commit with its connection's queue running dry, so that
                // commit carries only what must precede it. First deliveries and the statistics follow
                // in a commit of their own while the batch is on the wire: they are final answers that
                // no later update of the same recipient can precede.
                let answers = JournalBatch(delivered: ranges, stats: batch.stats)
                batch.stats = nil
                commit(batch)
                resume(waiting)
                commit(answers)
            }
            condition.lock()
        }
        writerDone = true
        let waiter = closeWaiter
        closeWaiter = nil
        condition.unlock()
        waiter?.resume()
    }

    /// Writes `batch` unless an earlier write failed; a failure is kept for every later caller.
    private func commit(_ unfenced: JournalBatch) {
        guard !unfenced.isEmpty else { return }
        var fenced = unfenced
        fenced.lease = lease?.lease
        let batch = fenced
        condition.lock()
        let failed = failure != nil
        condition.unlock()
        if failed { return }
        let outcome: JournalError?
        if let record = synchronousRecord {
            do throws(JournalError) {
                try record(batch, run.id, clock.now())
                outcome = nil
            } catch {
                outcome = error
            }
        } else {
            outcome = Self.wait { [store, run, clock] () async -> JournalError? in
                do throws(JournalError) {
                    try await store.record(batch, run: run.id, now: clock.now())
                    return nil
                } catch {
                    return error
                }
            }
        }
        if let error = outcome {
            condition.lock()
            if failure == nil { failure = error }
            condition.unlock()
        }
    }

    /// Runs `body` in a task of its own (never cancelled: a commit the executor waits for is made
    /// whatever happens to the caller) and blocks the calling thread (the writer's, the planner's;
    /// never one of the pool's) until it ends.
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// Answers the dispatches that waited for the last commit.
    private func resume(_ waiting: [@Sendable (JournalError?) -> Void]) {
        guard !waiting.isEmpty else { return }
        condition.lock()
        let outcome = failure
        condition.unlock()
        for waiter in waiting { waiter(outcome) }
    }
}
