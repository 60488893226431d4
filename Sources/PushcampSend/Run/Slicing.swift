import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import ServiceLifecycle
import Synchronization

/// How a run on a shared journal is cut into slices for several workers.
public struct Slicing: Sendable, Hashable {
    /// About how long one slice takes at one worker's share of the rate.
    public var seconds: Double = 20
    /// The fewest and most pushes a slice holds, whatever the rate.
    public var minimum = 100
    public var maximum = 100_000
    /// How many workers the share of the rate assumes when slices are sized.
    public var workers = 3

    public init(seconds: Double? = nil) {
        if let seconds { self.seconds = seconds }
    }

    /// One slice for the whole run: planned once into the snapshot, sent by one worker at a time.
    public static let whole: Slicing = {
        var whole = Slicing()
        (whole.minimum, whole.maximum) = (Int.max, Int.max)
        return whole
    }()

    /// Pushes per slice for a campaign sent at `rate` a second: `seconds` of work at a third of the
    /// rate (three workers' share), within `minimum…maximum`.
    public func size(rate: Double) -> Int {
        let share = rate / Double(max(1, workers))
        return min(maximum, max(minimum, Int((share * seconds).rounded(.up))))
    }
}

/// One slice of a run's snapshot, read back page by page as planned pushes.
struct SnapshotSlice: Sendable {
    let store: any SliceStore
    let slice: RunSlice
    let topic: String
    let pushType: PushType
    let priority: Int
    let namespace: [UInt8]
    let sendTime: Timestamp
    /// The creator's page: a PostgreSQL journal keeps a page per row, so a slice is read a
    /// stored page at a time.
    var pageSize = RunSnapshot.pageSize

    init(store: any SliceStore, slice: RunSlice, campaign: LoadedCampaign, sendTime: Timestamp) {
        self.store = store
        self.slice = slice
        self.topic = campaign.topic
        self.pushType = campaign.pushType
        self.priority = campaign.priority
        self.namespace = UUIDv5.runNamespace(campaign: campaign.id, revision: campaign.revision)
        self.sendTime = sendTime
    }

    /// Calls `body` with each page of the slice's pushes not in `settled`, in seq order: at most two
    /// pages in memory, the next one read from the journal while `body` hands this one over, so
    /// the journal's round trip (a page read, decompressed, sent and decoded: milliseconds) is not
    /// a pause in sending once the executor's few queued batches are gone.
    func forEachPage(skipping settled: SeqSet, _ body: ([PlannedPush]) async throws -> Void) async throws {
        let (store, run, seqs, pageSize) = (store, slice.run, slice.seqs, pageSize)
        func unsettled(_ page: [SnapshotPush]) -> [PlannedPush] {
            page.compactMap { settled.contains($0.seq) ? nil : planned($0) }
        }
        var page = try await store.snapshot(of: run, in: seqs, after: seqs.lowerBound - 1, limit: pageSize)
        while page.count == pageSize, let last = page.last {
            async let next = store.snapshot(of: run, in: seqs, after: last.seq, limit: pageSize)
            try await body(unsettled(page))
            page = try await next
        }
        try await body(unsettled(page))
    }

    /// The push as the creator planned it: every header from the snapshot or the campaign, the
    /// `apns-id` made again from the token (the same UUIDv5 the creator's plan has).
    func planned(_ push: SnapshotPush) -> PlannedPush {
        let expiration: PlannedExpiration? =
            switch push.expiration {
            case nil: nil
            case 0?: .immediately
            case let seconds?: .at(Timestamp(secondsSince1970: seconds))
            }
        var planned = PlannedPush(
            token: push.token,
            apnsID: UUIDv5.make(namespace: namespace, name: push.token),
            variant: push.variant,
            locale: push.locale,
            pushType: pushType,
            priority: priority,
            topic: topic,
            expiration: expiration,
            collapseID: push.collapseID,
            payload: push.payload,
            row: 0,
            seq: push.seq,
            due: push.due
        )
        planned.platform = push.platform
        return planned
    }
}

