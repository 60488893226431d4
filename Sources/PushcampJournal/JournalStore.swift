import PushcampAPNsCore
import PushcampModel

/// Runs and their recipients: where a run's every recipient is remembered, so a killed send
/// resumes without sending anyone the same notification twice.
///
/// Three implementations: `SQLiteJournal` (the embedded default, `.pushcamp/journal.sqlite`),
/// PostgreSQL (several machines on one journal) and `MemoryJournal` (tests, and the benchmark's
/// baseline), held to one contract suite. Writes come in batches: one call to `record` is one
/// transaction, so the executor commits a whole group of state changes at once.
public protocol JournalStore: Sendable {
    /// The newest run of `campaign` that has not finished or been cancelled, if any; replays aside.
    func unfinishedRun(campaign: String) async throws(JournalError) -> RunRecord?
    /// The newest run of `campaign` whatever its status, if any; replays aside.
    func latestRun(campaign: String) async throws(JournalError) -> RunRecord?
    /// The newest unfinished replay of `run`, if any.
    func unfinishedReplay(of run: RunID) async throws(JournalError) -> RunRecord?
    /// Starts a new run of `campaign` at `revision`, sent from the campaign file `file`; a replay
    /// names the run and reasons it replays.
    func createRun(
        campaign: String,
        revision: String,
        now: Double,
        file: String?,
        replay: ReplayOrigin?
    ) async throws(JournalError) -> RunRecord
    func run(_ id: RunID) async throws(JournalError) -> RunRecord?
    /// Runs, newest first.
    func runs(limit: Int) async throws(JournalError) -> [RunRecord]
    func setStatus(_ status: RunStatus, of run: RunID, now: Double) async throws(JournalError)
    /// Asks the process sending `run` to stop (it checks `cancelRequested`).
    func requestCancel(_ run: RunID, now: Double) async throws(JournalError)
    func cancelRequested(_ run: RunID) async throws(JournalError) -> Bool

    /// The number of recipients the plan sends (known once planning has gone through the audience).
    func setPlanned(_ count: Int, of run: RunID) async throws(JournalError)
    /// One group commit: recipients' new states, the seq ranges whose first attempt is about to be
    /// sent, and possible duplicates. A later update of the same recipient wins.
    func record(_ batch: JournalBatch, run: RunID, now: Double) async throws(JournalError)
    /// The writer of a send's batches (`record`, gathered by a `RecordingQueue`): SQLite's commits
    /// on a thread of its own, the others' in a task (the default).
    var recorder: any RunRecorder { get }
    /// The seq ranges recorded as dispatched, in order; with `seqs`, only those overlapping them
    /// (whole: not clamped), read without the rest of the run's (a slice's resume).
    func dispatched(of run: RunID, within seqs: ClosedRange<Int>?) async throws(JournalError) -> [ClosedRange<Int>]
    /// The seq ranges recorded as delivered on their first attempt, in order; with `seqs`, as
    /// `dispatched`.
    func delivered(of run: RunID, within seqs: ClosedRange<Int>?) async throws(JournalError) -> [ClosedRange<Int>]
    /// Up to `limit` recipients of `run` with a row of their own and a seq above `seq`, in plan
    /// order: one page of `forEachRecipient`. Recipients delivered on their first attempt have
    /// none: they are in `delivered(of:)`.
    func recipients(of run: RunID, after seq: Int, limit: Int) async throws(JournalError) -> [RecipientRecord]
    /// How many recipients of `run` are in each state; dispatched recipients with neither a row nor
    /// a delivered range count as in flight.
    func counts(of run: RunID) async throws(JournalError) -> RecipientCounts
    /// Final answers of `run` (delivered and failed) per wall-clock second, oldest first; seconds
    /// without any are left out.
    func answersPerSecond(of run: RunID) async throws(JournalError) -> [AnswersInSecond]
    /// What the run's sends measured (latencies, retries, time spent), as last saved; nil when no
    /// send of the run saved any.
    func stats(of run: RunID) async throws(JournalError) -> RunStats?
}

