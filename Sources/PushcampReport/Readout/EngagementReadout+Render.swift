import Foundation
import PushcampModel

extension EngagementReadout {
    /// "20.0%".
    static func percent(_ value: Double?) -> String {
        value.map { String(format: "%.1f%%", $0 * 100) } ?? "–"
    }

    /// "18.9–21.2%".
    static func interval(_ range: ClosedRange<Double>?) -> String {
        range.map { String(format: "%.1f–%.1f%%", $0.lowerBound * 100, $0.upperBound * 100) } ?? "–"
    }

    /// "1234.50", "0.0123", "+0.25": two decimals, more for amounts under 1 (revenue per
    /// recipient is often a few cents).
    static func money(_ value: Double, signed: Bool = false) -> String {
        let digits = abs(value) < 1 && value != 0 ? 4 : 2
        return String(format: signed ? "%+.\(digits)f" : "%.\(digits)f", value)
    }

    /// "+2.0 pts (+0.5 to +3.4) better".
    static func lift(_ difference: Proportion.Difference?) -> String {
        guard let difference else { return "" }
        return String(
            format: "%+.1f pts (%+.1f to %+.1f) %@",
            difference.difference * 100,
            difference.interval.lowerBound * 100,
            difference.interval.upperBound * 100,
            difference.verdict.words
        )
    }

    /// A table of the readout, the same cells in every format, with what each format needs to lay
    /// it out alike.
    public struct Table: Sendable {
        public var header: [String]
        public var rows: [[String]]
        /// Columns of numbers, aligned to the right.
        public var numeric: Set<Int>
        /// Every column, in the order a narrow screen wants them: what decides first (rate,
        /// interval, lift, value), the counts after.
        public var decisiveOrder: [Int]
    }

    /// The table of one event's figures per group (or per locale).
    public func table(for event: String, locales: Bool) -> Table {
        let groups = locales ? self.locales : self.groups
        let withLift = !locales && holdout != nil
        var header = [
            locales ? "locale" : "group", userKey == nil ? "recipients" : "people", "delivered", event, "rate",
            "95% interval",
        ]
        if withLift { header.append("lift vs holdout (95% interval)") }
        // An event with values (revenue): their sum, per recipient assigned, and against the holdout.
        let valued = !locales && groups.contains { $0.figures.contains { $0.event == event && $0.amount != nil } }
        let valueColumn = header.count
        if valued {
            header += ["value", "per \(userKey == nil ? "recipient" : "person") (95% interval)"]
            if withLift { header.append("value vs holdout (95% interval)") }
        }
        let rows = groups.map { group -> [String] in
            let figure = group.figures.first { $0.event == event }
            var row = [
                group.name, "\(group.recipients)", group.delivered.map(String.init) ?? "–", "\(figure?.count ?? 0)",
                Self.percent(figure?.rate), Self.interval(figure?.interval),
            ]
            if withLift {
                row.append(
                    group.isHoldout
                        ? "baseline" : figure?.lift == nil ? "– (the holdout cannot have it)" : Self.lift(figure?.lift)
                )
            }
            if valued {
                let amount = figure?.amount
                row.append(amount.map { Self.money($0.total) } ?? "–")
                row.append(
                    amount.flatMap { amount in
                        amount.perRecipient.map { mean in
                            Self.money(mean)
                                + (amount.interval.map {
                                    " (\(Self.money($0.lowerBound)) to \(Self.money($0.upperBound)))"
                                } ?? "")
                        }
                    } ?? "–"
                )
                if withLift {
                    row.append(
                        group.isHoldout
                            ? "baseline"
                            : figure?.amountLift.map {
                                "\(Self.money($0.difference, signed: true)) (\(Self.money($0.interval.lowerBound, signed: true)) "
                                    + "to \(Self.money($0.interval.upperBound, signed: true))) \($0.verdict.words)"
                            } ?? "–"
                    )
                }
            }
            return row
        }
        return Table(
            header: header,
            rows: rows,
            numeric: Set(1...5).union(valued ? [valueColumn] : []),
            decisiveOrder: [0] + Array(4..<header.count) + [3, 1, 2]
        )
    }

