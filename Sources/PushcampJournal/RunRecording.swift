import PushcampAPNsCore
import Synchronization

/// How a store commits a send's journal writes: the writer of one run, for as long as the send
/// lasts. The store chooses how it waits and commits (SQLite on a thread of its own, the others in
/// a task); what goes in each commit is the queue's.
public protocol RunRecorder: Sendable {
    /// Commits what `queue` gathers for `run`, until it is closed with nothing left. A writer in a
    /// task returns early when it is cancelled (a cancelled task cannot reach every store), leaving
    /// the rest queued: whoever closes the run commits what is left.
    func record(_ queue: RecordingQueue, run: RunID) async

    /// Where the writer's task runs: nil for where the send's loop runs (the connections' event
    /// loop), or the shared pool for a store whose client works there (PostgreSQL: measured faster
    /// than hopping back to the busy event loop after each commit).
    var executor: (any TaskExecutor)? { get }
}

extension JournalStore {
    /// A writer in a task of its own that commits everything queued at once: a store that waits
    /// on the network pays a round trip per commit, however small.
    public var recorder: any RunRecorder {
        TaskRecorder(store: self, splitsAnswers: false, executor: globalConcurrentExecutor)
    }
}

/// A send's journal writes, gathered by the send (which decides what each one holds) and committed
/// by its store's `RunRecorder` (which decides how). Whatever is queued when the recorder takes it
/// goes in one commit, or two when a dispatch waits and the store's commits cost what they hold.
public final class RecordingQueue: Sendable {
    /// Told the outcome of the commit it waited for (the journal's failure, if any).
    public typealias Waiter = @Sendable (JournalError?) -> Void

    /// What the recorder should do now.
    public enum Step: Sendable {
        /// Nothing is queued: wait for something to be.
        case idle
        /// Only answers are queued: let more gather for the queue's window, unless a dispatch comes.
        case gather
        /// A dispatch waits, or the queue is closing: commit now.
        case take
        /// Closed, and everything committed.
        case done
    }

    /// One wake-up's commits: `first`, the dispatches to answer once it is committed, and what may
    /// follow them.
    public struct Take: Sendable {
        public var first: JournalBatch
        public var waiters: [Waiter]
        public var then: JournalBatch?
    }

    private struct Sleeper {
        var id: Int
        /// `.idle`: woken by anything queued; `.gather`: by a dispatch only.
        var waitsIn: Step
        var wake: @Sendable () -> Void
    }

    private enum Writer { case notStarted, running, finished }

    private struct State {
        var batch = JournalBatch()
        var deliveries: [FirstDelivery] = []
        var waiters: [Waiter] = []
        var closing = false
        var failure: JournalError?
        var sleeper: Sleeper?
        /// The latest nap's number (one writer naps at a time).
        var naps = 0
        /// A nap whose time ran out before it began waiting.
        var expired: Int?
        var writer = Writer.notStarted
        var writerEnded: CheckedContinuation<Void, Never>?

        var isEmpty: Bool { batch.isEmpty && deliveries.isEmpty }

        var step: Step {
            if isEmpty { return closing ? .done : .idle }
            return waiters.isEmpty && !closing ? .gather : .take
        }

        /// The sleeper, if what it waits for has come.
        mutating func wakeable() -> Sleeper? {
            guard let sleeper else { return nil }
            let ready =
                switch sleeper.waitsIn {
                case .gather: !waiters.isEmpty || closing
                default: !isEmpty || closing
                }
            guard ready else { return nil }
            self.sleeper = nil
            return sleeper
        }
    }

    private let state = Mutex(State())
    /// The lease each commit is fenced with, read as it is taken (renewals move its expiry).
    private let fence: @Sendable () -> Lease?
    /// How long answers wait for company before they are committed with nobody waiting.
    public let gatherWindow: Double
    /// What commits are timed by, and naps measured on.
    public let clock: any WallClock

    public init(gatherWindow: Double, clock: any WallClock, fence: @escaping @Sendable () -> Lease? = { nil }) {
        self.gatherWindow = gatherWindow
        self.clock = clock
        self.fence = fence
    }

    // MARK: the send's side

    /// Queues what `change` adds. With a `waiter`, a dispatch: it is told once that is committed,
    /// or at once (nothing queued) when a commit already failed.
    public func add(
        waiter: Waiter? = nil,
        _ change: (inout JournalBatch, inout [FirstDelivery]) -> Void
    ) {
        let (refused, sleeper) = state.withLock { state -> (JournalError?, Sleeper?) in
            if waiter != nil, let failure = state.failure { return (failure, nil) }
            change(&state.batch, &state.deliveries)
            if let waiter { state.waiters.append(waiter) }
            return (nil, state.wakeable())
        }
        if let refused { waiter?(refused) }
        sleeper?.wake()
    }

    /// The first commit's failure, if any: every later commit is skipped.
    public var failure: JournalError? { state.withLock { $0.failure } }

    /// Runs `recorder` until the queue is closed and empty (or the task is cancelled). A queue takes
    /// one writer, and none once `finishWriting` was called before it started.
    public func write(with recorder: any RunRecorder, run: RunID) async {
        let starts = state.withLock { state in
            guard state.writer == .notStarted else { return false }
            state.writer = .running
            return true
        }
        guard starts else { return }
        await recorder.record(self, run: run)
        let waiter = state.withLock { state in
            state.writer = .finished
            defer { state.writerEnded = nil }
            return state.writerEnded
        }
        waiter?.resume()
    }

