import Foundation
import NIOCore
import PushcampAPNs
import PushcampAPNsCore
import PushcampModel
import PushcampPlanner

extension SendRun {
    /// What one connection to an app's endpoint showed: `pushcamp doctor`'s network check.
    public struct Probe: Sendable {
        /// TLS done and HTTP/2 agreed, the server's SETTINGS read: how long it took, and how many
        /// streams the connection allows at first.
        public var connected: (seconds: Double, streams: Int)?
        /// Why no connection could be made.
        public var failure: String?
        /// The test push's answer, when one was sent: its status, reason and `apns-id`.
        public var answer: (status: Int?, reason: String?, apnsID: String)?
    }

    /// Connects once to `app`'s endpoint (Apple's host, or the custom one) with its credentials,
    /// waits for TLS, HTTP/2 and the server's SETTINGS and, given a `test` request, sends it and
    /// waits for its answer; gives up after `timeout`. The credentials must be usable
    /// (`credentialsProblem`); provider tokens are shared with sends through `tokenCache`.
    public static func probe(
        _ app: AppConfig,
        paths: ProjectPaths,
        environment: [String: String],
        tokenCache: String?,
        test: APNsRequest? = nil,
        timeout: Duration = .seconds(15),
        clock: any WallClock = SystemWallClock()
    ) async -> Probe {
        let pool: APNsConnectionPool
        do {
            var (configuration, _) = try clientConfiguration(
                for: app,
                paths: paths,
                environment: environment,
                clock: clock,
                owners: ProviderTokenOwners(),
                tokenCache: tokenCache
            )
            configuration.connectTimeout = .seconds(Int64(timeout.components.seconds))
            pool = try APNsConnectionPool(configuration: configuration)
        } catch {
            return Probe(failure: error.message)
        }
        let (events, continuation) = AsyncStream.makeStream(of: TransportEvent.self)
        let started = clock.now()
        return await withTaskGroup(of: Probe?.self) { group in
            group.addTask {
                await pool.run { continuation.yield($0) }
                continuation.finish()
                return nil
            }
            group.addTask {
                var probe = Probe()
                for await event in events {
                    switch event {
                    case .connectFailed(_, let error):
                        probe.failure = error.message
                        return probe
                    case .disconnected(_, let reason) where probe.connected == nil || test != nil:
                        probe.failure = "the connection ended: \(reason)"
                        return probe
                    case .streamLimit(_, let limit) where probe.connected == nil:
                        probe.connected = (clock.now() - started, limit)
                        guard let test else { return probe }
                        _ = pool.submit([test])
                    case .outcomes(let outcomes):
                        guard let outcome = outcomes.first else { continue }
                        switch outcome.result {
                        case .response(let status, let reason, _):
                            probe.answer = (status, reason?.description, test?.apnsID ?? "")
                        case .connectionLost:
                            probe.failure = "the connection was lost before the test push was answered"
                        case .timedOut:
                            probe.failure = "the test push was not answered in time"
                        }
                        return probe
                    default:
                        continue
                    }
                }
                return Probe(failure: "the connection stopped")
            }
            group.addTask {
                try? await clock.sleep(until: started + timeout.inSeconds)
                return Task.isCancelled ? nil : Probe(failure: "no answer within \(timeout.components.seconds) s")
            }
            var result = Probe(failure: "no answer")
            for await probe in group {
                guard let probe else { continue }
                result = probe
                break
            }
            pool.shutdown()
            group.cancelAll()
            await group.waitForAll()
            return result
        }
    }
}
