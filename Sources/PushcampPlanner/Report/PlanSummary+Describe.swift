import PushcampAudience
import PushcampModel

/// Shared wording for the plan's text, Markdown and JSON forms.
extension PlanSummary {
    /// Recipients that reached pre-flight: planned plus refused.
    public var considered: Int { planned + failed }

    public var expirationText: String {
        switch expiration {
        case nil: return "none (APNs default)"
        case .immediately?: return "0 (deliver now or never)"
        case .at(let timestamp)?: return "\(timestamp)"
        case .after(let span)?:
            if timing != nil { return "\(span) after each push's moment (before any quiet-hours deferral)" }
            if let sendTime { return "\(sendTime + span) (\(span) after send)" }
            return "\(span) after send"
        }
    }

    public var sendTimeText: String {
        guard let sendTime else { return "when sent (pass --at to pin expirations)" }
        if schedule?.local != nil {
            return "\(sendTime) (the run starts when the first zone reaches the local time)"
        }
        return "\(sendTime)" + (sendTimeSource.map { " (\($0))" } ?? "")
    }

    public var rateText: String {
        "\(rate.text)\(rateIsDefault ? " (default)" : "") over \(connections) connection\(connections == 1 ? "" : "s")"
    }

    public var durationText: String { Self.duration(estimatedSeconds) }

    public var invalidText: String {
        audience.invalid.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue): \($0.value)" }
            .joined(separator: ", ")
    }

    public var sortedFailures: [(reason: PreflightReason, stat: FailureStat)] {
        failures.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Where the plan sends, a line per provider: the iOS app's environment or endpoint, the
    /// Android app's.
    public var destinationLines: [String] {
        var lines: [String] = []
        if let destination { lines.append(destination.text) }
        if let android { lines.append("Android app \(android.app) \(android.destination)") }
        return lines
    }

    /// Whether anything goes to a real provider's production: APNs production, or FCM itself.
    public var reachesProduction: Bool {
        destination?.isProduction == true || android.map { !$0.destination.contains("custom endpoint") } == true
    }

    /// Planned pushes per platform in words, `12 iOS · 8 Android`; empty for an iOS-only plan.
    public var platformText: String {
        guard android != nil else { return "" }
        return Platform.allCases.filter { platforms[$0] != nil || $0 == .android || destination != nil }
            .map { "\(platforms[$0] ?? 0) \($0.title)" }.joined(separator: " · ")
    }

    /// Rows of a platform the campaign does not send to, in words.
    public var otherPlatformText: String {
        audience.otherPlatform.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key.title)" }
            .joined(separator: ", ")
    }

    /// The body a sample shows: an Android push's with its ttl as at the plan's send time.
    public func sampleBody(of push: PlannedPush) -> [UInt8] {
        guard push.platform == .android else { return push.payload }
        return push.fcmBody(sendTime: sendTime ?? Timestamp(secondsSince1970: push.due ?? 0))
    }

    /// Headers of a planned push, in the order they are sent.
    public func headers(of push: PlannedPush) -> [(String, String)] {
        if push.platform == .android {
            let project = android?.project ?? "{the service account's project_id}"
            return [(":path", "/v1/projects/\(project)/messages:send"), ("authorization", "Bearer (an access token)")]
        }
        var headers: [(String, String)] = [
            (":path", "/3/device/\(push.token)"),
            ("apns-id", push.apnsID.description),
            ("apns-push-type", push.pushType.rawValue),
            ("apns-priority", String(push.priority)),
            ("apns-topic", push.topic),
        ]
        switch push.expiration {
        case nil: break
        case .immediately?: headers.append(("apns-expiration", "0"))
        case .at(let timestamp)?: headers.append(("apns-expiration", "\(timestamp.secondsSince1970) (\(timestamp))"))
        case .afterSend(let span)?: headers.append(("apns-expiration", "send time + \(span.seconds) (\(span))"))
        }
        if let collapseID = push.collapseID { headers.append(("apns-collapse-id", collapseID)) }
        return headers
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.up))
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m \(total % 60)s" }
        return "\(total / 3600)h \(total % 3600 / 60)m"
    }

    public static func shortToken(_ token: String) -> String {
        token.count > 16 ? "\(token.prefix(8))…\(token.suffix(4))" : token
    }

    /// The schedule, its next slots and the quiet hours, one line each (none without them).
    var scheduleLines: [String] {
        var lines: [String] = []
        if let schedule {
            lines.append("schedule \(schedule) — sent by `pushcamp serve`")
            if !nextSlots.isEmpty {
                lines.append(
                    "next slots "
                        + nextSlots.map { Timestamp(secondsSince1970: $0).description }.joined(separator: ", ")
                )
            }
        }
        if let trigger {
            lines.append("trigger \(trigger) — sent by `pushcamp serve` to each notification's subscription")
            if let history = triggerHistory {
                lines.append(
                    "in the last \(history.days) days \(history.events) notification\(history.events == 1 ? "" : "s") for \(history.subscriptions) subscription\(history.subscriptions == 1 ? "" : "s") would have fired it"
                )
            }
        }
        if let quietHours { lines.append("quiet hours \(quietHours)") }
        return lines
    }

    /// The audience funnel's "no subscription" row, when the audience is joined to subscriptions.
    var subscriptionRow: (label: String, count: Int, note: String)? {
        guard subscriptions != nil || trigger != nil else { return nil }
        let join = subscriptions ?? SubscriptionAudienceSpec(location: SourceLocation(path: ""))
        var note = join.summary
        if let matched = subscriptionsMatched {
            note += "; \(matched) subscription\(matched == 1 ? "" : "s") in the journal"
        }
        return ("no subscription", unsubscribed, note)
    }

    /// What the timeline's counts do not show: fallbacks, deferrals, drops.
    func timingNotes(_ timing: Timing) -> [String] {
        var notes: [String] = []
        if let first = timing.first, let last = timing.last {
            notes.append(
                "from \(Timestamp(secondsSince1970: first)) to \(Timestamp(secondsSince1970: last))"
            )
        }
        notes.append("in the fallback zone: \(timing.fellBack)")
        notes.append("deferred by quiet hours: \(timing.deferred)")
        for drop in Timing.Drop.allCases {
            notes.append("dropped (\(drop.rawValue)): \(timing.dropped[drop] ?? 0)")
        }
        return notes
    }

    /// `2027-03-20 09:00Z`.
    static func hourText(_ start: Int64) -> String {
        let text = Timestamp(secondsSince1970: start).description
        return text.prefix(10) + " " + text.dropFirst(11).prefix(5) + "Z"
    }
}
