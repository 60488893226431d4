import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampFCM
import PushcampJournal
import PushcampModel
import PushcampPlanner
import ServiceLifecycle

/// The one factory every send goes through — `send`, `replay`, `rehearse`, and next `serve`:
///
/// `LoadedCampaign → checks → transport → journal run (new or resumed, locked) → Planner → Executor`
///
/// Everything that can refuse a send is checked before a run row exists (the schedule, the
/// credentials, the journal, the lease, a campaign already sent), so a refused send leaves nothing
/// behind. Collaborators are injected through defaulted parameters: the transport (the app's APNs
/// pool, or a given one such as the rehearsal simulator's or an in-memory twin), the clock and the
/// environment credentials are read from.
///
/// A `SendRun` is a swift-service-lifecycle `Service`: `run()` sends to the end (or to a graceful
/// shutdown), and `report` then holds the outcome. It holds the campaign's lease while it sends.
public final class SendRun: Service, Sendable {
    public enum Kind: Sendable, Equatable {
        /// `pushcamp send`: resumes an unfinished run, refuses a campaign already sent.
        case send
        /// `pushcamp replay`: the recipients of a run that failed with the given reasons.
        case replay(ReplaySelection)
        /// `pushcamp rehearse`: recorded in the rehearsal journal; a finished rehearsal is simply run again.
        case rehearsal
        /// `pushcamp serve`: the run of one schedule slot (seconds since 1970), claimed in the journal
        /// as the run is created, or resumed when the slot's run is unfinished.
        case slot(Int64)
        /// `pushcamp serve`: the run of trigger firings (by their notifications' UUIDs), claimed in
        /// the journal as the run is created, or resumed when their run is unfinished.
        case trigger([String])
    }

    public struct Options: Sendable {
        public var kind: Kind = .send
        /// The journal the run is recorded in.
        public var journal: any Journal
        /// The journal whose dead tokens and deliveries shape the plan (suppression, frequency caps);
        /// `journal` when nil. A rehearsal reads the project's journal and records into its own.
        public var history: (any Journal)?
        /// The folder provider tokens are cached in between processes, or nil for none.
        public var tokenCache: String?
        /// Seconds the campaign's lease lasts unless renewed (`journal.lease` in pushcamp.yaml).
        public var leaseDuration = SendLease.defaultDuration
        /// Who holds the lease: this send.
        public var owner = LeaseOwner.next()
        /// Start a new run even though the campaign was sent (or has an unfinished run of another revision).
        public var newRun = false
        /// Send now although the campaign is scheduled (`schedule.at` in the future, or recurring).
        public var ignoreSchedule = false
        /// Seconds without an answer, while requests are pending, that stop the run.
        public var stallTimeout: Double = 60
        /// A reviewed plan (`send --plan FILE`) the campaign must still match, and its file's name.
        public var plan: (file: PlanFile, path: String)?
        public var executor = Executor.Options()
        /// Where provider tokens come from: one owner per key for the whole process, so runs that
        /// start together share one token.
        public var providerTokens = ProviderTokenOwners.shared
        /// Cut the run into slices that every worker on the journal sends (a shared journal:
        /// PostgreSQL), or nil to send it whole from this process. Only sends and slots of
        /// campaigns without a moment per recipient are cut; the others are sent whole.
        public var slicing: Slicing?
        /// Told of each slice of a sliced run this process ends, with its report.
        public var sliceEnded: @Sendable (RunSlice, SendReport) -> Void = { _, _ in }
        /// Told of each slice this process's worker claims, with its lease (fence, and expiry on
        /// the journal's clock).
        public var sliceClaimed: @Sendable (RunSlice, Lease) -> Void = { _, _ in }
        /// For a run cut into slices: plan it into the journal and let the campaign's lease go,
        /// sending nothing from here (the serve nodes send it). `prepare` does all of it.
        public var detach = false

        public init(journal: any Journal) {
            self.journal = journal
        }
    }

