import ServiceLifecycle

extension APNsSimulator: Service {
    /// Serves (started already, or now) until a graceful shutdown or cancellation, then stops
    /// listening and closes its connections.
    public func run() async throws {
        if port == nil { _ = try await start() }
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled: stop all the same.
        }
        await stop()
    }
}
