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
    private let feed = PlanFeed(capacity: 4)
    /// The variant and locale of each request, for the readout.
    let groups: ReadoutGroups
    private let result = Mutex<(summary: PlanSummaryCounts?, failure: String?)>((nil, nil))

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

    /// Stops the planner at its next batch.
    func cancel() {
        feed.cancel()
    }

    /// The pushes of `slice`, read from the run's snapshot.
    init(
        slice: SnapshotSlice,
        batchSize: Int,
        resume: ResumePoint,
        resendUnknown: Bool = true,
        clock: any WallClock,
        groups: ReadoutGroups = ReadoutGroups()
    ) {
        self.groups = groups
        self.fcmPath = ""
        self.source = Mutex(.snapshot(slice))
        self.clock = clock
        self.sendTime = slice.sendTime
        self.batchSize = batchSize
        self.resume = resume
        self.resendUnknown = resendUnknown
        self.only = nil
    }

    func start() {
        guard let source = source.withLock({ $0.take() }) else { return }
        let thread = Thread { [self] in produce(source) }
        thread.name = "pushcamp-planner"
        thread.start()
    }

    private func produce(_ source: Source) {
        let (resume, resendUnknown) = (self.resume, self.resendUnknown)
        var batch = ExecutorStateMachine.PlanBatch(requests: [])
        batch.requests.reserveCapacity(batchSize)
        var notBefore: Double?
        var last: (variant: String, locale: String?, platform: Platform, group: UInt32)?
        func handOver() throws {
            guard !batch.requests.isEmpty || !batch.waiting.isEmpty || !batch.abandoned.isEmpty else { return }
            batch.notBefore = notBefore
            guard feed.put(batch) else { throw CancellationError() }
            batch = ExecutorStateMachine.PlanBatch(requests: [])
            batch.requests.reserveCapacity(batchSize)
        }
        func take(_ push: PlannedPush) throws {
            // An Android message's ttl is the time left when it is handed over, not at the run's start.
            let at = push.platform == .android ? Timestamp(secondsSince1970: Int64(clock.now())) : sendTime
            var (request, kind) = Self.request(for: push, sendTime: at, resume: resume, fcmPath: fcmPath)
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
                if batch.waiting.count >= batchSize { try handOver() }
                return
            case .possibleDuplicate where !resendUnknown:
                batch.abandoned.append(request)
                if batch.abandoned.count >= batchSize { try handOver() }
                return
            case .possibleDuplicate:
                batch.possibleDuplicates += 1
            case .new:
                break
            }
            batch.requests.append(request)
            if batch.requests.count == batchSize { try handOver() }
        }
        if case .snapshot(let slice) = source {
            do {
                try slice.forEachPush(skipping: resume.settled) { push in try take(push) }
                try handOver()
                result.withLock { $0.summary = PlanSummaryCounts(heldOut: 0, suppressed: 0, capped: 0, failed: 0) }
            } catch is CancellationError {
                // Stopped: the report says the plan was not finished.
            } catch {
                result.withLock { $0.failure = "\(error)" }
            }
            feed.finish()
            return
        }
        guard case .planner(let planner) = source else { return }
        do {
            let skip: (Int) -> Bool =
                only.map { only in { seq in !only.contains(seq) || resume.settled.contains(seq) } }
                ?? resume.settled.contains
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
                notBefore = Double(due)
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
