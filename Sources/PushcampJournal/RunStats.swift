import Foundation
import Histogram
import PushcampModel

/// Request latencies (from writing a request to its answer) in an HdrHistogram: microsecond units,
/// three significant digits, up to an hour. Fixed memory whatever the count; stored per run as its
/// non-empty buckets.
public struct LatencyHistogram: Sendable, Equatable {
    public static let highestMicroseconds: UInt64 = 3_600_000_000
    private var histogram = Histogram<UInt64>(
        lowestDiscernibleValue: 1,
        highestTrackableValue: highestMicroseconds,
        numberOfSignificantValueDigits: .three
    )

    public init() {}

    public var count: UInt64 { histogram.totalCount }

    public mutating func record(nanoseconds: Int64) {
        record(microseconds: UInt64(max(1, nanoseconds / 1000)), count: 1)
    }

    mutating func record(microseconds: UInt64, count: UInt64) {
        histogram.record(min(microseconds, Self.highestMicroseconds), count: count)
    }

    /// The latency (seconds) at or under which `fraction` (0…1) of the recorded ones fall; nil when empty.
    public func percentile(_ fraction: Double) -> Double? {
        guard count > 0 else { return nil }
        return Double(histogram.valueAtPercentile(fraction * 100)) / 1_000_000
    }

    /// The largest recorded latency (seconds); nil when empty.
    public var maximum: Double? { count > 0 ? Double(histogram.max) / 1_000_000 : nil }

    public mutating func add(_ other: LatencyHistogram) {
        histogram.add(other.histogram)
    }

    /// The non-empty buckets, lowest first: each bucket's highest value in microseconds and its count.
    public var buckets: [(microseconds: UInt64, count: UInt64)] {
        histogram.recordedValues().map { ($0.value, UInt64($0.count)) }
    }

    /// Counts per range `bounds[i]..<bounds[i+1]` (microseconds, ascending), for drawing the
    /// distribution: each recorded value in exactly one range (by the value HdrHistogram keeps for
    /// it), so no answer is counted twice where a bound falls inside one of its buckets.
    public func counts(between bounds: [UInt64]) -> [UInt64] {
        guard bounds.count > 1 else { return [] }
        var counts = [UInt64](repeating: 0, count: bounds.count - 1)
        for (value, count) in buckets {
            // The last bound at or below the value.
            var low = 0
            var high = bounds.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if bounds[middle] <= value { low = middle } else { high = middle - 1 }
            }
            if bounds[low] <= value, low < counts.count { counts[low] += count }
        }
        return counts
    }

    public static func == (lhs: LatencyHistogram, rhs: LatencyHistogram) -> Bool {
        lhs.buckets.elementsEqual(rhs.buckets) { $0 == $1 }
    }
}

/// What a run's sends measured, beyond each recipient's outcome: kept in the journal (replaced about
/// once a second while sending) so `pushcamp report` has it after the process is gone. A resumed run
/// adds to what the runs before it stored.
public struct RunStats: Sendable, Equatable {
    /// Latencies of the answered requests, retries included.
    public var latency = LatencyHistogram()
    /// Sends beyond a recipient's first, by cause (an APNs reason, `timeout`, `connection-lost`…).
    public var retries: [String: Int] = [:]
    /// Time spent sending, summed over the processes that sent the run.
    public var seconds = 0.0
    public var connectionsOpened = 0
    /// Connections that ended, by why.
    public var disconnects: [String: Int] = [:]
    /// Final outcomes per variant (with latency) and per locale: the A/B readout.
    public var variants: [String: Readout] = [:]
    public var locales: [String: Readout] = [:]
    /// Final outcomes per platform (`ios`, `android`), with latency: what each provider answered.
    public var platforms: [String: Readout] = [:]
    /// Where the audience went, from the run's plan (its first complete pass).
    public var plan: PlanFunnel?
    /// The plan as counted ahead of the send, while the plan itself was not read to its end: its
    /// total and the copy of each variant in the run's first seconds. Pushes were not rendered to
    /// be counted (but for the copies), so one pre-flight would refuse for its own recipient (a
    /// missing attribute, a payload too large) counts as planned here.
    public var ahead: PlanFunnel?
    /// What the run sent to: the app, its topic and host, the throttle.
    public var sent: SentFacts?
    /// When each send of the run started or resumed, and how it ended: the report's timeline.
    public var events: [RunEvent] = []
    /// Final answers per minute (wider buckets for long runs): the console's chart of the run.
    public var answers = AnswerSeries()
    /// What the run kept of its recipients' rows when `pushcamp journal prune` dropped them; nil
    /// while it has them.
    public var pruned: PrunedRun?