/// Dead tokens and delivery history: what every campaign of the journal shares, whichever run or
/// machine learnt it. Dead tokens come in with a run's answers (`JournalBatch.invalidTokens`).
public protocol TokenHistoryStore: Sendable {
    /// Remembers tokens APNs called Unregistered, ExpiredToken or BadDeviceToken (per topic); a
    /// token seen again keeps its newest APNs timestamp.
    func rememberInvalidTokens(_ tokens: [InvalidToken]) async throws(JournalError)
    /// Remembered dead tokens, optionally for one topic and seen since a time, oldest first.
    func invalidTokens(topic: String?, since: Double?) async throws(JournalError) -> [InvalidToken]
    /// How many dead tokens are remembered per topic (seen since a time, when given), by topic;
    /// counted where they are kept, not read into memory.
    func invalidTokenCounts(since: Double?) async throws(JournalError) -> [(topic: String, count: Int)]
    /// Every delivery recorded at or after `since` (seconds since 1970), in any run of any campaign:
    /// the `StableHash` of each delivered device token, once per delivery. For frequency caps.
    func deliveryHashes(since: Double) async throws(JournalError) -> [UInt64]
}

extension JournalStore {
    public func createRun(campaign: String, revision: String, now: Double) async throws(JournalError) -> RunRecord {
        try await createRun(campaign: campaign, revision: revision, now: now, file: nil, replay: nil)
    }

    /// Every seq range of `run` recorded as dispatched, in order.
    public func dispatched(of run: RunID) async throws(JournalError) -> [ClosedRange<Int>] {
        try await dispatched(of: run, within: nil)
    }

    /// Every seq range of `run` recorded as delivered on its first attempt, in order.
    public func delivered(of run: RunID) async throws(JournalError) -> [ClosedRange<Int>] {
        try await delivered(of: run, within: nil)
    }

    /// Every recipient of `run` with a row of its own (among `seqs`, when given), in plan order, a
    /// page at a time: never all of them in memory at once, nor any outside `seqs` read.
    public func forEachRecipient(
        of run: RunID,
        within seqs: ClosedRange<Int>? = nil,
        pageSize: Int = 10_000,
        _ body: (RecipientRecord) async throws -> Void
    ) async throws {
        var after = (seqs?.lowerBound ?? 0) - 1
        while true {
            let page = try await recipients(of: run, after: after, limit: pageSize)
            for row in page {
                if let seqs, row.seq > seqs.upperBound { return }
                try await body(row)
            }
            guard page.count == pageSize, let last = page.last else { return }
            after = last.seq
        }
    }
}

/// A replay: the recipients of `run` whose outcome had one of `reasons`, sent again.
public struct ReplayOrigin: Sendable, Hashable {
    public var run: RunID
    public var reasons: [String]

    public init(run: RunID, reasons: [String]) {
        self.run = run
        self.reasons = reasons
    }
}

/// What one transaction of a running send writes.
///
/// Most recipients never get a row: their first attempt goes out as part of a dispatched seq range
/// and comes back delivered as part of a delivered range (answers arrive nearly in plan order, so
/// a group commit of a few hundred answers is a few ranges). Only retries, failures and requests
/// lost in flight get rows. A row each would cost more than the rest of the send at a hundred
/// thousand pushes a second (measured: BENCHMARKS.md).
public struct JournalBatch: Sendable, Equatable {
    /// Recipients with a new state (a row each).
    public var updates: [RecipientUpdate]
    /// First attempts about to be sent, as seq ranges: in flight until an answer comes.
    public var dispatched: [ClosedRange<Int>]
    /// First attempts delivered, as runs of consecutive seqs with their token hashes. A recipient with a
    /// row is never here.
    public var delivered: [DeliveredRange]
    /// Recipients being sent again after a resume although their first request may have arrived.
    public var possibleDuplicates: Int
    /// Which recipients those are (kept once each, however often they are counted).
    public var duplicates: [PossibleDuplicate]
    /// Tokens APNs just called dead, remembered as `rememberInvalidTokens` does.
    public var invalidTokens: [InvalidToken]
    /// The run's statistics so far, replacing those stored; the run's `updatedAt` becomes the commit's time.
    public var stats: RunStats?
    /// The lease the writer sends under: the batch is recorded only while it is still the
    /// resource's lease (same owner and fence), in the same transaction; otherwise nothing of it
    /// is, and `record` throws `.fenced`. Nil: unfenced (one process, nobody to take over).
    public var lease: Lease?
    /// The run's final status (and its planned count, when planning finished), set in the same
    /// transaction as the rest: under a lease, so a sender that lost its lease cannot close a run
    /// another process now sends.
    public var close: RunClose?

