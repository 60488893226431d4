import PushcampAPNsCore
import PushcampFCMCore
import Synchronization

/// Everything the simulator received and answered, for tests and for `pushcamp sim`'s summary.
public final class SimulatorRecorder: Sendable {
    public struct Record: Sendable {
        public var token: String
        public var apnsID: String?
        public var topic: String?
        public var pushType: String?
        public var priority: String?
        public var expiration: String?
        public var collapseID: String?
        public var payloadSize: Int
        public var status: Int
        public var reason: APNsReason?
        public var connection: Int
        /// The client's address (the connection's far end), and when the request was whole
        /// (seconds since 1970).
        public var peer: String
        public var time: Double
        /// `POST`, or the management API's `GET` and `DELETE`.
        public var method: String = "POST"
        /// `/3/device/` for device pushes (the token is `token`), the whole path otherwise.
        public var path: String = "/3/device/"
        /// The `apns-channel-id` sent, or the one a create answered with.
        public var channelID: String? = nil
        /// The body of a broadcast-API request (device payloads are not kept).
        public var payload: [UInt8] = []

        /// An FCM send's error code (or canonical status); `reason` is nil for those.
        public var fcmReason: FCMReason? = nil
        /// An FCM send with `validate_only`: checked, never delivered.
        public var validateOnly = false

        /// A send to FCM (`POST /v1/projects/…/messages:send`).
        public var isFCM: Bool { path.hasPrefix("/v1/projects/") }

        /// A broadcast send (`POST /4/broadcasts/apps/…`).
        public var isBroadcast: Bool { path.hasPrefix("/4/broadcasts/") }
    }

    private struct State {
        var records: [Record] = []
        var attempts: [String: Int] = [:]
        var maxOpenStreams = 0
        var limitViolations = 0
        var connections = 0
        var certificateConnections = 0
        var goaways = 0
        var drops = 0
        var resets = 0
    }

    private let state = Mutex(State())
    public init() {}

    public var records: [Record] { state.withLock { $0.records } }
    /// The most streams any connection had open at once.
    public var maxOpenStreams: Int { state.withLock { $0.maxOpenStreams } }
    /// Streams opened beyond the limit the client had acknowledged.
    public var limitViolations: Int { state.withLock { $0.limitViolations } }
    public var connections: Int { state.withLock { $0.connections } }
    /// Connections that presented a client certificate the simulator's CA signed.
    public var certificateConnections: Int { state.withLock { $0.certificateConnections } }
    public var goaways: Int { state.withLock { $0.goaways } }
    public var drops: Int { state.withLock { $0.drops } }
    /// Requests reset for headers HTTP/2 forbids (control characters, bad pseudo-headers), the
    /// connection kept, as APNs does.
    public var resets: Int { state.withLock { $0.resets } }

    /// How many times each token was answered 200.
    public func deliveries() -> [String: Int] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for record in state.records where record.status == 200 && !record.token.isEmpty && !record.validateOnly {
                counts[record.token, default: 0] += 1
            }
            return counts
        }
    }

    /// Counts by status and reason (`200`, `410 Unregistered` …).
    public func summary() -> [String: Int] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for record in state.records {
                let reason = record.reason.map { " \($0)" } ?? record.fcmReason.map { " \($0)" } ?? ""
                counts["\(record.status)" + reason, default: 0] += 1
            }
            return counts
        }
    }

    func record(_ record: Record) {
        state.withLock { $0.records.append(record) }
    }

    /// Counts a request to `token` and returns how many came before it.
    func attempt(_ token: String) -> Int {
        state.withLock { state in
            defer { state.attempts[token, default: 0] += 1 }
            return state.attempts[token, default: 0]
        }
    }

    func opened(streams: Int, limit: UInt32?) {
        state.withLock { state in
            state.maxOpenStreams = max(state.maxOpenStreams, streams)
            if let limit, streams > Int(limit) { state.limitViolations += 1 }
        }
    }

    func connectionOpened(withCertificate: Bool) {
        state.withLock { state in
            state.connections += 1
            if withCertificate { state.certificateConnections += 1 }
        }
    }
    func goawaySent() { state.withLock { $0.goaways += 1 } }
    func dropped() { state.withLock { $0.drops += 1 } }
    func reset() { state.withLock { $0.resets += 1 } }
}
