import PushcampJournal
import PushcampModel

extension RunReport {
    /// The campaign's description, as the run planned it.
    public var campaignDescription: String? { stats.plan?.description }

    /// What each variant and locale was sent: the first push of each, rendered (a real recipient's
    /// copy: personalised fields show that recipient's values).
    public var copies: [PlanSample] { stats.plan?.copies ?? [] }

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