    /// Where the pushes go.
    public enum Transport: Sendable {
        /// The app's connections from pushcamp.yaml: Apple's host for its environment, or its endpoint.
        case app(paths: ProjectPaths, environment: [String: String])
        /// A transport built elsewhere (the rehearsal simulator's pool, an in-memory twin).
        case given(any PushTransport, endpoint: String)
    }

    /// The executor of a run sent whole; nil when the run is cut into slices (`worker`).
    public let executor: Executor?
    /// This process's worker on a run cut into slices.
    public let worker: SliceWorker?
    public let run: RunRecord
    public let endpoint: String
    /// What to tell the user before sending (resuming, giving up an old run).
    public let note: String?
    /// The campaign's lease, renewed while the executor sends and released when it ends; nil for
    /// a worker that joined a sliced run (it holds its slices' leases only).
    public let lease: SendLease?
    /// The provider tokens of the app's key and the journal they are shared through.
    private let tokens: (SharedCredentials, any Journal)?

    init(
        executor: Executor?,
        worker: SliceWorker? = nil,
        run: RunRecord,
        endpoint: String,
        note: String?,
        lease: SendLease?,
        tokens: (SharedCredentials, any Journal)?
    ) {
        self.executor = executor
        self.worker = worker
        self.run = run
        self.endpoint = endpoint
        self.note = note
        self.lease = lease
        self.tokens = tokens
    }

    /// Sends to the end (the executor renews the campaign's lease meanwhile and releases it at
    /// the end; the provider token is kept in step with the other nodes'); the outcome is then
    /// `report`.
    public func run() async throws {
        _ = await send()
    }

    /// Sends to the end and returns the report.
    public func send() async -> SendReport {
        await withDiscardingTaskGroup { group in
            if let (tokens, journal) = self.tokens {
                group.addTask { await tokens.keepSynchronized(through: journal) }
            }
            if let executor {
                _ = await executor.send()
            } else if let worker {
                // The campaign's lease stays this process's while it works on the run's slices
                // (no other node starts the campaign's next run meanwhile), then is let go.
                if let lease { group.addTask { await lease.keepRenewed() } }
                try? await worker.run()
                await lease?.release()
            }
            // A refusal as too frequent is the other nodes' news before this process goes.
            if let (tokens, journal) = self.tokens { await tokens.shareNews(through: journal) }
            group.cancelAll()
        }
        return report ?? SendReport(campaign: run.campaign, revision: run.revision, endpoint: endpoint)
    }

    /// The report, once `run()` returned: a sliced run's is what this process sent of it.
    public var report: SendReport? {
        if let executor { return executor.report }
        var report = worker?.report
        report?.run = run.id.rawValue
        return report
    }