extension SnapshotPush {
    /// `push` as a run's snapshot keeps it: its expiration made absolute from `sendTime`.
    public init(_ push: PlannedPush, sendTime: Timestamp) {
        self.init(
            seq: push.seq,
            token: push.token,
            payload: push.payload,
            variant: push.variant,
            locale: push.locale,
            collapseID: push.collapseID,
            expiration: push.expirationHeader(sendTime: sendTime),
            platform: push.platform,
            due: push.due
        )
    }
}

/// The creator's side of a sliced run: the plan, made once, written into the journal.
public enum RunSnapshot {
    /// Pushes written to the journal per transaction, and read back per query.
    public static let pageSize = 5_000

    /// Plans the audience once (on a thread of its own: audience sources read files and databases)
    /// and writes every push into the snapshot of `run` under `lease`, a page per transaction, so
    /// memory holds one page whatever the audience's size; then seals it, cut into slices of
    /// `size`. With `opening`, each slice is opened to the workers in the transaction that writes
    /// its last push, so they send while the rest is planned.
    ///
    /// A snapshot an earlier creator left unsealed is taken up where that creator left it: what it
    /// wrote past its last opened slice is dropped, and the plan (the same, from the same files:
    /// the run is of their revision) goes on after that slice. Answers the plan's summary.
    public static func write(
        _ planner: Planner,
        sendTime: Timestamp,
        into store: any Journal,
        run: RunID,
        lease: Lease?,
        size: Int,
        opening: Bool,
        pageSize: Int = RunSnapshot.pageSize
    ) async throws -> PlanSummary {
        let after = try await store.resumeSnapshot(run: run, lease: lease)
        let (summary, slices, count) = try await ThreadPages.run(name: "pushcamp-snapshot") {
            (emit: (Page) throws -> Void) in
            // Slices opened as they are written start small: sending starts after one page.
            var cutter = SliceCutter(size: size, from: after + 1, rampFrom: opening ? pageSize : nil)
            var (page, opened, count) = ([SnapshotPush](), 0, 0)
            page.reserveCapacity(pageSize)
            func flush() throws {
                let closed = opening ? Array(cutter.slices[opened...]) : []
                guard !page.isEmpty || !closed.isEmpty else { return }
                try emit(Page(pushes: page, opening: closed))
                opened += closed.count
                page.removeAll(keepingCapacity: true)
            }
            let summary = try planner.run { push in
                count += 1
                guard push.seq > after else { return }  // written, and opened, by an earlier creator
                // A page never holds two slices' pushes: each worker reads only its own.
                if cutter.add(seq: push.seq), !page.isEmpty { try flush() }
                page.append(SnapshotPush(push, sendTime: sendTime))
                if page.count == pageSize { try flush() }
            }
            try flush()
            return (summary, Array(cutter.finished()[opened...]), count)
        } consume: { page in
            // A creator whose work ended (a cancel, a shutdown) stops at the next page; the next
            // creator goes on from the last slice opened.
            try Task.checkCancellation()
            try await store.appendSnapshot(page.pushes, opening: page.opening, run: run, lease: lease)
        }
        try await store.sealSnapshot(run: run, slices: slices, planned: count, lease: lease)
        return summary
    }

    /// What the planning thread hands over: a page of pushes, and the slices it completes.
    struct Page: Sendable {
        var pushes: [SnapshotPush]
        var opening: [ClosedRange<Int>]
    }
}

