import PushcampJournal
import PushcampModel

extension RunReport {
    /// The campaign's description, as the run planned it.
    public var campaignDescription: String? { stats.plan?.description ?? stats.sent?.description }

    /// What each variant and locale was sent: the first push of each, rendered (a real recipient's
    /// copy: personalised fields show that recipient's values), from the plan, or while the run
    /// sends from the plan counted ahead of it.
    public var copies: [PlanSample] { stats.plan?.copies ?? stats.ahead?.copies ?? [] }

    /// "control · fr" (or "control" for a campaign without locales).
    static func copyLabel(_ copy: PlanSample) -> String {
        copy.variant + (copy.locale.map { " · \($0)" } ?? "")
    }

    /// The payload shortened for a terminal: at most `limit` characters.
    static func shortPayload(_ payload: String, limit: Int = 160) -> String {
        payload.count > limit ? String(payload.prefix(limit - 1)) + "…" : payload
    }

    /// The report JSON's `copy`.
    var copyJSON: JSONValue {
        .array(
            copies.map { copy in
                .object([
                    ("variant", .string(copy.variant)), ("locale", .optional(copy.locale)),
                    ("payload", .string(copy.payload)),
                ])
            }
        )
    }

    /// The copy for a terminal, under the header.
    var copyText: String {
        var out = campaignDescription.map { "  \($0)\n" } ?? ""
        guard !copies.isEmpty else { return out }
        out += "\nCopy (the first push of each variant and locale)\n"
        let width = copies.map { Self.copyLabel($0).count }.max() ?? 0
        for copy in copies {
            let label = Self.copyLabel(copy)
            out += "  " + label + String(repeating: " ", count: width - label.count) + "  "
            out += Self.shortPayload(copy.payload).escapingControlCharacters + "\n"
        }
        return out
    }
}

extension RunReport {
    /// When each send of the run started or resumed and how it ended, oldest first.
    public var timeline: [RunEvent] {
        // A send killed before it first saved its statistics left no "started": the run's own
        // start stands in for it.
        guard let first = stats.events.first, first.kind != .started else { return stats.events }
        return [RunEvent(at: run.startedAt, kind: .started)] + stats.events
    }

    /// Whether the timeline says more than "started, finished": the run was stopped or resumed.
    public var timelineMatters: Bool { timeline.contains { $0.kind != .started && $0.kind != .finished } }

    /// "stopped: Ctrl-C or SIGTERM", "resumed after Ctrl-C or SIGTERM".
    static func words(_ event: RunEvent) -> String {
        switch (event.kind, event.detail) {
        case (.resumed, let detail?): return "resumed " + detail
        case (let kind, let detail?): return kind.rawValue + ": " + detail
        case (let kind, nil): return kind.rawValue
        }
    }

    /// The report JSON's `timeline`.
    var timelineJSON: JSONValue {
        .array(
            timeline.map { event in
                .object([
                    ("at", .string(Timestamps.iso(event.at))), ("event", .string(event.kind.rawValue)),
                    ("detail", .optional(event.detail)),
                ])
            }
        )
    }

    /// The timeline for a terminal, when the run was stopped or resumed.
    var timelineText: String {
        guard timelineMatters else { return "" }
        return "Timeline\n"
            + timeline.map { "  \(Timestamps.text($0.at))  \(Self.words($0).escapingControlCharacters)\n" }.joined()
            + "\n"
    }
}
