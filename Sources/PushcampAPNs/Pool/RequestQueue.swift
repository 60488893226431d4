import NIOCore
import Synchronization

/// Pushcamp's own bounded queue in front of the connections: requests wait here, not in nghttp2.
///
/// Producers `enqueue` (suspending while it is full); connections `take` as many as their stream
/// budget allows, on their event loop, and when they find it empty they leave a wake-up that the next
/// `enqueue` calls. Requests a connection could not send (refused by GOAWAY) go back to the front.
final class RequestQueue: Sendable {
    typealias Wake = @Sendable () -> Void

    private struct State {
        /// Batches in arrival order, each stored reversed so `popLast()` moves the next request out
        /// without copying it.
        var batches = CircularBuffer<[APNsRequest]>(initialCapacity: 64)
        var count = 0
        var hungry: [Int: Wake] = [:]
        var producers: [CheckedContinuation<Void, any Error>] = []
        var closed = false

        mutating func wakeHungry() -> [Wake] {
            defer { hungry.removeAll(keepingCapacity: true) }
            return Array(hungry.values)
        }
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { state.withLock { $0.count } }

    /// Adds requests, waiting while the queue holds `capacity` or more.
    func enqueue(_ requests: consuming [APNsRequest]) async throws {
        guard !requests.isEmpty else { return }
        var batch = requests
        batch.reverseByMoving()
        while true {
            let outcome: (added: Bool, wake: [Wake]) = try state.withLock { state in
                if state.closed { throw APNsClientError(.shutdown, "the connection pool is shut down") }
                guard state.count < capacity else { return (false, []) }
                state.count += batch.count
                state.batches.append(batch)
                // Let go of our reference under the lock, so the queue's copy is unique when taken.
                batch = []
                return (true, state.wakeHungry())
            }
            if outcome.added {
                for wake in outcome.wake { wake() }
                return
            }
            try await withCheckedThrowingContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.closed || state.count < capacity { return true }
                    state.producers.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Puts requests back at the front (they were never processed), whatever the capacity.
    func requeue(_ requests: [APNsRequest]) {
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
    func take(_ limit: Int, connection id: Int, wake: @escaping Wake) -> [APNsRequest] {
        let (taken, producers) = state.withLock { state -> ([APNsRequest], [CheckedContinuation<Void, any Error>]) in
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
            guard !taken.isEmpty, state.count < capacity, !state.producers.isEmpty else { return (taken, []) }
            defer { state.producers.removeAll() }
            return (taken, state.producers)
        }
        for producer in producers { producer.resume() }
        return taken
    }

    /// The connection is gone or draining: no more wake-ups for it.
    func forget(connection id: Int) {
        _ = state.withLock { $0.hungry.removeValue(forKey: id) }
    }

    /// Refuses further requests and hands back the ones still waiting, in order.
    func close() -> [APNsRequest] {
        let (left, producers) = state.withLock { state in
            state.closed = true
            defer {
                state.batches.removeAll()
                state.count = 0
                state.producers.removeAll()
            }
            return (state.batches.flatMap { $0.reversed() }, state.producers)
        }
        for producer in producers { producer.resume(throwing: APNsClientError(.shutdown, "the pool is shut down")) }
        return left
    }
}

extension Array {
    /// Reverses in place by moving elements through a buffer pointer (whose `swapAt` moves memory),
    /// skipping the retain and release per field that `Array.reverse()` costs for a struct of references.
    mutating func reverseByMoving() {
        withUnsafeMutableBufferPointer { $0.reverse() }
    }
}
