import Logging
import ServiceLifecycle
import UnixSignals

extension SendRun {
    /// Runs `services` in one `ServiceGroup` until this send ends, or SIGINT, SIGTERM or SIGHUP
    /// drains it (in-flight requests answered, the run left to resume); returns its report, nil
    /// when it ended without one. The other services (a simulator) run until then.
    public func runInGroup(with services: [any Service]) async throws -> SendReport? {
        var configurations = services.map {
            ServiceGroupConfiguration.ServiceConfiguration(service: $0, successTerminationBehavior: .ignore)
        }
        if let index = configurations.firstIndex(where: { $0.service as? SendRun === self }) {
            configurations[index].successTerminationBehavior = .gracefullyShutdownGroup
            configurations[index].failureTerminationBehavior = .gracefullyShutdownGroup
        }
        var logger = Logger(label: "pushcamp")
        logger.logLevel = .critical
        try await ServiceGroup.drainedBySignals(configurations, logger: logger).run()
        return report
    }
}

extension ServiceGroup {
    /// A group of `services` (in start order) that SIGINT, SIGTERM and SIGHUP shut down gracefully:
    /// how every long-running command runs its services.
    public static func drainedBySignals(
        _ services: [ServiceGroupConfiguration.ServiceConfiguration],
        logger: Logger
    ) -> ServiceGroup {
        ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigint, .sigterm, .sighup],
                logger: logger
            )
        )
    }
}