    public init() {}

    public var totalRetries: Int { retries.values.reduce(0, +) }

    /// These stats followed by `later`'s (a resumed run's).
    public func adding(_ later: RunStats) -> RunStats {
        var sum = self
        sum.latency.add(later.latency)
        sum.retries.merge(later.retries, uniquingKeysWith: +)
        sum.seconds += later.seconds
        sum.connectionsOpened += later.connectionsOpened
        sum.disconnects.merge(later.disconnects, uniquingKeysWith: +)
        sum.variants.merge(later.variants) { $0.adding($1) }
        sum.locales.merge(later.locales) { $0.adding($1) }
        sum.platforms.merge(later.platforms) { $0.adding($1) }
        sum.plan = plan ?? later.plan
        sum.ahead = later.ahead ?? ahead
        sum.sent = later.sent ?? sent
        sum.events = events + later.events
        sum.answers = answers.adding(later.answers)
        sum.pruned = pruned ?? later.pruned
        return sum
    }
}

extension RunRecord {
    /// How many the run sends to: its plan's total once the plan was read to its end, else the
    /// total its send counted ahead of the wire (`RunStats.ahead`), else nil.
    public func total(stats: RunStats?) -> Int? {
        planned ?? stats?.plan?.planned ?? stats?.ahead?.planned
    }
}

/// One moment of a run's life, for the report's timeline: a send started or resumed it, or
/// stopped, with why.
public struct RunEvent: Sendable, Hashable, Decodable {
    public enum Kind: String, Sendable, Hashable, Decodable {
        case started, resumed, stopped, cancelled, finished
    }

    /// Seconds since 1970.
    public var at: Double
    public var kind: Kind
    /// Why it stopped (`Ctrl-C or SIGTERM`, `APNs refused the credentials: …`), or what a resume
    /// found (`after a crash or kill`).
    public var detail: String?

    public init(at: Double, kind: Kind, detail: String? = nil) {
        self.at = at
        self.kind = kind
        self.detail = detail
    }

    /// A run keeps at most this many: a run resumed a thousand times keeps the first and the last.
    public static let kept = 200
}

/// Final outcomes of one variant or locale.
public struct Readout: Sendable, Equatable {
    public var delivered = 0
    /// Final failures by reason.
    public var failed: [String: Int] = [:]
    /// Latencies of the answers (kept per variant, not per locale).
    public var latency: LatencyHistogram?

    public init(delivered: Int = 0, failed: [String: Int] = [:], latency: LatencyHistogram? = nil) {
        self.delivered = delivered
        self.failed = failed
        self.latency = latency
    }

    public var failedTotal: Int { failed.values.reduce(0, +) }

    public func adding(_ later: Readout) -> Readout {
        var sum = self
        sum.delivered += later.delivered
        sum.failed.merge(later.failed, uniquingKeysWith: +)
        if let other = later.latency {
            var latency = sum.latency ?? LatencyHistogram()
            latency.add(other)
            sum.latency = latency
        }
        return sum
    }
}

/// The plan's audience funnel, as `plan` prints it, and what it planned per variant and locale.
public struct PlanFunnel: Sendable, Equatable, Codable {
    public var read = 0
    public var invalid = 0
    public var duplicates = 0
    public var filteredOut = 0
    public var excluded = 0
    public var noSubscription = 0
    public var suppressed = 0
    public var capped = 0
    public var heldOut = 0
    /// Refused by pre-flight checks.
    public var refused = 0
    public var planned = 0
    /// The holdout share, in basis points.
    public var holdoutBasisPoints = 0
    public var variants: [String: Int] = [:]
    public var locales: [String: Int] = [:]
    /// Planned per platform (`ios`, `android`); nil in runs recorded before it was kept.
    public var platforms: [String: Int]?
    /// What assigned variants and the holdout: `device`, or `person (user_id)` when the audience
    /// names a user key; nil in runs recorded before it was kept.
    public var assignmentUnit: String?
    /// The first pushes planned, as sent (headers and payload): what `pushcamp diff` compares a
    /// campaign's plan of now with. Nil in runs recorded before they were kept.
    public var samples: [PlanSample]?
    /// The campaign's description, as planned.
    public var description: String?
    /// The first push of each variant and locale, without its token: the copy each was sent, for
    /// the top of the report. Nil in runs recorded before it was kept.
    public var copies: [PlanSample]?
    /// The campaign's `readout:` as planned: declared before the send, read with the run.
    public var readout: ReadoutSpec?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case read, invalid, duplicates, excluded, suppressed, capped, refused, planned, variants, locales, samples
        case description, copies, platforms, readout
        case filteredOut = "filtered_out"
        case noSubscription = "no_subscription"
        case heldOut = "held_out"
        case holdoutBasisPoints = "holdout_basis_points"
        case assignmentUnit = "assignment_unit"
    }
}

