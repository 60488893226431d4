import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import Synchronization

/// The planner's side of a send: expands the campaign on a thread of its own (audience sources read
/// files and databases, and rendering is CPU work that should not hold a concurrency thread) into
/// hand-over batches, through a bounded feed, so memory stays flat whatever the audience size.
///
/// A resumed run's settled recipients are skipped before rendering; its pending ones come with what
/// the journal knew: retries keep their due time, requests that were in flight are possible duplicates.
final class PlanProducer: Sendable {
    /// Where the pushes come from: the planner going through the audience, or a slice of a run's
    /// snapshot (planned once, by the run's creator).
    enum Source: Sendable {
        case planner(Planner)
        case snapshot(SnapshotSlice)
    }

    private let source: Mutex<Source?>
    private let sendTime: Timestamp
    private let batchSize: Int
    private let resume: ResumePoint
    /// Whether requests a resumed run found in flight go again (`retry.resend_unknown`).
    private let resendUnknown: Bool
    private let only: SeqSet?
    private let clock: any WallClock
    /// Where Android pushes go: the `messages:send` path of the app's Firebase project.
    private let fcmPath: String
    private let feed = Feed<ExecutorStateMachine.PlanBatch>(capacity: 4)
    /// The variant and locale of each request, for the readout.
    let groups: ReadoutGroups
    private let result = Mutex<(summary: PlanSummaryCounts?, failure: String?)>((nil, nil))
    /// Set when the counting pass should stop: the send stopped, or the plan itself reached its end.
    private let countingStops = Atomic(false)

    /// `sendTime` is when the send really starts: relative expirations count from it.
    init(
        planner: Planner,
        sendTime: Timestamp,
        batchSize: Int,
        resume: ResumePoint,
        resendUnknown: Bool = true,
        only: SeqSet?,
        clock: any WallClock,
        groups: ReadoutGroups = ReadoutGroups(),
        fcmPath: String = ""
    ) {
        self.groups = groups
        self.fcmPath = fcmPath
        self.source = Mutex(.planner(planner))
        self.clock = clock
        self.sendTime = sendTime
        self.batchSize = batchSize
        self.resume = resume
        self.resendUnknown = resendUnknown
        self.only = only
    }

    /// How planning ended: its counts when it went through the whole audience, or why it failed.
    var outcome: (summary: PlanSummaryCounts?, failure: String?) { result.withLock { $0 } }

    /// The next batch, or nil when the plan is done or cancelled. A batch due later carries its
    /// moment (`notBefore`): the state machine holds it until then.
    func next() async -> ExecutorStateMachine.PlanBatch? {
        await feed.next()
    }

    /// Stops the planner at its next batch, and the counting pass at its next push.
    func cancel() {
        countingStops.store(true, ordering: .relaxed)
        feed.cancel()
    }

    /// The pushes of `slice`, read from the run's snapshot.
    init(
        slice: SnapshotSlice,
        batchSize: Int,
        resume: ResumePoint,
        resendUnknown: Bool = true,
        clock: any WallClock,
        groups: ReadoutGroups = ReadoutGroups(),
        fcmPath: String = ""
    ) {
        self.groups = groups
        self.fcmPath = fcmPath
        self.source = Mutex(.snapshot(slice))
        self.clock = clock
        self.sendTime = slice.sendTime
        self.batchSize = batchSize
        self.resume = resume
        self.resendUnknown = resendUnknown
        self.only = nil
    }

    /// Starts the planner on a thread of its own, when the pushes come from it (not awaited: a
    /// cancelled plan stops at its next batch, however long the audience read before it takes).
    /// Started by the caller, not from a task: planning then needs no thread of the shared pool.
    ///
    /// A run's whole plan (not a slice's) is also counted ahead of the send, on a second thread at
    /// the lowest priority: the planner hands pushes over only a few batches ahead of the wire, so
    /// without it the run's total, and the copy each variant was sent, would be known only near its
    /// end. `counted` gets the plan's funnel, unless the plan itself reached its end first.
    func start(counted: @escaping @Sendable (PlanFunnel) -> Void = { _ in }) {
        let planner = source.withLock { source -> Planner? in
            guard case .planner(let planner)? = source else { return nil }
            source = nil
            return planner
        }
        guard let planner else { return }
        let thread = Thread { [self] in produce(planner, counted: counted) }
        thread.name = "pushcamp-planner"
        thread.start()
    }

    /// The recipients a resumed run settled before (and, for a run's part, those not in it): passed
    /// over before rendering.
    private var skip: (Int) -> Bool {
        let settled = resume.settled
        guard let only else { return settled.contains }
        return { seq in !only.contains(seq) || settled.contains(seq) }
    }

