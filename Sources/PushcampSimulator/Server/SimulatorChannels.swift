import PushcampAPNsCore
import Synchronization

/// The simulator's channels, shared by its connections, saved after every change when a file is
/// named; and the broadcast API's faults, whose state (each channel's throttle, the script's
/// position) is shared the same way.
public final class SimulatorChannels: Sendable {
    private let rules: BroadcastRules
    private let faults: BroadcastFaults
    private let file: String?
    private let state: Mutex<(registry: ChannelRegistry, faults: BroadcastFaults.State)>

    init(rules: BroadcastRules, faults: BroadcastFaults = BroadcastFaults(), file: String?) throws {
        self.rules = rules
        self.faults = faults
        self.file = file
        state = Mutex((try file.map(ChannelRegistry.load(from:)) ?? ChannelRegistry(), BroadcastFaults.State()))
    }

    /// The channel ids of `bundleID`, oldest first.
    public func ids(bundleID: String) -> [String] { state.withLock { $0.registry.ids(bundleID: bundleID) } }

    /// The answer to a request of the broadcast API at `now`; nil when the faults drop the
    /// connection instead.
    func answer(
        _ request: RequestRules.Request,
        route: BroadcastRules.Route,
        authentication: APNsReason?,
        now: Double
    ) -> BroadcastRules.Answer? {
        state.withLock { state in
            switch faults.before(route, state: &state.faults, random: Double.random(in: 0..<1)) {
            case .drop: return nil
            case .answer(var answer):
                if let id = request.value("apns-request-id") { answer.headers["apns-request-id"] = id }
                return answer
            case .asUsual: break
            }
            let before = state.registry
            var answer = rules.answer(request, route: route, authentication: authentication, channels: &state.registry)
            answer = faults.after(
                answer,
                channelID: request.value("apns-channel-id"),
                route: route,
                state: &state.faults,
                now: now
            )
            if let file, state.registry != before {
                do {
                    try state.registry.save(to: file)
                } catch {
                    // Not kept, not done: the client sees a server error and may try again.
                    state.registry = before
                    var failed = BroadcastRules.Answer(status: 500, reason: .internalServerError)
                    failed.headers["apns-request-id"] = answer.headers["apns-request-id"]
                    return failed
                }
            }
            return answer
        }
    }
}