    /// What a per-person readout says of its unit; nil per recipient.
    public var unitNote: String? {
        userKey.map {
            "Counted per person (audience.user_key: \($0)): a person is in one arm, and an event counts once per "
                + "person, whichever of their devices it came from."
        }
    }

    /// How an arm is named in a sentence.
    static func armName(_ name: String) -> String { name == "holdout" ? "the holdout" : name }

    /// "a, b and c".
    static func list(_ names: [String]) -> String {
        let names = names.map(armName)
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " and " + names.last!
    }

    /// The sentence a reader wants first for `event`: the winner, the arm leading, or why there
    /// is neither.
    public func verdict(for event: String) -> String? {
        guard let comparisons = comparisons(of: event) else { return nil }
        if role(of: event) == "guardrail" {
            // More of a guardrail event is worse: say which arms clearly have more, not a winner.
            let above = comparisons.pairs.filter { $0.verdict == .better }
            guard !above.isEmpty else { return "no arm clearly above another" }
            return above.map { "\(Self.armName($0.arm)) clearly above \(Self.armName($0.baseline))" }
                .joined(separator: "; ")
        }
        let others = { (best: String) in comparisons.arms.map(\.name).filter { $0 != best } }
        switch comparisons.leader {
        case .winner("holdout"):
            return "winner: the holdout: sending nothing did better than \(Self.list(others("holdout")))"
        case .winner(let best):
            return "winner: \(best), ahead of \(Self.list(others(best)))"
        case .leading(let best, let unclear):
            return "no winner yet: \(Self.armName(best)) leads, but is not clearly ahead of \(Self.list(unclear))"
        case .none:
            return comparisons.arms.count < 2
                ? "no comparison: fewer than two arms to compare" : "no winner: no arm has any \(event) yet"
        }
    }

    /// "converted (primary)", "unsubscribed (guardrail)", "opened".
    public func title(of event: String) -> String {
        role(of: event).map { "\(event) (\($0))" } ?? event
    }

    /// Every pair compared on `event`: the same cells in every format; nil with fewer than two arms.
    public func comparisonTable(for event: String) -> Table? {
        guard let comparisons = comparisons(of: event), !comparisons.pairs.isEmpty else { return nil }
        let header = [
            "comparison", "difference", String(format: "anytime-valid interval (%.1f%% each)", comparisons.level * 100),
            "verdict",
        ]
        let rows = comparisons.pairs.map { pair in
            [
                "\(pair.arm) vs \(pair.baseline)", String(format: "%+.1f pts", pair.difference * 100),
                String(format: "%+.1f to %+.1f", pair.interval.lowerBound * 100, pair.interval.upperBound * 100),
                pair.verdict.words,
            ]
        }
        return Table(header: header, rows: rows, numeric: [1], decisiveOrder: Array(header.indices))
    }

