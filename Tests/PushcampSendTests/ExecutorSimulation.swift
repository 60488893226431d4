import DequeModule
import Foundation
import HeapModule
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCMCore
import PushcampJournal
import PushcampModel
import PushcampSend

/// APNs in memory, answering by rules in virtual time, wired to an `ExecutorStateMachine`: the
/// executor's decisions run against connections that have stream limits (the real
/// `ConnectionStateMachine`, ramp included), latency, drops, stalls and refusals, with a manual
/// clock that jumps from one event to the next. No sockets, no threads, no sleeping.
struct ExecutorSimulation {
    struct Rules {
        var connections = 1
        /// Announced in SETTINGS (0: no stream is ever allowed).
        var streamLimit: UInt32 = 100
        /// False: TLS completes, then the server sends no HTTP/2 frame at all.
        var sendsSettings = true
        /// False: requests are taken and never answered.
        var answers = true
        /// After this many answers on a connection, the server announces a new stream limit (0: no
        /// stream at all) and then answers nothing more on it.
        var lowerLimit: (afterAnswers: Int, to: UInt32)?
        var latency = 0.010
        /// Drops a connection (its open streams lost) after this many requests on it.
        var dropAfter: Int?
        /// How long the journal takes to commit.
        var commitLatency = 0.001
        /// The answer for a request (200 when nil).
        var reason: (APNsRequest) -> APNsReason? = { _ in nil }
        /// The pushes are FCM messages (`request(_:)` makes FCM requests).
        var fcm = false
        /// An FCM message's error and `retry-after` at the simulation's time (200 when nil).
        var fcmAnswer: (APNsRequest, Double) -> (FCMError, retryAfter: Int?)? = { _, _ in nil }
    }

    enum Event {
        case planned
        case recorded(Int)
        case timer
        case answer(connection: Int, tag: Int)
        /// The request's deadline (30 s) passed without an answer: the stream is reset.
        case expire(connection: Int, tag: Int)
        case drop(connection: Int)
        case connect(connection: Int)
    }

