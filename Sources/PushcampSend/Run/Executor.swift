import Foundation
import NIOCore
import PushcampAPNs
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
        return report.withLock { report in
            report.seconds = elapsed()
            report.planned = planned.load(ordering: .relaxed)
            // Whatever got no final answer was not sent (or its retry never went out): still queued, in
            // the feed, or waiting to retry when the run stopped.
            report.unsent = max(0, report.planned - report.delivered - report.failed)
            report.stop = control.withLock { $0.stop }
            return report
        }
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
            var batch: [APNsRequest] = []
            batch.reserveCapacity(batchSize)
            var tag = 0
            do {
                let summary = try planner.run { push in
                    batch.append(
                        APNsRequest(
                            tag: tag,
                            deviceToken: push.token,
                            apnsID: push.apnsID.description,
                            topic: push.topic,
                            pushType: push.pushType.rawValue,
                            priority: push.priority,
                            expiration: push.expirationHeader(sendTime: sendTime),
                            collapseID: push.collapseID,
                            payload: push.payload
                        )
                    )
                    tag += 1
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
    private func sendPlan() async {
        while let batch = await feed.next() {
            if control.withLock({ $0.stop != nil }) { break }
            let count = batch.count
            await pace(count)
            do {
                try await transport.submit(consume batch)
            } catch {
                break
            }
            control.withLock { $0.submitted += count }
        }
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
                try await transport.submit(due)
            } catch {
                control.withLock { $0.settled += due.count }
                return
            }
        }
    }

    private func pace(_ count: Int) async {
        let wait = bucket.withLock { $0.reserve(count, now: elapsed()) }
        if wait > 0 { try? await Task.sleep(for: .seconds(wait)) }
    }

    private func reportProgress(_ progress: @escaping @Sendable (SendProgress) -> Void) async {
        var next = options.progressInterval
        while !control.withLock({ $0.finished }) {
            try? await Task.sleep(for: .milliseconds(50))
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
                control.withLock { $0.settled += requests.count }
            }
        }
        control.withLock { $0.finished = true }
    }

    private func handle(_ outcomes: [APNsOutcome]) {
        let now = elapsed()
        var credentialReason: String?
        var retry: [(Double, APNsRequest)] = []
        var settled = 0
        report.withLock { report in
            for outcome in outcomes {
                if case .response = outcome.result {
                    report.latency.record(nanoseconds: outcome.latency.nanoseconds)
                }
                switch options.retry.decide(
                    outcome.result,
                    attempt: outcome.request.attempt,
                    random: Double.random(in: 0..<1)
                ) {
                case .delivered:
                    report.delivered += 1
                    report.statuses[200, default: 0] += 1
                    settled += 1
                case .failed(let reason):
                    fail(outcome, reason: reason, in: &report)
                    settled += 1
                case .credentials(let reason):
                    fail(outcome, reason: reason, in: &report)
                    settled += 1
                    credentialReason = reason
                case .retry(let after, let cause):
                    report.retries[cause, default: 0] += 1
                    var request = outcome.request
                    request.attempt += 1
                    retry.append((now + after, request))
                }
            }
        }
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
        if reason == "Unregistered" || reason == "ExpiredToken" || reason == "BadDeviceToken" {
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
