import DequeModule
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import Synchronization

/// APNs in memory for the layers above the connections: a `PushTransport` that answers by rules
/// (status and reason per request, latency, stream limits, drops, stalls) on an injected clock, and
/// remembers what it was sent. Like the real pool, a connection allows one stream until a request
/// on it is answered 200 (the provider token accepted), then the limit its SETTINGS announce. With a `ManualClock`, a whole send runs through the real `Executor`
/// driver without a socket or a real sleep.
public final class InMemoryTransport: PushTransport {
    public struct Rules: Sendable {
        public var connections = 1
        /// The stream limit each connection's SETTINGS announce (0: no stream is ever allowed).
        public var streamLimit = 100
        /// False: the connection comes up, then the server sends no HTTP/2 frame at all.
        public var sendsSettings = true
        /// False: requests are taken and never answered (they time out after `requestTimeout`).
        public var answers = true
        public var latency = 0.010
        public var requestTimeout = 30.0
        /// Drops a connection after this many answers on it: its open streams are lost, and it
        /// comes back at once with a fresh stream limit.
        public var dropAfter: Int?
        /// The answer to a request: nil is 200.
        public var reason: @Sendable (APNsRequest) -> APNsReason? = { _ in nil }

        public init() {}
    }

    private struct Flight {
        var due: Double
        var connection: Int
        var request: APNsRequest
        var sentAt: Double
    }

    private struct State {
        var queue = Deque<APNsRequest>()
        var flights: [Flight] = []
        var answered: [Int]
        /// Per connection: a request was answered 200 since it came up.
        var accepted: [Bool]
        var shutdown = false
        /// The loop has ended (shut down, nothing open).
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
        var woken = false
        /// Device token → how many times a request for it was written / answered 200.
        var written: [String: Int] = [:]
        var delivered: [String: Int] = [:]
        var mostOpen = 0
        var first: APNsRequest?
        var requests: [APNsRequest] = []
        let keepsRequests: Bool
    }

    private let rules: Rules
    private let clock: any WallClock
    private let state: Mutex<State>

    /// `keepsRequests`: remember every request written (`requests`), for tests that look at them.
    public init(rules: Rules = Rules(), clock: any WallClock, keepsRequests: Bool = false) {
        self.rules = rules
        self.clock = clock
        state = Mutex(
            State(
                answered: Array(repeating: 0, count: rules.connections),
                accepted: Array(repeating: false, count: rules.connections),
                keepsRequests: keepsRequests
            )
        )
    }

    /// How many times each device token was written to a connection.
    public var written: [String: Int] { state.withLock { $0.written } }
    /// How many times each device token was answered 200.
    public var delivered: [String: Int] { state.withLock { $0.delivered } }
    /// Every request written, in order, when the transport keeps them.
    public var requests: [APNsRequest] { state.withLock { $0.requests } }
    /// The first request written.
    public var firstWritten: APNsRequest? { state.withLock { $0.first } }
    /// The most requests ever open at once, over all connections.
    public var mostOpen: Int { state.withLock { $0.mostOpen } }

    public var openStreams: Int { state.withLock { $0.flights.count } }

    /// Whether the transport's loop is waiting (it has taken in everything submitted): a test
    /// driving virtual time moves the clock only then, so a busy machine never makes time pass
    /// while work is still being handed over.
    public var isParked: Bool { state.withLock { $0.finished || ($0.waiter != nil && !$0.woken) } }

    public func submit(_ requests: consuming [APNsRequest]) -> [APNsRequest] {
        let requests = copy requests
        let refused = state.withLock { state -> [APNsRequest] in
            if state.shutdown { return requests }
            state.queue.append(contentsOf: requests)
            return []
        }
        wake()
        return refused
    }

    public func shutdown() {
        state.withLock { $0.shutdown = true }
        wake()
    }

