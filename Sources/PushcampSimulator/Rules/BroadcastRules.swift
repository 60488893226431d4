import Foundation
import PushcampAPNsCore

/// APNs' broadcast API without sockets: channel management (`/1/apps/{bundle}/…`) and broadcast
/// sends (`/4/broadcasts/apps/{bundle}`), checked in the order APNs reports problems, against the
/// channels the simulator keeps (`ChannelRegistry`).
///
/// Apple documents that authentication comes first, then the channel; the order among header
/// problems is the one APNSwift's test server follows: channel id, push type, expiration, priority,
/// then whether the channel exists, then the payload.
public struct BroadcastRules: Sendable {
    /// Channels an app may hold in one environment (Apple: "up to 10,000 channels for your app in
    /// the development and production environment, respectively").
    public static let channelCap = 10_000
    /// The largest broadcast payload, in bytes.
    public static let maxPayload = 5120

    /// The bundle id the simulator stands in for; nil accepts any.
    public var bundleID: String?
    /// The App ID has the Broadcast capability; without it every request is `FeatureNotEnabled`.
    public var enabled = true
    /// Answers every well-formed broadcast send with this reason instead of 200 (for tests of how
    /// a sender reports each reason).
    public var forcedReason: APNsReason?

    public init(bundleID: String?, enabled: Bool = true) {
        self.bundleID = bundleID
        self.enabled = enabled
    }

    /// What a request's `:path` asks for.
    public enum Route: Equatable, Sendable {
        /// `/3/device/{token}`: a push to one device.
        case device
        /// `/4/broadcasts/apps/{bundle}`.
        case broadcast(bundleID: String)
        /// `/1/apps/{bundle}/channels`: create (POST), read (GET), delete (DELETE).
        case channel(bundleID: String)
        /// `/1/apps/{bundle}/all-channels` (GET).
        case allChannels(bundleID: String)
        case unknown

        public init(path: String) {
            if path.hasPrefix("/3/device/") {
                self = .device
                return
            }
            let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            // "", "4", "broadcasts", "apps", bundle
            if parts.count == 5, parts[1] == "4", parts[2] == "broadcasts", parts[3] == "apps", !parts[4].isEmpty {
                self = .broadcast(bundleID: parts[4])
            } else if parts.count == 5, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty {
                switch parts[4] {
                case "channels": self = .channel(bundleID: parts[3])
                case "all-channels": self = .allChannels(bundleID: parts[3])
                default: self = .unknown
                }
            } else {
                self = .unknown
            }
        }

        public var isBroadcastAPI: Bool {
            switch self {
            case .broadcast, .channel, .allChannels: return true
            case .device, .unknown: return false
            }
        }
    }

    /// An answer: the status, the reason of an error, the response headers beyond `:status`
    /// (`apns-request-id`, `apns-channel-id`) and a JSON body, if any.
    public struct Answer: Equatable, Sendable {
        public var status: Int
        public var reason: APNsReason?
        public var headers: [String: String] = [:]
        public var body: String?

        public init(status: Int, reason: APNsReason? = nil, headers: [String: String] = [:], body: String? = nil) {
            self.status = status
            self.reason = reason
            self.headers = headers
            self.body = body
        }

        static func refused(_ reason: APNsReason) -> Answer { Answer(status: reason.status, reason: reason) }
    }

    /// Answers a request to the broadcast API: `route` from its path, `authenticated` whether its
    /// provider token (or certificate) was accepted (its reason otherwise), `channels` the
    /// simulator's channels, changed by create and delete. `newChannelID` makes the id of a channel
    /// being created.
    public func answer(
        _ request: RequestRules.Request,
        route: Route,
        authentication: APNsReason?,
        channels: inout ChannelRegistry,
        newChannelID: () -> String = ChannelRegistry.randomID
    ) -> Answer {
        var answer = decide(request, route: route, authentication: authentication, channels: &channels, newChannelID)
        answer.headers["apns-request-id"] = request.value("apns-request-id") ?? UUID().uuidString.lowercased()
        return answer
    }

