import NIOCore
import Synchronization

/// Pushcamp's own queue in front of the connections: requests wait here, not in nghttp2.
///
/// The sender `add`s (never waiting: it bounds what it hands over itself, by the streams the
/// connections announced); connections `take` as many as their stream budget allows, on their event
/// loop, and when they find it empty they leave a wake-up that the next `add` calls. Requests a
/// connection could not send (refused by GOAWAY) go back to the front.
package final class RequestQueue: Sendable {
    package typealias Wake = @Sendable () -> Void

    private struct State {
        /// Batches in arrival order, each stored reversed so `popLast()` moves the next request out
        /// without copying it.
        var batches = CircularBuffer<[APNsRequest]>(initialCapacity: 64)
        var count = 0
        var hungry: [Int: Wake] = [:]
        var closed = false

        mutating func wakeHungry() -> [Wake] {
            defer { hungry.removeAll(keepingCapacity: true) }
            return Array(hungry.values)
        }
    }

    private let state = Mutex(State())

    package init() {}

    package var count: Int { state.withLock { $0.count } }

    /// Adds requests; hands them back when the queue is closed.
    package func add(_ requests: consuming [APNsRequest]) -> [APNsRequest]? {
        var batch = requests
        guard !batch.isEmpty else { return nil }
        batch.reverseByMoving()
        let outcome: (added: Bool, wake: [Wake]) = state.withLock { state in
            if state.closed { return (false, []) }
            state.count += batch.count
            state.batches.append(batch)
            // Let go of our reference under the lock, so the queue's copy is unique when taken.
            batch = []
            return (true, state.wakeHungry())
        }
        guard outcome.added else {
            batch.reverseByMoving()
            return batch
        }
        for wake in outcome.wake { wake() }
        return nil
    }

    /// Puts requests back at the front (they were never processed), whatever the capacity.
    package func requeue(_ requests: [APNsRequest]) {
        guard !requests.isEmpty else { return }
        let wake = state.withLock { state in
            state.count += requests.count
            state.batches.prepend(requests.reversed())
            return state.wakeHungry()
        }
        for wake in wake { wake() }
    }

    /// Up to `limit` requests for connection `id`; when that empties the queue, `wake` is kept and called
    /// on the next arrival.
    package func take(_ limit: Int, connection id: Int, wake: @escaping Wake) -> [APNsRequest] {
        state.withLock { state -> [APNsRequest] in
            var taken: [APNsRequest] = []
            taken.reserveCapacity(min(limit, state.count))
            while taken.count < limit, !state.batches.isEmpty {
                // Out of the buffer (so the batch is uniquely ours), emptied from its end, put back if not done.
                var batch = state.batches.removeFirst()
                while taken.count < limit, let request = batch.popLast() { taken.append(request) }
                if !batch.isEmpty { state.batches.prepend(batch) }
            }
            state.count -= taken.count
            if taken.count < limit { state.hungry[id] = wake }
            return taken
        }
    }

    /// The connection is gone or draining: no more wake-ups for it.
    func forget(connection id: Int) {
        _ = state.withLock { $0.hungry.removeValue(forKey: id) }
    }

    /// Refuses further requests and hands back the ones still waiting, in order.
    package func close() -> [APNsRequest] {
        state.withLock { state in
            state.closed = true
            defer {
                state.batches.removeAll()
                state.count = 0
            }
            return state.batches.flatMap { $0.reversed() }
        }
    }
}

extension Array {
    /// Reverses in place by moving elements through a buffer pointer (whose `swapAt` moves memory),
    /// skipping the retain and release per field that `Array.reverse()` costs for a struct of references.
    mutating func reverseByMoving() {
        withUnsafeMutableBufferPointer { $0.reverse() }
    }
}