/// One planned push as it goes on the wire: its device token, variant and locale, its headers (in
/// the order `plan` prints them) and its payload.
public struct PlanSample: Sendable, Equatable, Codable {
    public struct Header: Sendable, Equatable, Codable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var token: String
    public var variant: String
    public var locale: String?
    public var headers: [Header]
    public var payload: String

    public init(token: String, variant: String, locale: String?, headers: [Header], payload: String) {
        self.token = token
        self.variant = variant
        self.locale = locale
        self.headers = headers
        self.payload = payload
    }
}

/// What a run sent to.
public struct SentFacts: Sendable, Equatable, Codable {
    public var app: String
    public var topic: String
    /// `production`, `sandbox`, or `rehearsal`.
    public var environment: String
    public var endpoint: String
    /// The campaign's throttle, as written (`2000/s`).
    public var rate: String
    public var connections: Int
    /// The campaign's description, kept from the run's first second (the plan's funnel keeps it
    /// too, but only once the whole audience was read); nil in runs recorded before.
    public var description: String?
    /// The `apns-push-type` and `apns-priority` of the run's pushes, kept by a run planned into a
    /// snapshot: with the topic, what a node of another revision needs to finish the run as it was
    /// planned (nil in runs recorded before, and runs sent whole).
    public var pushType: String?
    public var priority: Int?

    enum CodingKeys: String, CodingKey {
        case app, topic, environment, endpoint, rate, connections, description, priority
        case pushType = "push_type"
    }

    public init(
        app: String,
        topic: String,
        environment: String,
        endpoint: String,
        rate: String,
        connections: Int,
        description: String? = nil
    ) {
        self.app = app
        self.topic = topic
        self.environment = environment
        self.endpoint = endpoint
        self.rate = rate
        self.connections = connections
        self.description = description
    }
}

extension RunStats: Decodable {
    private enum Keys: String, CodingKey {
        case latency, retries, seconds
        case connectionsOpened = "connections_opened"
        case disconnects, variants, locales, platforms, plan, ahead, sent, events, answers, pruned
    }

    /// A pruned run's figures as stored: `{"at": t, "counts": {…}, "failures": [{…}],
    /// "per_second": [[second, delivered, failed, retried]…]}`.
    private struct StoredPruned: Decodable {
        struct Counts: Decodable {
            var planned, delivered, failed, waiting, unknown: Int
            var inFlight: Int
            enum CodingKeys: String, CodingKey {
                case planned, delivered, failed, waiting, unknown
                case inFlight = "in_flight"
            }
        }
        struct Failure: Decodable {
            var platform: Platform
            var status: Int?
            var reason: String
            var count: Int
        }
        var at: Double
        var counts: Counts
        var failures: [Failure]
        var perSecond: [[Int64]]
        enum CodingKeys: String, CodingKey {
            case at, counts, failures
            case perSecond = "per_second"
        }
    }

    /// An answer series as stored: `{"width": 60, "first": 29_000_000, "counts": [n…]}`.
    private struct StoredSeries: Decodable {
        var width: Int64
        var first: Int64?
        var counts: [Int]
    }

    /// A readout as stored: `{"delivered": n, "failed": {reason: n}, "latency": [[µs, n]…]}`.
    private struct StoredReadout: Decodable {
        var delivered: Int
        var failed: [String: Int]
        var latency: [[UInt64]]?
    }

