import Logging
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import ServiceLifecycle

/// One `serve` node's services over a journal it shares: the scheduler (slots, triggers, orphaned
/// runs), the HTTP server (health, readiness, metrics, App Store notifications when
/// pushcamp.yaml asks, the console when it is on), and retention when `journal.retention` is set. The caller runs them in one `ServiceGroup`,
/// with the journal's client (PostgreSQL's) first in, last out.
public struct ServeNode {
    /// What the command line sets.
    public struct Options: Sendable {
        /// Seconds without an answer before a send gives up on its connections.
        public var stallTimeout: Double
        /// Where provider tokens are cached (the journal's folder).
        public var tokenCache: String?
        /// The campaign lease's duration (nil: the default).
        public var leaseDuration: Double?
        /// How runs are cut into slices for several nodes (nil: not sliced).
        public var slicing: Slicing?

        public init(stallTimeout: Double) {
            self.stallTimeout = stallTimeout
        }
    }

    /// Why the node cannot start (the message says what to fix).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The scheduler and the HTTP server, in start order.
    public let services: [ServiceGroupConfiguration.ServiceConfiguration]

    /// The node of `project` on `journal` (named `journalName` on the console), listening on
    /// `listen`; its notice of the address is logged once the port is bound.
    public init(
        project: Project,
        paths: ProjectPaths,
        journal: any Journal,
        journalName: String,
        listen: ListenAddress,
        options: Options,
        environment: [String: String],
        logger: Logger,
        httpLogger: Logger
    ) throws(Failure) {
        let metrics = ServeMetrics()
        let status = ServeStatus()
        var configuration = SchedulerService.Configuration(
            paths: paths,
            campaignFolders: project.serve.campaignFolders,
            journal: journal,
            environment: environment
        )
        configuration.stallTimeout = options.stallTimeout
        configuration.tokenCache = options.tokenCache
        if let lease = options.leaseDuration { configuration.leaseDuration = lease }
        configuration.slicing = options.slicing
        // Read before the receiver starts, so a notification that comes first still fires its triggers.
        let triggers = TriggerTable(paths: paths, folders: project.serve.campaignFolders)
        let scheduler = SchedulerService(
            configuration: configuration,
            metrics: metrics,
            status: status,
            logger: logger,
            triggers: triggers
        )
        let folders = project.serve.campaignFolders.map { paths.display($0) }.joined(separator: ", ")
        var appStore: (path: String, receiver: AppStoreReceiver)?
        do {
            if let intake = try AppStoreReceiver.intake(
                for: project,
                paths: paths,
                environment: environment,
                logger: logger
            ) {
                let receiver = AppStoreReceiver(
                    intake: intake,
                    store: journal,
                    metrics: metrics,
                    logger: logger,
                    triggers: triggers,
                    status: status
                )
                appStore = (project.serve.appStorePath, receiver)
            }
        } catch {
            throw Failure(message: "error: App Store notifications cannot be received: \(error)")
        }
        // Bound at the address its name resolves to now, once: the loopback rule checks that.
        let bound: ListenAddress
        switch ServeHTTP.bound(listen) {
        case .success(let address): bound = address
        case .failure(let failure): throw failure
        }
        var console: Console?
        if project.serve.console {
            let token = environment[ConsoleAccess.tokenVariable].flatMap { $0.isEmpty ? nil : $0 }
            if let problem = ConsoleAccess.problem(listen: listen, bound: bound.host, token: token) {
                throw Failure(message: "error: the console cannot start: \(problem)")
            }
            console = Console(
                access: ConsoleAccess(token: token),
                journal: journal,
                journalName: journalName,
                paths: paths,
                folders: project.serve.campaignFolders,
                status: status
            )
        }
        let receiving =
            (appStore.map { "; App Store notifications at POST \($0.path)" } ?? "")
            + (console.map { "; the console at / (\($0.access.token == nil ? "open on loopback" : "token required"))" }
                ?? "")
        let descriptors = ServeHTTP.raiseDescriptorLimit()
        let http = ServeHTTP.application(
            listen: bound,
            status: status,
            metrics: metrics,
            logger: httpLogger,
            appStore: appStore,
            console: console,
            limits: ServeHTTP.Limits(descriptors: descriptors)
        ) { port in
            logger.notice(
                "listening on http://\(ListenAddress(host: listen.host, port: port)) (/healthz, /readyz, /metrics\(receiving)); watching \(folders)"
            )
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: scheduler, successTerminationBehavior: .gracefullyShutdownGroup),
            .init(service: http, successTerminationBehavior: .gracefullyShutdownGroup),
        ]
        if let retention = project.journalRetention {
            if let floor = RetentionFloor.of(project, paths: paths), retention.seconds < floor.window.seconds {
                throw Failure(
                    message: """
                        error: journal.retention (\(retention)) is shorter than the frequency cap of \(floor.source) \
                        (\(floor.window)), which counts deliveries from the rows of the runs within it; keep them at \
                        least \(floor.window)
                        """
                )
            }
            services.append(.init(service: RetentionService(journal: journal, retention: retention, logger: logger)))
        }
        self.services = services
    }
}

extension ServeNode {
    /// Runs the node's services in one `ServiceGroup`, after `journalClient` (first in, last out:
    /// the PostgreSQL client stops after the sends have recorded their end), until SIGINT, SIGTERM
    /// or SIGHUP drains them.
    public func run(after journalClient: (any Service)?) async throws {
        var logger = Logger(label: "pushcamp.lifecycle")
        logger.logLevel = .warning
        var services = services
        if let journalClient { services.insert(.init(service: journalClient), at: 0) }
        try await ServiceGroup.drainedBySignals(services, logger: logger).run()
    }
}
