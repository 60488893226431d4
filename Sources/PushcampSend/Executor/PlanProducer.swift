import Foundation
import PushcampAPNs
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
    private let planner: Mutex<Planner?>
    private let sendTime: Timestamp
    private let batchSize: Int
    private let resume: ResumePoint
    private let only: SeqSet?
    private let feed = PlanFeed(capacity: 4)
    private let result = Mutex<(summary: PlanSummaryCounts?, failure: String?)>((nil, nil))

    /// `sendTime` is when the send really starts: relative expirations count from it.
    init(planner: Planner, sendTime: Timestamp, batchSize: Int, resume: ResumePoint, only: SeqSet?) {
        self.planner = Mutex(planner)
        self.sendTime = sendTime
        self.batchSize = batchSize
        self.resume = resume
        self.only = only
    }

    /// How planning ended: its counts when it went through the whole audience, or why it failed.
    var outcome: (summary: PlanSummaryCounts?, failure: String?) { result.withLock { $0 } }

    /// The next batch, or nil when the plan is done or cancelled.
    func next() async -> ExecutorStateMachine.PlanBatch? {
        await feed.next()
    }

    /// Stops the planner at its next batch.
    func cancel() {
        feed.cancel()
    }

    func start() {
        guard let planner = planner.withLock({ $0.take() }) else { return }
        let thread = Thread { [self] in produce(planner) }
        thread.name = "pushcamp-planner"
        thread.start()
    }

    private func produce(_ planner: Planner) {
        let resume = self.resume
        var batch = ExecutorStateMachine.PlanBatch(requests: [])
        batch.requests.reserveCapacity(batchSize)
        func handOver() throws {
            guard !batch.requests.isEmpty || !batch.waiting.isEmpty else { return }
            guard feed.put(batch) else { throw CancellationError() }
            batch = ExecutorStateMachine.PlanBatch(requests: [])
            batch.requests.reserveCapacity(batchSize)
        }
        do {
            let skip: (Int) -> Bool =
                only.map { only in { seq in !only.contains(seq) || resume.settled.contains(seq) } }
                ?? resume.settled.contains
            let summary = try planner.run(skipping: skip) { (push: PlannedPush) in
                var request = APNsRequest(
                    tag: push.seq,
                    deviceToken: push.token,
                    apnsID: push.apnsID.description,
                    topic: push.topic,
                    pushType: push.pushType.rawValue,
                    priority: push.priority,
                    expiration: push.expirationHeader(sendTime: sendTime),
                    collapseID: push.collapseID,
                    payload: push.payload
                )
                switch resume.pending.isEmpty ? nil : resume.pending[push.seq] {
                case .waiting(let until, let attempts)?:
                    // A retry keeps its due time across the restart.
                    request.attempt = attempts
                    batch.waiting.append((due: until, request: request))
                    if batch.waiting.count >= batchSize { try handOver() }
                    return
                case .unknown(let attempts)?:
                    request.attempt = attempts
                    batch.possibleDuplicates += 1
                case .unsent?, nil:
                    break
                }
                batch.requests.append(request)
                if batch.requests.count == batchSize { try handOver() }
            }
            try handOver()
            result.withLock {
                $0.summary = PlanSummaryCounts(
                    heldOut: summary.heldOut,
                    suppressed: summary.suppressed,
                    capped: summary.capped,
                    failed: summary.failed
                )
            }
        } catch is CancellationError {
            // Stopped: the report says the plan was not finished.
        } catch {
            result.withLock { $0.failure = "\(error)" }
        }
        feed.finish()
    }
}