    /// Closes the queue and returns once its writer ended (at once when it never started: none will).
    /// What the writer left, and anything queued later, is the caller's to commit (`takeAll`).
    public func finishWriting() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (running, sleeper) = state.withLock { state -> (Bool, Sleeper?) in
                state.closing = true
                let sleeper = state.wakeable()
                guard state.writer == .running else {
                    state.writer = .finished
                    return (false, sleeper)
                }
                state.writerEnded = continuation
                return (true, sleeper)
            }
            sleeper?.wake()
            if !running { continuation.resume() }
        }
    }

    // MARK: the recorder's side

    public var step: Step { state.withLock { $0.step } }

    /// Takes everything queued. `splitting`: when a dispatch waits, its commit carries only what
    /// must precede the send, and first deliveries and statistics follow in a commit of their own
    /// while the batch is on the wire (they are final answers no later update of the same recipient
    /// can precede). Worth it only where a commit costs what it holds (SQLite, memory).
    public func take(splitting: Bool) -> Take {
        var (batch, deliveries, waiters) = state.withLock { state in
            defer {
                state.batch = JournalBatch()
                state.deliveries.removeAll(keepingCapacity: true)
                state.waiters = []
            }
            return (state.batch, state.deliveries, state.waiters)
        }
        let ranges = DeliveredRange.ranges(of: deliveries)
        deliveries = []
        let lease = fence()
        batch.lease = lease
        guard splitting, !waiters.isEmpty else {
            batch.delivered = ranges
            return Take(first: batch, waiters: waiters, then: nil)
        }
        let answers = JournalBatch(delivered: ranges, stats: batch.stats, lease: lease)
        batch.stats = nil
        return Take(first: batch, waiters: waiters, then: answers)
    }

    /// Everything still queued, in one batch, for the closing commit; nil when nothing is.
    public func takeAll() -> JournalBatch? {
        guard step != .idle && step != .done else { return nil }
        let take = take(splitting: false)
        answer(take.waiters)
        return take.first.isEmpty ? nil : take.first
    }

    /// Whether `batch` should be committed: it holds something, and no commit failed before.
    public func shouldCommit(_ batch: JournalBatch) -> Bool {
        !batch.isEmpty && failure == nil
    }

    /// A commit failed: it and every later one are the journal's failure.
    public func failed(_ error: JournalError) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
    }

    /// Tells the dispatches that waited for the last commit how it went.
    public func answer(_ waiters: [Waiter]) {
        guard !waiters.isEmpty else { return }
        let outcome = failure
        for waiter in waiters { waiter(outcome) }
    }

    /// Waits, in a task, until there is something to do: for `.idle`, until anything is queued;
    /// for `.gather`, until a dispatch is, or `gatherWindow` has passed. A close or a cancellation
    /// ends either.
    public func nap(in step: Step) async {
        let id = nextNap()
        await withTaskGroup(of: Void.self) { group in
            if step == .gather {
                group.addTask { [clock, gatherWindow] in  // the window: ends the nap if nothing else does
                    do {
                        try await clock.sleep(for: gatherWindow)
                        self.wake(id)
                    } catch {
                        // The nap ended first.
                    }
                }
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    if !sleep(id: id, in: step, wake: { continuation.resume() }) { continuation.resume() }
                }
            } onCancel: {
                wake(id)
            }
            group.cancelAll()
        }
    }

    /// Installs a sleeper for `step` that `wake` rouses; false (nothing installed) when there is no
    /// need to wait: what it waits for is here, or its time ran out already.
    public func sleep(id: Int, in step: Step, wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if state.expired == id { return false }
            state.sleeper = Sleeper(id: id, waitsIn: step, wake: wake)
            if state.wakeable() != nil { return false }
            return true
        }
    }

    /// A number for a nap of a writer that waits by other means (a thread): `sleep(id:in:wake:)`
    /// then `wake(_:)` when its time runs out.
    public func nextNap() -> Int {
        state.withLock { state in
            state.naps += 1
            return state.naps
        }
    }

    /// Ends nap `id` (its time ran out, or its task was cancelled), or keeps it from starting.
    public func wake(_ id: Int) {
        let sleeper = state.withLock { state -> Sleeper? in
            guard let sleeper = state.sleeper, sleeper.id == id else {
                if state.naps == id { state.expired = id }
                return nil
            }
            state.sleeper = nil
            return sleeper
        }
        sleeper?.wake()
    }
}

/// The writer of a store committed from a task (memory, PostgreSQL): a child of the send's task
/// group, that awaits each commit.
public struct TaskRecorder: RunRecorder {
    let store: any JournalStore
    /// Whether a dispatch's commit is split from the answers queued before it (see `take`).
    let splitsAnswers: Bool
    public let executor: (any TaskExecutor)?

    public init(store: any JournalStore, splitsAnswers: Bool, executor: (any TaskExecutor)? = nil) {
        self.store = store
        self.splitsAnswers = splitsAnswers
        self.executor = executor
    }

    public func record(_ queue: RecordingQueue, run: RunID) async {
        while !Task.isCancelled {
            switch queue.step {
            case .done: return
            case .idle:
                await queue.nap(in: .idle)
                continue
            case .gather: await queue.nap(in: .gather)
            case .take: break
            }
            if Task.isCancelled { return }
            let take = queue.take(splitting: splitsAnswers)
            await commit(take.first, from: queue, run: run)
            queue.answer(take.waiters)
            if let then = take.then { await commit(then, from: queue, run: run) }
        }
    }

    private func commit(_ batch: JournalBatch, from queue: RecordingQueue, run: RunID) async {
        guard queue.shouldCommit(batch) else { return }
        do throws(JournalError) {
            try await store.record(batch, run: run, now: queue.clock.now())
        } catch {
            queue.failed(error)
        }
    }
}