    public init(from decoder: any Decoder) throws {
        // Every number is range-checked: a damaged or forged row is reported as corrupt, never trapped on.
        let container = try decoder.container(keyedBy: Keys.self)
        let most = 1_000_000_000_000  // a trillion answers, retries or connections
        func check(_ valid: Bool, _ key: Keys) throws {
            guard valid else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "out of range")
            }
        }
        for pair in try container.decode([[UInt64]].self, forKey: .latency) where pair.count == 2 {
            try check(pair[1] <= UInt64(most) && latency.count <= UInt64(most), .latency)
            latency.record(microseconds: pair[0], count: pair[1])
        }
        retries = try container.decode([String: Int].self, forKey: .retries)
        try check(retries.values.allSatisfy { (0...most).contains($0) }, .retries)
        seconds = try container.decode(Double.self, forKey: .seconds)
        try check(seconds.isFinite && (0...1e10).contains(seconds), .seconds)
        connectionsOpened = try container.decode(Int.self, forKey: .connectionsOpened)
        try check((0...most).contains(connectionsOpened), .connectionsOpened)
        disconnects = try container.decode([String: Int].self, forKey: .disconnects)
        try check(disconnects.values.allSatisfy { (0...most).contains($0) }, .disconnects)
        // Absent from journals written before readouts existed.
        for key in [Keys.variants, .locales, .platforms] {
            var readouts: [String: Readout] = [:]
            for (name, stored) in try container.decodeIfPresent([String: StoredReadout].self, forKey: key) ?? [:] {
                try check((0...most).contains(stored.delivered), key)
                try check(stored.failed.values.allSatisfy { (0...most).contains($0) }, key)
                var readout = Readout(delivered: stored.delivered, failed: stored.failed)
                if let pairs = stored.latency {
                    var latency = LatencyHistogram()
                    for pair in pairs where pair.count == 2 {
                        try check(pair[1] <= UInt64(most), key)
                        latency.record(microseconds: pair[0], count: pair[1])
                    }
                    readout.latency = latency
                }
                readouts[name] = readout
            }
            switch key {
            case .variants: variants = readouts
            case .locales: locales = readouts
            default: platforms = readouts
            }
        }
        plan = try container.decodeIfPresent(PlanFunnel.self, forKey: .plan)
        ahead = try container.decodeIfPresent(PlanFunnel.self, forKey: .ahead)
        if let stored = try container.decodeIfPresent(StoredSeries.self, forKey: .answers) {
            guard let series = AnswerSeries(width: stored.width, first: stored.first, counts: stored.counts) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .answers,
                    in: container,
                    debugDescription: "out of range"
                )
            }
            answers = series
        }
        sent = try container.decodeIfPresent(SentFacts.self, forKey: .sent)
        if let stored = try container.decodeIfPresent(StoredPruned.self, forKey: .pruned) {
            let numbers = [
                stored.counts.planned, stored.counts.inFlight, stored.counts.delivered, stored.counts.failed,
                stored.counts.waiting, stored.counts.unknown,
            ]
            try check(
                stored.at.isFinite && numbers.allSatisfy { (0...most).contains($0) }
                    && stored.failures.allSatisfy { (0...most).contains($0.count) }
                    && stored.perSecond.allSatisfy {
                        $0.count == 4 && $0.dropFirst().allSatisfy { (0...Int64(most)).contains($0) }
                    },
                .pruned
            )
            var counts = RecipientCounts()
            (counts.planned, counts.inFlight, counts.delivered) = (numbers[0], numbers[1], numbers[2])
            (counts.failed, counts.waiting, counts.unknown) = (numbers[3], numbers[4], numbers[5])
            pruned = PrunedRun(
                at: stored.at,
                counts: counts,
                failures: stored.failures.map {
                    PrunedRun.Failure(platform: $0.platform, status: $0.status, reason: $0.reason, count: $0.count)
                },
                perSecond: stored.perSecond.map {
                    AnswersInSecond(second: $0[0], delivered: Int($0[1]), failed: Int($0[2]), retried: Int($0[3]))
                }
            )
        }
        // Absent from journals written before the timeline existed.
        events = try container.decodeIfPresent([RunEvent].self, forKey: .events) ?? []
        try check(events.count <= RunEvent.kept * 2 && events.allSatisfy { $0.at.isFinite }, .events)
    }

    /// As stored: JSON with sorted keys, written straight into one buffer. It is written about once
    /// a second while sending, in the journal's transaction, and Foundation's `JSONEncoder` took
    /// milliseconds per write for a run's histogram buckets (the profile of issue #14).
    public func encoded() -> String {
        var json = JSONWriter(capacity: 4096)
        json.object([
            ("ahead", ahead.map { ahead in { ahead.write(to: &$0) } }),
            (
                "answers",
                answers.isEmpty
                    ? nil
                    : { json in
                        json.object([
                            (
                                "counts",
                                { json in json.raw("[" + answers.counts.map(String.init).joined(separator: ",") + "]") }
                            ),
                            ("first", answers.first.map { first in { $0.integer(first) } }),
                            ("width", { $0.integer(answers.width) }),
                        ])
                    }
            ),
            ("connections_opened", { $0.integer(connectionsOpened) }),
            ("disconnects", { $0.counts(disconnects) }),
            (
                "events",
                events.isEmpty
                    ? nil
                    : { json in
                        json.raw("[")
                        // The first and the newest, when there are too many.
                        let kept =
                            events.count > RunEvent.kept
                            ? Array(events.prefix(RunEvent.kept / 2) + events.suffix(RunEvent.kept / 2)) : events
                        for (index, event) in kept.enumerated() {
                            if index > 0 { json.raw(",") }
                            json.object([
                                ("at", { $0.number(event.at) }),
                                ("detail", event.detail.map { detail in { $0.string(detail) } }),
                                ("kind", { $0.string(event.kind.rawValue) }),
                            ])
                        }
                        json.raw("]")
                    }
            ),
            ("latency", { $0.buckets(latency) }),
            ("locales", locales.isEmpty ? nil : { $0.readouts(locales) }),
            ("plan", plan.map { plan in { plan.write(to: &$0) } }),
            ("platforms", platforms.isEmpty ? nil : { $0.readouts(platforms) }),
            ("pruned", pruned.map { pruned in { pruned.write(to: &$0) } }),
            ("retries", { $0.counts(retries) }),
            ("seconds", { $0.number(seconds) }),
            ("sent", sent.map { sent in { sent.write(to: &$0) } }),
            ("variants", variants.isEmpty ? nil : { $0.readouts(variants) }),
        ])
        return json.string
    }

    /// The stored statistics `texts` added up, in order; nil when there are none.
    public static func sum(_ texts: [String]) throws(JournalError) -> RunStats? {
        var total: RunStats?
        for text in texts {
            let stats = try decode(text)
            total = total?.adding(stats) ?? stats
        }
        return total
    }

    public static func decode(_ text: String) throws(JournalError) -> RunStats {
        do {
            return try JSONDecoder().decode(RunStats.self, from: Data(text.utf8))
        } catch {
            var detail = "it is not the JSON Pushcamp writes"
            let context: DecodingError.Context? =
                switch error as? DecodingError {
                case .dataCorrupted(let context)?, .typeMismatch(_, let context)?, .valueNotFound(_, let context)?,
                    .keyNotFound(_, let context)?:
                    context
                default: nil
                }
            if let path = context?.codingPath.first?.stringValue {
                detail = "'\(path)' is out of range or of the wrong type"
            }
            throw JournalError(
                .corrupt,
                "a run's stored statistics (table run_stats) cannot be read: \(detail); the journal was damaged or edited"
            )
        }
    }
}

