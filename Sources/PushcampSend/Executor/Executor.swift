import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import ServiceLifecycle
import Synchronization

/// Stage three of the pipeline: `Plan → Outcome stream → SendReport`, as a swift-service-lifecycle
/// `Service`.
///
/// A thin driver: `ExecutorStateMachine` decides, this carries its actions out. Everything that
/// happens (a planned batch, a journal commit, transport events, a timer, a stop) becomes an input
/// on one stream, handled one at a time by the task running `run()`; child tasks wait for the slow
/// parts (the planner, commits, the clock). Graceful shutdown (SIGINT, SIGTERM, SIGHUP in a
/// `ServiceGroup`) drains: nothing new is sent, in-flight requests are answered and
/// recorded, the journal is flushed, and the report says "interrupted".
public final class Executor: Service, Sendable {
    public struct Options: Sendable {
        /// Seconds between progress callbacks.
        public var progressInterval = 1.0
        /// Seconds between checks for `pushcamp cancel` and a failed journal.
        public var cancelCheckInterval = 0.5
        /// How often the run's statistics (latencies, retries) are saved to the journal while sending.
        public var statsInterval = 1.0

        public init() {}
    }

    enum Input: Sendable {
        case planned(ExecutorStateMachine.PlanBatch)
        case planEnded
        /// The plan's funnel, counted ahead of the send (see `PlanProducer.start`).
        case planCounted(PlanFunnel)
        case recorded(id: Int, failure: String?)
        case transport(TransportEvent)
        case transportEnded
        case timer
        case housekeeping
        case rate(Double)
        case stop(SendReport.Stop)
    }

    private let machine: Mutex<ExecutorStateMachine?>
    private let producer: PlanProducer
    private let transport: any PushTransport
    private let journal: RunJournal
    private let clock: any WallClock
    private let options: Options
    private let progress: @Sendable (SendProgress) -> Void
    private let inputs: AsyncStream<Input>
    private let input: AsyncStream<Input>.Continuation
    private let result = Mutex<SendReport?>(nil)