    /// Counts the plan of `planner` (with the audience's duplicate candidates already found) on a
    /// thread of its own at the lowest priority, for a run's whole plan (not a slice's): the same
    /// planner, history and skips as the send's, rendering only the copies.
    private func startCounting(_ planner: Planner, then counted: @escaping @Sendable (PlanFunnel) -> Void) {
        guard only == nil else { return }
        var counter = planner
        counter.countsOnly = true
        counter.stops = { [self] in countingStops.load(ordering: .relaxed) }
        let thread = Thread { [self, counter] in
            Self.yieldToOtherThreads()
            guard let summary = try? counter.run(skipping: skip, body: { _ in }),
                !countingStops.load(ordering: .relaxed)
            else { return }
            counted(PlanFunnel(summary))
        }
        thread.name = "pushcamp-count"
        thread.start()
    }

    /// Lowers the calling thread to the lowest priority: work that must never slow the send down.
    /// Linux keeps a nice value per thread, and `who` 0 names the calling thread, not the process.
    private static func yieldToOtherThreads() {
        #if os(Linux)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        #endif
        Thread.current.qualityOfService = .background
    }

    /// Reads a slice of the snapshot, when the pushes come from one, awaiting each page of the
    /// journal: a child of the executor's group. Returns at once otherwise.
    func run() async {
        let slice = source.withLock { source -> SnapshotSlice? in
            guard case .snapshot(let slice)? = source else { return nil }
            source = nil
            return slice
        }
        if let slice { await produce(slice) }
    }

    /// Hand-over batches, made a push at a time.
    private func batches() -> PlanBatches {
        PlanBatches(
            batchSize: batchSize,
            sendTime: sendTime,
            resume: resume,
            resendUnknown: resendUnknown,
            clock: clock,
            groups: groups,
            fcmPath: fcmPath
        )
    }

    /// The slice's pushes due now, in one read of it; then those of each later moment (a
    /// recipient-local schedule, quiet hours) in a read of their own, handed over (and held by the
    /// executor) for that moment, as a plan's later passes are.
    private func produce(_ slice: SnapshotSlice) async {
        var batches = batches()
        /// Hands over the pushes of the slice `wanted` keeps, then what is left of the last batch.
        func pass(_ wanted: (PlannedPush) -> Bool) async throws {
            try await slice.forEachPage(skipping: resume.settled) { pushes in
                for push in pushes where wanted(push) {
                    if let full = batches.add(push), !(await feed.put(full)) { throw CancellationError() }
                }
            }
            if let last = batches.rest(), !(await feed.put(last)) { throw CancellationError() }
        }
        do {
            let now = Int64(clock.now().rounded(.up))
            var later: Set<Int64> = []
            try await pass { push in
                guard let due = push.due, due > now else { return true }
                later.insert(due)
                return false
            }
            for due in later.sorted() {
                batches.notBefore = Double(due)
                try await pass { $0.due == due }
            }
            result.withLock { $0.summary = PlanSummaryCounts(heldOut: 0, suppressed: 0, capped: 0, failed: 0) }
        } catch is CancellationError {
            // Stopped: the report says the plan was not finished.
        } catch {
            result.withLock { $0.failure = "\(error)" }
        }
        feed.finish()
    }

    private func produce(_ planner: Planner, counted: @escaping @Sendable (PlanFunnel) -> Void) {
        // However the plan ends (read to its end, stopped, failed), counting ahead of it is over.
        defer { countingStops.store(true, ordering: .relaxed) }
        var planner = planner
        var batches = batches()
        func take(_ push: PlannedPush) throws {
            if let full = batches.add(push), !feed.put(full) { throw CancellationError() }
        }
        func handOver() throws {
            if let last = batches.rest(), !feed.put(last) { throw CancellationError() }
        }
        do {
            let skip = self.skip
            // The audience's duplicates are found once, for every pass over it: the counting pass,
            // the plan's, and one per later moment.
            try planner.findDuplicateCandidates()
            startCounting(planner, then: counted)
            // Pushes due now go in the first pass; those due later are counted by moment, and each
            // moment gets a pass of its own, handed over (and held) at that moment.
            let now = Int64(clock.now().rounded(.up))
            var later: Set<Int64> = []
            let summary = try planner.run(skipping: skip) { (push: PlannedPush) in
                if let due = push.due, due > now {
                    later.insert(due)
                    return
                }
                try take(push)
            }
            try handOver()
            for due in later.sorted() {
                var pass = planner
                pass.onlyDue = due
                batches.notBefore = Double(due)
                _ = try pass.run(skipping: skip) { (push: PlannedPush) in try take(push) }
                try handOver()
            }
            var counts = PlanSummaryCounts(
                heldOut: summary.heldOut,
                suppressed: summary.suppressed,
                capped: summary.capped,
                failed: summary.failed,
                dropped: Dictionary(
                    uniqueKeysWithValues: (summary.timing?.dropped ?? [:]).map { ($0.key.rawValue, $0.value) }
                )
            )
            counts.unsubscribed = summary.unsubscribed
            counts.joinedSubscriptions = summary.joinedSubscriptions
            // A resumed run's pass counts what was settled before as planned in its variant and
            // locale, so its funnel is the whole plan's; a slice's pass sees only its slice.
            if only == nil { counts.funnel = PlanFunnel(summary) }
            result.withLock { $0.summary = counts }
        } catch is CancellationError {
            // Stopped: the report says the plan was not finished.
        } catch {
            result.withLock { $0.failure = "\(error)" }
        }
        feed.finish()
    }