/// A worker on a sliced run: claims a free slice, sends it from the snapshot under the slice's
/// lease, ends it, and claims the next, until no slice is free (the others are done or held by
/// live workers) or the run stops. A `Service`: a graceful shutdown ends the slice being sent
/// (answers recorded) and claims no other.
///
/// The campaign's rate is the run's, not each worker's: a worker sends at the rate divided by the
/// slices held under live leases (its own included), re-read at every heartbeat.
public final class SliceWorker: Service, Sendable {
    public struct Options: Sendable {
        public var owner = LeaseOwner.next()
        public var leaseDuration = SendLease.defaultDuration
        public var stallTimeout: Double = 60
        public var executor = Executor.Options()
        /// Keep at it until the run ends: when no slice is free, wait a heartbeat and look again (a
        /// slice another worker holds may be done, or free once its lease expired). False: stop
        /// when none is free (a `serve` node joining; it looks again at its next tick).
        public var untilRunEnds = false
        /// Told of each slice this worker ends, with its report (to log a lost lease, say).
        public var sliceEnded: @Sendable (RunSlice, SendReport) -> Void = { _, _ in }
        /// Told of each slice this worker claims, with its lease, before it sends any of it.
        public var sliceClaimed: @Sendable (RunSlice, Lease) -> Void = { _, _ in }
        /// Read the whole run's counts from the journal every second, for the progress line (the
        /// run's creator, which shows it; a `serve` node has no line to show).
        public var showsRun = false
        /// Where the run's Android pushes go (the `messages:send` path of its Firebase project):
        /// a run with an Android app is sent from its snapshot when its audience is a query.
        public var fcmPath = ""

        public init() {}

        /// A send's lease, stall and executor options, for its worker.
        init(_ send: SendRun.Options, untilRunEnds: Bool) {
            owner = send.owner
            leaseDuration = send.leaseDuration
            stallTimeout = send.stallTimeout
            executor = send.executor
            sliceEnded = send.sliceEnded
            sliceClaimed = send.sliceClaimed
            self.untilRunEnds = untilRunEnds
            showsRun = untilRunEnds
        }
    }

    let campaign: LoadedCampaign
    let run: RunRecord
    let store: any Journal
    let endpoint: String
    let makeTransport: @Sendable () throws -> any PushTransport
    let clock: any WallClock
    let options: Options
    let progress: @Sendable (SendProgress) -> Void
    private let sent = Mutex<[SendReport]>([])
    /// The whole run as last read from the journal (`Options.showsRun`).
    private let wide = Mutex<SendProgress.RunWide?>(nil)
    /// One naming of variants and locales for every slice this worker sends, so their readouts add up.
    private let groups = ReadoutGroups()
    /// The run's creator: writes the snapshot while this worker sends the slices it opens.
    let snapshot: (@Sendable () async throws -> Void)?
    /// Whether `snapshot` is still being written: while it is, a worker with no slice to claim
    /// looks again at once rather than after a heartbeat.
    private let writing = Mutex(false)
    /// Why the snapshot could not be written, once it could not.
    private let snapshotFailure = Mutex<String?>(nil)

    public init(
        campaign: LoadedCampaign,
        run: RunRecord,
        store: any Journal,
        endpoint: String,
        clock: any WallClock = SystemWallClock(),
        options: Options = Options(),
        progress: @escaping @Sendable (SendProgress) -> Void = { _ in },
        snapshot: (@Sendable () async throws -> Void)? = nil,
        makeTransport: @escaping @Sendable () throws -> any PushTransport
    ) {
        self.snapshot = snapshot
        self.campaign = campaign
        self.run = run
        self.store = store
        self.endpoint = endpoint
        self.clock = clock
        self.options = options
        self.progress = progress
        self.makeTransport = makeTransport
    }

    /// The reports of the slices this worker sent, in order.
    public var reports: [SendReport] { sent.withLock { $0 } }

    /// What this worker sent, all slices added up; nil before it sent any. Stopped on the journal
    /// when it created the run and could not write its plan.
    public var report: SendReport? {
        let reports = self.reports
        let sent = reports.first.map { first in reports.dropFirst().reduce(first) { $0.adding($1) } }
        guard let failure = snapshotFailure.withLock({ $0 }) else { return sent }
        var report = sent ?? SendReport(campaign: campaign.id, revision: campaign.revision, endpoint: endpoint)
        report.stop = .journal("the run's plan could not be written into the journal: \(failure)")
        return report
    }