extension JSONWriter {
    /// A JSON object of `members` in the order given (sorted by the caller); nil members are left out.
    fileprivate mutating func object(_ members: [(key: String, value: ((inout JSONWriter) -> Void)?)]) {
        raw("{")
        var first = true
        for member in members {
            guard let value = member.value else { continue }
            if !first { raw(",") }
            first = false
            string(member.key)
            raw(":")
            value(&self)
        }
        raw("}")
    }

    /// `{name: count}`, names sorted.
    fileprivate mutating func counts(_ counts: [String: Int]) {
        object(counts.sorted { $0.key < $1.key }.map { count in (count.key, { $0.integer(count.value) }) })
    }

    /// `[[µs, n]…]`: a histogram's non-empty buckets, lowest first.
    fileprivate mutating func buckets(_ histogram: LatencyHistogram) {
        raw("[")
        for (index, bucket) in histogram.buckets.enumerated() {
            raw(index == 0 ? "[" : ",[")
            raw(String(bucket.microseconds))
            raw(",")
            raw(String(bucket.count))
            raw("]")
        }
        raw("]")
    }

    /// `{name: {"delivered": n, "failed": {reason: n}, "latency": [[µs, n]…]}}`, names sorted.
    fileprivate mutating func readouts(_ readouts: [String: Readout]) {
        object(
            readouts.sorted { $0.key < $1.key }.map { entry in
                let readout = entry.value
                return (
                    entry.key,
                    { json in
                        json.object([
                            ("delivered", { $0.integer(readout.delivered) }),
                            ("failed", { $0.counts(readout.failed) }),
                            ("latency", readout.latency.map { latency in { $0.buckets(latency) } }),
                        ])
                    }
                )
            }
        )
    }
}