    /// The readout as the report JSON's `readout` (docs/report-json.md).
    public var json: JSONValue {
        func figures(_ group: Group, lift: Bool) -> JSONValue {
            .array(
                group.figures.map { figure in
                    var fields: [(String, JSONValue)] = [
                        ("event", .string(figure.event)), ("count", .integer(figure.count)),
                        ("rate", figure.rate.map { .number($0) } ?? .null),
                        ("low", figure.interval.map { .number($0.lowerBound) } ?? .null),
                        ("high", figure.interval.map { .number($0.upperBound) } ?? .null),
                    ]
                    if lift {
                        fields.append(
                            (
                                "lift",
                                figure.lift.map { lift in
                                    .object([
                                        ("difference", .number(lift.difference)),
                                        ("low", .number(lift.interval.lowerBound)),
                                        ("high", .number(lift.interval.upperBound)),
                                        ("relative", lift.relative.map { .number($0) } ?? .null),
                                        ("p_value", .number(lift.pValue)), ("verdict", .string(lift.verdict.rawValue)),
                                    ])
                                } ?? .null
                            )
                        )
                    }
                    if let amount = figure.amount {
                        fields.append(
                            (
                                "value",
                                .object([
                                    ("total", .number(amount.total)),
                                    ("per_recipient", amount.perRecipient.map { .number($0) } ?? .null),
                                    ("low", amount.interval.map { .number($0.lowerBound) } ?? .null),
                                    ("high", amount.interval.map { .number($0.upperBound) } ?? .null),
                                    (
                                        "lift",
                                        figure.amountLift.map { lift in
                                            .object([
                                                ("difference", .number(lift.difference)),
                                                ("low", .number(lift.interval.lowerBound)),
                                                ("high", .number(lift.interval.upperBound)),
                                                ("verdict", .string(lift.verdict.rawValue)),
                                            ])
                                        } ?? .null
                                    ),
                                ])
                            )
                        )
                    }
                    return .object(fields)
                }
            )
        }
        func group(_ group: Group, lift: Bool) -> JSONValue {
            .object([
                ("name", .string(group.name)), ("holdout", .bool(group.isHoldout)),
                ("recipients", .integer(group.recipients)),
                ("delivered", group.delivered.map { .integer($0) } ?? .null), ("events", figures(group, lift: lift)),
            ])
        }
        func comparisons(_ comparisons: Comparisons) -> JSONValue {
            let leader: (String, JSONValue) =
                switch comparisons.leader {
                case .winner(let name): ("winner", .string(name))
                case .leading(let name, _): ("leading", .string(name))
                case .none: ("none", .null)
                }
            return .object([
                ("event", .string(comparisons.event)),
                ("role", role(of: comparisons.event).map { .string($0) } ?? .null),
                ("verdict", .string(verdict(for: comparisons.event) ?? "")),
                ("winner", leader.0 == "winner" ? leader.1 : .null),
                ("leading", leader.0 == "none" ? .null : leader.1),
                ("level", .number(comparisons.level)),
                (
                    "pairs",
                    .array(
                        comparisons.pairs.map { pair in
                            .object([
                                ("arm", .string(pair.arm)), ("baseline", .string(pair.baseline)),
                                ("difference", .number(pair.difference)),
                                ("low", .number(pair.interval.lowerBound)), ("high", .number(pair.interval.upperBound)),
                                ("interval", .string("anytime-valid")), ("verdict", .string(pair.verdict.rawValue)),
                            ])
                        }
                    )
                ),
            ])
        }
        return .object([
            ("version", .integer(Self.version)), ("method", .string(Self.method)),
            ("unit", .string(unit)), ("user_key", userKey.map { .string($0) } ?? .null),
            ("note", note.map { .string($0) } ?? .null),
            ("events", .array(events.map { .string($0) })),
            ("groups", .array(groups.map { group($0, lift: true) })),
            ("locales", .array(locales.map { group($0, lift: false) })),
            ("comparisons", .array(self.comparisons.map(comparisons))),
            ("primary", spec.primary.map { .string($0) } ?? .null),
            ("guardrails", .array(spec.guardrails.map { .string($0) })),
            ("not_in_holdout", .array(spec.notInHoldout.map { .string($0) })),
            ("window", spec.window.map { .integer(Int($0)) } ?? .null),
        ])
    }

    /// The readout for a terminal: a block per event, its verdict first.
    public var text: String {
        var out = "Engagement (rates per \(unit) assigned; 95% intervals)\n"
        for line in [note, unitNote].compactMap({ $0 }) { out += "  \(line)\n" }
        for event in events {
            if let verdict = verdict(for: event) { out += "  \(title(of: event)): \(verdict)\n" }
            var tables = [("", false), (" by locale", true)].map { title, localized in
                (title, table(for: event, locales: localized))
            }
            if let compared = comparisonTable(for: event) { tables.insert((" compared", compared), at: 1) }
            for (title, table) in tables {
                let (header, rows) = (table.header, table.rows)
                guard !rows.isEmpty else { continue }
                out += "  \(event)\(title)\n"
                let widths = header.indices.map { column in
                    ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
                }
                for line in [header] + rows {
                    out += "    "
                    out += line.enumerated().map { column, text in
                        let gap = String(repeating: " ", count: widths[column] - text.count)
                        // Numbers to the right: a comparison's difference, a group's counts and rates.
                        return table.numeric.contains(column) ? gap + text : text + gap
                    }
                    .joined(separator: "  ")
                    .trimmingCharacters(in: .whitespaces)
                    out += "\n"
                }
            }
        }
        return out
    }
}
