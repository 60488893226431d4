import PushcampModel
import PushcampTemplates

/// Pre-flight rules that depend only on the campaign (push type, priority, topic, the payload's
/// constant shape), checked once per variant. `validate` reports them as errors; the planner counts
/// them against every push of the variant.
public enum StaticRules {
    public struct Issue: Sendable, Hashable {
        public var reason: PreflightReason
        public var message: String
        public var location: SourceLocation?
    }

    public static func check(_ campaign: LoadedCampaign, variant: LoadedCampaign.Variant) -> [Issue] {
        var issues: [Issue] = []
        let shape = variant.payload.shape
        let at = SourceLocation(path: variant.payload.path)
        let hasAlert = shape.has("aps.alert") || shape.has("aps.sound") || shape.has("aps.badge")
        let contentAvailable = shape.has("aps.content-available")
        let type = campaign.pushType

        if contentAvailable, !hasAlert, campaign.priority == 10 {
            issues.append(
                Issue(
                    reason: .contentAvailableAtPriority10,
                    message:
                        "variant '\(variant.name)': the payload has only content-available and the priority is 10; APNs rejects that, use priority 5",
                    location: campaign.messageLocation
                )
            )
        }
        switch type {
        case .background:
            if campaign.priority != 5 {
                issues.append(
                    Issue(
                        reason: .backgroundNeedsPriority5,
                        message: "push_type background must be sent at priority 5, not \(campaign.priority)",
                        location: campaign.messageLocation
                    )
                )
            }
            if case .constant(let value)? = shape.value("aps.content-available"), value != .integer(1) {
                issues.append(
                    Issue(
                        reason: .backgroundNeedsContentAvailable,
                        message: "variant '\(variant.name)': aps.content-available must be 1 for a background push",
                        location: at
                    )
                )
            } else if !contentAvailable {
                issues.append(
                    Issue(
                        reason: .backgroundNeedsContentAvailable,
                        message:
                            "variant '\(variant.name)': a background push needs aps.content-available: 1 in its payload",
                        location: at
                    )
                )
            }
            if hasAlert {
                issues.append(
                    Issue(
                        reason: .backgroundWithAlert,
                        message:
                            "variant '\(variant.name)': a background push must not have aps.alert, aps.sound or aps.badge; send it as push_type alert",
                        location: at
                    )
                )
            }
        case .alert:
            if !hasAlert {
                issues.append(
                    Issue(
                        reason: .alertNeedsAlertSoundOrBadge,
                        message:
                            "variant '\(variant.name)': an alert push needs aps.alert, aps.sound or aps.badge in its payload",
                        location: at
                    )
                )
            }
        case .liveactivity:
            if !shape.has("aps.event") || !shape.has("aps.timestamp") {
                issues.append(
                    Issue(
                        reason: .liveActivityFields,
                        message:
                            "variant '\(variant.name)': a Live Activity push needs aps.event (start, update or end) and aps.timestamp",
                        location: at
                    )
                )
            }
            // A payload written in the campaign is blamed on its variant's line.
            let where_ = variant.payload.path == campaign.path ? variant.location : at
            for problem in liveActivityProblems(shape) {
                issues.append(
                    Issue(
                        reason: .liveActivityEvent,
                        message: "variant '\(variant.name)': \(problem)",
                        location: where_
                    )
                )
            }
        default:
            break
        }
        let topicAt = campaign.topicLocation ?? campaign.messageLocation
        if type != .mdm, let app = campaign.app,
            !PushType.allCases.contains(where: { campaign.topic == app.topic + $0.topicSuffix })
        {
            issues.append(
                Issue(
                    reason: .badTopic,
                    message:
                        "topic '\(campaign.topic.excerpt())' is not app \(app.name)'s bundle id '\(app.topic)' (or it with a push type's suffix); APNs answers BadTopic",
                    location: topicAt
                )
            )
        }
        if hasHeaderControlCharacters(campaign.topic) {
            issues.append(
                Issue(
                    reason: .headerControlCharacters,
                    message: "topic '\(campaign.topic.excerpt())' holds control characters; no header may",
                    location: topicAt
                )
            )
        }
        if let problem = constantCollapseIDProblem(campaign) {
            issues.append(problem)
        }
        // A broadcast names no topic: its channel belongs to the app's bundle id.
        if campaign.broadcast == nil, let problem = topicProblem(campaign.topic, type: type) {
            issues.append(
                Issue(
                    reason: .topicMismatch,
                    message: problem,
                    location: campaign.topicLocation ?? campaign.messageLocation
                )
            )
        }
        return issues
    }

