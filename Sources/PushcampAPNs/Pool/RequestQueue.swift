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
        var items = CircularBuffer<APNsRequest>(initialCapacity: 1024)
        var hungry: [Int: Wake] = [:]
        var producers: [CheckedContinuation<Void, any Error>] = []
        var closed = false
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { state.withLock { $0.items.count } }

    /// Adds requests, waiting while the queue holds `capacity` or more.
    func enqueue(_ requests: [APNsRequest]) async throws {
        while true {
            let outcome: (added: Bool, wake: [Wake]) = try state.withLock { state in
                if state.closed { throw APNsClientError(.shutdown, "the connection pool is shut down") }
                guard state.items.count < capacity else { return (false, []) }
                state.items.append(contentsOf: requests)
                defer { state.hungry.removeAll(keepingCapacity: true) }
                return (true, Array(state.hungry.values))
            }
            if outcome.added {
                for wake in outcome.wake { wake() }
                return
            }
            try await withCheckedThrowingContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.closed || state.items.count < capacity { return true }
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
            for request in requests.reversed() { state.items.prepend(request) }
            defer { state.hungry.removeAll(keepingCapacity: true) }
            return Array(state.hungry.values)
        }
        for wake in wake { wake() }
    }

    /// Up to `limit` requests for connection `id`; when that empties the queue, `wake` is kept and called
    /// on the next arrival.
    func take(_ limit: Int, connection id: Int, wake: @escaping Wake) -> [APNsRequest] {
        let (taken, producers) = state.withLock { state -> ([APNsRequest], [CheckedContinuation<Void, any Error>]) in
            var taken: [APNsRequest] = []
            let count = min(limit, state.items.count)
            taken.reserveCapacity(count)
            for _ in 0..<count { taken.append(state.items.removeFirst()) }
            if count < limit { state.hungry[id] = wake }
            guard count > 0, state.items.count < capacity, !state.producers.isEmpty else { return (taken, []) }
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

    /// Refuses further requests and hands back the ones still waiting.
    func close() -> [APNsRequest] {
        let (left, producers) = state.withLock { state in
            state.closed = true
            defer {
                state.items.removeAll()
                state.producers.removeAll()
            }
            return (Array(state.items), state.producers)
        }
        for producer in producers { producer.resume(throwing: APNsClientError(.shutdown, "the pool is shut down")) }
        return left
    }
}
