import PushcampAPNsCore
import PushcampJournal
import PushcampTestSupport
import Synchronization
import Testing

/// A send's journal writes: what the queue gathers into each commit (pure), and each store's
/// writer committing it (the same contract for the three stores).
@Suite("Recording queue and writers")
struct RecordingQueueTests {
    static func deliveries(_ seqs: Range<Int>) -> [FirstDelivery] {
        seqs.map { FirstDelivery(seq: $0, token: TemporaryProject.token($0)) }
    }

    /// Queues a dispatch of `seqs`; `answered` is told the outcome of its commit.
    static func dispatch(
        _ seqs: ClosedRange<Int>,
        to queue: RecordingQueue,
        answered: @escaping RecordingQueue.Waiter = { _ in }
    ) {
        queue.add(waiter: answered) { batch, _ in batch.dispatched.append(seqs) }
    }

    /// Yields until `condition` holds (a writer task reached a nap, say): an outcome, not a time.
    static func settled(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }

    @Test func whatTheWriterDoesFollowsWhatIsQueued() async {
        let queue = RecordingQueue(gatherWindow: 1, clock: ManualClock(0))
        #expect(queue.step == .idle)
        queue.add { _, deliveries in deliveries.append(contentsOf: Self.deliveries(0..<2)) }
        #expect(queue.step == .gather, "answers alone wait for company")
        Self.dispatch(2...3, to: queue)
        #expect(queue.step == .take, "a dispatch waits: commit now")
        _ = queue.take(splitting: false)
        #expect(queue.step == .idle)
        queue.add { batch, _ in batch.possibleDuplicates += 1 }
        await queue.finishWriting()
        #expect(queue.step == .take, "closing: what is queued goes at once")
        #expect(queue.takeAll()?.possibleDuplicates == 1)
        #expect(queue.step == .done)
    }

    /// Where a commit costs what it holds, a dispatch's commit carries only what must precede the
    /// send; the answers queued before it follow. Where it costs a round trip, one commit holds all.
    @Test(arguments: [true, false])
    func aDispatchIsSplitFromTheAnswersOnlyWhereThatPays(splitting: Bool) {
        let queue = RecordingQueue(gatherWindow: 1, clock: ManualClock(0))
        queue.add { batch, deliveries in
            deliveries.append(contentsOf: Self.deliveries(0..<3))
            batch.stats = RunStats()
        }
        Self.dispatch(3...4, to: queue)
        let take = queue.take(splitting: splitting)
        #expect(take.first.dispatched == [3...4])
        #expect(take.waiters.count == 1)
        if splitting {
            #expect(take.first.delivered.isEmpty && take.first.stats == nil)
            #expect(take.then?.delivered.map(\.seqs) == [0...2])
            #expect(take.then?.stats != nil)
        } else {
            #expect(take.first.delivered.map(\.seqs) == [0...2])
            #expect(take.then == nil)
        }
    }

    /// After a failed commit, a dispatch is refused at once and nothing more is queued for it.
    @Test func aDispatchAfterAFailedCommitIsRefusedAtOnce() {
        let queue = RecordingQueue(gatherWindow: 1, clock: ManualClock(0))
        queue.failed(JournalError(.failed, "disk full"))
        let told = Mutex<JournalError?>(nil)
        Self.dispatch(0...1, to: queue) { error in told.withLock { $0 = error } }
        #expect(told.withLock { $0 }?.message == "disk full")
        #expect(queue.step == .idle)
    }

    /// A queue closed before its writer started takes none: the closer commits the rest.
    @Test func aWriterThatStartsAfterTheCloseDoesNothing() async throws {
        let store = MemoryJournal()
        let run = try await store.createRun(campaign: "welcome", revision: "r1", now: 0)
        let queue = RecordingQueue(gatherWindow: 1, clock: ManualClock(0))
        queue.add { _, deliveries in deliveries.append(contentsOf: Self.deliveries(0..<2)) }
        await queue.finishWriting()
        await queue.write(with: store.recorder, run: run.id)
        #expect(store.recordCount == 0)
        #expect(queue.takeAll()?.delivered.map(\.seqs) == [0...1])
    }

    /// Answers alone wait the window on the queue's clock, then go in one commit; a dispatch ends
    /// the wait at once.
    @Test func answersWaitTheWindowUnlessADispatchComes() async throws {
        let store = MemoryJournal(awaitsCommits: true)
        let run = try await store.createRun(campaign: "welcome", revision: "r1", now: 0)
        let clock = ManualClock(0)
        let queue = RecordingQueue(gatherWindow: 5, clock: clock)
        async let writer: Void = queue.write(with: store.recorder, run: run.id)

        queue.add { _, deliveries in deliveries.append(contentsOf: Self.deliveries(0..<2)) }
        #expect(await Self.settled { clock.nextDeadline == 5 }, "the writer gathers until the window ends")
        #expect(store.recordCount == 0)
        clock.advance(5)
        #expect(await Self.settled { store.recordCount == 1 })
        #expect(try await store.delivered(of: run.id) == [0...1])

        queue.add { _, deliveries in deliveries.append(contentsOf: Self.deliveries(2..<4)) }
        #expect(await Self.settled { clock.nextDeadline == 10 })
        let answered = Mutex(false)
        Self.dispatch(4...5, to: queue) { _ in answered.withLock { $0 = true } }
        #expect(await Self.settled { answered.withLock { $0 } }, "no time passed: the dispatch woke the writer")
        #expect(store.recordCount == 2, "the dispatch and the answers before it, in one commit")
        #expect(try await store.delivered(of: run.id) == [0...1, 2...3])
        #expect(try await store.dispatched(of: run.id) == [4...5])

        await queue.finishWriting()
        await writer
        #expect(queue.step == .done)
    }

    /// Each store's writer: a dispatch is answered once its commit is made, answers follow, and a
    /// close returns once everything queued before it is committed.
    @Test(arguments: Store.allCases)
    func eachStoresWriterCommitsWhatIsQueued(_ kind: Store) async throws {
        let (store, project) = try await kind.open()
        defer { project.remove() }
        let run = try await store.createRun(campaign: "welcome", revision: "r1", now: 0)
        let queue = RecordingQueue(gatherWindow: 0.005, clock: SystemWallClock())
        async let writer: Void = queue.write(with: store.recorder, run: run.id)

        let outcome: JournalError? = await withCheckedContinuation { continuation in
            Self.dispatch(0...3, to: queue) { continuation.resume(returning: $0) }
        }
        #expect(outcome == nil)
        #expect(try await store.dispatched(of: run.id) == [0...3])
        queue.add { _, deliveries in deliveries.append(contentsOf: Self.deliveries(0..<4)) }
        await queue.finishWriting()
        await writer
        #expect(queue.takeAll() == nil)
        #expect(try await store.delivered(of: run.id) == [0...3])
        #expect(queue.failure == nil)
    }
}