extension PlanFunnel {
    /// Writes `samples` as a JSON array.
    fileprivate static func samplesWriter(_ samples: [PlanSample]) -> (inout JSONWriter) -> Void {
        { json in
            json.raw("[")
            for (index, sample) in samples.enumerated() {
                if index > 0 { json.raw(",") }
                sample.write(to: &json)
            }
            json.raw("]")
        }
    }

    fileprivate func write(to json: inout JSONWriter) {
        json.object([
            ("assignment_unit", assignmentUnit.map { unit in { $0.string(unit) } }),
            ("capped", { $0.integer(capped) }),
            ("copies", copies.map(Self.samplesWriter)),
            ("description", description.map { description in { $0.string(description) } }),
            ("duplicates", { $0.integer(duplicates) }),
            ("excluded", { $0.integer(excluded) }),
            ("filtered_out", { $0.integer(filteredOut) }),
            ("held_out", { $0.integer(heldOut) }),
            ("holdout_basis_points", { $0.integer(holdoutBasisPoints) }),
            ("invalid", { $0.integer(invalid) }),
            ("locales", { $0.counts(locales) }),
            ("no_subscription", { $0.integer(noSubscription) }),
            ("planned", { $0.integer(planned) }),
            ("platforms", platforms.map { platforms in { $0.counts(platforms) } }),
            ("read", { $0.integer(read) }),
            (
                "readout",
                readout.map { readout in
                    { json in
                        json.object([
                            ("guardrails", { $0.value(.list(readout.guardrails.map { .string($0) })) }),
                            ("not_in_holdout", { $0.value(.list(readout.notInHoldout.map { .string($0) })) }),
                            ("primary", readout.primary.map { primary in { $0.string(primary) } }),
                            ("window", readout.window.map { window in { $0.integer(window) } }),
                        ])
                    }
                }
            ),
            ("refused", { $0.integer(refused) }),
            ("samples", samples.map(Self.samplesWriter)),
            ("suppressed", { $0.integer(suppressed) }),
            ("variants", { $0.counts(variants) }),
        ])
    }
}

extension PlanSample {
    fileprivate func write(to json: inout JSONWriter) {
        json.object([
            (
                "headers",
                { json in
                    json.raw("[")
                    for (index, header) in headers.enumerated() {
                        if index > 0 { json.raw(",") }
                        json.object([("name", { $0.string(header.name) }), ("value", { $0.string(header.value) })])
                    }
                    json.raw("]")
                }
            ),
            ("locale", locale.map { locale in { $0.string(locale) } }),
            ("payload", { $0.string(payload) }),
            ("token", { $0.string(token) }),
            ("variant", { $0.string(variant) }),
        ])
    }
}

extension SentFacts {
    fileprivate func write(to json: inout JSONWriter) {
        json.object([
            ("app", { $0.string(app) }),
            ("connections", { $0.integer(connections) }),
            ("description", description.map { description in { $0.string(description) } }),
            ("endpoint", { $0.string(endpoint) }),
            ("environment", { $0.string(environment) }),
            ("priority", priority.map { priority in { $0.integer(priority) } }),
            ("push_type", pushType.map { type in { $0.string(type) } }),
            ("rate", { $0.string(rate) }),
            ("topic", { $0.string(topic) }),
        ])
    }
}

extension PrunedRun {
    /// As `RunStats.encoded` stores it.
    fileprivate func write(to json: inout JSONWriter) {
        json.object([
            ("at", { $0.number(at) }),
            (
                "counts",
                { json in
                    json.object([
                        ("delivered", { $0.integer(counts.delivered) }),
                        ("failed", { $0.integer(counts.failed) }),
                        ("in_flight", { $0.integer(counts.inFlight) }),
                        ("planned", { $0.integer(counts.planned) }),
                        ("unknown", { $0.integer(counts.unknown) }),
                        ("waiting", { $0.integer(counts.waiting) }),
                    ])
                }
            ),
            (
                "failures",
                { json in
                    json.raw("[")
                    for (index, failure) in failures.enumerated() {
                        if index > 0 { json.raw(",") }
                        json.object([
                            ("count", { $0.integer(failure.count) }),
                            ("platform", { $0.string(failure.platform.rawValue) }),
                            ("reason", { $0.string(failure.reason) }),
                            ("status", failure.status.map { status in { $0.integer(status) } }),
                        ])
                    }
                    json.raw("]")
                }
            ),
            (
                "per_second",
                { json in
                    json.raw(
                        "["
                            + perSecond.map { "[\($0.second),\($0.delivered),\($0.failed),\($0.retried)]" }
                            .joined(separator: ",") + "]"
                    )
                }
            ),
        ])
    }
}