    public func run() async throws {
        // One pool for every slice this worker sends: each new slice would otherwise pay TLS and
        // the one-stream ramp again.
        let connections = KeptConnections(make: makeTransport)
        do {
            // Structured: the watch, the snapshot and the work are this group's children, each
            // waiting on the injected clock, all cancelled and awaited before `run` returns.
            try await withThrowingTaskGroup(of: Bool.self) { group in
                // Where the whole run stands, for the progress line.
                if options.showsRun {
                    group.addTask {
                        await self.watchRun()
                        return false
                    }
                }
                if let snapshot {
                    writing.withLock { $0 = true }
                    group.addTask {
                        defer { self.writing.withLock { $0 = false } }
                        do {
                            try await snapshot()
                        } catch is CancellationError {
                            // The work ended first: the next creator goes on after the last slice opened.
                        } catch {
                            self.snapshotFailure.withLock { $0 = "\(error)" }
                            throw error  // the run cannot be finished from here: the work stops
                        }
                        return false
                    }
                }
                group.addTask {
                    try await self.work(through: connections)
                    return true
                }
                // Until the work ends (true), or a child fails; the others are cancelled then.
                defer { group.cancelAll() }
                while let workEnded = try await group.next(), !workEnded {}
            }
        } catch {
            await connections.close()
            throw error
        }
        await connections.close()
    }

    /// Reads where the whole run stands every second, until cancelled; a read that fails or
    /// takes over 2 s leaves the last one in place.
    private func watchRun() async {
        let (store, id) = (self.store, run.id)
        while !Task.isCancelled {
            let read = try? await withDeadline(.seconds(2)) { () async throws(JournalError) -> SendProgress.RunWide? in
                guard let planned = try await store.run(id)?.planned else { return nil }
                let counts = try await store.counts(of: id)
                let slices = try await store.slices(of: id)
                return SendProgress.RunWide(
                    answered: counts.delivered + counts.failed,
                    planned: planned,
                    slicesDone: slices.count { $0.done },
                    slices: slices.count,
                    slicesHeld: try await store.liveSlices(of: id)
                )
            }
            if let read, let read { wide.withLock { $0 = read } }
            do { try await clock.sleep(for: 1) } catch { return }
        }
    }

    /// Claims and sends slices until none is free, the run stops, or a slice is left unfinished.
    private func work(through connections: KeptConnections) async throws {
        // A look a second at most (a fifth of a lease under a 5 s lease): the run's end, when the
        // last slices are others', is seen within a second, for one cheap query a second.
        let pause = min(1, options.leaseDuration / 5)
        while !Task.isCancelled {
            let asked = ContinuousClock.now
            guard
                let (slice, lease) = try await store.claimSlice(
                    of: run.id,
                    owner: options.owner.id,
                    duration: options.leaseDuration
                )
            else {
                guard options.untilRunEnds, try await store.run(run.id)?.status == .running else { return }
                // Slices held by others: one may end, or its holder die; or the next is being
                // planned here, and opens in a moment. A shutdown ends the wait.
                let wait = writing.withLock { $0 } ? 0.02 : pause
                do {
                    try await cancelWhenGracefulShutdown { [clock] in try await clock.sleep(for: wait) }
                } catch {
                    return
                }
                continue
            }
            options.sliceClaimed(slice, lease)
            let held = SendLease(lease, store: store, duration: options.leaseDuration, claimedAt: asked, clock: clock)
            let report = try await send(slice, under: held, through: try connections.lend())
            sent.withLock { $0.append(report) }
            options.sliceEnded(slice, report)
            switch report.stop {
            case nil where report.planFinished && report.unsent == 0, .leaseLost?: continue
            default: return  // stopped, or the slice was left unfinished: never claimed again at once
            }
        }
    }

