import DequeModule
import HeapModule
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal

/// The executor's decisions, without sockets, threads or clocks: a plain struct whose methods take
/// what happened (pushes planned, a journal commit, outcomes, connection events, a timer, a stop)
/// and return what to do (pull more of the plan, record a batch, submit it, settle answers, arm a
/// timer, shut the transport down, finish). `Executor` carries the actions out.
///
/// The rules:
/// - **Pacing.** Batches leave no sooner than the campaign's rate allows (`Pacer`): the first at
///   once, the rest evenly, at every rate from one a minute to the wire's limit. A batch is
///   `handOverSize` pushes: 5 ms worth at the rate, at least 1, at most `batchSize`.
/// - **Durable before written.** A batch is recorded in flight (a journal commit) before it is
///   submitted; commits overlap, submits keep their order, and a batch is submitted the moment its
///   commit is done, so the journal never changes when pushes leave.
/// - **The duplicate bound.** Requests recorded in flight and not yet answered never exceed the
///   connections' stream limits plus one hand-over batch per connection (`window`): after a
///   `kill -9`, only those can be possible duplicates.
/// - **Retries** wait in a deadline heap and go out through the same pacing.
/// - **Stops.** Refused credentials (`credentialStopAfter` times), TooManyProviderTokenUpdates (at
///   once), `connectFailureLimit` failed connects in a row, and a pool that answers nothing for
///   `stallTimeout` seconds while requests are pending stop the run with a reason.
public struct ExecutorStateMachine: Sendable {
    public struct Configuration: Sendable {
        /// Pushes per second across the pool.
        public var rate: Double
        /// The most FCM requests a second (the Firebase project's quota), paced on their own besides
        /// `rate`; nil for a campaign without Android recipients.
        public var fcmRate: Double? = nil
        public var retry: RetryPolicy
        /// For messages and reports: where the pushes go.
        public var endpoint: String
        public var connections: Int
        /// Requests per hand-over, at most.
        public var batchSize = 128
        /// Credential refusals (InvalidProviderToken, BadCertificate…) that stop the run.
        public var credentialStopAfter = 3
        /// Consecutive failed connection attempts that stop the run.
        public var connectFailureLimit = 6
        /// Seconds without any answer, while requests are pending, that stop the run.
        public var stallTimeout: Double = 60

        public init(rate: Double, retry: RetryPolicy, endpoint: String, connections: Int) {
            self.rate = rate
            self.retry = retry
            self.endpoint = endpoint
            self.connections = max(1, connections)
        }

        /// The batch actually used: 5 ms of pushes at the rate, so a low rate still sends evenly.
        public var handOverSize: Int {
            let fiveMilliseconds = rate / 200
            return fiveMilliseconds >= Double(batchSize) ? batchSize : max(1, Int(fiveMilliseconds))
        }
    }

    /// Part of the plan, as the planner hands it over.
    public struct PlanBatch: Sendable {
        /// To send now: first attempts, and requests a resumed run found in flight or unsent.
        public var requests: [APNsRequest]
        /// Retries a resumed run found waiting: they keep their due time (seconds since 1970).
        public var waiting: [(due: Double, request: APNsRequest)]
        /// How many of `requests` were in flight when the run stopped: APNs may have had them.
        public var possibleDuplicates: Int
        /// In flight when the run stopped, and not to be sent again (`retry.resend_unknown: false`):
        /// settled at once as failed, reason `unknown-not-resent`.
        public var abandoned: [APNsRequest] = []
        /// Not to be released before this moment (seconds since 1970): pushes due later
        /// (recipient-local schedules, quiet hours). The machine holds the batch until then and pulls
        /// nothing more, so the planner waits behind it; a stop drops it at once.
        public var notBefore: Double?

        public init(
            requests: [APNsRequest],
            waiting: [(due: Double, request: APNsRequest)] = [],
            possibleDuplicates: Int = 0
        ) {
            self.requests = requests
            self.waiting = waiting
            self.possibleDuplicates = possibleDuplicates
        }
    }