    /// Checks everything, opens (or resumes) the run and builds its executor. Throws `RunRefusal`
    /// with a message and an exit code; nothing is recorded when it does.
    public static func prepare(
        _ written: LoadedCampaign,
        options: Options,
        transport: Transport,
        clock: any WallClock = SystemWallClock(),
        progress: @escaping @Sendable (SendProgress) -> Void = { _ in }
    ) async throws(RunRefusal) -> SendRun {
        let now = clock.now()
        var campaign: LoadedCampaign
        do {
            // A rehearsal names the project's channels (its own journal records none).
            campaign = try await written.resolvingBuiltins(in: options.history ?? options.journal, now: now)
        } catch {
            throw RunRefusal(.journal, "the journal cannot be read: \(error.message); nothing was sent")
        }
        if case .replay(let selection) = options.kind {
            let original = selection.original
            guard campaign.id == original.campaign, campaign.revision == original.revision else {
                throw RunRefusal(
                    .refused,
                    """
                    the campaign changed since run \(original.id) was sent (revision \(original.revision), now \
                    \(campaign.revision)); a replay plans it again and would not reach the same recipients. Restore \
                    the file, its templates and its audience to replay run \(original.id)
                    """
                )
            }
            // A replay names recipients by their place in the plan: rows a query returns now may not
            // be in the places they were.
            guard !campaign.audienceIsLive else {
                throw RunRefusal(
                    .refused,
                    """
                    run \(original.id) was planned from a PostgreSQL audience, which may have changed since; a \
                    replay plans the audience again and could reach other recipients, so nothing was sent. Only \
                    a campaign whose audience is a file or a SQLite database can be replayed
                    """
                )
            }
        }
        try refuseUndeliberate(campaign, options: options, now: now)
        if let (plan, path) = options.plan {
            let differences = plan.differences(from: campaign)
            guard differences.isEmpty else {
                throw RunRefusal(
                    .refused,
                    """
                    the campaign is not the one planned in \(path) (made \(plan.createdAt)): \
                    \(differences.joined(separator: "; ")); nothing was sent. Review the new plan \
                    (`pushcamp plan --out \(path)`) and send with it
                    """
                )
            }
        }
        let (pool, endpoint, tokens) = try connections(for: campaign, over: transport, options: options, clock: clock)
        // A node sharing the journal was refused a provider token as too frequent: no token is
        // minted into that penalty, and without one nothing is sent.
        if let held = await tokens?.heldBack(through: options.journal) {
            throw RunRefusal(.held, "\(held); nothing was sent")
        }
        let opened = try await OpenedRun.open(campaign, options: options, now: now, clock: clock)
        // A run planned from another revision, finished from its snapshot as it was planned.
        if let pinned = opened.pinned { campaign = pinned }
        // The token every node on the journal shares, adopted (or minted and stored) first.
        await tokens?.synchronize(through: options.journal)
        let history: DeliveryHistory?
        if case .replay = options.kind {
            history = nil  // the recipients are named by the run replayed
        } else {
            do {
                if let journal = options.history {
                    history = try await DeliveryHistory.read(for: campaign, from: journal, clock: clock)
                } else {
                    history = try await DeliveryHistory.read(
                        for: campaign,
                        from: opened.journal.store,
                        clock: clock,
                        triggerKeys: opened.triggerKeys
                    )
                }
            } catch {
                try? await opened.journal.close(status: .interrupted, planned: nil)
                await opened.lease.release()
                throw RunRefusal(.journal, "the journal cannot be read: \(error); nothing was sent")
            }
        }
        if campaign.keepsAssignment(as: options.kind) {
            // Before the first push: a test's readout never needs these files again.
            do {
                _ = try await opened.lease.renewed {
                    try await AssignmentKeeper.keep(campaign, run: opened.journal.run, in: opened.journal.store)
                }
            } catch {
                try? await opened.journal.close(status: .interrupted, planned: nil)
                await opened.lease.release()
                throw RunRefusal(
                    .journal,
                    "the run's assignment could not be kept in the journal: \(error); nothing was sent"
                )
            }
        }
        if let slicing = opened.pinned != nil ? options.slicing ?? .whole : Self.slicing(campaign, options: options) {
            let worker: SliceWorker
            do {
                worker = try await sliced(
                    opened,
                    campaign: campaign,
                    slicing: slicing,
                    history: history,
                    options: options,
                    transport: transport,
                    pool: pool,
                    endpoint: endpoint,
                    clock: clock,
                    progress: progress
                )
            } catch {
                try? await opened.journal.close(status: .interrupted, planned: nil)
                await opened.lease.release()
                throw RunRefusal(.journal, "the run could not be planned into the journal: \(error); nothing was sent")
            }
            // The run's own writer has nothing to write: each slice's send has a writer of its own.
            await opened.journal.abandon()
            if options.detach { await opened.lease.release() }
            return SendRun(
                executor: nil,
                worker: worker,
                run: opened.journal.run,
                endpoint: endpoint,
                note: opened.note,
                lease: options.detach ? nil : opened.lease,
                tokens: tokens.map { ($0, options.journal) }
            )
        }
        let configuration = ExecutorStateMachine.Configuration(
            for: campaign,
            endpoint: endpoint,
            rate: campaign.rate.perSecond,
            stallTimeout: options.stallTimeout
        )
        var report = SendReport(campaign: campaign.id, revision: campaign.revision, endpoint: endpoint)
        let groups = ReadoutGroups()
        report.groupNames = groups
        report.sent = SentFacts(
            app: campaign.appLabel,
            topic: campaign.topic,
            environment: options.kind == .rehearsal ? "rehearsal" : campaign.environmentLabel,
            endpoint: endpoint,
            rate: campaign.rate.text,
            connections: campaign.connections,
            description: campaign.description
        )
        let resume = opened.resume
        let machine = ExecutorStateMachine(
            configuration: configuration,
            report: report,
            resuming: resume,
            of: opened.journal.run.id,
            now: now
        )
        // Expirations count from the moment the send really starts, never from schedule.at.
        let sendTime = Timestamp(secondsSince1970: Int64(now))
        var planner = Planner(campaign: campaign, sendTime: sendTime, sendTimeSource: "now", sampleLimit: 3)
        planner.history = history
        var only: SeqSet?
        if case .replay(let selection) = options.kind { only = selection.recipients }
        let producer = PlanProducer(
            planner: planner,
            sendTime: sendTime,
            batchSize: configuration.handOverSize,
            resume: resume,
            resendUnknown: campaign.retry.resendUnknown,
            only: only,
            clock: clock,
            groups: groups,
            fcmPath: fcmPath(for: campaign, over: transport)
        )
        let executor = Executor(
            machine: machine,
            producer: producer,
            transport: pool,
            journal: opened.journal,
            clock: clock,
            options: options.executor,
            progress: progress
        )
        return SendRun(
            executor: executor,
            run: opened.journal.run,
            endpoint: endpoint,
            note: opened.note,
            lease: opened.lease,
            tokens: tokens.map { ($0, options.journal) }
        )
    }
}

