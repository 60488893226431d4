import Yams

/// `channels: NAME: { app, storage, environment }` in pushcamp.yaml: a Live Activity broadcast
/// channel, declared in git and created by `pushcamp channels apply`.
public struct ChannelSpec: Hashable, Sendable {
    public var name: String
    /// The app (a key of `apps`) whose bundle id the channel belongs to.
    public var app: String
    public var storage: ChannelStorage
    /// Where the channel lives; the app's environment unless the channel names its own.
    public var environment: APNsEnvironment
    /// Where it is declared, for messages.
    public var location: SourceLocation

    public init(
        name: String,
        app: String,
        storage: ChannelStorage,
        environment: APNsEnvironment,
        location: SourceLocation
    ) {
        self.name = name
        self.app = app
        self.storage = storage
        self.environment = environment
        self.location = location
    }
}

/// A channel's message storage policy, which cannot be changed once it is created.
public enum ChannelStorage: String, Hashable, Sendable, CaseIterable {
    /// Policy 0: APNs stores nothing; every broadcast must expire at once (`apns-expiration: 0`),
    /// and a device offline when it is sent never gets it.
    case none
    /// Policy 1: APNs keeps the most recent broadcast (up to 8 hours) for devices that were offline.
    case latest

    /// Apple's `message-storage-policy`.
    public var policy: Int { self == .none ? 0 : 1 }

    public init?(policy: Int) {
        switch policy {
        case 0: self = .none
        case 1: self = .latest
        default: return nil
        }
    }
}

extension APNsEnvironment {
    /// Apple's channel-management host and port for this environment.
    public var channelsHost: String {
        self == .production
            ? "api-manage-broadcast.push.apple.com:2196" : "api-manage-broadcast.sandbox.push.apple.com:2195"
    }
}

extension AppConfig {
    /// Where channel-management requests for `environment` go: `channels_endpoint`, else the
    /// app's custom `endpoint` (a simulator serves every API on one port), else Apple's host.
    public func channelsEndpoint(_ environment: APNsEnvironment) -> String {
        channelsEndpointOverride ?? endpoint ?? "https://\(environment.channelsHost)"
    }

    /// Where broadcast sends for `environment` go: `broadcast_endpoint`, else the app's custom
    /// `endpoint`, else the APNs host Apple's broadcast page names (`api.push.apple.com`; some
    /// samples use `api-broadcast.push.apple.com` instead, which `broadcast_endpoint` can name).
    public func broadcastEndpoint(_ environment: APNsEnvironment) -> String {
        broadcastEndpointOverride ?? endpoint ?? "https://\(environment.host)"
    }
}

extension ProjectReader {
    static let channelKeys = ["app", "storage", "environment"]

    /// Channel names: letters, digits, `-`, `_` and `.`, at most 64, as they appear in commands
    /// and campaign files.
    static func isChannelName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
    }

    static func readChannels(
        _ node: Node,
        apps: [String: AppConfig],
        appNames: [String],
        _ reader: YAMLReader
    )
        -> [ChannelSpec]
    {
        guard let entries = reader.freeMapping(node, in: "channels") else { return [] }
        var channels: [ChannelSpec] = []
        for entry in entries {
            let context = "channels.\(entry.key)"
            guard isChannelName(entry.key) else {
                reader.error(
                    "channel name '\(entry.key.excerpt())' may hold letters, digits, '-', '_' and '.' (at most 64)",
                    at: entry.keyNode
                )
                continue
            }
            guard let map = reader.mapping(entry.value, in: context, allowed: channelKeys, required: ["app"]) else {
                continue
            }
            guard let appNode = map["app"], let appName = reader.string(appNode, "\(context).app") else { continue }
            guard let app = apps[appName] else {
                if !appNames.contains(appName) {
                    reader.error(
                        "'\(context).app' names no app of 'apps' (\(appNames.joined(separator: ", ")))"
                            + Suggestion.didYouMean(appName, in: appNames),
                        at: appNode
                    )
                }
                continue
            }
            var storage = ChannelStorage.latest
            if let node = map["storage"], let text = reader.string(node, "\(context).storage") {
                guard let value = ChannelStorage(rawValue: text) else {
                    reader.error(
                        "'\(context).storage' is latest (APNs keeps the last broadcast for devices offline) or none (it keeps nothing; every broadcast expires at once)",
                        at: node
                    )
                    continue
                }
                storage = value
            }
            var environment = app.environment
            if let node = map["environment"], let text = reader.string(node, "\(context).environment") {
                guard let value = APNsEnvironment(rawValue: text) else {
                    reader.error(
                        "'\(context).environment' must be production or sandbox (default: the app's, \(app.environment.rawValue))"
                            + Suggestion.didYouMean(text, in: ["production", "sandbox"]),
                        at: node
                    )
                    continue
                }
                environment = value
            }
            channels.append(
                ChannelSpec(
                    name: entry.key,
                    app: appName,
                    storage: storage,
                    environment: environment,
                    location: reader.location(entry.keyNode)
                )
            )
        }
        return channels
    }
}