    struct Scheduled: Comparable {
        var time: Double
        var order: Int
        var event: Event
        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.time, lhs.order) < (rhs.time, rhs.order) }
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.time == rhs.time && lhs.order == rhs.order }
    }

    struct Connection {
        var id: Int
        var state: ConnectionStateMachine
        var handled = 0
        var open: [Int: APNsRequest] = [:]
        var answered = 0
        var up = true
    }

    let rules: Rules
    var machine: ExecutorStateMachine
    var now: Double = 0
    var plan: Deque<[APNsRequest]>
    var agenda = Heap<Scheduled>()
    var order = 0
    var queue = Deque<APNsRequest>()
    var connections: [Connection] = []
    var nextConnectionID = 0
    var transportStopping = false
    var transportEnded = false
    var report: SendReport?
    /// Recipients recorded in flight and not settled (what a resume after `kill -9` would resend).
    var inFlight: Set<Int> = []
    /// Every time a request was written to a connection, by tag.
    var written: [Int: [Double]] = [:]
    var writtenUnanswered: Set<Int> = []
    var journal: [Int: RecipientState] = [:]
    /// Tokens the executor called dead, as the journal got them.
    var deadTokens: [InvalidToken] = []
    /// Timers scheduled and not yet fired: a new one only when it is earlier than all of them (as the driver does).
    var armed: [Double] = []

    init(
        pushes: Int,
        rate: Double,
        rules: Rules = Rules(),
        configure: (inout ExecutorStateMachine.Configuration) -> Void = { _ in }
    ) {
        self.rules = rules
        var configuration = ExecutorStateMachine.Configuration(
            rate: rate,
            retry: RetryPolicy(),
            endpoint: "https://memory.test",
            connections: rules.connections
        )
        configure(&configuration)
        machine = ExecutorStateMachine(
            configuration: configuration,
            report: SendReport(campaign: "c", revision: "r", endpoint: "https://memory.test"),
            now: 0
        )
        let requests = (0..<pushes).map(rules.fcm ? Self.fcmRequest : Self.request)
        let size = configuration.handOverSize
        plan = Deque(
            stride(from: 0, to: requests.count, by: size).map { Array(requests[$0..<min($0 + size, requests.count)]) }
        )
        for _ in 0..<rules.connections { connect() }
    }

    /// Push `seq`: a plain alert to a token made of its number.
    static func request(_ seq: Int) -> APNsRequest {
        APNsRequest(
            tag: seq,
            deviceToken: String(format: "%064x", seq),
            apnsID: "5d2e0f9a-3c1b-5e7d-9a8b-0c1d2e3f4a5b",
            topic: "com.example.shop",
            pushType: "alert",
            priority: 10,
            expiration: nil,
            collapseID: nil,
            payload: Array("{}".utf8)
        )
    }

    /// FCM message `seq`: a notification to a registration token made of its number.
    static func fcmRequest(_ seq: Int) -> APNsRequest {
        let token = String(format: "c%07d:APA91b", seq) + String(repeating: "x", count: 40)
        return APNsRequest(
            tag: seq,
            registrationToken: token,
            path: "/v1/projects/p/messages:send",
            body: Array(#"{"message":{"token":"\#(token)"}}"#.utf8)
        )
    }

    // MARK: running

    /// Runs until the executor finishes or `limit` (virtual seconds) passes.
    mutating func run(until limit: Double = 100_000) {
        apply(machine.start(now: now))
        while report == nil, let next = agenda.popMin() {
            guard next.time <= limit else {
                agenda.insert(next)
                now = limit
                return
            }
            now = next.time
            handle(next.event)
        }
    }

    /// Stops the run as Ctrl-C does, then runs it to its end.
    mutating func stop(_ reason: SendReport.Stop) {
        apply(machine.stop(reason, now: now))
        run()
    }

    mutating func schedule(_ event: Event, at time: Double) {
        order += 1
        agenda.insert(Scheduled(time: time, order: order, event: event))
    }

    mutating func handle(_ event: Event) {
        switch event {
        case .planned:
            if let batch = plan.popFirst() {
                apply(machine.planned(.init(requests: batch), now: now))
            } else {
                apply(
                    machine.planEnded(
                        summary: PlanSummaryCounts(heldOut: 0, suppressed: 0, capped: 0, failed: 0),
                        failure: nil,
                        now: now
                    )
                )
            }
        case .recorded(let id):
            apply(machine.recorded(id: id, failure: nil, now: now))
        case .timer:
            armed.removeAll { $0 <= now }
            apply(machine.timerFired(now: now))
        case .answer(let id, let tag):
            guard let index = connections.firstIndex(where: { $0.id == id && $0.up }),
                let request = connections[index].open.removeValue(forKey: tag)
            else { return }
            let fcm = request.isFCM ? rules.fcmAnswer(request, now) : nil
            let reason = request.isFCM ? nil : rules.reason(request)
            let status = fcm?.0.code ?? reason?.status ?? 200
            let action = connections[index].state.streamClosed(status: status, reason: reason, now: deadline())
            writtenUnanswered.remove(tag)
            connections[index].answered += 1
            var answer = APNsOutcome(
                request: request,
                result: .response(status: status, reason: reason, timestamp: nil),
                latency: .milliseconds(10),
                connection: id
            )
            answer.fcmError = fcm?.0
            answer.retryAfter = fcm?.retryAfter
            apply(machine.transportEvent(.outcomes([answer]), now: now))
            if case .reportStreamLimit(let limit) = action {
                apply(machine.transportEvent(.streamLimit(connection: id, limit: limit), now: now))
            }
            if let lower = rules.lowerLimit, connections[index].answered == lower.afterAnswers {
                // The rest of its open streams are never answered: they reach their deadline.
                agenda = Heap(
                    agenda.unordered.filter { entry in
                        guard case .answer(let connection, _) = entry.event else { return true }
                        return connection != id
                    }
                )
                for tag in connections[index].open.keys { schedule(.expire(connection: id, tag: tag), at: now + 30) }
                if case .reportStreamLimit(let limit) = connections[index].state.settingsReceived(
                    maxConcurrentStreams: lower.to
                ) {
                    apply(machine.transportEvent(.streamLimit(connection: id, limit: limit), now: now))
                }
            }
            dispatch()
            endTransportIfDone()
        case .expire(let id, let tag):
            guard let index = connections.firstIndex(where: { $0.id == id && $0.up }),
                let request = connections[index].open.removeValue(forKey: tag)
            else { return }
            _ = connections[index].state.streamClosed(status: nil, reason: nil, now: deadline())
            writtenUnanswered.remove(tag)
            outcome(request, .timedOut, connection: id)
            dispatch()
            endTransportIfDone()
        case .drop(let id):
            guard let index = connections.firstIndex(where: { $0.id == id && $0.up }) else { return }
            connections[index].up = false
            let lost = connections[index].open.values.sorted { $0.tag < $1.tag }
            connections[index].open.removeAll()
            for request in lost { writtenUnanswered.remove(request.tag) }
            if !lost.isEmpty {
                apply(
                    machine.transportEvent(
                        .outcomes(
                            lost.map {
                                APNsOutcome(request: $0, result: .connectionLost, latency: .zero, connection: id)
                            }
                        ),
                        now: now
                    )
                )
            }
            apply(machine.transportEvent(.disconnected(connection: id, reason: "dropped"), now: now))
            if !transportStopping { schedule(.connect(connection: 0), at: now + 0.1) }
            endTransportIfDone()
        case .connect:
            if !transportStopping { connect() }
        }
    }

    mutating func outcome(_ request: APNsRequest, _ result: APNsOutcome.Result, connection: Int) {
        apply(
            machine.transportEvent(
                .outcomes([
                    APNsOutcome(request: request, result: result, latency: .milliseconds(10), connection: connection)
                ]),
                now: now
            )
        )
    }

    func deadline() -> NIODeadline { .uptimeNanoseconds(UInt64(now * 1e9) + 1_000_000_000) }

    mutating func connect() {
        nextConnectionID += 1
        let id = nextConnectionID
        var connection = Connection(
            id: id,
            state: ConnectionStateMachine(authentication: .providerToken, now: deadline())
        )
        apply(machine.transportEvent(.connected(connection: id), now: now))
        if rules.sendsSettings,
            case .reportStreamLimit(let limit) = connection.state.settingsReceived(
                maxConcurrentStreams: rules.streamLimit
            )
        {
            apply(machine.transportEvent(.streamLimit(connection: id, limit: limit), now: now))
        }
        connections.append(connection)
        dispatch()
    }

    /// Connections take what their budgets allow.
    mutating func dispatch() {
        for index in connections.indices where connections[index].up {
            while connections[index].state.budget > 0, let request = queue.popFirst() {
                connections[index].state.streamOpened(now: deadline())
                connections[index].handled += 1
                connections[index].open[request.tag] = request
                written[request.tag, default: []].append(now)
                writtenUnanswered.insert(request.tag)
                let id = connections[index].id
                if rules.answers {
                    schedule(.answer(connection: id, tag: request.tag), at: now + rules.latency)
                } else {
                    schedule(.expire(connection: id, tag: request.tag), at: now + 30)
                }
                if let dropAfter = rules.dropAfter, connections[index].handled == dropAfter {
                    schedule(.drop(connection: id), at: now + rules.latency / 2)
                }
            }
        }
    }

    mutating func endTransportIfDone() {
        guard transportStopping, !transportEnded else { return }
        guard connections.allSatisfy({ !$0.up || $0.open.isEmpty }) else { return }
        transportEnded = true
        apply(machine.transportEnded(now: now))
    }

    mutating func apply(_ actions: [ExecutorStateMachine.Action]) {
        for action in actions {
            switch action {
            case .pullPlan:
                schedule(.planned, at: now)
            case .record(let id, let requests, _):
                for request in requests {
                    inFlight.insert(request.tag)
                    journal[request.tag] = .inFlight(attempt: request.attempt + 1)
                }
                schedule(.recorded(id), at: now + rules.commitLatency)
            case .submit(let requests):
                if transportStopping {
                    apply(machine.transportEvent(.unsent(requests), now: now))
                } else {
                    queue.append(contentsOf: requests)
                    dispatch()
                }
            case .settle(let updates, let firstDeliveries, _, let invalid):
                deadTokens += invalid
                for update in updates {
                    journal[update.seq] = update.state
                    inFlight.remove(update.seq)
                }
                for delivery in firstDeliveries {
                    journal[delivery.seq] = .delivered(attempt: 1)
                    inFlight.remove(delivery.seq)
                }
            case .arm(let time):
                if let earliest = armed.min(), earliest <= time { break }
                armed.append(time)
                schedule(.timer, at: time)
            case .cancelPlan:
                plan.removeAll()
            case .shutdownTransport:
                transportStopping = true
                let left = Array(queue)
                queue.removeAll()
                if !left.isEmpty { apply(machine.transportEvent(.unsent(left), now: now)) }
                for index in connections.indices where connections[index].open.isEmpty {
                    connections[index].up = false
                }
                endTransportIfDone()
            case .finish(let report):
                self.report = report
            }
        }
    }

    /// The bound on possible duplicates after a `kill -9` now: the streams the connections allow
    /// plus one hand-over batch per connection.
    var duplicateBound: Int {
        connections.filter(\.up).reduce(0) { $0 + $1.state.streamLimit }
            + rules.connections * machine.configuration.handOverSize
    }
}