extension SendRun {
    /// Where `campaign`'s pushes go over `transport`: the pool, the endpoint it names, and the
    /// provider tokens of the app's key (nil for a given transport). Refused (`.credentials`)
    /// when the app's credentials cannot be used.
    static func connections(
        for campaign: LoadedCampaign,
        over transport: Transport,
        options: Options,
        clock: any WallClock
    ) throws(RunRefusal) -> (any PushTransport, endpoint: String, tokens: SharedCredentials?) {
        switch transport {
        case .app(let paths, let environment):
            // One event loop for both pools: the executor runs on it, next to every connection.
            let loop = APNsConnectionPool.nextEventLoop()
            var apns: (APNsConnectionPool, endpoint: String, tokens: ProviderTokens?)?
            if let app = campaign.app {
                do {
                    apns = try appTransport(
                        for: app,
                        connections: campaign.connections,
                        paths: paths,
                        environment: environment,
                        clock: clock,
                        owners: options.providerTokens,
                        tokenCache: options.tokenCache,
                        group: loop
                    )
                } catch {
                    throw RunRefusal(.credentials, error.message + "; nothing was sent")
                }
            }
            var fcm: (APNsConnectionPool, endpoint: String, tokens: AccessTokens, path: String)?
            if let android = campaign.android {
                fcm = try fcmTransport(
                    for: android.app,
                    connections: campaign.connections,
                    paths: paths,
                    environment: environment,
                    clock: clock,
                    group: loop
                )
            }
            let credentials = SharedCredentials([apns?.tokens, fcm?.tokens], clock: clock)
            switch (apns, fcm) {
            case (let apns?, let fcm?):
                return (
                    RoutedTransport(apns: apns.0, fcm: fcm.0), "\(apns.endpoint) (APNs) and \(fcm.endpoint) (FCM)",
                    credentials
                )
            case (let apns?, nil): return (apns.0, apns.endpoint, credentials)
            case (nil, let fcm?): return (fcm.0, fcm.endpoint, credentials)
            case (nil, nil): throw RunRefusal(.refused, "the campaign names no app to send with; nothing was sent")
            }
        case .given(let given, let name):
            return (given, name, nil)
        }
    }

