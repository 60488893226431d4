import Foundation
import NIOCore
import PushcampAPNs
import PushcampJournal
import PushcampModel
import PushcampPlanner
import Synchronization

/// Stage three of the pipeline: `Plan → Outcome stream → SendReport`.
///
/// A planning thread expands the campaign into a bounded feed; the sender takes batches at the
/// campaign's rate (a token bucket) and hands them to the transport, whose connections add their own
/// stream budgets; outcomes come back as events and go through `RetryPolicy`: delivered, failed, or
/// queued to be sent again after a delay. Credentials refused a few times, or no connection at all,
/// stop the run; `stop()` (Ctrl-C) drains in-flight requests and stops cleanly.
public final class Executor: Sendable {
    public struct Options: Sendable {
        /// Pushes per second across the pool.
        public var rate: Double
        public var retry: RetryPolicy
        /// Credential refusals (InvalidProviderToken, BadCertificate…) that stop the run.
        public var credentialStopAfter = 3
        /// Consecutive failed connection attempts that stop the run.
        public var connectFailureLimit = 6
        /// Seconds between progress callbacks.
        public var progressInterval = 1.0
        /// For reports: where the pushes go.
        public var endpoint: String
        /// Requests per hand-over between stages, at most.
        public var batchSize = 128
        /// Where every recipient's state is recorded; nil sends without a journal (no resume).
        public var journal: RunJournal?
        /// A resumed run's state: settled recipients are skipped, pending ones picked up.
        public var resume = ResumePoint()
        /// Seconds between checks for `pushcamp cancel`.
        public var cancelCheckInterval = 0.5
        /// Batches being recorded in the journal while an earlier one is submitted.
        public var journalDepth = 8
        /// How often the run's statistics (latencies, retries) are saved to the journal while sending.
        public var statsInterval = 1.0
        /// A replay's recipients (plan seqs): only these are sent; nil sends the whole plan.
        public var only: SeqSet?

        /// The batch actually used: small enough that a low rate still sends evenly (1/20 s of pushes).
        var handOverSize: Int { min(batchSize, max(1, Int(rate / 20))) }

        public init(rate: Double, retry: RetryPolicy, endpoint: String) {
            self.rate = rate
            self.retry = retry
            self.endpoint = endpoint
        }
    }

    private struct Control {
        var stop: SendReport.Stop?
        var planDone = false
        var finished = false
        var submitted = 0
        var settled = 0
        var credentialFailures = 0
        var connectFailures = 0
        var retryQueue: [(due: Double, request: APNsRequest)] = []
    }

    private let plannerBox: Mutex<Planner?>
    private let options: Options
    private let transport: any PushTransport
    private let feed = PlanFeed(capacity: 16)
    private let control = Mutex(Control())
    private let report: Mutex<SendReport>
    private let bucket: Mutex<TokenBucket>
    private let planned = Atomic<Int>(0)
    private let started = ContinuousClock.now

    public init(planner: sending Planner, transport: any PushTransport, options: Options) {
        let campaign = planner.campaign
        self.report = Mutex(SendReport(campaign: campaign.id, revision: campaign.revision, endpoint: options.endpoint))
        self.plannerBox = Mutex(planner)
        self.transport = transport
        self.options = options
        self.bucket = Mutex(TokenBucket(rate: options.rate, burst: Double(options.handOverSize)))
        let resume = options.resume
        if resume.settled.count > 0 || !resume.pending.isEmpty {
            report.withLock { report in
                report.resumed = SendReport.Resumed(
                    run: options.journal?.run.id.rawValue ?? 0,
                    delivered: resume.delivered,
                    failed: resume.failed
                )
            }
        }
        planned.store(resume.settled.count, ordering: .relaxed)
    }

    /// Ctrl-C / SIGTERM: stop taking new pushes, let in-flight ones finish.
    public func stop() {
        halt(.interrupted)
    }