    /// Sends `slice` to its end under `lease`.
    func send(
        _ slice: RunSlice,
        under lease: SendLease,
        through transport: any PushTransport
    ) async throws -> SendReport {
        let resume = try await ResumePoint(journal: store, slice: slice)
        let journal = RunJournal(store: store, run: run, resume: resume, lease: lease, slice: slice, clock: clock)
        let now = clock.now()
        let rate = campaign.rate.perSecond
        let configuration = ExecutorStateMachine.Configuration(
            for: campaign,
            endpoint: endpoint,
            rate: rate / Double(max(1, (try? await store.liveSlices(of: run.id)) ?? 1)),
            stallTimeout: options.stallTimeout
        )
        var report = SendReport(campaign: campaign.id, revision: campaign.revision, endpoint: endpoint)
        report.groupNames = groups
        let machine = ExecutorStateMachine(
            configuration: configuration,
            report: report,
            resuming: resume,
            of: run.id,
            now: now
        )
        let sendTime = Timestamp(secondsSince1970: Int64(run.startedAt))
        let producer = PlanProducer(
            slice: SnapshotSlice(store: store, slice: slice, campaign: campaign, sendTime: sendTime),
            batchSize: configuration.handOverSize,
            resume: resume,
            resendUnknown: campaign.retry.resendUnknown,
            clock: clock,
            groups: groups,
            fcmPath: options.fcmPath
        )
        let (before, progress) = (self.report, self.progress)
        let executor = Executor(
            machine: machine,
            producer: producer,
            transport: transport,
            journal: journal,
            clock: clock,
            options: options.executor,
            progress: { [self] moment in
                var total = moment.after(before)
                total.run = wide.withLock { $0 }
                progress(total)
            }
        )
        let (store, run, heartbeat, clock) = (self.store, self.run, lease.heartbeat, self.clock)
        return await withTaskGroup(of: SendReport?.self) { group in
            group.addTask { await executor.send() }
            group.addTask {
                // The run's rate, shared by the slices held under live leases.
                while !Task.isCancelled {
                    do {
                        try await clock.sleep(for: heartbeat)
                    } catch {
                        return nil
                    }
                    if let live = try? await withDeadline(.seconds(2), { try await store.liveSlices(of: run.id) }) {
                        executor.pace(at: rate / Double(max(1, live)))
                    }
                }
                return nil
            }
            // The send's report (the pacing task ends first only when cancelled, with nil).
            var report: SendReport?
            while report == nil, let next = await group.next() { report = next }
            group.cancelAll()
            return report ?? SendReport(campaign: campaign.id, revision: campaign.revision, endpoint: endpoint)
        }
    }
}

extension LoadedCampaign {
    /// Whether a run of this kind can be planned into a snapshot: a send or a slot; replays,
    /// rehearsals and trigger runs are planned as they are sent.
    public func isSnapshottable(as kind: SendRun.Kind) -> Bool {
        switch kind {
        case .send, .slot: return true
        case .replay, .rehearsal, .trigger: return false
        }
    }

    /// Whether a run of this kind can be cut into slices for several workers: a snapshottable run
    /// of a campaign without an Android app whose recipients all go at once.
    public func isSliceable(as kind: SendRun.Kind) -> Bool {
        // A campaign with Android recipients is sent by one worker at a time: the Firebase
        // project's quota caps the whole run, and workers pacing each on their own would send it
        // several times over (docs/android.md). A moment per recipient keeps a run's pushes for
        // hours: its worker holds them moment by moment, in one slice.
        android == nil && !timesEachRecipient && isSnapshottable(as: kind)
    }
}

