import PushcampModel
import Yams

/// A broadcast campaign's channel, from pushcamp.yaml: one request to it reaches every device
/// subscribed.
public struct BroadcastTarget: Sendable {
    public var channel: ChannelSpec
    /// The iOS app the channel belongs to.
    public var app: AppConfig
    /// Where the campaign names it.
    public var location: SourceLocation
}

extension CampaignAssembler {
    /// The longest APNs keeps a broadcast for devices offline (a channel with storage `latest`).
    static let broadcastStorage = TimeSpan(seconds: 8 * 3600)

    /// Resolves `channel:` against pushcamp.yaml and checks what a broadcast request cannot carry.
    mutating func resolveBroadcast(app: AppConfig?) -> BroadcastTarget? {
        guard let (name, location) = campaign.channel, let app else { return nil }
        guard let channel = project.channels.first(where: { $0.name == name }) else {
            let names = project.channels.map(\.name)
            diagnostics.append(
                .error(
                    "no channel '\(name)' in \(paths.projectFileDisplay)"
                        + (names.isEmpty
                            ? " (declare it under 'channels:' and run `pushcamp channels apply`)"
                            : Suggestion.didYouMean(name, in: names)),
                    at: location
                )
            )
            return nil
        }
        if channel.app != campaign.app {
            diagnostics.append(
                .error(
                    "channel '\(name)' belongs to app '\(channel.app)' (\(channel.location)), but the campaign sends as '\(campaign.app)'",
                    at: location
                )
            )
        }
        let message = campaign.message
        func refuse(_ what: String) {
            diagnostics.append(.error("a broadcast is one request to a channel: \(what)", at: message.location))
        }
        if message.pushType != .alert && message.pushType != .liveactivity {
            refuse("its push type is liveactivity, not \(message.pushType.rawValue)")
        }
        if !message.variants.isEmpty { refuse("it has no variants (send one campaign per message)") }
        if message.holdout.basisPoints > 0 { refuse("it has no holdout") }
        if message.locale != nil || message.strings != nil {
            refuse("it is not localized per device (write the text in the payload)")
        }
        if message.collapseID != nil { refuse("it carries no collapse id") }
        if message.topic != nil { refuse("it carries no topic (the channel names the app)") }
        switch message.expiration ?? project.defaults.expiration {
        case .immediately?, nil: break
        case .some where channel.storage == .none:
            diagnostics.append(
                .error(
                    "channel '\(name)' stores nothing (storage: none), so a broadcast to it must expire at once: write 'expiration: 0' or leave it out",
                    at: message.location
                )
            )
        default: break
        }
        if campaign.trigger != nil {
            diagnostics.append(
                .error(
                    "a broadcast campaign is not sent by App Store triggers (it has no devices to join)",
                    at: location
                )
            )
        }
        return BroadcastTarget(channel: channel, app: app, location: location)
    }

    /// A broadcast payload's `aps.timestamp` is the send time unless written: `{{now}}` added to
    /// `aps`, so a resend never carries a stale one.
    static func stampingNow(_ node: Node) -> Node {
        guard case .mapping(var root) = node, case .mapping(var aps)? = root["aps"], aps["timestamp"] == nil else {
            return node
        }
        aps["timestamp"] = Node("{{now}}", Tag(.str), .doubleQuoted)
        root["aps"] = .mapping(aps)
        return .mapping(root)
    }
}
