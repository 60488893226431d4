import PushcampJournal
import PushcampModel

/// What a send did: every planned push accounted for, by status and reason.
public struct SendReport: Sendable {
    public struct DeadToken: Sendable, Hashable {
        public var token: String
        public var reason: String
        /// APNs' timestamp (ms since 1970) for 410 answers.
        public var timestamp: Int64?
    }

    public enum Stop: Sendable, Equatable {
        /// Ctrl-C or SIGTERM: in-flight requests were drained.
        case interrupted
        /// APNs refused the credentials: the message says what to check.
        case credentials(String)
        /// No connection could be made.
        case cannotConnect(String)
        /// Reading the audience failed part-way.
        case planFailed(String)
        /// `pushcamp cancel` asked the run to stop: in-flight requests were drained.
        case cancelled
        /// The journal could not be written: without it a resume could send twice, so the send stops.
        case journal(String)
        /// The pool made no progress (no answers, no streams) for the stall timeout while work was pending.
        case stalled(String)
        /// The campaign's lease was taken over by another process, or could not be renewed in time:
        /// this process stopped sending, and the run is left to whoever holds the lease.
        case leaseLost(String)
    }

    /// What a resumed run had settled before this send picked it up.
    public struct Resumed: Sendable, Hashable {
        public var run: Int64
        public var delivered: Int
        public var failed: Int
    }

    public var campaign: String
    public var revision: String
    public var endpoint: String
    /// Pushes the plan produced (after holdout and pre-flight).
    public var planned = 0
    public var preflightFailed = 0
    public var heldOut = 0
    /// Recipients passed over because APNs called their token dead for the topic.
    public var suppressed = 0
    /// Recipients held back by the campaign's frequency cap.
    public var capped = 0
    /// Recipients with no App Store subscription the audience is joined to.
    public var unsubscribed = 0
    /// The subscription keys audience rows were joined to (runs of trigger firings).
    public var joinedSubscriptions: Set<String> = []
    /// Recipients not sent because of the campaign's timing, by reason (`quiet-hours`,
    /// `quiet-hours-expired`, `on-passed`).
    public var dropped: [String: Int] = [:]
    /// Whether the whole plan was read (false when the run stopped early).
    public var planFinished = false
    public var delivered = 0
    /// Final failures by reason.
    public var failures: [String: Int] = [:]
    /// Final answers by platform and HTTP status (200 included).
    public var statuses: [AnswerStatus: Int] = [:]
    /// Sends beyond the first, by cause.
    public var retries: [String: Int] = [:]
    /// Requests queued or waiting to retry when the run stopped: never answered.
    public var unsent = 0
    public var deadTokens: [DeadToken] = []
    public var deadTokensOmitted = 0
    public var latency = LatencyHistogram()
    public var seconds = 0.0
    public var stop: Stop?
    public var connectionsOpened = 0
    public var disconnects: [String: Int] = [:]
    public var providerTokensRenewed = 0
    public var highestStreamLimit = 0
    /// The journal's run, when the send kept one.
    public var run: Int64?
    public var resumed: Resumed?
    /// Answers that came after the journal failed and were never recorded: `delivered` above
    /// counts only what the journal holds, and a resume sends these recipients again.
    public var unrecorded: Unrecorded?

    public struct Unrecorded: Sendable, Hashable {
        public var delivered: Int
        public var failed: Int
    }
    /// Recipients sent again although APNs may have had their earlier request (in flight when a
    /// connection died or the process was killed).
    public var possibleDuplicates = 0
    /// Final outcomes per `APNsRequest.group` (variant, locale and platform), latencies per variant
    /// and platform (`group >> 16`), and the names; kept in the run's statistics for `pushcamp report`.
    public var groups: [UInt32: Readout] = [:]
    public var variantLatency: [UInt32: LatencyHistogram] = [:]
    public var groupNames: ReadoutGroups?
    /// Where the audience went, when the plan went through all of it in this send.
    public var funnel: PlanFunnel?
    /// The plan counted ahead of the send (`RunStats.ahead`), until the plan itself ends.
    public var ahead: PlanFunnel?
    /// Final answers per minute (`RunStats.answers`).
    public var answers = AnswerSeries()
    /// What the send went to.
    public var sent: SentFacts?
    /// How this send started (or resumed the run) and, once over, how it ended.
    public var events: [RunEvent] = []

    public static let deadTokenLimit = 100_000

    public init(campaign: String, revision: String, endpoint: String) {
        self.campaign = campaign
        self.revision = revision
        self.endpoint = endpoint
    }

    public var failed: Int { failures.values.reduce(0, +) }

    /// An HTTP status one provider answered.
    public struct AnswerStatus: Sendable, Hashable, Comparable {
        public var platform: Platform
        public var status: Int

        public static func < (lhs: AnswerStatus, rhs: AnswerStatus) -> Bool {
            lhs.platform != rhs.platform ? lhs.platform < rhs.platform : lhs.status < rhs.status
        }

        public init(_ platform: Platform, _ status: Int) {
            self.platform = platform
            self.status = status
        }
    }