extension SendRun {
    /// `campaign` as run `run` was planned, for a node whose files are of another revision to
    /// finish it from its snapshot: the run's revision (so its `apns-id`s are the plan's), topic,
    /// push type and priority, as the run's creator kept them. Nil when the run has no sealed
    /// snapshot, keeps no such facts (runs planned before they were kept), or goes through another
    /// app (other credentials).
    static func pinned(
        _ campaign: LoadedCampaign,
        to run: RunRecord,
        in store: any Journal
    ) async throws -> LoadedCampaign? {
        guard run.campaign == campaign.id, try await store.run(run.id)?.planned != nil,
            try await !store.slices(of: run.id).isEmpty,
            let facts = try await store.stats(of: run.id)?.sent, facts.app == campaign.appLabel,
            let type = facts.pushType.flatMap(PushType.init(rawValue:)), let priority = facts.priority
        else { return nil }
        var pinned = campaign
        pinned.revision = run.revision
        pinned.topic = facts.topic
        pinned.pushType = type
        pinned.priority = priority
        return pinned
    }

    /// How a run of `campaign` is cut, nil when it is not: as `journal.slice` says (a PostgreSQL
    /// journal) for a campaign that can be sliced; and always, in one slice unless the journal
    /// cuts more, for a live audience (a PostgreSQL query, which may change while the run sends):
    /// planned once, its snapshot is what every resume and every worker sends. A campaign with an
    /// Android app, or a moment per recipient, reading a live audience is planned into one slice,
    /// sent by one worker at a time.
    static func slicing(_ campaign: LoadedCampaign, options: Options) -> Slicing? {
        if campaign.isSliceable(as: options.kind) {
            return options.slicing ?? (campaign.audienceIsLive ? .whole : nil)
        }
        return campaign.audienceIsLive && campaign.isSnapshottable(as: options.kind) ? .whole : nil
    }

    /// The pools of a worker's slices: `first` (made while the send was checked), kept from slice
    /// to slice, then a new one to the same place whenever the last was shut down (a slice that
    /// stopped with requests on the wire).
    static func transports(
        first: any PushTransport,
        transport: Transport,
        campaign: LoadedCampaign,
        options: Options,
        clock: any WallClock
    ) -> @Sendable () throws -> any PushTransport {
        let unused = Mutex<(any PushTransport)?>(first)
        return {
            if let first = unused.withLock({ $0.take() }) { return first }
            return try connections(for: campaign, over: transport, options: options, clock: clock).0
        }
    }

    /// The worker of a run cut into slices, after its snapshot is written (by this process, the
    /// run's creator, holding the campaign's lease) unless an earlier one sealed it already.
    static func sliced(
        _ opened: OpenedRun,
        campaign: LoadedCampaign,
        slicing: Slicing,
        history: DeliveryHistory?,
        options: Options,
        transport: Transport,
        pool: any PushTransport,
        endpoint: String,
        clock: any WallClock,
        progress: @escaping @Sendable (SendProgress) -> Void
    ) async throws -> SliceWorker {
        let store = options.journal
        let run = opened.journal.run
        var snapshot: (@Sendable () async throws -> Void)?
        if try await store.run(run.id)?.planned == nil {
            let lease = opened.lease
            let size = slicing.size(rate: campaign.rate.perSecond)
            // A live audience (a PostgreSQL query) is read again by a creator that takes an
            // unsealed snapshot over, and may have changed: its slices open only once it is sealed,
            // so the next creator starts over with nothing sent.
            let opening = !campaign.audienceIsLive
            let write: @Sendable () async throws -> Void = {
                // Where and how the run's pushes go, kept before its snapshot is sealed: a node of
                // another revision finishes the run as planned from them (`pinned(to:facts:)`).
                var stats = RunStats()
                stats.sent = SentFacts(
                    app: campaign.appLabel,
                    topic: campaign.topic,
                    environment: campaign.environmentLabel,
                    endpoint: endpoint,
                    rate: campaign.rate.text,
                    connections: campaign.connections,
                    description: campaign.description
                )
                stats.sent?.pushType = campaign.pushType.rawValue
                stats.sent?.priority = campaign.priority
                try await store.record(JournalBatch(stats: stats, lease: lease.lease), run: run.id, now: clock.now())
                let sendTime = Timestamp(secondsSince1970: Int64(clock.now()))
                var planner = Planner(campaign: campaign, sendTime: sendTime, sendTimeSource: "now", sampleLimit: 3)
                planner.history = history
                let summary = try await RunSnapshot.write(
                    planner,
                    sendTime: sendTime,
                    into: store,
                    run: run.id,
                    lease: lease.lease,
                    size: size,
                    opening: opening
                )
                // The creator's part of the run's statistics: where the audience went, and where to.
                stats.plan = PlanFunnel(summary)
                try await store.record(JournalBatch(stats: stats, lease: lease.lease), run: run.id, now: clock.now())
            }
            if options.detach {
                // Planned to the end here, the lease renewed meanwhile (a plan of millions takes
                // longer than a lease); nodes send each slice as it opens.
                try await lease.renewed(fenced: true) { try await write() }
            } else {
                snapshot = write  // written while this process sends the slices it opens
            }
        }
        return worker(
            of: run,
            campaign: campaign,
            options: options,
            transport: transport,
            pool: pool,
            endpoint: endpoint,
            clock: clock,
            progress: progress,
            untilRunEnds: true,
            snapshot: snapshot
        )
    }

