/// A moment of a running send, for the progress line.
public struct SendProgress: Sendable {
    public var planned: Int
    public var planFinished: Bool
    public var delivered: Int
    public var failed: Int
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
        delivered = report.delivered
        failed = report.failed
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
        total.seconds += before.seconds
        return total
    }
}
