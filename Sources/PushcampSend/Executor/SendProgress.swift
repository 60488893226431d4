import PushcampJournal
import PushcampModel

/// A moment of a running send, for the progress line.
public struct SendProgress: Sendable {
    /// Every recipient of the run with a row: those settled before a resume included.
    public var planned: Int
    public var planFinished: Bool
    /// The run's total counted ahead of the send while the plan itself is still being read (see
    /// `PlanProducer.start`); nil once the plan is finished, or before the count is.
    public var expected: Int?
    /// This process's outcomes.
    public var delivered: Int
    public var failed: Int
    /// This process's final outcomes per platform.
    public var platforms: [Platform: (delivered: Int, failed: Int)] = [:]
    /// Recipients a resumed run had settled before this process started.
    public var settledBefore = 0
    /// Answers a second over the last few seconds (`RateWindow`), when the caller measures it; the
    /// average since the start otherwise.
    public var recentRate: Double?
    /// Retries waiting for their due time, and when the next is due (seconds from now).
    public var waitingToRetry: Int
    public var nextRetryIn: Double?
    /// Recorded in flight and not answered yet: on the wire, queued for a stream, or being recorded.
    public var inFlight: Int
    /// Written to a connection and not answered yet: what is really on the wire.
    public var onTheWire: Int
    /// Planned, held back by the rate or by the connections' stream limits.
    public var queued: Int
    public var seconds: Double
    public var topFailures: [(String, Int)]
    /// Retries so far, by cause.
    public var retries: [(String, Int)]
    /// For a worker on a run cut into slices: the whole run, every worker's part included, as the
    /// journal had it at most a second ago; nil otherwise.
    public var run: RunWide?

    /// Where a run cut into slices stands across its workers.
    public struct RunWide: Sendable, Hashable {
        /// Recipients with a final answer, and the run's plan.
        public var answered: Int
        public var planned: Int
        public var slicesDone: Int
        public var slices: Int
        /// Slices held under a live lease: the workers sending now.
        public var slicesHeld: Int

        public init(answered: Int, planned: Int, slicesDone: Int, slices: Int, slicesHeld: Int) {
            self.answered = answered
            self.planned = planned
            self.slicesDone = slicesDone
            self.slices = slices
            self.slicesHeld = slicesHeld
        }
    }

    init(_ machine: ExecutorStateMachine, openStreams: Int, now: Double) {
        let report = machine.report
        planned = machine.planned
        planFinished = machine.planFinished
        expected = machine.planFinished ? nil : report.ahead?.planned
        delivered = report.delivered
        failed = report.failed
        platforms = report.platforms(latency: false).mapValues { ($0.delivered, $0.failedTotal) }
        settledBefore = machine.settledBefore
        waitingToRetry = machine.waitingToRetry
        nextRetryIn = machine.nextRetry.map { max(0, $0 - now) }
        inFlight = machine.unanswered
        onTheWire = openStreams
        queued = machine.queued
        seconds = now - machine.started
        topFailures = report.failures.sorted { $0.value > $1.value }.prefix(3).map { ($0.key, $0.value) }
        retries = report.retries.sorted { $0.value > $1.value }.prefix(3).map { ($0.key, $0.value) }
    }
}

extension SendProgress {
    /// This moment of one slice's send, after the slices the same worker sent before (`before`, their
    /// reports added up): what the worker did in all, so counts only rise from one slice to the next.
    func after(_ before: SendReport?) -> SendProgress {
        guard let before else { return self }
        var total = self
        total.planned += before.planned
        total.delivered += before.delivered
        total.failed += before.failed
        for (platform, answers) in before.platforms(latency: false) {
            let now = total.platforms[platform] ?? (0, 0)
            total.platforms[platform] = (now.delivered + answers.delivered, now.failed + answers.failedTotal)
        }
        total.seconds += before.seconds
        return total
    }
}

/// The answer rate of the last few seconds, from the counts a progress callback sees: what the
/// progress line shows, so it falls to 0 as soon as nothing is answered (a resume waiting for
/// retries) instead of decaying slowly like an average since the start.
public struct RateWindow: Sendable {
    public var seconds: Double
    private var samples: [(at: Double, answered: Int)] = []

    public init(seconds: Double = 5) {
        self.seconds = seconds
    }

    /// Adds the count `answered` at time `at` (seconds, rising) and returns the rate over the
    /// window; nil until two samples are apart.
    public mutating func add(at: Double, answered: Int) -> Double? {
        samples.append((at, answered))
        // Keep the newest sample at or before the window's start, so the window is always covered.
        while samples.count > 2, samples[1].at <= at - seconds { samples.removeFirst() }
        guard let first = samples.first, at > first.at else { return nil }
        return Double(answered - first.answered) / (at - first.at)
    }
}
