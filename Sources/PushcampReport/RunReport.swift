import PushcampJournal
import PushcampModel

/// Everything `pushcamp report` says about one run, read back from the journal: every recipient's
/// outcome by status and reason, retries, possible duplicates, latency percentiles, answers per
/// second and how long it took. A value: the renderers (text, JSON, Markdown, HTML) are pure.
public struct RunReport: Sendable {
    /// Final outcomes and where the rest stand, one entry per (state, status, reason).
    public struct Outcome: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable, CaseIterable {
            case delivered
            case failed
            /// To be sent again (a retry's due time, or held back by refused credentials).
            case waiting
            /// Sent with no answer recorded (in flight when the run stopped).
            case unknown
            /// Planned but never sent (the run stopped first).
            case unsent
        }

        public var kind: Kind
        /// APNs' HTTP status: 200 for delivered, the failure's status, nil when no answer came.
        public var status: Int?
        /// The provider's reason (or Pushcamp's, like `connection-lost`) for failures.
        public var reason: String?
        public var count: Int
        /// Whose answer it is, for failures: the platform of the recipients' tokens.
        public var platform: Platform?

        public init(kind: Kind, status: Int?, reason: String?, count: Int, platform: Platform? = nil) {
            self.kind = kind
            self.status = status
            self.reason = reason
            self.count = count
            self.platform = platform
        }