    /// A collapse id without tags is the same for every push: one APNs would refuse (control
    /// characters, more than 64 bytes) is refused here, so `validate` says so instead of `plan`
    /// refusing every push.
    static func constantCollapseIDProblem(_ campaign: LoadedCampaign) -> Issue? {
        guard let template = campaign.collapseID, template.isConstant else { return nil }
        var context = RenderContext(attributes: .empty, variables: .empty, strings: [:])
        guard let text = try? template.renderText(context: &context) else { return nil }
        let at = campaign.collapseIDLocation ?? campaign.messageLocation
        if hasHeaderControlCharacters(text) {
            return Issue(
                reason: .headerControlCharacters,
                message: "collapse_id '\(text.excerpt())' holds control characters; no header may",
                location: at
            )
        }
        if text.utf8.count > 64 {
            return Issue(
                reason: .collapseIDTooLong,
                message: "collapse_id is \(text.utf8.count) bytes; APNs takes at most 64",
                location: at
            )
        }
        return nil
    }

    /// Whether a header value holds bytes HTTP/2 forbids in one (CR, LF, NUL and the other controls).
    public static func hasHeaderControlCharacters(_ value: String) -> Bool {
        value.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// The expiration rule: an absolute expiration before the send (or before 1970) is never delivered.
    static func expirationProblem(_ expiration: ExpirationSpec?, reference: Timestamp) -> String? {
        guard case .at(let at)? = expiration else { return nil }
        if at.secondsSince1970 < 0 { return "expiration \(at) is before 1970; apns-expiration cannot be negative" }
        if at < reference {
            return "expiration \(at) is before the send (\(reference)); APNs would not deliver the pushes"
        }
        return nil
    }

    /// Apple's rules for a per-device Live Activity payload that its shape shows: what its event
    /// (when written as a constant) takes, and a timestamp written in milliseconds. A broadcast is
    /// checked on its rendered request instead (`BroadcastMessage`).
    static func liveActivityProblems(_ shape: PayloadShape) -> [String] {
        var problems: [String] = []
        if case .constant(.integer(let seconds)?)? = shape.value("aps.timestamp"), seconds > 100_000_000_000 {
            problems.append("aps.timestamp is in seconds since 1970, not milliseconds; devices drop it")
        }
        guard case .constant(.string(let event)?)? = shape.value("aps.event") else { return problems }
        switch event {
        case "start":
            // Push-to-start (iOS 17.2+): the activity's type, its attributes and an alert.
            for key in ["attributes-type", "attributes", "content-state", "alert"] where !shape.has("aps.\(key)") {
                problems.append("a push-to-start (aps.event: start) needs aps.\(key)")
            }
        case "update", "end":
            for key in ["attributes-type", "attributes", "input-push-token", "input-push-channel"]
            where shape.has("aps.\(key)") {
                problems.append("aps.\(key) goes with aps.event: start only")
            }
            if event == "update" && !shape.has("aps.content-state") {
                problems.append("an update carries aps.content-state, matching the app's ContentState")
            }
        default:
            problems.append("aps.event is start, update or end, not '\(event.excerpt())'")
        }
        if event != "end" && shape.has("aps.dismissal-date") {
            problems.append("aps.dismissal-date goes with aps.event: end only")
        }
        return problems
    }

    /// The topic rule: push types with a suffix need it; the others must not carry another type's.
    static func topicProblem(_ topic: String, type: PushType) -> String? {
        if !type.topicSuffix.isEmpty {
            return topic.hasSuffix(type.topicSuffix)
                ? nil : "push_type \(type.rawValue) needs a topic ending in '\(type.topicSuffix)', found '\(topic)'"
        }
        for other in PushType.allCases where !other.topicSuffix.isEmpty && topic.hasSuffix(other.topicSuffix) {
            return
                "topic '\(topic)' is for push_type \(other.rawValue), but the campaign sends push_type \(type.rawValue)"
        }
        return nil
    }
}