    init(
        machine: ExecutorStateMachine,
        producer: PlanProducer,
        transport: any PushTransport,
        journal: RunJournal,
        clock: any WallClock,
        options: Options = Options(),
        progress: @escaping @Sendable (SendProgress) -> Void = { _ in }
    ) {
        self.machine = Mutex(machine)
        self.producer = producer
        self.transport = transport
        self.journal = journal
        self.clock = clock
        self.options = options
        self.progress = progress
        (inputs, input) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// The report, once `run()` returned.
    public var report: SendReport? { result.withLock { $0 } }

    /// Sends at `rate` from now on: this worker's share of its run's rate changed.
    public func pace(at rate: Double) {
        input.yield(.rate(rate))
    }

    /// Sends the run to its end; the report is then `report`.
    public func run() async throws {
        _ = await send()
    }

    /// Sends the run to its end and returns the report.
    ///
    /// The loop runs on the transport's preferred executor (the connections' event loop), so answers
    /// reach the state machine without a thread hop; nothing it does there blocks: journal reads
    /// (cancel checks) run in a task on the global executor, and closing the journal waits after
    /// the loop has left the event loop.
    public func send() async -> SendReport {
        guard var machine = machine.withLock({ $0.take() }) else {
            preconditionFailure("an executor runs once")
        }
        producer.start(counted: { [input] funnel in input.yield(.planCounted(funnel)) })
        let final: SendReport?
        if let executor = transport.taskExecutor {
            final = await withTaskExecutorPreference(executor) { await drive(&machine) }
        } else {
            final = await drive(&machine)
        }
        producer.cancel()
        var report = final ?? SendReport(campaign: "", revision: "", endpoint: "")
        report = await close(report)
        result.withLock { $0 = report }
        return report
    }

    /// Feeds the state machine its inputs and carries out its actions until it finishes.
    private func drive(_ machine: inout ExecutorStateMachine) async -> SendReport? {
        var final: SendReport?
        await withGracefulShutdownHandler {
            // Discarding: a child task (a plan pull, a journal commit, a timer) is freed as soon as it
            // ends. A plain task group keeps every finished child until it is awaited, which grew
            // memory by about 1 KB per hand-over batch for the whole send.
            await withDiscardingTaskGroup { group in
                group.addTask {
                    // Events go straight into the loop's own input: one hand-over per answer batch.
                    await self.transport.run { [input = self.input] event in input.yield(.transport(event)) }
                    self.input.yield(.transportEnded)
                }
                group.addTask(executorPreference: globalConcurrentExecutor) { await self.housekeepingTicks() }
                // A slice's producer (it awaits the journal's pages), off the event loop, and the
                // journal's writer where its store says, or on the transport's event loop, named:
                // a child left without a preference ran on the shared pool, and a pool kept busy
                // (two threads blocked for 20 s) held a rehearsal's first commit back until its
                // lease lapsed. Both end below.
                group.addTask(executorPreference: globalConcurrentExecutor) { await self.producer.run() }
                group.addTask(executorPreference: journal.writerExecutor ?? transport.taskExecutor) {
                    await self.journal.write()
                }
                if let lease = journal.lease {
                    group.addTask(executorPreference: globalConcurrentExecutor) { await lease.keepRenewed() }
                }
                var timers = TimerSet()
                var nextProgress = clock.now() + options.progressInterval
                var nextStats = clock.now() + options.statsInterval
                var actions = machine.start(now: clock.now())
                var iterator = inputs.makeAsyncIterator()
                while final == nil {
                    for action in actions {
                        if case .finish(let report) = action { final = report }
                        perform(action, timers: &timers, group: &group)
                    }
                    if final != nil { break }
                    guard let next = await iterator.next() else {
                        // Cancelled: stop at once, keeping what was answered.
                        actions = machine.stop(.interrupted, now: clock.now())
                        // The report says so: a send cancelled with everything planned and
                        // requests unanswered is interrupted, never finished.
                        var report = machine.report
                        if report.stop == nil { report.stop = .interrupted }
                        final = report
                        for action in actions { perform(action, timers: &timers, group: &group) }
                        break
                    }
                    let now = clock.now()
                    switch next {
                    case .planned(let batch): actions = machine.planned(batch, now: now)
                    case .planEnded:
                        let (summary, failure) = producer.outcome
                        actions = machine.planEnded(summary: summary, failure: failure, now: now)
                    case .planCounted(let funnel):
                        machine.planCounted(funnel)
                        actions = []
                    case .recorded(let id, let failure): actions = machine.recorded(id: id, failure: failure, now: now)
                    case .transport(let event): actions = machine.transportEvent(event, now: now)
                    case .transportEnded: actions = machine.transportEnded(now: now)
                    case .timer:
                        timers.fired(now: now)
                        actions = machine.timerFired(now: now)
                    case .stop(let reason): actions = machine.stop(reason, now: now)
                    case .rate(let rate): actions = machine.rateChanged(to: rate, now: now)
                    case .housekeeping:
                        actions = []
                        if now >= nextStats {
                            nextStats = now + options.statsInterval
                            journal.saveStats(machine.report.stats(seconds: now - machine.started))
                        }
                        if now >= nextProgress {
                            nextProgress = now + options.progressInterval
                            progress(SendProgress(machine, openStreams: transport.openStreams, now: now))
                        }
                    }
                }
                // Before the other children are cancelled: the producer stops at its next batch, and
                // the writer commits what is queued (cancelled in the middle of a commit, it could not
                // tell whether that commit was made).
                producer.cancel()
                await journal.finishWriting()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.input.yield(.stop(.interrupted))
        }
        return final
    }

    private func perform(
        _ action: ExecutorStateMachine.Action,
        timers: inout TimerSet,
        group: inout DiscardingTaskGroup
    ) {
        switch action {
        case .pullPlan:
            group.addTask {
                if let batch = await self.producer.next() {
                    self.input.yield(.planned(batch))
                } else {
                    self.input.yield(.planEnded)
                }
            }
        case .record(let id, let requests, let possibleDuplicates):
            let input = self.input
            journal.dispatch(requests, possibleDuplicates: possibleDuplicates) { failure in
                // Refused for its fence: another process holds the run now (the first stop wins).
                if let failure, failure.code == .fenced { input.yield(.stop(.leaseLost(failure.message))) }
                input.yield(.recorded(id: id, failure: failure?.message))
            }
        case .submit(let requests):
            // APNs cannot check a fence: a send whose lease may have lapsed (a paused process that
            // just woke) hands nothing more to the wire.
            if let lost = journal.leaseProblem {
                input.yield(.transport(.unsent(requests)))
                input.yield(.stop(.leaseLost(lost)))
                return
            }
            let refused = transport.submit(requests)
            if !refused.isEmpty { input.yield(.transport(.unsent(refused))) }
        case .settle(let updates, let firstDeliveries, let possibleDuplicates, let invalidTokens):
            journal.settle(
                updates,
                firstDeliveries: firstDeliveries,
                possibleDuplicates: possibleDuplicates,
                invalidTokens: invalidTokens
            )
        case .arm(let deadline):
            guard timers.arm(deadline) else { return }
            group.addTask {
                do {
                    try await self.clock.sleep(until: deadline)
                    self.input.yield(.timer)
                } catch {
                    // Cancelled: the run is over.
                }
            }
        case .cancelPlan:
            producer.cancel()
        case .shutdownTransport:
            transport.shutdown()
        case .finish:
            break
        }
    }

    /// Wakes the loop for statistics and progress, and stops it when the lease lapses, `pushcamp
    /// cancel` asked or the journal failed: those checks read the journal, so they run here, off
    /// the event loop. The lease is checked at every step (no journal call: it could hang on a cut
    /// link), and the question to the journal has a deadline of its own, so a journal out of reach
    /// never holds back the stop the lease calls for.
    private func housekeepingTicks() async {
        let step = min(options.cancelCheckInterval, options.progressInterval, options.statsInterval, 0.25)
        var nextCancelCheck = clock.now() + options.cancelCheckInterval
        let journal = self.journal
        while true {
            do {
                try await clock.sleep(for: step)
            } catch {
                return
            }
            let now = clock.now()
            if let error = journal.error, error.code == .fenced {
                input.yield(.stop(.leaseLost(error.message)))
            } else if let lost = journal.leaseProblem {
                input.yield(.stop(.leaseLost(lost)))
            } else if now >= nextCancelCheck {
                nextCancelCheck = now + options.cancelCheckInterval
                if let error = journal.error {
                    input.yield(.stop(.journal(error.message)))
                } else if (try? await withDeadline(.seconds(2), { await journal.cancelRequested() })) == true {
                    input.yield(.stop(.cancelled))
                }
            }
            input.yield(.housekeeping)
        }
    }

    /// Records the statistics and the run's final status.
    private func close(_ report: SendReport) async -> SendReport {
        var result = report
        result.events.append(RunEvent(at: clock.now(), kind: result.endEvent, detail: result.stopDetail))
        journal.saveStats(result.stats)
        let status: RunStatus
        switch result.stop {
        case .cancelled?: status = .cancelled
        case .leaseLost?:
            // The run is another process's now (or will be): its status is not this one's to set.
            // What is queued is written if the journal takes it within a few seconds; it may be out
            // of reach (which may be why the lease lapsed), and the lease expires by itself.
            result.run = journal.run.id.rawValue
            let journal = self.journal
            _ = try? await withDeadline(.seconds(2)) {
                await journal.abandon()
                await journal.lease?.release()
            }
            return result
        case nil where result.planFinished && result.unsent == 0: status = .finished
        default: status = .interrupted
        }
        do {
            try await journal.close(status: status, planned: result.planFinished ? result.planned : nil)
        } catch {
            if result.stop == nil { result.stop = .journal(error.message) }
        }
        await journal.lease?.release()
        if journal.error != nil { result = await reconciled(result) }
        result.run = journal.run.id.rawValue
        return result
    }
}

extension Executor {
    /// After a journal failure the report says what the journal holds, not what was answered: the
    /// answers it could not record are counted apart, since a resume will send those recipients again.
    func reconciled(_ report: SendReport) async -> SendReport {
        guard let counts = try? await journal.store.counts(of: journal.run.id) else { return report }
        var result = report
        let recordedDelivered = max(0, counts.delivered - (report.resumed?.delivered ?? 0))
        let recordedFailed = max(0, counts.failed - (report.resumed?.failed ?? 0))
        result.unrecorded = SendReport.Unrecorded(
            delivered: max(0, report.delivered - recordedDelivered),
            failed: max(0, report.failed - recordedFailed)
        )
        result.delivered = min(report.delivered, recordedDelivered)
        return result
    }
}

/// The timers armed and not yet fired: a new one is only started when it is earlier than all of them.
struct TimerSet {
    private var pending: [Double] = []

    /// Whether a timer must be started for `deadline`.
    mutating func arm(_ deadline: Double) -> Bool {
        if let earliest = pending.min(), earliest <= deadline + 0.000_5 { return false }
        pending.append(deadline)
        return true
    }

    mutating func fired(now: Double) {
        pending.removeAll { $0 <= now + 0.000_5 }
    }
}