        /// How people call it: `delivered`, `410 Unregistered`, `waiting to retry`…
        public var label: String {
            switch kind {
            case .delivered: return "delivered"
            case .failed: return [status.map(String.init), reason].compactMap { $0 }.joined(separator: " ")
            case .waiting: return "waiting to retry"
            case .unknown: return "no answer (in flight at stop)"
            case .unsent: return "not sent"
            }
        }
    }

    /// Latency percentiles, in seconds.
    public struct Latency: Sendable, Hashable {
        public var count: UInt64
        public var p50: Double
        public var p90: Double
        public var p99: Double
        public var p999: Double
        public var max: Double
    }

    /// A run cut into slices (`journal.slice`): where its slices stand, and what each worker sent.
    public struct Slices: Sendable, Hashable {
        /// A worker, by the slices it held last (a slice taken over counts for its last holder).
        public struct Worker: Sendable, Hashable {
            /// Its lease owner: `host/pid/random`.
            public var owner: String
            public var slices = 0
            /// Requests answered (retries included) and the time spent sending, over its slices.
            public var answers: UInt64 = 0
            public var seconds = 0.0
            public var perSecond: Double { seconds > 0 ? Double(answers) / seconds : 0 }
        }

        public var total: Int
        public var done: Int
        /// Held under a lease that has not expired.
        public var leased: Int
        /// Neither done nor held: waiting for a worker (or for its last holder's lease to expire).
        public var free: Int { max(0, total - done - leased) }
        public var workers: [Worker]
    }

    public var run: RunRecord
    /// Read from the rehearsal journal: sent to the local simulator, never to APNs.
    public var rehearsal = false
    /// "Run 3" or "Rehearsal run 3", as titles say it.
    public var runTitle: String { (rehearsal ? "Rehearsal run " : "Run ") + "\(run.id)" }
    public var outcomes: [Outcome]
    public var stats: RunStats
    /// The campaign file as the reader knows it (relative to the project when inside it).
    public var fileDisplay: String?
    public var perSecond: [AnswersInSecond]
    /// The recipients that may have got the notification twice, by name (seq order).
    public var duplicates: [PossibleDuplicate] = []
    /// Nil for a run sent whole.
    public var slices: Slices?
    /// Engagement recorded against the run (`pushcamp engagement import`), per event, variant and locale.
    public var engagement: [EngagementCount] = []
    /// The assignment the run kept at send time (every recipient kept), the readout's denominators.
    public var assignment: AssignmentHeader?
    /// The readout's leading event per arm over time since the run's start: its chart.
    public var engagementOverTime: EngagementOverTime?

    /// The campaign's `readout:` as the run kept it (the defaults for a run that kept none).
    public var readoutSpec: ReadoutSpec { assignment?.readout ?? stats.plan?.readout ?? ReadoutSpec() }

    /// The engagement readout; nil when nothing was recorded.
    public var readout: EngagementReadout? { EngagementReadout(report: self, counts: engagement) }

    public init(run: RunRecord, outcomes: [Outcome], stats: RunStats, perSecond: [AnswersInSecond]) {
        self.run = run
        self.outcomes = outcomes
        self.stats = stats
        self.perSecond = perSecond
    }

    /// Reads run `id` from `journal`; nil when there is no such run.
    public static func load(
        _ id: RunID,
        from journal: any JournalStore & SliceStore & EngagementStore
    ) async throws -> RunReport? {
        guard let run = try await journal.run(id) else { return nil }
        let stats = try await journal.stats(of: id) ?? RunStats()
        // Failures by platform, status and reason from their rows (the journal keeps each token as
        // its provider takes it, and only APNs' are hexadecimal alone), and everything else from
        // the journal's counts; or, once the run was pruned, what it kept of them.
        let pruned: PrunedRun
        if let kept = stats.pruned {
            pruned = kept
        } else {
            pruned = try await PrunedRun.read(id, from: journal, at: 0)
        }
        let counts = pruned.counts
        var outcomes = [Outcome(kind: .delivered, status: 200, reason: nil, count: counts.delivered)]
        outcomes += pruned.failures.map {
            Outcome(kind: .failed, status: $0.status, reason: $0.reason, count: $0.count, platform: $0.platform)
        }
        .sorted { $0.count != $1.count ? $0.count > $1.count : $0.label < $1.label }
        outcomes.append(Outcome(kind: .waiting, status: nil, reason: nil, count: counts.waiting))
        outcomes.append(Outcome(kind: .unknown, status: nil, reason: nil, count: counts.unknown + counts.inFlight))
        let neverSent = counts.planned + max(0, (run.planned ?? 0) - counts.total)
        outcomes.append(Outcome(kind: .unsent, status: nil, reason: nil, count: neverSent))
        var report = RunReport(run: run, outcomes: outcomes, stats: stats, perSecond: pruned.perSecond)
        report.duplicates = try await journal.possibleDuplicates(of: id)
        report.slices = try await slices(of: id, in: journal)
        report.engagement = try await journal.engagementCounts(of: id)
        report.assignment = try await journal.assignmentHeader(of: id).flatMap { $0.isComplete ? $0 : nil }
        if !report.engagement.isEmpty,
            let event = EngagementReadout.events(spec: report.readoutSpec, counts: report.engagement).first
        {
            let width = EngagementOverTime.width(window: report.readoutSpec.window)
            report.engagementOverTime = EngagementOverTime(
                event: event,
                width: width,
                buckets: try await journal.engagementOverTime(of: id, event: event, from: run.startedAt, width: width)
            )
        }
        return report
    }

    /// Where run `id`'s slices stand, and each worker's part (unless `workers` is false: that
    /// reads every slice's statistics); nil when it is sent whole.
    public static func slices(
        of id: RunID,
        in journal: any SliceStore,
        workers perWorker: Bool = true
    ) async throws
        -> Slices?
    {
        let statuses = try await journal.slices(of: id)
        guard !statuses.isEmpty else { return nil }
        var workers: [String: Slices.Worker] = [:]
        for status in statuses where perWorker {
            guard let owner = status.lease?.owner else { continue }
            let stats = try await journal.stats(of: status.slice)
            workers[owner, default: Slices.Worker(owner: owner)].slices += 1
            workers[owner]?.answers += stats?.latency.count ?? 0
            workers[owner]?.seconds += stats?.seconds ?? 0
        }
        return Slices(
            total: statuses.count,
            done: statuses.count { $0.done },
            leased: try await journal.liveSlices(of: id),
            workers: workers.values.sorted { $0.owner < $1.owner }
        )
    }

    // MARK: Derived figures

    public func count(_ kind: Outcome.Kind) -> Int {
        outcomes.lazy.filter { $0.kind == kind }.reduce(0) { $0 + $1.count }
    }

    public var delivered: Int { count(.delivered) }
    public var failed: Int { count(.failed) }
    /// Recipients the report accounts for: the plan's when known, else those the journal has.
    public var recipients: Int { outcomes.reduce(0) { $0 + $1.count } }

    /// Final failures by reason, most first.
    public var failures: [Outcome] { outcomes.filter { $0.kind == .failed } }

    /// Whether the run reached Android phones: then outcomes and the readout say each one's platform.
    public var showsPlatforms: Bool {
        stats.platforms["android"] != nil || (stats.plan?.platforms?["android"] ?? 0) > 0
    }

    /// `outcome`'s label, its platform first when the run reached both (`Android 404 UNREGISTERED`).
    public func label(of outcome: Outcome) -> String {
        guard showsPlatforms, outcome.kind == .failed, let platform = outcome.platform else { return outcome.label }
        return "\(platform.title) \(outcome.label)"
    }

    public var latency: Latency? {
        let histogram = stats.latency
        guard let p50 = histogram.percentile(0.5), let p90 = histogram.percentile(0.9),
            let p99 = histogram.percentile(0.99), let p999 = histogram.percentile(0.999), let max = histogram.maximum
        else { return nil }
        return Latency(count: histogram.count, p50: p50, p90: p90, p99: p99, p999: p999, max: max)
    }

    /// From the run's start to its last update (its end, for a finished run), gaps between resumed
    /// sends included.
    public var wallSeconds: Double { max(0, run.updatedAt - run.startedAt) }

    /// Final answers per second of sending.
    public var averagePerSecond: Double {
        stats.seconds > 0 ? Double(delivered + failed) / stats.seconds : 0
    }

    /// The busiest second.
    public var peak: AnswersInSecond? {
        perSecond.max { $0.delivered + $0.failed < $1.delivered + $1.failed }
    }

    /// Answers per second from the first answer's second to the last, `width` points at most: each
    /// point averages `secondsPerPoint` seconds (1 unless the run is longer than `width` seconds);
    /// `failed` the failures among them, `retried` the answers to retries; `gaps` the spans of points (first, last) inside a pause of
    /// more than 5 seconds with no answer at all (an interruption, retries' back-off, quiet hours).
    public func series(
        width: Int
    ) -> (
        start: Int64, secondsPerPoint: Int, points: [Double], failed: [Double], retried: [Double],
        gaps: [ClosedRange<Int>]
    ) {
        guard let first = perSecond.first?.second, let last = perSecond.last?.second else {
            return (0, 1, [], [], [], [])
        }
        // Seconds from a damaged journal can be anything: a span beyond a century draws nothing.
        let (difference, overflow) = last.subtractingReportingOverflow(first)
        guard !overflow, (0..<3_153_600_000).contains(difference) else { return (first, 1, [], [], [], []) }
        let span = Int(difference) + 1
        let step = max(1, (span + width - 1) / width)
        var points = [Double](repeating: 0, count: (span + step - 1) / step)
        var failed = points
        var retried = points
        var gaps: [ClosedRange<Int>] = []
        var previous: Int64?
        for second in perSecond {
            let index = Int(second.second - first) / step
            points[index] += Double(second.delivered + second.failed)
            failed[index] += Double(second.failed)
            retried[index] += Double(second.retried)
            if let previous, second.second - previous > 5 {
                let from = Int(previous - first) / step
                let to = Int(second.second - first) / step
                if to - from > 1 { gaps.append((from + 1)...(to - 1)) }
            }
            previous = second.second
        }
        let scale = { (values: [Double]) in values.map { $0 / Double(step) } }
        return (first, step, scale(points), scale(failed), scale(retried), gaps)
    }

    /// Latency counts between log-spaced bounds (ten per decade from 100 µs: 1, 1.25, 1.6, 2, 2.5,
    /// 3.2, 4, 5, 6.3, 8), trimmed to the recorded range: (lower bound µs, upper bound µs, count).
    /// Enough bins to show a distribution's shape even when answers cluster within one decade.
    public var latencyDistribution: [(from: UInt64, to: UInt64, count: UInt64)] {
        var bounds: [UInt64] = [0]
        var decade: UInt64 = 100
        while decade <= 100_000_000 {
            bounds += [100, 125, 160, 200, 250, 320, 400, 500, 630, 800].map { decade * $0 / 100 }
            decade *= 10
        }
        bounds.append(LatencyHistogram.highestMicroseconds + 1)
        let counts = stats.latency.counts(between: bounds)
        guard let first = counts.firstIndex(where: { $0 > 0 }), let last = counts.lastIndex(where: { $0 > 0 }) else {
            return []
        }
        return (first...last).map { (bounds[$0], bounds[$0 + 1], counts[$0]) }
    }
}
