import PushcampJournal
import PushcampModel

/// What recipients did after a run, per variant, for the holdout and per locale: each event's
/// count and rate with its 95% Wilson interval, and each variant's lift against the holdout with
/// Newcombe's 95% interval for a difference of two rates and a two-proportion z-test
/// (`Proportion`). A value built from the journal's counts; the renderers print it.
///
/// Rates are per recipient the plan assigned (intention to treat): a variant's planned recipients,
/// the holdout's held-out ones, so a failed send counts against its variant as it would in life.
public struct EngagementReadout: Sendable, Hashable {
    /// The shape's version in the report JSON (`readout.version`), raised when a key changes meaning.
    public static let version = 1

    /// One event's figures in one group.
    public struct Figure: Sendable, Hashable {
        public var event: String
        public var count: Int
        public var rate: Double?
        public var interval: ClosedRange<Double>?
        /// Against the holdout (variants only, when the campaign has one).
        public var lift: Proportion.Difference?
        /// What the event was worth, when rows gave it a value.
        public var amount: Amount? = nil
        /// The value per recipient against the holdout's.
        public var amountLift: Amount.Difference? = nil
    }

    /// A variant, the holdout or a locale.
    public struct Group: Sendable, Hashable {
        public var name: String
        public var isHoldout: Bool
        /// Assigned by the plan: planned (a variant, a locale) or held out.
        public var recipients: Int
        /// Nil for the holdout, which is sent nothing.
        public var delivered: Int?
        /// One per event of the readout, in its order.
        public var figures: [Figure]
    }

    /// The events recorded for the run: the primary first, then the guardrails, then the others
    /// by name (the primary and guardrails even when none of them was recorded).
    public var events: [String]
    /// The campaign's `readout:` as the run kept it (the defaults for a run that kept none).
    public var spec: ReadoutSpec
    /// Variants in name order, then the holdout when the plan had one.
    public var groups: [Group]
    /// Sent recipients per locale (no lift: the holdout is not split by locale), most planned first.
    public var locales: [Group]
    /// Per event, in `events`' order: every pair of arms compared, and the leader.
    public var comparisons: [Comparisons]

    public var holdout: Group? { groups.first { $0.isHoldout } }

    /// Whom the rates count: recipients (devices), or people when the run assigned by
    /// `audience.user_key` (one person, one arm, one count).
    public var userKey: String?

    /// Why the figures may not be final: the run did not reach everyone (cancelled, given up,
    /// still sending); nil for a finished run.
    public var note: String?

    /// The unit the rates count, as a reader says it.
    public var unit: String { userKey == nil ? "recipient" : "person" }

    /// How many the plan assigned to each arm and locale: from the assignment the run kept
    /// (everyone assigned, counted per person when it assigned people), else from its plan's
    /// summary (runs that kept none).
    struct Assigned {
        var variants: [String: Int] = [:]
        var heldOut = 0
        var locales: [String: Int] = [:]
        var holdout = false

        init?(report: RunReport) {
            if let header = report.assignment, let tally = header.tally {
                for group in tally {
                    if let name = header.variant(group.variant) {
                        variants[name, default: 0] += group.persons
                        if let locale = header.locale(group.locale) { locales[locale, default: 0] += group.persons }
                    } else {
                        heldOut += group.persons
                    }
                }
                for name in header.variants where variants[name] == nil { variants[name] = 0 }
                holdout = header.holdout
            } else if let plan = report.stats.plan {
                variants = plan.variants
                heldOut = plan.heldOut
                locales = plan.locales
                holdout = plan.holdoutBasisPoints > 0
            } else {
                return nil
            }
        }
    }

    /// The events of a readout: the primary first, then the guardrails, then the others recorded,
    /// by name.
    static func events(spec: ReadoutSpec, counts: [EngagementCount]) -> [String] {
        let declared = (spec.primary.map { [$0] } ?? []) + spec.guardrails
        return declared + Set(counts.map(\.event)).subtracting(declared).sorted()
    }