    enum Kind {
        case new
        /// In flight when the run stopped: APNs may have it.
        case possibleDuplicate
        /// A resumed run's retry, due at `until`.
        case waiting(until: Double)
    }

    /// The request for `push`, with what a resumed run knew of it.
    static func request(
        for push: PlannedPush,
        sendTime: Timestamp,
        resume: ResumePoint,
        fcmPath: String = ""
    ) -> (APNsRequest, Kind) {
        var request =
            push.platform == .android
            ? APNsRequest(
                tag: push.seq,
                registrationToken: push.token,
                path: fcmPath,
                body: push.fcmBody(sendTime: sendTime)
            )
            : APNsRequest(
                tag: push.seq,
                deviceToken: push.token,
                uuid: (push.apnsID.bytes.0, push.apnsID.bytes.1),
                topic: push.topic,
                pushType: push.pushType.rawValue,
                priority: push.priority,
                expiration: push.expirationHeader(sendTime: sendTime),
                collapseID: push.collapseID,
                payload: push.payload
            )
        request.deviceTokenHash = StableHash.hash(push.token)
        switch resume.pending.isEmpty ? nil : resume.pending[push.seq] {
        case .waiting(let until, let attempts)?:
            request.attempt = attempts
            return (request, .waiting(until: until))
        case .unknown(let attempts)?:
            request.attempt = attempts
            return (request, .possibleDuplicate)
        case .unsent?, nil:
            return (request, .new)
        }
    }
}

/// The executor's hand-over batches, filled a push at a time: a batch is handed over when it holds
/// `batchSize` requests (or waiting retries, or abandoned requests).
struct PlanBatches {
    let batchSize: Int
    let sendTime: Timestamp
    let resume: ResumePoint
    /// Whether requests a resumed run found in flight go again (`retry.resend_unknown`).
    let resendUnknown: Bool
    let clock: any WallClock
    let groups: ReadoutGroups
    let fcmPath: String
    /// The moment the pushes being added are due (nil: now).
    var notBefore: Double?
    private var batch = Self.empty(0)
    private var last: (variant: String, locale: String?, platform: Platform, group: UInt32)?

    init(
        batchSize: Int,
        sendTime: Timestamp,
        resume: ResumePoint,
        resendUnknown: Bool,
        clock: any WallClock,
        groups: ReadoutGroups,
        fcmPath: String
    ) {
        self.batchSize = batchSize
        self.sendTime = sendTime
        self.resume = resume
        self.resendUnknown = resendUnknown
        self.clock = clock
        self.groups = groups
        self.fcmPath = fcmPath
        batch = Self.empty(batchSize)
    }

    private static func empty(_ capacity: Int) -> ExecutorStateMachine.PlanBatch {
        var batch = ExecutorStateMachine.PlanBatch(requests: [])
        batch.requests.reserveCapacity(capacity)
        return batch
    }

    /// Adds `push`; answers the batch to hand over when this one filled it.
    mutating func add(_ push: PlannedPush) -> ExecutorStateMachine.PlanBatch? {
        // An Android message's ttl is the time left when it is handed over, not at the run's start.
        let at = push.platform == .android ? Timestamp(secondsSince1970: Int64(clock.now())) : sendTime
        var (request, kind) = PlanProducer.request(for: push, sendTime: at, resume: resume, fcmPath: fcmPath)
        if let last, last.variant == push.variant, last.locale == push.locale, last.platform == push.platform {
            request.group = last.group
        } else {
            request.group = groups.group(variant: push.variant, locale: push.locale, platform: push.platform)
            last = (push.variant, push.locale, push.platform, request.group)
        }
        switch kind {
        case .waiting(let until):
            // A retry keeps its due time across the restart.
            batch.waiting.append((due: until, request: request))
            return batch.waiting.count >= batchSize ? rest() : nil
        case .possibleDuplicate where !resendUnknown:
            batch.abandoned.append(request)
            return batch.abandoned.count >= batchSize ? rest() : nil
        case .possibleDuplicate:
            batch.possibleDuplicates += 1
        case .new:
            break
        }
        batch.requests.append(request)
        return batch.requests.count == batchSize ? rest() : nil
    }

    /// The batch so far, if it holds anything; the next one starts empty.
    mutating func rest() -> ExecutorStateMachine.PlanBatch? {
        guard !batch.requests.isEmpty || !batch.waiting.isEmpty || !batch.abandoned.isEmpty else { return nil }
        var full = batch
        full.notBefore = notBefore
        batch = Self.empty(batchSize)
        return full
    }
}