    public init(
        updates: [RecipientUpdate] = [],
        dispatched: [ClosedRange<Int>] = [],
        delivered: [DeliveredRange] = [],
        possibleDuplicates: Int = 0,
        duplicates: [PossibleDuplicate] = [],
        invalidTokens: [InvalidToken] = [],
        stats: RunStats? = nil,
        lease: Lease? = nil,
        close: RunClose? = nil
    ) {
        self.stats = stats
        self.lease = lease
        self.close = close
        self.updates = updates
        self.dispatched = dispatched
        self.delivered = delivered
        self.possibleDuplicates = possibleDuplicates
        self.duplicates = duplicates
        self.invalidTokens = invalidTokens
    }

    public var isEmpty: Bool {
        updates.isEmpty && dispatched.isEmpty && delivered.isEmpty && possibleDuplicates == 0 && duplicates.isEmpty
            && invalidTokens.isEmpty
            && stats == nil && close == nil
    }
}

/// How a send ends its run: the status, and the planned count when planning finished.
public struct RunClose: Sendable, Hashable {
    public var status: RunStatus
    public var planned: Int?

    public init(status: RunStatus, planned: Int? = nil) {
        self.status = status
        self.planned = planned
    }
}

/// Recipients `first`, `first + 1`, … delivered on their first attempt, with the `StableHash` of
/// each one's device token, in order: enough for frequency caps, 8 bytes a delivery instead of the
/// token's 64 hex digits (the journal's largest write at full speed), and no device token kept for
/// a delivery.
public struct DeliveredRange: Sendable, Hashable {
    public var first: Int
    public var tokenHashes: [UInt64]

    public init(first: Int, tokenHashes: [UInt64]) {
        precondition(!tokenHashes.isEmpty, "a delivered range has at least one recipient")
        self.first = first
        self.tokenHashes = tokenHashes
    }

    /// The range of `tokens`, hashed.
    public init(first: Int, tokens: [String]) {
        self.init(first: first, tokenHashes: tokens.map { StableHash.hash($0) })
    }

    public var seqs: ClosedRange<Int> { first...(first + tokenHashes.count - 1) }

    /// Groups first deliveries into ranges of consecutive seqs, in seq order.
    public static func ranges(of deliveries: [FirstDelivery]) -> [DeliveredRange] {
        var ranges: [DeliveredRange] = []
        for delivery in deliveries.sorted(by: { $0.seq < $1.seq }) {
            if let last = ranges.last, last.seqs.contains(delivery.seq) { continue }
            if let last = ranges.last, last.first + last.tokenHashes.count == delivery.seq {
                ranges[ranges.count - 1].tokenHashes.append(delivery.tokenHash)
            } else {
                ranges.append(DeliveredRange(first: delivery.seq, tokenHashes: [delivery.tokenHash]))
            }
        }
        return ranges
    }