    /// The readout of `report`'s run with `counts` from the journal; nil when nothing was recorded,
    /// or when the run kept neither its assignment nor its plan's summary (without them, how many
    /// each arm was assigned is unknown).
    public init?(report: RunReport, counts: [EngagementCount]) {
        guard !counts.isEmpty, let assigned = Assigned(report: report) else { return nil }
        let spec = report.readoutSpec
        self.spec = spec
        userKey = report.assignment?.userKey
        note = Self.note(for: report, assigned: assigned.variants.values.reduce(0, +))
        events = Self.events(spec: spec, counts: counts)
        var perVariant: [String?: [String: Int]] = [:]
        var perLocale: [String: [String: Int]] = [:]
        // Values per variant (nil: the holdout) and event: their sum and sum of squares.
        var values: [String?: [String: (total: Double, squares: Double)]] = [:]
        var valued = Set<String>()
        for count in counts {
            perVariant[count.variant, default: [:]][count.event, default: 0] += count.count
            if count.variant != nil, let locale = count.locale {
                perLocale[locale, default: [:]][count.event, default: 0] += count.count
            }
            if count.valued > 0 { valued.insert(count.event) }
            values[count.variant, default: [:]][count.event, default: (0, 0)].total += count.value
            values[count.variant, default: [:]][count.event, default: (0, 0)].squares += count.valueSquares
        }
        let valuedEvents = valued
        let holdoutCounts = perVariant[nil] ?? [:]
        let hasHoldout = assigned.holdout || !holdoutCounts.isEmpty
        let events = events
        let baseline = hasHoldout ? (recipients: assigned.heldOut, counts: holdoutCounts) : nil
        /// What `event` was worth to `variant` (nil: the holdout) with `recipients` assigned.
        func amount(_ event: String, _ variant: String?, _ recipients: Int) -> Amount? {
            guard valuedEvents.contains(event) else { return nil }
            let sums = values[variant]?[event] ?? (0, 0)
            return Amount(total: sums.total, squares: sums.squares, of: recipients)
        }
        /// A group's figures: each event's rate and interval, and its lift against `baseline`.
        func group(
            _ name: String,
            holdout: Bool = false,
            recipients: Int,
            delivered: Int?,
            found: [String: Int],
            against baseline: (recipients: Int, counts: [String: Int])?,
            valuesOf arm: String?? = .none
        ) -> Group {
            let figures = events.map { event in
                let proportion = Proportion(found[event] ?? 0, of: recipients)
                // An event the holdout cannot have (an open: it was sent nothing) is not compared
                // with it; any other is, even when the holdout has none of it.
                let held = baseline?.counts[event] ?? 0
                let compared = baseline != nil && !spec.notInHoldout.contains(event)
                let worth = arm.flatMap { amount(event, $0, recipients) }
                return Figure(
                    event: event,
                    count: found[event] ?? 0,
                    rate: proportion.rate,
                    interval: proportion.wilson,
                    lift: baseline.flatMap {
                        compared ? proportion.difference(from: Proportion(held, of: $0.recipients)) : nil
                    },
                    amount: worth,
                    amountLift: baseline.flatMap { base in
                        compared ? amount(event, nil, base.recipients).flatMap { worth?.difference(from: $0) } : nil
                    }
                )
            }
            return Group(
                name: name,
                isHoldout: holdout,
                recipients: recipients,
                delivered: delivered,
                figures: figures
            )
        }
        let variantNames = Set(assigned.variants.keys).union(perVariant.keys.compactMap { $0 }).sorted()
        groups = variantNames.map { name in
            group(
                name,
                recipients: assigned.variants[name] ?? 0,
                delivered: report.stats.variants[name]?.delivered ?? 0,
                found: perVariant[name] ?? [:],
                against: baseline,
                valuesOf: .some(name)
            )
        }
        if hasHoldout {
            groups.append(
                group(
                    "holdout",
                    holdout: true,
                    recipients: assigned.heldOut,
                    delivered: nil,
                    found: holdoutCounts,
                    against: nil,
                    valuesOf: .some(nil)
                )
            )
        }
        locales = Set(assigned.locales.keys).union(perLocale.keys).map { name in
            group(
                name,
                recipients: assigned.locales[name] ?? 0,
                delivered: report.stats.locales[name]?.delivered ?? 0,
                found: perLocale[name] ?? [:],
                against: nil
            )
        }
        .sorted { $0.recipients != $1.recipients ? $0.recipients > $1.recipients : $0.name < $1.name }
        // The holdout is an arm of every event but those it cannot have.
        let groups = groups
        comparisons = events.map { event in
            Comparisons(
                event: event,
                arms: groups.compactMap { group in
                    guard let figure = group.figures.first(where: { $0.event == event }),
                        !group.isHoldout || !spec.notInHoldout.contains(event)
                    else { return nil }
                    return Comparisons.Arm(group.name, Proportion(figure.count, of: group.recipients))
                }
            )
        }
    }

    /// What a readout of a run that did not reach everyone says first.
    static func note(for report: RunReport, assigned: Int) -> String? {
        let delivered = report.outcomes.first { $0.kind == .delivered }?.count ?? 0
        let state: String
        switch report.run.status {
        case .finished: return nil
        case .running: state = "is still being sent"
        case .interrupted: state = "was interrupted"
        case .cancelled: state = "was cancelled"
        case .superseded: state = "was given up for a new run"
        case .expired: state = "expired"
        }
        return "Run \(report.run.id) \(state): \(delivered) of the \(assigned) assigned to a variant were delivered. "
            + "Rates are over everyone assigned, so those it never reached count as not having done an event: "
            + "compare the arms of this run with each other, not with another run."
    }

    /// The comparisons of `event`.
    public func comparisons(of event: String) -> Comparisons? {
        comparisons.first { $0.event == event }
    }

    /// What `event` is to the test: `primary`, `guardrail`, or nil.
    public func role(of event: String) -> String? {
        if event == spec.primary { return "primary" }
        return spec.guardrails.contains(event) ? "guardrail" : nil
    }

    /// How the figures are made, as the reports state it.
    public static let method =
        "Rates are per recipient assigned (planned for a variant, held out for the holdout), with 95% Wilson "
        + "score intervals. Lift is the variant's rate minus the holdout's, with Newcombe's 95% interval "
        + "for a difference of proportions and a pooled two-proportion z-test; it is called better or worse "
        + "only when that interval leaves out 0, and too small to tell when either side expects fewer than "
        + "5 events or 5 non-events at the pooled rate. An event the holdout cannot have (readout.not_in_holdout; "
        + "by default opened: it was sent nothing) gets no lift; compare the variants instead. The comparisons set every arm against "
        + "every other with anytime-valid intervals (a normal-mixture confidence sequence), valid however often "
        + "they are read, at 95% over all the comparisons of an event together (Bonferroni); a winner is named "
        + "only when it is ahead of every other arm by such an interval."
}