    /// Final outcomes per platform: delivered, failures by reason and, when `latency`, the
    /// answers' latencies.
    public func platforms(latency: Bool = true) -> [Platform: Readout] {
        var platforms: [Platform: Readout] = [:]
        for (group, readout) in groups {
            let platform = ReadoutGroups.platform(of: group)
            platforms[platform] = platforms[platform, default: Readout()].adding(readout)
        }
        for (index, histogram) in variantLatency where latency {
            let platform = ReadoutGroups.platform(of: index << 16)
            platforms[platform] = platforms[platform, default: Readout()].adding(Readout(latency: histogram))
        }
        return platforms
    }

    /// What the journal keeps of this send beyond outcomes; `seconds` is the time spent so far.
    public func stats(seconds: Double) -> RunStats {
        var stats = RunStats()
        stats.latency = latency
        stats.retries = retries
        stats.seconds = seconds
        stats.connectionsOpened = connectionsOpened
        stats.disconnects = disconnects
        stats.plan = funnel
        stats.ahead = funnel == nil ? ahead : nil
        stats.answers = answers
        stats.sent = sent
        stats.events = events
        guard let names = groupNames else { return stats }
        func add(_ readout: Readout, to table: inout [String: Readout], as name: String?) {
            guard let name else { return }
            table[name] = table[name, default: Readout()].adding(readout)
        }
        for (group, readout) in groups {
            let (variant, locale, _) = names.names(of: group)
            add(readout, to: &stats.variants, as: variant)
            add(readout, to: &stats.locales, as: locale)
        }
        for (index, latency) in variantLatency {
            add(Readout(latency: latency), to: &stats.variants, as: names.names(of: index << 16).variant)
        }
        for (platform, readout) in platforms() { add(readout, to: &stats.platforms, as: platform.rawValue) }
        return stats
    }

    /// The finished send's statistics.
    public var stats: RunStats { stats(seconds: seconds) }

    /// How the send ended, for the run's timeline.
    public var endEvent: RunEvent.Kind {
        switch stop {
        case nil: return unsent == 0 && planFinished ? .finished : .stopped
        case .cancelled?: return .cancelled
        default: return .stopped
        }
    }

    /// Why it stopped, in a few words (never a secret: the messages name files and reasons).
    public var stopDetail: String? {
        switch stop {
        case nil: return unsent == 0 && planFinished ? nil : "ended with pushes unsent"
        case .interrupted?: return "Ctrl-C or SIGTERM"
        case .cancelled?: return "pushcamp cancel"
        case .credentials(let message)?: return "APNs refused the credentials: \(message)"
        case .cannotConnect(let message)?: return "could not connect: \(message)"
        case .planFailed(let message)?: return "the audience could not be read: \(message)"
        case .journal(let message)?: return "the journal could not be written: \(message)"
        case .stalled(let message)?: return "stalled: \(message)"
        case .leaseLost(let message)?: return "lost the campaign's lease: \(message)"
        }
    }
    public var answered: Int { delivered + failed }
    public var throughput: Double { seconds > 0 ? Double(answered) / seconds : 0 }
    public var totalRetries: Int { retries.values.reduce(0, +) }

    /// 0 every push delivered; 2 credentials refused, no connection or a stalled endpoint; 4 some pushes
    /// failed or were not sent; 5 another process took the run over; 130 interrupted.
    public var exitCode: Int32 {
        switch stop {
        case .interrupted?, .cancelled?: return 130
        case .credentials?, .cannotConnect?, .stalled?: return 2
        case .planFailed?, .journal?: return 1
        case .leaseLost?: return 5
        case nil: return failed > 0 || unsent > 0 || preflightFailed > 0 ? 4 : 0
        }
    }
}

extension SendReport {
    /// This send's report followed by `later`'s, of another slice of the same run sent by the same
    /// worker: outcomes, retries, latencies and time added up; the plan's facts and the stop are
    /// the later one's. Both use the worker's one `ReadoutGroups`, so their groups agree.
    public func adding(_ later: SendReport) -> SendReport {
        var sum = self
        sum.planned += later.planned
        sum.delivered += later.delivered
        sum.failures.merge(later.failures, uniquingKeysWith: +)
        sum.statuses.merge(later.statuses, uniquingKeysWith: +)
        sum.retries.merge(later.retries, uniquingKeysWith: +)
        sum.unsent += later.unsent
        let room = max(0, Self.deadTokenLimit - sum.deadTokens.count)
        sum.deadTokens += later.deadTokens.prefix(room)
        sum.deadTokensOmitted += later.deadTokensOmitted + max(0, later.deadTokens.count - room)
        sum.latency.add(later.latency)
        sum.seconds += later.seconds
        sum.stop = later.stop
        sum.connectionsOpened += later.connectionsOpened
        sum.disconnects.merge(later.disconnects, uniquingKeysWith: +)
        sum.providerTokensRenewed += later.providerTokensRenewed
        sum.highestStreamLimit = max(sum.highestStreamLimit, later.highestStreamLimit)
        sum.run = later.run ?? run
        sum.possibleDuplicates += later.possibleDuplicates
        sum.groups.merge(later.groups) { $0.adding($1) }
        for (group, latency) in later.variantLatency {
            sum.variantLatency[group, default: LatencyHistogram()].add(latency)
        }
        sum.planFinished = later.planFinished
        sum.groupNames = later.groupNames ?? groupNames
        return sum
    }
}