    /// A worker on `run` sending through `pool` first, then new transports like it.
    static func worker(
        of run: RunRecord,
        campaign: LoadedCampaign,
        options: Options,
        transport: Transport,
        pool: any PushTransport,
        endpoint: String,
        clock: any WallClock,
        progress: @escaping @Sendable (SendProgress) -> Void,
        untilRunEnds: Bool,
        snapshot: (@Sendable () async throws -> Void)? = nil
    ) -> SliceWorker {
        var workerOptions = SliceWorker.Options(options, untilRunEnds: untilRunEnds)
        workerOptions.fcmPath = fcmPath(for: campaign, over: transport)
        return SliceWorker(
            campaign: campaign,
            run: run,
            store: options.journal,
            endpoint: endpoint,
            clock: clock,
            options: workerOptions,
            progress: progress,
            snapshot: snapshot,
            makeTransport: transports(
                first: pool,
                transport: transport,
                campaign: campaign,
                options: options,
                clock: clock
            )
        )
    }

    /// This process as one more worker on `run`, a run cut into slices that another process
    /// created: no campaign lease, only its slices'. Refused when the campaign changed since the
    /// run was planned (a worker sends exactly the run's plan), or its credentials fail.
    public static func join(
        _ run: RunRecord,
        campaign: LoadedCampaign,
        options: Options,
        transport: Transport,
        clock: any WallClock = SystemWallClock(),
        progress: @escaping @Sendable (SendProgress) -> Void = { _ in }
    ) async throws(RunRefusal) -> SendRun {
        var campaign = campaign
        if run.campaign == campaign.id, run.revision != campaign.revision,
            let pinned = try? await pinned(campaign, to: run, in: options.journal)
        {
            campaign = pinned  // a rolling deploy: the run's plan, finished from its snapshot
        }
        guard run.campaign == campaign.id, run.revision == campaign.revision else {
            throw RunRefusal(
                .refused,
                "run \(run.id) of \(run.campaign) was planned from revision \(run.revision), and this node has "
                    + "revision \(campaign.revision): it sends no slice of it"
            )
        }
        let (pool, endpoint, tokens) = try connections(for: campaign, over: transport, options: options, clock: clock)
        await tokens?.synchronize(through: options.journal)
        return SendRun(
            executor: nil,
            worker: worker(
                of: run,
                campaign: campaign,
                options: options,
                transport: transport,
                pool: pool,
                endpoint: endpoint,
                clock: clock,
                progress: progress,
                untilRunEnds: false
            ),
            run: run,
            endpoint: endpoint,
            note: nil,
            lease: nil,
            tokens: tokens.map { ($0, options.journal) }
        )
    }
}