    /// Runs the send to its end and reports; `progress` is called every `progressInterval` seconds.
    public func run(progress: @escaping @Sendable (SendProgress) -> Void = { _ in }) async -> SendReport {
        startPlanning()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.transport.run() }
            group.addTask { await self.consumeEvents() }
            group.addTask { await self.sendPlan() }
            group.addTask { await self.sendRetries() }
            group.addTask { await self.reportProgress(progress) }
        }
        var result = report.withLock { report in
            report.seconds = elapsed()
            report.planned = planned.load(ordering: .relaxed)
            // Whatever got no final answer was not sent (or its retry never went out): still queued, in
            // the feed, or waiting to retry when the run stopped.
            let before = report.resumed.map { $0.delivered + $0.failed } ?? 0
            report.unsent = max(0, report.planned - before - report.delivered - report.failed)
            report.stop = control.withLock { $0.stop }
            return report
        }
        if let journal = options.journal {
            journal.saveStats(result.stats)
            let status: RunStatus
            switch result.stop {
            case .cancelled?: status = .cancelled
            case nil where result.planFinished && result.unsent == 0: status = .finished
            default: status = .interrupted
            }
            do {
                try journal.close(status: status, planned: result.planFinished ? result.planned : nil)
            } catch {
                if result.stop == nil { result.stop = .journal(error.message) }
            }
            result.run = journal.run.id.rawValue
        }
        return result
    }

    private func elapsed() -> Double {
        let duration = ContinuousClock.now - started
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    // MARK: stages

    /// The planning thread: renders pushes and hands them over in batches (blocking when the feed is full).
    private func startPlanning() {
        let thread = Thread { [self] in
            guard
                let planner = plannerBox.withLock({ box in
                    defer { box = nil }
                    return box
                })
            else { return }
            let sendTime = Timestamp(secondsSince1970: Int64(Date().timeIntervalSince1970))
            let batchSize = options.handOverSize
            let resume = options.resume
            let only = options.only
            var batch: [APNsRequest] = []
            batch.reserveCapacity(batchSize)
            do {
                let skip: (Int) -> Bool =
                    only.map { only in { seq in !only.contains(seq) || resume.settled.contains(seq) } }
                    ?? resume.settled.contains
                let summary = try planner.run(skipping: skip) { (push: PlannedPush) in
                    var request = APNsRequest(
                        tag: push.seq,
                        deviceToken: push.token,
                        apnsID: push.apnsID.description,
                        topic: push.topic,
                        pushType: push.pushType.rawValue,
                        priority: push.priority,
                        expiration: push.expirationHeader(sendTime: sendTime),
                        collapseID: push.collapseID,
                        payload: push.payload
                    )
                    switch resume.pending.isEmpty ? nil : resume.pending[push.seq] {
                    case .waiting(let until, let attempts)?:
                        // A retry keeps its due time across the restart.
                        request.attempt = attempts
                        let due = elapsed() + max(0, until - Date().timeIntervalSince1970)
                        planned.add(1, ordering: .relaxed)
                        control.withLock { control in
                            control.submitted += 1
                            control.retryQueue.append((due: due, request: request))
                        }
                        return
                    case .unknown(let attempts)?:
                        request.attempt = attempts
                    case .unsent?, nil:
                        break
                    }
                    batch.append(request)
                    if batch.count == batchSize {
                        planned.add(batch.count, ordering: .relaxed)
                        guard feed.put(batch) else { throw CancellationError() }
                        batch.removeAll(keepingCapacity: true)
                    }
                }
                if !batch.isEmpty {
                    planned.add(batch.count, ordering: .relaxed)
                    _ = feed.put(batch)
                }
                report.withLock { report in
                    report.heldOut = summary.heldOut
                    report.suppressed = summary.suppressed
                    report.capped = summary.capped
                    report.preflightFailed = summary.failed
                    report.planFinished = true
                }
            } catch is CancellationError {
                // Stopped: the report says the plan was not finished.
            } catch {
                halt(.planFailed("reading the audience failed: \(error)"))
            }
            feed.finish()
        }
        thread.name = "pushcamp-planner"
        thread.start()
    }

    /// Feeds planned batches to the transport at the campaign's rate.
    ///
    /// With a journal, each batch is recorded in flight (committed) before it is submitted. Waiting
    /// for each commit before taking the next batch would leave the connections idle during every
    /// commit, so up to `journalDepth` batches are being recorded while the oldest is submitted: the
    /// writer commits them together and the transport's queue stays full. Batches recorded but not
    /// submitted when the run stops are recorded as not sent.
    private func sendPlan() async {
        var recording: [(batch: [APNsRequest], resent: Int, commit: Task<Void, any Error>)] = []
        var stopped: Bool { control.withLock { $0.stop != nil } }

        /// Submits the oldest recorded batch; false when sending must end.
        func submitOldest() async -> Bool {
            let (batch, resent, commit) = recording.removeFirst()
            do {
                try await commit.value
            } catch {
                halt(.journal((error as? JournalError)?.message ?? "\(error)"))
                return false
            }
            if resent > 0 { report.withLock { $0.possibleDuplicates += resent } }
            // Recorded in flight but stopped before it was handed over: never sent.
            guard !stopped else {
                recordUnsent(batch)
                return false
            }
            do {
                try await transport.submit(batch)
            } catch {
                // The transport is closing (the run stopped).
                recordUnsent(batch)
                return false
            }
            control.withLock { $0.submitted += batch.count }
            return true
        }

        var sending = true
        while sending, let batch = await feed.next() {
            if stopped { break }
            await pace(batch.count)
            // Stopped while waiting for the throttle: nothing of this batch was recorded or sent.
            if stopped { break }
            guard let journal = options.journal else {
                do {
                    try await transport.submit(batch)
                } catch {
                    break
                }
                control.withLock { $0.submitted += batch.count }
                continue
            }
            // Only a resume puts later attempts in the plan's feed: requests whose first send was in
            // flight when the run stopped.
            let resent = batch.reduce(0) { $0 + ($1.attempt > 0 ? 1 : 0) }
            let commit = Task { try await journal.dispatch(batch, possibleDuplicates: resent) }
            recording.append((batch, resent, commit))
            if recording.count >= options.journalDepth { sending = await submitOldest() }
        }
        while sending, !recording.isEmpty { sending = await submitOldest() }
        // Stopped with batches still being recorded: once recorded, they are recorded as not sent.
        for (batch, _, commit) in recording where (try? await commit.value) != nil { recordUnsent(batch) }
        control.withLock { $0.planDone = true }
        finishIfDone()
    }

    /// Sends retries when they are due.
    private func sendRetries() async {
        while true {
            let now = elapsed()
            let (due, finished, stopped) = control.withLock { control -> ([APNsRequest], Bool, Bool) in
                guard control.stop == nil else { return ([], control.finished, true) }
                var due: [APNsRequest] = []
                control.retryQueue.removeAll { entry in
                    guard entry.due <= now, due.count < 256 else { return false }
                    due.append(entry.request)
                    return true
                }
                return (due, control.finished, false)
            }
            if finished || stopped { return }
            if due.isEmpty {
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            await pace(due.count)
            do {
                try await options.journal?.dispatch(due)
                try await transport.submit(due)
            } catch {
                if let error = error as? JournalError { halt(.journal(error.message)) }
                control.withLock { $0.settled += due.count }
                return
            }
        }
    }

    private func pace(_ count: Int) async {
        let wait = bucket.withLock { $0.reserve(count, now: elapsed()) }
        if wait > 0 { try? await Task.sleep(for: .seconds(wait)) }
    }

    /// Progress callbacks, and the checks that stop a run from outside: `pushcamp cancel`, a
    /// journal that can no longer be written.
    private func reportProgress(_ progress: @escaping @Sendable (SendProgress) -> Void) async {
        var next = options.progressInterval
        var nextCancelCheck = options.cancelCheckInterval
        var nextStatsSave = options.statsInterval
        while !control.withLock({ $0.finished }) {
            try? await Task.sleep(for: .milliseconds(50))
            if let journal = options.journal, elapsed() >= nextCancelCheck {
                nextCancelCheck = elapsed() + options.cancelCheckInterval
                if let error = journal.error {
                    halt(.journal(error.message))
                } else if journal.cancelRequested() {
                    halt(.cancelled)
                }
            }
            if let journal = options.journal, elapsed() >= nextStatsSave {
                nextStatsSave = elapsed() + options.statsInterval
                let stats = report.withLock { $0.stats(seconds: elapsed()) }
                journal.saveStats(stats)
            }
            guard elapsed() >= next else { continue }
            next += options.progressInterval
            if control.withLock({ $0.finished }) { return }
            progress(snapshot())
        }
    }

    private func snapshot() -> SendProgress {
        let (submitted, settled, waiting) = control.withLock { ($0.submitted, $0.settled, $0.retryQueue.count) }
        return report.withLock { report in
            SendProgress(
                planned: planned.load(ordering: .relaxed),
                planFinished: report.planFinished,
                submitted: submitted,
                delivered: report.delivered,
                failed: report.failed,
                waitingToRetry: waiting,
                inFlight: submitted - settled - waiting,
                seconds: elapsed(),
                topFailures: report.failures.sorted { $0.value > $1.value }.prefix(3).map { ($0.key, $0.value) }
            )
        }
    }

    // MARK: outcomes

    private func consumeEvents() async {
        for await event in transport.events {
            switch event {
            case .outcomes(let outcomes):
                handle(outcomes)
            case .connected:
                control.withLock { $0.connectFailures = 0 }
                report.withLock { $0.connectionsOpened += 1 }
            case .connectFailed(_, let error):
                let failures = control.withLock { control in
                    control.connectFailures += 1
                    return control.connectFailures
                }
                if error.code == .credentials {
                    halt(.credentials(error.message))
                } else if failures >= options.connectFailureLimit {
                    halt(
                        .cannotConnect("cannot connect to \(options.endpoint) (\(failures) attempts): \(error.message)")
                    )
                }
            case .disconnected(_, let reason):
                report.withLock { $0.disconnects[reason, default: 0] += 1 }
            case .streamLimit(_, let limit):
                report.withLock { $0.highestStreamLimit = max($0.highestStreamLimit, limit) }
            case .requeued(let count):
                report.withLock { $0.retries["refused after GOAWAY (not processed)", default: 0] += count }
            case .providerTokenRenewed(let minted):
                report.withLock { report in
                    if minted { report.providerTokensRenewed += 1 }
                    report.retries["ExpiredProviderToken", default: 0] += 1
                }
            case .unsent(let requests):
                recordUnsent(requests)
                control.withLock { $0.settled += requests.count }
            }
        }
        control.withLock { $0.finished = true }
    }

    /// Taken for sending (recorded in flight), never written to a connection: a resume sends them
    /// as not sent, with no possible duplicate.
    private func recordUnsent(_ requests: [APNsRequest]) {
        options.journal?.settle(
            requests.map { request in
                RecipientUpdate(
                    seq: request.tag,
                    token: request.deviceToken,
                    state: request.attempt > 0
                        ? .waiting(until: Date().timeIntervalSince1970, attempt: request.attempt)
                        : .planned
                )
            }
        )
    }

    private func handle(_ outcomes: [APNsOutcome]) {
        let now = elapsed()
        let journal = options.journal
        let wallClock = journal == nil ? 0 : Date().timeIntervalSince1970
        var updates: [RecipientUpdate] = []
        if journal != nil { updates.reserveCapacity(outcomes.count) }
        func note(_ outcome: APNsOutcome, _ state: RecipientState) {
            if journal != nil {
                updates.append(
                    RecipientUpdate(seq: outcome.request.tag, token: outcome.request.deviceToken, state: state)
                )
            }
        }
        var credentialReason: String?
        var dead: [InvalidToken] = []
        var retry: [(Double, APNsRequest)] = []
        var settled = 0
        var lostInFlight = 0
        report.withLock { report in
            for outcome in outcomes {
                if case .response = outcome.result {
                    report.latency.record(nanoseconds: outcome.latency.nanoseconds)
                }
                // The journal counts sends, this one included.
                let attempt = outcome.request.attempt + 1
                switch options.retry.decide(
                    outcome.result,
                    attempt: outcome.request.attempt,
                    random: Double.random(in: 0..<1)
                ) {
                case .delivered:
                    report.delivered += 1
                    report.statuses[200, default: 0] += 1
                    settled += 1
                    note(outcome, .delivered(attempt: attempt))
                case .failed(let reason):
                    fail(outcome, reason: reason, in: &report)
                    settled += 1
                    var stamp: Int64?
                    if case .response(_, _, let timestamp) = outcome.result { stamp = timestamp }
                    note(outcome, .failed(status: outcome.status, reason: reason, apnsTimestamp: stamp))
                    if journal != nil && InvalidToken.reasons.contains(reason) {
                        // Remembered for the topic: later campaigns skip the token.
                        dead.append(
                            InvalidToken(
                                topic: outcome.request.topic,
                                token: outcome.request.deviceToken,
                                reason: reason,
                                apnsTimestamp: stamp,
                                seenAt: wallClock
                            )
                        )
                    }
                case .credentials(let reason):
                    fail(outcome, reason: reason, in: &report)
                    settled += 1
                    credentialReason = reason
                    // Not final for the journal: once the credentials are fixed, a resume sends it.
                    note(outcome, .waiting(until: wallClock, attempt: attempt))
                case .retry(let after, let cause):
                    report.retries[cause, default: 0] += 1
                    var request = outcome.request
                    request.attempt += 1
                    retry.append((now + after, request))
                    if outcome.status == nil {
                        // Connection lost or timed out in flight: APNs may have it, so the next send is
                        // a possible duplicate.
                        lostInFlight += 1
                        note(outcome, .unknown(attempt: attempt))
                    } else {
                        note(outcome, .waiting(until: wallClock + after, attempt: attempt))
                    }
                }
            }
            report.possibleDuplicates += lostInFlight
        }
        journal?.settle(updates, possibleDuplicates: lostInFlight, invalidTokens: dead)
        let stopNow = control.withLock { control -> Bool in
            control.settled += settled
            if credentialReason != nil { control.credentialFailures += 1 }
            if control.stop != nil {
                // Stopped: retries are not sent (the report counts them as not sent).
                control.settled += retry.count
                return false
            }
            control.retryQueue.append(contentsOf: retry.map { (due: $0.0, request: $0.1) })
            return control.credentialFailures >= options.credentialStopAfter
        }
        if stopNow, let reason = credentialReason { halt(.credentials(Self.explain(reason))) }
        finishIfDone()
    }

    private func fail(_ outcome: APNsOutcome, reason: String, in report: inout SendReport) {
        report.failures[reason, default: 0] += 1
        if let status = outcome.status { report.statuses[status, default: 0] += 1 }
        if InvalidToken.reasons.contains(reason) {
            if report.deadTokens.count < SendReport.deadTokenLimit {
                var timestamp: Int64?
                if case .response(_, _, let stamp) = outcome.result { timestamp = stamp }
                report.deadTokens.append(
                    .init(token: outcome.request.deviceToken, reason: reason, timestamp: timestamp)
                )
            } else {
                report.deadTokensOmitted += 1
            }
        }
    }

    /// What to check when APNs refuses the credentials.
    static func explain(_ reason: String) -> String {
        switch reason {
        case "InvalidProviderToken":
            return "APNs refused the provider token (InvalidProviderToken): check team_id and key_id in pushcamp.yaml "
                + "and that the .p8 key is theirs and not revoked"
        case "MissingProviderToken":
            return "APNs got no provider token (MissingProviderToken): configure token credentials or a certificate"
        case "BadCertificate":
            return "APNs refused the client certificate (BadCertificate): check the certificate file and password"
        case "BadCertificateEnvironment":
            return "the certificate is for the other environment (BadCertificateEnvironment): check `environment`"
        case "ExpiredProviderToken":
            return "APNs calls a freshly minted provider token expired: check this machine's clock"
        default:
            return "APNs refused the credentials (\(reason)): check the app's credentials in pushcamp.yaml"
        }
    }

    // MARK: ending

    private func halt(_ reason: SendReport.Stop) {
        let first = control.withLock { control in
            guard control.stop == nil else { return false }
            control.stop = reason
            return true
        }
        guard first else { return }
        feed.cancel()
        transport.shutdown()
    }

    private func finishIfDone() {
        let done = control.withLock { control in
            control.stop == nil && control.planDone && control.settled == control.submitted
                && control.retryQueue.isEmpty
        }
        if done { transport.shutdown() }
    }
}

/// A moment of a running send, for the progress line.
public struct SendProgress: Sendable {
    public var planned: Int
    public var planFinished: Bool
    public var submitted: Int
    public var delivered: Int
    public var failed: Int
    public var waitingToRetry: Int
    public var inFlight: Int
    public var seconds: Double
    public var topFailures: [(String, Int)]
}