    private func decide(
        _ request: RequestRules.Request,
        route: Route,
        authentication: APNsReason?,
        channels: inout ChannelRegistry,
        _ newChannelID: () -> String
    ) -> Answer {
        var seen: Set<String> = []
        for field in request.headers where !seen.insert(field.name).inserted {
            return .refused(.duplicateHeaders)
        }
        if let authentication { return .refused(authentication) }
        let bundle: String
        switch route {
        case .broadcast(let id), .channel(let id), .allChannels(let id): bundle = id
        case .device, .unknown: return .refused(.badPath)
        }
        if let bundleID, bundle != bundleID { return .refused(.topicMismatch) }
        if !enabled { return .refused(.featureNotEnabled) }
        let method = request.value(":method") ?? ""
        switch route {
        case .broadcast:
            guard method == "POST" else { return .refused(.methodNotAllowed) }
            return broadcast(request, bundle: bundle, channels: channels)
        case .channel:
            switch method {
            case "POST": return create(request, bundle: bundle, channels: &channels, newChannelID)
            case "GET", "DELETE":
                guard let id = request.value("apns-channel-id") else { return .refused(.missingChannelID) }
                guard ChannelRegistry.isChannelID(id) else { return .refused(.badChannelID) }
                guard let policy = channels.policy(of: id, bundleID: bundle) else {
                    return .refused(.channelNotRegistered)
                }
                if method == "DELETE" {
                    channels.remove(id, bundleID: bundle)
                    return Answer(status: 204)
                }
                return Answer(
                    status: 200,
                    headers: ["content-type": "application/json"],
                    body: #"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"#
                )
            default:
                return .refused(.methodNotAllowed)
            }
        case .allChannels:
            guard method == "GET" else { return .refused(.methodNotAllowed) }
            let ids = channels.ids(bundleID: bundle).map { "\"\($0)\"" }.joined(separator: ",")
            return Answer(status: 200, headers: ["content-type": "application/json"], body: #"{"channels":[\#(ids)]}"#)
        case .device, .unknown:
            return .refused(.badPath)
        }
    }

    private func create(
        _ request: RequestRules.Request,
        bundle: String,
        channels: inout ChannelRegistry,
        _ newChannelID: () -> String
    ) -> Answer {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
            let policy = object["message-storage-policy"] as? Int, [0, 1].contains(policy),
            let pushType = object["push-type"] as? String
        else {
            return .refused(request.body.isEmpty ? .payloadEmpty : .badRequestPayload)
        }
        guard pushType.lowercased() == "liveactivity" else { return .refused(.invalidPushType) }
        guard channels.count(bundleID: bundle) < Self.channelCap else { return .refused(.cannotCreateChannelConfig) }
        let id = newChannelID()
        channels.add(id, policy: policy, bundleID: bundle)
        return Answer(status: 201, headers: ["apns-channel-id": id])
    }

    private func broadcast(_ request: RequestRules.Request, bundle: String, channels: ChannelRegistry) -> Answer {
        guard let id = request.value("apns-channel-id") else { return .refused(.missingChannelID) }
        guard ChannelRegistry.isChannelID(id) else { return .refused(.badChannelID) }
        guard let pushType = request.value("apns-push-type") else { return .refused(.missingPushType) }
        // Apple's pages spell it `liveactivity`, `LiveActivity` and `Liveactivity`.
        guard pushType.lowercased() == "liveactivity" else { return .refused(.invalidPushType) }
        let expiration = request.value("apns-expiration").map { Int64($0) }
        if let expiration, expiration.map({ $0 >= 0 }) != true { return .refused(.badExpirationDate) }
        if let priority = request.value("apns-priority"), !["1", "5", "10"].contains(priority) {
            return .refused(.badPriority)
        }
        guard let policy = channels.policy(of: id, bundleID: bundle) else { return .refused(.channelNotRegistered) }
        // A channel that stores nothing takes only pushes that expire at once.
        if policy == 0, let expiration, expiration != 0 { return .refused(.badExpirationDate) }
        if request.body.isEmpty { return .refused(.payloadEmpty) }
        if request.body.count > Self.maxPayload { return .refused(.payloadTooLarge) }
        if let forcedReason { return .refused(forcedReason) }
        return Answer(status: 200)
    }
}

/// The channels the simulator holds, per bundle id, in the order they were created; saved as JSON
/// in its state folder so channels outlive a restart, as Apple's do.
public struct ChannelRegistry: Sendable, Equatable, Codable {
    private var apps: [String: [Channel]] = [:]

    struct Channel: Sendable, Equatable, Codable {
        var id: String
        var policy: Int
    }

    public init() {}

    public func ids(bundleID: String) -> [String] { apps[bundleID, default: []].map(\.id) }
    public func count(bundleID: String) -> Int { apps[bundleID, default: []].count }

    public func policy(of id: String, bundleID: String) -> Int? {
        apps[bundleID]?.first { $0.id == id }?.policy
    }

    public mutating func add(_ id: String, policy: Int, bundleID: String) {
        apps[bundleID, default: []].append(Channel(id: id, policy: policy))
    }

    public mutating func remove(_ id: String, bundleID: String) {
        apps[bundleID]?.removeAll { $0.id == id }
    }

    /// 16 random bytes in base64, as Apple's ids look (their size is not to be relied on).
    public static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// Base64, as Apple's channel ids are.
    public static func isChannelID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count % 4 == 0 && Data(base64Encoded: text) != nil
    }

    /// Reads a registry saved by `save(to:)`; an absent file is an empty registry.
    public static func load(from path: String) throws -> ChannelRegistry {
        guard FileManager.default.fileExists(atPath: path) else { return ChannelRegistry() }
        return try JSONDecoder().decode(ChannelRegistry.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Writes the registry atomically (a crash leaves the old file or the new one).
    public func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
