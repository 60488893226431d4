import Foundation
import PushcampModel
import PushcampTemplates

/// A broadcast campaign's one request, exactly as it goes to APNs: `POST /4/broadcasts/apps/{bundle}`
/// with the channel's id, `apns-push-type: liveactivity`, the priority and the expiration, and the
/// payload rendered at the send time. Made by `plan`, checked offline, sent by `send`.
public struct BroadcastMessage: Sendable {
    public var campaign: String
    public var channel: ChannelSpec
    public var bundleID: String
    /// Apple's id of the channel, from the journal; nil until `pushcamp channels apply` made it.
    public var channelID: String?
    public var priority: Int
    /// `apns-expiration`: 0 (one attempt, nothing stored) or UNIX seconds.
    public var expiration: Int64
    public var payload: [UInt8]
    /// `apns-request-id`: the same for every attempt of a run, so APNs' logs tie them together.
    public var requestID: String
    /// Where the request goes.
    public var endpoint: String

    public var path: String { "/4/broadcasts/apps/\(bundleID)" }

    /// The header fields beyond the pseudo-headers and `authorization`.
    public var headers: [(name: String, value: String)] {
        [
            ("apns-channel-id", channelID ?? "(not created yet)"), ("apns-push-type", "liveactivity"),
            ("apns-priority", String(priority)), ("apns-expiration", String(expiration)),
            ("apns-request-id", requestID),
        ]
    }

    /// The largest broadcast payload APNs takes, in bytes.
    public static let maxPayload = 5120
    /// How far ahead of the send an `aps.timestamp` may be, and how far behind: a device drops an
    /// update more than 8 hours ahead, and one older than the update it showed last.
    public static let timestampWindow = 8.0 * 3600

    /// Renders `campaign`'s payload at `now` (`{{now}}` is the time in seconds) and checks the
    /// request offline; problems are located at the campaign's `message:`.
    public static func make(
        _ campaign: LoadedCampaign,
        channelID: String?,
        now: Double,
        requestID: String,
        checkCreated: Bool = true
    ) -> (BroadcastMessage?, [Diagnostic]) {
        guard let target = campaign.broadcast, let variant = campaign.variants.first else { return (nil, []) }
        let at = campaign.messageLocation
        var diagnostics: [Diagnostic] = []
        var context = RenderContext(
            attributes: Attributes(["now": .integer(Int64(now))]),
            variables: variant.variables,
            strings: [:]
        )
        var writer = JSONWriter()
        do {
            try variant.payload.render(into: &writer, context: &context)
        } catch {
            return (nil, [.error("the payload cannot be rendered: \(error)", at: at)])
        }
        let payload = writer.bytes
        let expiration: Int64
        switch campaign.expiration {
        case .immediately?, nil: expiration = 0
        case .after(let span)?: expiration = Int64(now) + span.seconds
        case .at(let time)?: expiration = time.secondsSince1970
        }
        if target.channel.storage == .none && expiration != 0 {
            diagnostics.append(
                .error(
                    "channel '\(target.channel.name)' stores nothing (storage: none): a broadcast to it must expire at once (expiration: 0)",
                    at: at
                )
            )
        }
        if ![1, 5, 10].contains(campaign.priority) {
            diagnostics.append(.error("a broadcast's priority is 10, 5 or 1, not \(campaign.priority)", at: at))
        }
        diagnostics += checkPayload(payload, now: now, at: at)
        if channelID == nil && checkCreated {
            diagnostics.append(
                .warning(
                    "channel '\(target.channel.name)' is not created yet: `pushcamp channels apply` creates it",
                    at: target.location
                )
            )
        }
        let message = BroadcastMessage(
            campaign: campaign.id,
            channel: target.channel,
            bundleID: target.app.topic,
            channelID: channelID,
            priority: campaign.priority,
            expiration: expiration,
            payload: payload,
            requestID: requestID,
            endpoint: target.app.broadcastEndpoint(target.channel.environment)
        )
        return (message, diagnostics)
    }

    /// Apple's rules for a Live Activity broadcast payload, checked without sending.
    static func checkPayload(_ payload: [UInt8], now: Double, at location: SourceLocation) -> [Diagnostic] {
        var problems: [String] = []
        if payload.count > maxPayload {
            problems.append("the payload is \(payload.count) bytes; a broadcast takes at most \(maxPayload)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            let aps = object["aps"] as? [String: Any]
        else {
            return [.error("a Live Activity payload has an 'aps' dictionary", at: location)]
                + problems.map {
                    .error($0, at: location)
                }
        }
        let event = aps["event"] as? String
        switch event {
        case "update", "end": break
        case "start":
            problems.append(
                "a broadcast cannot start a Live Activity (aps.event: start): start it with push-to-start to a device audience, with input-push-channel to subscribe it"
            )
        default:
            problems.append("aps.event is update or end for a broadcast")
        }
        if isNumber(aps["timestamp"]), let timestamp = aps["timestamp"] as? NSNumber {
            let seconds = timestamp.doubleValue
            if seconds > now + timestampWindow {
                problems.append(
                    "aps.timestamp is more than 8 hours ahead of the send; devices drop it (it is in seconds, not milliseconds)"
                )
            } else if seconds < now - timestampWindow {
                problems.append(
                    "aps.timestamp is more than 8 hours old; devices drop an update older than the last they showed (leave it out: Pushcamp writes the send time)"
                )
            }
        } else {
            problems.append(
                "aps.timestamp is a number of seconds since 1970 (leave it out: Pushcamp writes the send time)"
            )
        }
        if event == "update", !(aps["content-state"] is [String: Any]) {
            problems.append("an update carries aps.content-state, matching the app's ContentState")
        }
        if aps["dismissal-date"] != nil, event != "end" {
            problems.append("aps.dismissal-date goes with event end only")
        }
        for key in ["attributes-type", "attributes", "input-push-token", "input-push-channel"] where aps[key] != nil {
            problems.append("aps.\(key) starts a Live Activity; a broadcast only updates or ends one")
        }
        for key in ["stale-date", "dismissal-date", "relevance-score"] where aps[key] != nil {
            if !isNumber(aps[key]) { problems.append("aps.\(key) is a number") }
        }
        return problems.map { .error($0, at: location) }
    }

    /// A JSON number as Foundation parsed it (its booleans are NSNumbers too, of their own class,
    /// and a number 0 or 1 casts to Bool).
    static func isNumber(_ value: Any?) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return !String(describing: type(of: number)).contains("Boolean")
    }
}
