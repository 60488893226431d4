import PushcampAPNsCore
import Synchronization

/// The simulator's channels, shared by its connections, saved after every change when a file is
/// named.
public final class SimulatorChannels: Sendable {
    private let rules: BroadcastRules
    private let file: String?
    private let registry: Mutex<ChannelRegistry>

    init(rules: BroadcastRules, file: String?) throws {
        self.rules = rules
        self.file = file
        registry = Mutex(try file.map(ChannelRegistry.load(from:)) ?? ChannelRegistry())
    }

    /// The channel ids of `bundleID`, oldest first.
    public func ids(bundleID: String) -> [String] { registry.withLock { $0.ids(bundleID: bundleID) } }

    func answer(
        _ request: RequestRules.Request,
        route: BroadcastRules.Route,
        authentication: APNsReason?
    ) -> BroadcastRules.Answer {
        registry.withLock { registry in
            let before = registry
            let answer = rules.answer(request, route: route, authentication: authentication, channels: &registry)
            if let file, registry != before {
                do {
                    try registry.save(to: file)
                } catch {
                    // Not kept, not done: the client sees a server error and may try again.
                    registry = before
                    var failed = BroadcastRules.Answer(status: 500, reason: .internalServerError)
                    failed.headers["apns-request-id"] = answer.headers["apns-request-id"]
                    return failed
                }
            }
            return answer
        }
    }
}
