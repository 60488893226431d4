import Foundation
import PushcampAPNsCore

/// SQLite's writer of a send's batches: a thread of its own that commits where it is (a commit
/// waits on nothing but the local disk), so a dispatch's commit reaches the executor without a hop
/// to another executor and back. The only condition variable of the send: how that thread waits.
struct ThreadRecorder: RunRecorder {
    /// `record`, made on the calling thread.
    let commit: @Sendable (JournalBatch, RunID, Double) throws(JournalError) -> Void
    /// The task only waits for the thread.
    var executor: (any TaskExecutor)? { nil }

    func record(_ queue: RecordingQueue, run: RunID) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                write(queue, run: run)
                continuation.resume()
            }
            thread.name = "pushcamp-journal"
            thread.start()
        }
    }

    /// Commits until the queue is closed and empty. A commit costs what it holds, so a waiting
    /// dispatch's goes first, alone.
    private func write(_ queue: RecordingQueue, run: RunID) {
        let bell = Bell()
        while true {
            switch queue.step {
            case .done: return
            case .idle:
                bell.wait(in: .idle, on: queue)
                continue
            case .gather: bell.wait(in: .gather, on: queue)
            case .take: break
            }
            let take = queue.take(splitting: true)
            commit(take.first, from: queue, run: run)
            queue.answer(take.waiters)
            if let then = take.then { commit(then, from: queue, run: run) }
        }
    }

    private func commit(_ batch: JournalBatch, from queue: RecordingQueue, run: RunID) {
        guard queue.shouldCommit(batch) else { return }
        do throws(JournalError) {
            try commit(batch, run, queue.clock.now())
        } catch {
            queue.failed(error)
        }
    }
}

/// How the writer's thread waits for its queue.
private final class Bell: @unchecked Sendable {
    // `rung` is guarded by `condition`: a thread cannot await, and SQLite's writer is a thread so a
    // commit reaches the executor without a hop (the measured group commit).
    private let condition = NSCondition()
    private var rung = false

    /// Blocks until the queue has what `step` waits for; a gathering wait ends after the queue's
    /// window at the latest (real time: a thread cannot sleep on an injected clock).
    func wait(in step: RecordingQueue.Step, on queue: RecordingQueue) {
        condition.lock()
        rung = false
        condition.unlock()
        let nap = queue.nextNap()
        guard queue.sleep(id: nap, in: step, wake: { [self] in ring() }) else { return }
        let deadline = step == .gather ? Date(timeIntervalSinceNow: queue.gatherWindow) : nil
        condition.lock()
        while !rung {
            if let deadline {
                if !condition.wait(until: deadline) { break }
            } else {
                condition.wait()
            }
        }
        condition.unlock()
        queue.wake(nap)
    }

    private func ring() {
        condition.lock()
        rung = true
        condition.signal()
        condition.unlock()
    }
}