    /// The hashes as stored: 8 bytes each, little-endian.
    public var encodedHashes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(tokenHashes.count * 8)
        for hash in tokenHashes {
            withUnsafeBytes(of: hash.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// Calls `body` with each hash of `encodedHashes`.
    package static func forEachHash(in bytes: UnsafeRawBufferPointer, _ body: (UInt64) throws -> Void) rethrows {
        var offset = 0
        while offset + 8 <= bytes.count {
            try body(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
    }
}

/// A recipient delivered on its first attempt, as the journal keeps it: its seq and the
/// `StableHash` of its device token.
public struct FirstDelivery: Sendable, Hashable {
    public var seq: Int
    public var tokenHash: UInt64

    public init(seq: Int, tokenHash: UInt64) {
        self.seq = seq
        self.tokenHash = tokenHash
    }

    public init(seq: Int, token: String) {
        self.init(seq: seq, tokenHash: StableHash.hash(token))
    }
}

/// A run's number in its journal.
public struct RunID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: Int64

    public init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    public static func < (lhs: RunID, rhs: RunID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}

public enum RunStatus: String, Sendable, CaseIterable {
    /// Sending, or killed while sending (a resume picks it up).
    case running
    /// Stopped before the end (Ctrl-C, refused credentials): a resume picks it up.
    case interrupted
    /// Every recipient has a final outcome.
    case finished
    /// Stopped by `pushcamp cancel`: never resumed.
    case cancelled
    /// Given up for a new run of the campaign (`send --new-run`), or a slot run `serve` did not
    /// resume because a newer slot fired since or was due: never resumed.
    case superseded
    /// A slot run `serve` did not resume because its slot was older than `catch_up.within`:
    /// never resumed.
    case expired

    /// Whether `send` resumes a run in this status.
    public var isUnfinished: Bool { self == .running || self == .interrupted }
}

public struct RunRecord: Sendable, Hashable {
    public var id: RunID
    public var campaign: String
    /// The campaign revision the run was planned from (file, templates and audience inputs).
    public var revision: String
    public var status: RunStatus
    public var startedAt: Double
    public var updatedAt: Double
    public var cancelRequested: Bool
    /// Recipients sent again on resume because their first request's fate was unknown.
    public var possibleDuplicates: Int
    /// Recipients the plan sends, once planning has gone through the whole audience.
    public var planned: Int?
    /// The campaign file it was sent from (absolute), when known.
    public var file: String?
    /// The schedule slot (seconds since 1970) the run was fired for by `pushcamp serve`.
    public var slot: Int64?
    /// Set when the run replays another.
    public var replay: ReplayOrigin?

    public init(
        id: RunID,
        campaign: String,
        revision: String,
        status: RunStatus,
        startedAt: Double,
        updatedAt: Double,
        cancelRequested: Bool,
        possibleDuplicates: Int = 0,
        planned: Int? = nil,
        file: String? = nil,
        slot: Int64? = nil,
        replay: ReplayOrigin? = nil
    ) {
        self.file = file
        self.slot = slot
        self.replay = replay
        self.id = id
        self.campaign = campaign
        self.revision = revision
        self.status = status
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.cancelRequested = cancelRequested
        self.possibleDuplicates = possibleDuplicates
        self.planned = planned
    }
}

extension RunRecord {
    /// A run as `createRun` makes it: running since `now`, no cancel asked.
    package static func started(
        id: RunID,
        campaign: String,
        revision: String,
        now: Double,
        file: String?,
        replay: ReplayOrigin?
    ) -> RunRecord {
        RunRecord(
            id: id,
            campaign: campaign,
            revision: revision,
            status: .running,
            startedAt: now,
            updatedAt: now,
            cancelRequested: false,
            file: file,
            replay: replay
        )
    }
}

/// Where one recipient of a run stands: planned → in flight (attempt n) → delivered | failed |
/// waiting to retry | unknown (its connection died with the request in flight).
public enum RecipientState: Sendable, Hashable {
    case planned
    case inFlight(attempt: Int)
    case delivered(attempt: Int)
    /// A final failure: APNs' status (nil when no answer came) and reason, and for 410 its timestamp.
    case failed(status: Int?, reason: String, apnsTimestamp: Int64?)
    /// To be sent again at `until` (seconds since 1970).
    case waiting(until: Double, attempt: Int)
    /// Sent, but the connection ended before an answer: APNs may have it.
    case unknown(attempt: Int)

    /// The state's name as stored.
    public var name: String {
        switch self {
        case .planned: return "planned"
        case .inFlight: return "in_flight"
        case .delivered: return "delivered"
        case .failed: return "failed"
        case .waiting: return "waiting"
        case .unknown: return "unknown"
        }
    }

    /// Delivered or failed: nothing more will be sent.
    public var isFinal: Bool {
        switch self {
        case .delivered, .failed: return true
        default: return false
        }
    }

    public var attempt: Int {
        switch self {
        case .planned, .failed: return 0
        case .inFlight(let attempt), .delivered(let attempt), .waiting(_, let attempt), .unknown(let attempt):
            return attempt
        }
    }
}

/// A recipient's new state; `seq` is its place in the plan (its ordinal in the filtered audience),
/// which identifies it within the run. Its `apns-id` is not stored: the plan derives it again.
public struct RecipientUpdate: Sendable, Hashable {
    public var seq: Int
    public var token: String
    public var state: RecipientState

    public init(seq: Int, token: String, state: RecipientState) {
        self.seq = seq
        self.token = token
        self.state = state
    }
}

public struct RecipientRecord: Sendable, Hashable {
    public var seq: Int
    public var token: String
    public var state: RecipientState
    public var updatedAt: Double

    public init(seq: Int, token: String, state: RecipientState, updatedAt: Double) {
        self.seq = seq
        self.token = token
        self.state = state
        self.updatedAt = updatedAt
    }
}

public struct RecipientCounts: Sendable, Hashable {
    public var planned = 0
    public var inFlight = 0
    public var delivered = 0
    public var failed = 0
    public var waiting = 0
    public var unknown = 0

    public init() {}

    public var total: Int { planned + inFlight + delivered + failed + waiting + unknown }

    package mutating func add(_ state: RecipientState, _ count: Int = 1) {
        switch state {
        case .planned: planned += count
        case .inFlight: inFlight += count
        case .delivered: delivered += count
        case .failed: failed += count
        case .waiting: waiting += count
        case .unknown: unknown += count
        }
    }
}

/// Final answers within one wall-clock second.
public struct AnswersInSecond: Sendable, Hashable {
    /// Seconds since 1970.
    public var second: Int64
    public var delivered: Int
    public var failed: Int
    /// Of those, the answers that came to a retry (a recipient's second or later send).
    public var retried: Int

    public init(second: Int64, delivered: Int = 0, failed: Int = 0, retried: Int = 0) {
        self.second = second
        self.delivered = delivered
        self.failed = failed
        self.retried = retried
    }

    /// Per-second counts from (time, delivered, failed, retried) entries in any order.
    package static func tally(
        _ entries: some Sequence<(at: Double, delivered: Int, failed: Int, retried: Int)>
    ) -> [AnswersInSecond] {
        var seconds: [Int64: AnswersInSecond] = [:]
        for entry in entries {
            let second = Int64(entry.at.rounded(.down))
            seconds[second, default: AnswersInSecond(second: second)].delivered += entry.delivered
            seconds[second, default: AnswersInSecond(second: second)].failed += entry.failed
            seconds[second, default: AnswersInSecond(second: second)].retried += entry.retried
        }
        return seconds.values.sorted { $0.second < $1.second }
    }
}

/// A token APNs said is dead, for one topic.
public struct InvalidToken: Sendable, Hashable {
    /// The reasons that mean a token is dead for its topic.
    public static let reasons: Set<String> = Set(APNsReason.deadToken.map(\.description))
    /// The topic FCM's dead registration tokens are kept under: a registration token names one app
    /// instance, whatever the project.
    public static let fcmTopic = "fcm"

    public var topic: String
    public var token: String
    /// Unregistered, ExpiredToken or BadDeviceToken.
    public var reason: String
    /// APNs' timestamp (ms since 1970) of the last time it knew the token valid, when it gave one.
    public var apnsTimestamp: Int64?
    /// When Pushcamp was told (seconds since 1970).
    public var seenAt: Double

    public init(topic: String, token: String, reason: String, apnsTimestamp: Int64?, seenAt: Double) {
        self.topic = topic
        self.token = token
        self.reason = reason
        self.apnsTimestamp = apnsTimestamp
        self.seenAt = seenAt
    }
}

/// The journal module's one error type.
extension JournalError {
    /// `lease` was taken over (the resource's lease is now `current`, or none): the batch was not
    /// recorded.
    public static func fenced(_ lease: Lease, current: Lease?) -> JournalError {
        let now = current.map { " (now \($0.owner)'s, fence \($0.fence))" } ?? ""
        return JournalError(
            .fenced,
            "the lease on \(lease.resource) held as fence \(lease.fence) was taken over\(now): this process is no "
                + "longer its sender, so nothing more of it is recorded or sent from here"
        )
    }
}

public struct JournalError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The file cannot be created or opened.
        case cannotOpen
        /// The file is not a Pushcamp journal, or is damaged.
        case corrupt
        /// Another process holds the journal locked for longer than the wait.
        case locked
        /// The journal was written by a newer Pushcamp.
        case newerVersion
        case notFound
        /// A write under a lease that is no longer the resource's: another process took it over.
        case fenced
        /// Any other database failure.
        case failed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
