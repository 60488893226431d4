import Dispatch
import Synchronization

/// A bounded hand-over from the planning thread to the async sender: the planner blocks while
/// `capacity` batches wait, so memory stays flat whatever the audience size.
final class PlanFeed: Sendable {
    private struct State {
        var batches: [ExecutorStateMachine.PlanBatch] = []
        var consumer: CheckedContinuation<ExecutorStateMachine.PlanBatch?, Never>?
        var finished = false
        var cancelled = false
    }

    private let state = Mutex(State())
    private let space: DispatchSemaphore

    init(capacity: Int) {
        // Created at 0 and raised to `capacity`: libdispatch traps when a semaphore is freed below its
        // initial value, which a cancelled feed (batches dropped, never signalled back) would be.
        space = DispatchSemaphore(value: 0)
        for _ in 0..<capacity { space.signal() }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Planner side: hands over a batch, blocking while the feed is full; false once cancelled.
    func put(_ batch: ExecutorStateMachine.PlanBatch) -> Bool {
        if isCancelled { return false }
        space.wait()
        let consumer: CheckedContinuation<ExecutorStateMachine.PlanBatch?, Never>? = state.withLock { state in
            if state.cancelled { return nil }
            if let consumer = state.consumer {
                state.consumer = nil
                return consumer
            }
            state.batches.append(batch)
            return nil
        }
        if let consumer {
            space.signal()
            consumer.resume(returning: batch)
        }
        return !isCancelled
    }

    /// Planner side: no more batches.
    func finish() {
        let consumer = state.withLock { state in
            state.finished = true
            defer { state.consumer = nil }
            return state.batches.isEmpty ? state.consumer : nil
        }
        consumer?.resume(returning: nil)
    }

    /// Sender side: the next batch, or nil when the plan is done or cancelled.
    func next() async -> ExecutorStateMachine.PlanBatch? {
        await withCheckedContinuation { continuation in
            let ready: ExecutorStateMachine.PlanBatch?? = state.withLock { state in
                if state.cancelled { return .some(nil) }
                if !state.batches.isEmpty { return .some(state.batches.removeFirst()) }
                if state.finished { return .some(nil) }
                state.consumer = continuation
                return .none
            }
            if case .some(let batch) = ready {
                if batch != nil { space.signal() }
                continuation.resume(returning: batch)
            }
        }
    }

    /// Stops the planner at its next batch and the sender at its next `next()`.
    func cancel() {
        let consumer = state.withLock { state in
            state.cancelled = true
            state.batches.removeAll()
            defer { state.consumer = nil }
            return state.consumer
        }
        space.signal()
        consumer?.resume(returning: nil)
    }
}