    public func run(reporting events: @escaping TransportEventSink) async {
        for connection in 0..<rules.connections { connectionUp(connection, events: events) }
        var alarm: Task<Void, Never>?
        while true {
            let next = step(events: events)
            if next == .infinity { break }
            alarm?.cancel()
            if next.isFinite {
                alarm = Task { [clock] in
                    guard (try? await clock.sleep(until: next)) != nil else { return }
                    self.wake()
                }
            }
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    if state.woken {
                        state.woken = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }
        alarm?.cancel()
        state.withLock { $0.finished = true }
    }

    private func wake() {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.woken = true
                return nil as CheckedContinuation<Void, Never>?
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    private func connectionUp(_ connection: Int, events: TransportEventSink) {
        state.withLock { $0.accepted[connection] = false }
        events(.connected(connection: connection))
        if rules.sendsSettings {
            events(.streamLimit(connection: connection, limit: min(1, rules.streamLimit)))
        }
    }

    /// Answers what is due, writes what fits, and returns when to look again: `.infinity` once shut
    /// down with nothing open, `.nan` when only a submit can bring work.
    private func step(events: TransportEventSink) -> Double {
        let now = clock.now()
        var outcomes: [APNsOutcome] = []
        var dropped: [Int] = []
        var unsent: [APNsRequest] = []
        var raised: [Int] = []
        let next = state.withLock { state -> Double in
            // Answers (or timeouts) that are due, in the order they fall due.
            let due = state.flights.enumerated().filter { $0.element.due <= now }.sorted {
                $0.element.due < $1.element.due
            }
            var gone = Set<Int>()
            for (offset, flight) in due where !dropped.contains(flight.connection) {
                gone.insert(offset)
                let latency = TimeAmount.nanoseconds(Int64((now - flight.sentAt) * 1e9))
                guard rules.answers else {
                    outcomes.append(
                        .init(
                            request: flight.request,
                            result: .timedOut,
                            latency: latency,
                            connection: flight.connection
                        )
                    )
                    continue
                }
                let reason = rules.reason(flight.request)
                let result = APNsOutcome.Result.response(status: reason?.status ?? 200, reason: reason, timestamp: nil)
                outcomes.append(
                    .init(request: flight.request, result: result, latency: latency, connection: flight.connection)
                )
                if reason == nil {
                    state.delivered[flight.request.deviceToken, default: 0] += 1
                    if !state.accepted[flight.connection] {
                        state.accepted[flight.connection] = true
                        raised.append(flight.connection)
                    }
                }
                state.answered[flight.connection] += 1
                if let after = rules.dropAfter, state.answered[flight.connection] % after == 0 {
                    dropped.append(flight.connection)
                }
            }
            // A dropped connection loses every stream still open on it.
            for (index, flight) in state.flights.enumerated() where dropped.contains(flight.connection) {
                if gone.insert(index).inserted {
                    outcomes.append(
                        .init(
                            request: flight.request,
                            result: .connectionLost,
                            latency: .zero,
                            connection: flight.connection
                        )
                    )
                }
            }
            state.flights = state.flights.enumerated().filter { !gone.contains($0.offset) }.map(\.element)
            if state.shutdown {
                unsent = Array(state.queue)
                state.queue.removeAll()
            }
            // Writes, connection by connection, up to the limit.
            for connection in 0..<rules.connections where !dropped.contains(connection) {
                let limit =
                    rules.sendsSettings
                    ? (state.accepted[connection] ? rules.streamLimit : min(1, rules.streamLimit)) : 0
                var open = state.flights.count(where: { $0.connection == connection })
                while open < limit, let request = state.queue.popFirst() {
                    let deadline = rules.answers ? now + rules.latency : now + rules.requestTimeout
                    state.flights.append(Flight(due: deadline, connection: connection, request: request, sentAt: now))
                    state.written[request.deviceToken, default: 0] += 1
                    if state.first == nil { state.first = request }
                    if state.keepsRequests { state.requests.append(request) }
                    open += 1
                }
            }
            state.mostOpen = max(state.mostOpen, state.flights.count)
            if state.shutdown && state.flights.isEmpty { return .infinity }
            return state.flights.map(\.due).min() ?? .nan
        }
        for connection in raised where !dropped.contains(connection) {
            events(.streamLimit(connection: connection, limit: rules.streamLimit))
        }
        if !outcomes.isEmpty { events(.outcomes(outcomes)) }
        for connection in dropped {
            events(.disconnected(connection: connection, reason: "dropped by the in-memory server"))
            connectionUp(connection, events: events)
        }
        if !unsent.isEmpty { events(.unsent(unsent)) }
        // Requests written after a drop's reconnect: look again at once.
        if !dropped.isEmpty { wake() }
        return next
    }
}