    /// The `messages:send` path of `campaign`'s Android app: its `project_id`, else its key file's.
    static func fcmPath(for campaign: LoadedCampaign, over transport: Transport) -> String {
        guard let android = campaign.android else { return "" }
        if case .app(let paths, let environment) = transport,
            let credentials = try? FCMCredentials.load(android.app, paths: paths, environment: environment)
        {
            return fcmPath(project: credentials.projectID)
        }
        return fcmPath(project: android.app.projectID ?? "rehearsal")
    }
}

extension ExecutorStateMachine {
    /// The machine of a send that picks `run` (or one slice of it) up where `resume` says: what
    /// was settled before counts as planned, and the report says it was not this send's to answer.
    init(configuration: Configuration, report: SendReport, resuming resume: ResumePoint, of run: RunID, now: Double) {
        var report = report
        if resume.settled.count > 0 || !resume.pending.isEmpty {
            report.resumed = SendReport.Resumed(run: run.rawValue, delivered: resume.delivered, failed: resume.failed)
        }
        report.events.append(Self.startEvent(after: resume.stats.events, resuming: report.resumed != nil, now: now))
        self.init(configuration: configuration, report: report, alreadySettled: resume.settled.count, now: now)
    }
}

extension ExecutorStateMachine {
    /// How this send begins the run's timeline, given what the sends before recorded: a resume
    /// says what stopped the last one, or that it never said (killed, crashed, cut off).
    static func startEvent(after earlier: [RunEvent], resuming: Bool, now: Double) -> RunEvent {
        guard resuming || !earlier.isEmpty else { return RunEvent(at: now, kind: .started) }
        // Nothing recorded, or a start with no end: the send before never closed the run (a send
        // killed before its first save of statistics recorded nothing at all).
        guard let last = earlier.last, last.kind != .started, last.kind != .resumed else {
            return RunEvent(
                at: now,
                kind: .resumed,
                detail: "after the send before stopped without closing the run (killed, crashed or cut off)"
            )
        }
        return RunEvent(at: now, kind: .resumed, detail: last.detail.map { "after \($0)" })
    }
}

extension ExecutorStateMachine.Configuration {
    /// How the executor sends `campaign` to `endpoint` at `rate` (the campaign's, or a worker's
    /// share of it): its retry policy and connections.
    init(for campaign: LoadedCampaign, endpoint: String, rate: Double, stallTimeout: Double) {
        self.init(
            rate: rate,
            retry: RetryPolicy(campaign.retry),
            endpoint: endpoint,
            connections: campaign.connections
        )
        self.stallTimeout = stallTimeout
        // Paced apart only when the quota is below the campaign's rate.
        fcmRate = campaign.android.flatMap { $0.app.quota.perSecond < rate ? $0.app.quota.perSecond : nil }
    }
}

extension SendRun {
    /// `send` of a campaign that `serve` sends: one whose `at` is still ahead, or a recurring one.
    /// Refuses a `send` of a campaign `serve` sends (scheduled for later, recurring, or triggered)
    /// unless `--now`: checked before anything else, confirmation prompts included.
    public static func refuseUndeliberate(
        _ campaign: LoadedCampaign,
        options: Options,
        now: Double
    ) throws(RunRefusal) {
        try refuseUndeliberate(campaign, kind: options.kind, ignoreSchedule: options.ignoreSchedule, now: now)
    }

    public static func refuseUndeliberate(
        _ campaign: LoadedCampaign,
        kind: Kind,
        ignoreSchedule: Bool,
        now: Double
    ) throws(RunRefusal) {
        if case .send = kind, !ignoreSchedule, let schedule = campaign.schedule {
            try refuseScheduled(schedule, now: now)
        }
        if case .send = kind, !ignoreSchedule, let trigger = campaign.trigger {
            throw RunRefusal(
                .refused,
                """
                the campaign has a trigger (\(trigger)); `pushcamp serve` sends it to one subscription's \
                recipients each time that notification arrives, so nothing was sent. Send it now to everyone \
                the audience joins to a subscription anyway with --now
                """
            )
        }
    }