    public enum Action: Sendable {
        /// Ask the planner for the next batch (answered by `planned` or `planEnded`).
        case pullPlan
        /// Record `requests` in flight, durably (answered by `recorded(id:)`); `possibleDuplicates`
        /// of them are resumed requests whose earlier send may have arrived.
        case record(id: Int, requests: [APNsRequest], possibleDuplicates: Int)
        /// Hand recorded requests to the transport.
        case submit([APNsRequest])
        /// Queue recipients' new states for the journal (committed shortly after): those delivered on
        /// their first attempt by seq and token hash, every other one as an update.
        case settle(
            [RecipientUpdate],
            firstDeliveries: [FirstDelivery],
            possibleDuplicates: Int,
            invalidTokens: [InvalidToken]
        )
        /// Call `timerFired` at this time (seconds since 1970) or soon after.
        case arm(at: Double)
        /// Stop the planner: nothing more will be pulled.
        case cancelPlan
        /// Stop the transport: in-flight requests finish, queued ones come back as `unsent`.
        case shutdownTransport
        /// The run is over (answered by nothing: the driver ends).
        case finish(SendReport)
    }

    struct RetryEntry: Comparable {
        var due: Double
        var order: Int
        var request: APNsRequest

        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.due, lhs.order) < (rhs.due, rhs.order) }
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.due == rhs.due && lhs.order == rhs.order }
    }

    struct Recording {
        var id: Int
        var requests: [APNsRequest]
        var possibleDuplicates: Int
        var committed = false
    }

    enum PlanState { case idle, pulling, ended }

    public let configuration: Configuration
    public internal(set) var report: SendReport
    var pacer: Pacer
    /// FCM's quota, for the batches holding FCM requests.
    var fcmPacer: Pacer?
    /// Planned (or due) batches not yet released, with how many of each are possible duplicates.
    var ready = Deque<(requests: [APNsRequest], possibleDuplicates: Int)>()
    /// A planned batch whose moment has not come (`PlanBatch.notBefore`).
    var held: PlanBatch?
    var retries = Heap<RetryEntry>()
    var retryOrder = 0
    /// Released batches whose journal commit is under way, in release order.
    var recording = Deque<Recording>()
    var nextRecordingID = 0
    /// Recorded in flight, not yet answered or handed back.
    public internal(set) var unanswered = 0
    var plan = PlanState.idle
    public internal(set) var planned = 0
    /// Recipients a resumed run had settled before this process: counted in `planned`, not in the
    /// report's outcomes.
    public let settledBefore: Int
    public internal(set) var stop: SendReport.Stop?
    var transportStopping = false
    var transportFinished = false
    var finished = false
    var credentialFailures = 0
    var connectFailures = 0
    /// Connections up, and the stream limit each announced (absent before its first SETTINGS).
    var connected: Set<Int> = []
    var streamLimits: [Int: Int] = [:]
    var timeouts = 0
    /// Since when requests have been unanswered with no answer coming back: set when requests go
    /// out with none unanswered, and moved to the last answer while others are still unanswered
    /// (nil when none is). What stall detection measures; timeouts, lost connections and other
    /// connection events are no answer.
    var silentSince: Double?
    /// The whole run waits until then (FCM's project quota): nothing is released before it.
    var pausedUntil: Double?
    /// FCM accepted a message of this run: its payload's shape is valid, so an INVALID_ARGUMENT about
    /// a token is about the token.
    var fcmAccepted = false
    var started: Double

    public init(configuration: Configuration, report: SendReport, alreadySettled: Int = 0, now: Double) {
        self.configuration = configuration
        self.report = report
        self.pacer = Pacer(rate: configuration.rate)
        self.fcmPacer = configuration.fcmRate.map { Pacer(rate: $0) }
        self.planned = alreadySettled
        self.settledBefore = alreadySettled
        self.started = now
    }

    // MARK: events

    /// The run starts: pull the first batch.
    public mutating func start(now: Double) -> [Action] {
        pump(now: now)
    }

    /// The rate changed (a worker's share of its run's rate, re-read at each heartbeat): batches
    /// leave at the new rate from now on.
    public mutating func rateChanged(to rate: Double, now: Double) -> [Action] {
        guard rate > 0, rate.isFinite, rate != pacer.rate else { return [] }
        pacer.change(rate: rate)
        return pump(now: now)
    }

    /// The planner handed over a batch.
    public mutating func planned(_ batch: PlanBatch, now: Double) -> [Action] {
        plan = .idle
        planned += batch.requests.count + batch.waiting.count + batch.abandoned.count
        guard stop == nil else { return pump(now: now) }
        let abandoned = abandon(batch.abandoned)
        if let notBefore = batch.notBefore, notBefore > now {
            held = batch
        } else {
            take(batch)
        }
        return abandoned + pump(now: now)
    }

    /// Requests a resumed run found in flight that are not to go again: their answer is unknown
    /// for good, a final failure of Pushcamp's own.
    mutating func abandon(_ requests: [APNsRequest]) -> [Action] {
        guard !requests.isEmpty else { return [] }
        let reason = Self.notResent
        report.failures[reason, default: 0] += requests.count
        for request in requests { report.groups[request.group, default: Readout()].failed[reason, default: 0] += 1 }
        let updates = requests.map {
            RecipientUpdate(
                seq: $0.tag,
                token: $0.deviceToken,
                state: .failed(status: nil, reason: reason, apnsTimestamp: nil)
            )
        }
        return [.settle(updates, firstDeliveries: [], possibleDuplicates: 0, invalidTokens: [])]
    }

    /// The reason of a recipient whose request was in flight when its sender stopped, not sent
    /// again because the campaign says `retry.resend_unknown: false`.
    public static let notResent = "unknown-not-resent"

    /// A planned batch whose moment has come joins the line.
    mutating func take(_ batch: PlanBatch) {
        if !batch.requests.isEmpty { ready.append((batch.requests, batch.possibleDuplicates)) }
        for (due, request) in batch.waiting { scheduleRetry(request, due: due) }
    }

    /// The planner went through the whole audience (`summary`), or failed part-way (`failure`).
    public mutating func planEnded(summary: PlanSummaryCounts?, failure: String?, now: Double) -> [Action] {
        plan = .ended
        if let summary {
            report.heldOut = summary.heldOut
            report.suppressed = summary.suppressed
            report.capped = summary.capped
            report.unsubscribed = summary.unsubscribed
            report.joinedSubscriptions = summary.joinedSubscriptions
            report.funnel = summary.funnel
            report.preflightFailed = summary.failed
            report.dropped = summary.dropped
            report.planFinished = true
        }
        if let failure { return halt(.planFailed("reading the audience failed: \(failure)"), now: now) }
        return pump(now: now)
    }

    /// The plan's funnel, counted ahead of the send: the run's total and copy before the plan itself
    /// reaches its end (whose own funnel, once there, replaces it).
    public mutating func planCounted(_ funnel: PlanFunnel) {
        if report.funnel == nil { report.ahead = funnel }
    }

    /// The journal committed recording `id` (or could not: `failure`).
    public mutating func recorded(id: Int, failure: String?, now: Double) -> [Action] {
        var actions: [Action] = []
        if let failure { actions += halt(.journal(failure), now: now) }
        if let index = recording.firstIndex(where: { $0.id == id }) {
            recording[index].committed = failure == nil
            if failure != nil {
                // Not recorded: never sent, and nothing to record of it.
                unanswered -= recording[index].requests.count
                recording.remove(at: index)
            }
        }
        // Submitted in release order, each as soon as it and those before it are committed.
        while let first = recording.first, first.committed {
            recording.removeFirst()
            report.possibleDuplicates += first.possibleDuplicates
            if stop != nil || transportStopping {
                // Recorded in flight but stopped before it was handed over: never sent.
                unanswered -= first.requests.count
                actions.append(unsent(first.requests, now: now))
            } else {
                actions.append(.submit(first.requests))
            }
        }
        return actions + pump(now: now)
    }

    /// Something the transport reported.
    public mutating func transportEvent(_ event: TransportEvent, now: Double) -> [Action] {
        switch event {
        case .outcomes(let outcomes):
            return handle(outcomes, now: now) + pump(now: now)
        case .connected(let connection):
            connectFailures = 0
            connected.insert(connection)
            report.connectionsOpened += 1
        case .connectFailed(_, let error):
            connectFailures += 1
            if error.code == .credentials { return halt(.credentials(error.message), now: now) }
            if connectFailures >= configuration.connectFailureLimit {
                return halt(
                    .cannotConnect(
                        "cannot connect to \(configuration.endpoint) (\(connectFailures) attempts): \(error.message)"
                    ),
                    now: now
                )
            }
        case .disconnected(let connection, let reason):
            connected.remove(connection)
            streamLimits[connection] = nil
            report.disconnects[reason, default: 0] += 1
        case .streamLimit(let connection, let limit):
            streamLimits[connection] = limit
            report.highestStreamLimit = max(report.highestStreamLimit, limit)
        case .requeued(let count):
            report.retries["refused after GOAWAY (not processed)", default: 0] += count
        case .providerTokenRenewed(let minted):
            if minted { report.providerTokensRenewed += 1 }
            report.retries["ExpiredProviderToken", default: 0] += 1
        case .providerTokenReverted:
            report.retries["TooManyProviderTokenUpdates", default: 0] += 1
        case .accessTokenRefused:
            report.retries["UNAUTHENTICATED (access token renewed)", default: 0] += 1
        case .unsent(let requests):
            unanswered -= requests.count
            return [unsent(requests, now: now)] + pump(now: now)
        }
        return pump(now: now)
    }

    /// A timer armed earlier is due (or a stale one fired: harmless).
    public mutating func timerFired(now: Double) -> [Action] {
        if stop == nil, let silentSince, now - silentSince >= configuration.stallTimeout,
            unanswered > 0 || !retries.isEmpty || !ready.isEmpty
        {
            return halt(.stalled(stallMessage(now: now)), now: now)
        }
        return pump(now: now)
    }

    /// Ctrl-C, SIGTERM, `pushcamp cancel`, a journal that cannot be written.
    public mutating func stop(_ reason: SendReport.Stop, now: Double) -> [Action] {
        halt(reason, now: now)
    }

    /// The transport ended and reported everything it held.
    public mutating func transportEnded(now: Double) -> [Action] {
        transportFinished = true
        if stop == nil, !done {
            // It ended on its own with work left: nothing more can be sent.
            return halt(.cannotConnect("the connections to \(configuration.endpoint) ended"), now: now)
        }
        return pump(now: now)
    }

    // MARK: progress

    /// Requests planned or due but held back by the rate or the window.
    public var queued: Int { ready.reduce(0) { $0 + $1.requests.count } }
    public var waitingToRetry: Int { retries.count }
    /// When the next retry is due (seconds since 1970).
    public var nextRetry: Double? { retries.min?.due }
    public var planFinished: Bool { report.planFinished }

    /// How many requests may be recorded in flight and unanswered: the stream limits the
    /// connections announced plus one hand-over batch per connection.
    public var window: Int {
        let streams = streamLimits.values.reduce(0, +)
        return max(configuration.handOverSize, streams + configuration.connections * configuration.handOverSize)
    }

    // MARK: the pump

    /// Everything pending work is settled: the plan read, nothing queued, waiting or unanswered.
    var done: Bool {
        plan == .ended && held == nil && ready.isEmpty && retries.isEmpty && unanswered == 0 && recording.isEmpty
    }

    /// Releases what the rate and the window allow, pulls more of the plan, arms the next timer,
    /// and ends the run when nothing is left.
    mutating func pump(now: Double) -> [Action] {
        var actions: [Action] = []
        if finished { return actions }
        if stop != nil {
            if transportFinished && recording.isEmpty && plan != .pulling {
                finished = true
                actions.append(.finish(finalReport(now: now)))
            }
            return actions
        }
        if let batch = held, let notBefore = batch.notBefore, notBefore <= now {
            held = nil
            take(batch)
        }
        if let until = pausedUntil, until <= now { pausedUntil = nil }
        releaseDueRetries(now: now)
        var wake: Double? = held?.notBefore
        if let pausedUntil { wake = min(wake ?? pausedUntil, pausedUntil) }
        while pausedUntil == nil, let (batch, resent) = ready.first {
            guard unanswered == 0 || unanswered + batch.count <= window else { break }
            var at = pacer.earliest(now: now)
            // A batch with FCM requests also waits for the project's quota.
            let fcm = fcmPacer == nil ? 0 : batch.reduce(0) { $0 + ($1.isFCM ? 1 : 0) }
            if fcm > 0, let fcmPacer { at = max(at, fcmPacer.earliest(now: now)) }
            guard at <= now else {
                wake = min(wake ?? at, at)
                break
            }
            pacer.take(batch.count, now: now)
            if fcm > 0 { fcmPacer?.take(fcm, now: now) }
            if silentSince == nil { silentSince = now }
            ready.removeFirst()
            unanswered += batch.count
            nextRecordingID += 1
            recording.append(Recording(id: nextRecordingID, requests: batch, possibleDuplicates: resent))
            actions.append(.record(id: nextRecordingID, requests: batch, possibleDuplicates: resent))
        }
        if plan == .idle && held == nil && ready.count < 2 {
            plan = .pulling
            actions.append(.pullPlan)
        }
        if let due = retries.min?.due { wake = min(wake ?? due, due) }
        if let silentSince, unanswered > 0 || !retries.isEmpty || !ready.isEmpty {
            let stall = silentSince + configuration.stallTimeout
            wake = min(wake ?? stall, stall)
        }
        if let wake { actions.append(.arm(at: wake)) }
        if done && !transportStopping {
            transportStopping = true
            actions.append(.shutdownTransport)
        }
        if done && transportFinished {
            finished = true
            actions.append(.finish(finalReport(now: now)))
        }
        return actions
    }

    mutating func scheduleRetry(_ request: APNsRequest, due: Double) {
        retryOrder += 1
        retries.insert(RetryEntry(due: due, order: retryOrder, request: request))
    }

    /// Due retries join the front of the line, in hand-over batches.
    mutating func releaseDueRetries(now: Double) {
        var due: [APNsRequest] = []
        while let first = retries.min, first.due <= now {
            due.append(retries.removeMin().request)
        }
        guard !due.isEmpty else { return }
        let size = configuration.handOverSize
        var batches: [[APNsRequest]] = []
        var start = 0
        while start < due.count {
            batches.append(Array(due[start..<min(start + size, due.count)]))
            start += size
        }
        for batch in batches.reversed() { ready.prepend((batch, 0)) }
    }

    /// Stops the run: nothing more is planned or released; in-flight requests are answered.
    mutating func halt(_ reason: SendReport.Stop, now: Double) -> [Action] {
        guard stop == nil else { return pump(now: now) }
        stop = reason
        var actions: [Action] = [.cancelPlan]
        // Planned but not released (or held for their moment): nothing was recorded of them, a
        // resume plans them again.
        ready.removeAll()
        held = nil
        if !transportStopping {
            transportStopping = true
            actions.append(.shutdownTransport)
        }
        return actions + pump(now: now)
    }

    /// Taken for sending (recorded in flight), never written to a connection: a resume sends them
    /// as not sent, with no possible duplicate.
    func unsent(_ requests: [APNsRequest], now: Double) -> Action {
        .settle(
            requests.map { request in
                RecipientUpdate(
                    seq: request.tag,
                    token: request.deviceToken,
                    state: request.attempt > 0 ? .waiting(until: now, attempt: request.attempt) : .planned
                )
            },
            firstDeliveries: [],
            possibleDuplicates: 0,
            invalidTokens: []
        )
    }

    func finalReport(now: Double) -> SendReport {
        var result = report
        result.seconds = now - started
        result.planned = planned
        // Whatever got no final answer was not sent (or its retry never went out).
        let before = report.resumed.map { $0.delivered + $0.failed } ?? 0
        result.unsent = max(0, planned - before - report.delivered - report.failed)
        result.stop = stop
        return result
    }

    /// What a stalled pool did, for the message that stops the run.
    func stallMessage(now: Double) -> String {
        let seconds = Int(configuration.stallTimeout.rounded())
        let limits = connected.compactMap { streamLimits[$0] }
        let what: String
        if connected.isEmpty {
            what = "no connection is up"
        } else if limits.isEmpty {
            what = "the server completed TLS but sent no HTTP/2 SETTINGS"
        } else if limits.allSatisfy({ $0 == 0 }) {
            what = "the server allows 0 concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS 0)"
        } else if timeouts > 0 {
            what = "\(timeouts) request(s) got no answer before their deadline"
        } else {
            what = "requests are open and unanswered"
        }
        return "\(configuration.endpoint) answered nothing for \(seconds) s with \(unanswered) request(s) pending: "
            + "\(what); stopped (--stall-timeout sets how long to wait)"
    }
}

/// What the executor needs of a plan's summary.
public struct PlanSummaryCounts: Sendable {
    public var heldOut: Int
    public var suppressed: Int
    public var capped: Int
    public var failed: Int
    /// Not sent by the campaign's timing: quiet hours, or a local time already passed (by reason).
    public var dropped: [String: Int]
    /// Recipients with no subscription the audience is joined to.
    public var unsubscribed = 0
    /// The subscription keys rows were joined to (trigger runs).
    public var joinedSubscriptions: Set<String> = []
    /// Where the audience went; nil for a resumed run's partial pass.
    public var funnel: PlanFunnel?

    public init(heldOut: Int, suppressed: Int, capped: Int, failed: Int, dropped: [String: Int] = [:]) {
        self.heldOut = heldOut
        self.suppressed = suppressed
        self.capped = capped
        self.failed = failed
        self.dropped = dropped
    }
}
