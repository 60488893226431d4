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

    /// The header of a table of one event's figures, and its rows: the same cells in every format.
    public func table(for event: String, locales: Bool) -> (header: [String], rows: [[String]]) {
        let groups = locales ? self.locales : self.groups
        let withLift = !locales && holdout != nil
        var header = [locales ? "locale" : "group", "recipients", "delivered", event, "rate", "95% interval"]
        if withLift { header.append("lift vs holdout (95% interval)") }
        let rows = groups.map { group -> [String] in
            let figure = group.figures.first { $0.event == event }
            var row = [
                group.name, "\(group.recipients)", group.delivered.map(String.init) ?? "–", "\(figure?.count ?? 0)",
                Self.percent(figure?.rate), Self.interval(figure?.interval),
            ]
            if withLift {
                row.append(
                    group.isHoldout
                        ? "baseline" : figure?.lift == nil ? "– (the holdout has none)" : Self.lift(figure?.lift)
                )
            }
            return row
        }
        return (header, rows)
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
        return .object([
            ("version", .integer(Self.version)), ("method", .string(Self.method)),
            ("events", .array(events.map { .string($0) })),
            ("groups", .array(groups.map { group($0, lift: true) })),
            ("locales", .array(locales.map { group($0, lift: false) })),
        ])
    }

    /// The readout for a terminal: a block per event.
    public var text: String {
        var out = "Engagement (rates per recipient assigned; 95% intervals)\n"
        for event in events {
            for (title, localized) in [("", false), (" by locale", true)] {
                let (header, rows) = table(for: event, locales: localized)
                guard !rows.isEmpty else { continue }
                out += "  \(event)\(title)\n"
                let widths = header.indices.map { column in
                    ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
                }
                for line in [header] + rows {
                    out += "    "
                    out += line.enumerated().map { column, text in
                        let gap = String(repeating: " ", count: widths[column] - text.count)
                        return (1...5).contains(column) ? gap + text : text + gap
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