    private static func refuseScheduled(_ schedule: ScheduleSpec, now: Double) throws(RunRefusal) {
        if let at = schedule.once {
            guard Double(at) > now else { return }
            let when = schedule.local.map {
                "\($0.time) in each recipient's zone, starting \(Timestamps.text(Double(at)))"
            }
            throw RunRefusal(
                .refused,
                """
                the campaign is scheduled for \(when ?? Timestamps.text(Double(at))) (schedule.at), which is \
                in the future; `pushcamp serve` sends it then, and `pushcamp send` sends at once, so nothing was \
                sent. Send it now anyway with --now (expirations count from the real send time)
                """
            )
        }
        let next = schedule.nextSlot(after: Int64(now)).map { "next slot \(Timestamps.text(Double($0)))" }
        throw RunRefusal(
            .refused,
            """
            the campaign is scheduled (\(schedule), \(next ?? "no slot left")); `pushcamp serve` sends each \
            slot, so nothing was sent. Send it once now anyway with --now
            """
        )
    }

    /// Whether a send must be confirmed before it starts: one to Apple's production host (the
    /// `production` environment without a custom endpoint) is, unless `--yes` or a reviewed plan
    /// file says so already; without a terminal to ask on, it is refused.
    public enum Confirmation: Sendable, Equatable {
        case notNeeded
        case ask
        case refuse(String)
    }

    public static func confirmation(
        for campaign: LoadedCampaign,
        yes: Bool,
        planFile: Bool,
        interactive: Bool
    ) -> Confirmation {
        var real: [String] = []
        if let app = campaign.app, app.environment == .production, app.endpoint == nil {
            real.append("APNs production (app \(app.name))")
        }
        // FCM has one environment: without an endpoint of the simulator, messages reach phones.
        if let android = campaign.android, android.app.endpoint == nil { real.append("FCM (app \(android.app.name))") }
        guard !real.isEmpty, !yes, !planFile else { return .notNeeded }
        if interactive { return .ask }
        return .refuse(
            """
            campaign \(campaign.id) would send to \(real.joined(separator: " and ")) and there is no \
            terminal to confirm on; nothing was sent. Pass --yes, or --plan FILE with a plan made by \
            `pushcamp plan --out FILE`
            """
        )
    }
}

extension SendRun {
    /// The question asked on the terminal before a send to production: where it goes, what the plan's
    /// `summary` says it sends.
    public static func confirmationQuestion(for campaign: LoadedCampaign, summary: String) -> String {
        let places = [
            campaign.app.map { "APNs production (\($0.environment.host))" },
            campaign.android.map { "FCM (\($0.app.name))" },
        ]
        return "About to send to \(places.compactMap { $0 }.joined(separator: " and ")):\n"
            + summary.trimmingCharacters(in: .newlines)
    }

    /// What `send --detach` says once the run is planned into `journal` and left to the serve nodes.
    public func detachedLine(journal: any Journal) async -> String {
        let slices = (try? await journal.slices(of: run.id).count) ?? 0
        let planned = (try? await journal.run(run.id))?.planned ?? 0
        return "run \(run.id) of \(run.campaign): \(planned) pushes planned into the journal in \(slices) slices; "
            + "the serve nodes on this journal send it (`pushcamp runs` shows how it goes)"
    }

    /// Why `campaign` cannot be left to the serve nodes (`send --detach`), or nil when it can:
    /// detaching needs a PostgreSQL journal cut into slices (`sliced`) and a campaign all of whose
    /// recipients go at once to iOS.
    public static func detachProblem(_ campaign: LoadedCampaign, sliced: Bool) -> String? {
        if sliced && campaign.isSliceable(as: .send) { return nil }
        return "--detach leaves a run to the serve nodes of a shared journal: it needs "
            + "a PostgreSQL journal cut into slices (journal.url and journal.slice) and an iOS campaign whose "
            + "recipients all go at once (no recipient-local schedule or quiet hours; a campaign with an "
            + "Android app is sent whole, by one node, under its Firebase project's quota); nothing was sent"
    }
}
