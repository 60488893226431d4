import Foundation
import PushcampJournal
import PushcampModel

extension RunReport {
    /// The report as one self-contained HTML page: no scripts, no external files; the charts
    /// (outcomes by reason, answers per second over time, latency distribution) are inline SVG.
    public func html() -> String {
        let title = "\(runTitle) of \(run.campaign)"
        let badge = outcomeBadge
        var body = "<header><h1>\(escape(title)) <span class=\"status \(badge.tone)\">"
        body += "\(escape(badge.text))</span></h1>\n<p class=\"meta\">revision <code>\(escape(run.revision))</code>"
        if let file = fileDisplay ?? run.file { body += " · <code>\(escape(file))</code>" }
        if let sent = stats.sent {
            body += "<br>app <code>\(escape(sent.app))</code> · topic <code>\(escape(sent.topic))</code> · "
            body +=
                "\(escape(sent.environment)) · <code>\(escape(sent.endpoint))</code> · throttle \(escape(sent.rate)) over "
            body += "\(sent.connections) connection\(sent.connections == 1 ? "" : "s")"
        }
        if let replay = run.replay {
            body += " · replay of run \(replay.run) (\(escape(replay.reasons.joined(separator: ", "))))"
        }
        body += "<br>started \(Timestamps.text(run.startedAt)) · last update \(Timestamps.text(run.updatedAt))</p>"
        body += "</header>\n"
        if let description = campaignDescription { body += "<p class=\"description\">\(escape(description))</p>\n" }
        // What a product manager opens the page for, on the first screen of a phone: each event's
        // verdict, the primary first, linking to the readout below.
        if let readout {
            let verdicts = readout.events.compactMap { event in
                readout.verdict(for: event).map { "\(readout.title(of: event)): \($0)" }
            }
            if !verdicts.isEmpty {
                body += "<section class=\"verdicts\" id=\"verdicts\">"
                for verdict in verdicts {
                    body += "<p class=\"verdict\"><a href=\"#engagement\"><strong>\(escape(verdict))</strong></a></p>"
                }
                body += "</section>\n"
            }
        }
        if !copies.isEmpty {
            body += "<section class=\"copy\"><h2>Copy</h2><div class=\"scroll\"><table><tr><th>variant</th>"
            body += "<th>locale</th><th>payload (the first push of each)</th></tr>"
            for copy in copies {
                body += "<tr><td>\(escape(copy.variant))</td><td>\(escape(copy.locale ?? "–"))</td>"
                body += "<td><code>\(escape(copy.payload))</code></td></tr>"
            }
            body += "</table></div></section>\n"
        }

        if timelineMatters {
            body += "<section class=\"timeline\"><h2>Timeline</h2><ul>"
            for event in timeline { body += "<li>\(Timestamps.text(event.at)) · \(escape(Self.words(event)))</li>" }
            body += "</ul></section>\n"
        }

        var cards: [(String, String, String)] = [
            ("delivered", "\(delivered)", percent(delivered)),
            ("failed", "\(failed)", percent(failed)),
            ("retries", "\(stats.totalRetries)", "sends beyond the first"),
            ("possible duplicates", "\(run.possibleDuplicates)", "answer lost, sent again"),
            ("latency p50", latency.map { Durations.milliseconds($0.p50) } ?? "–", "\(latency?.count ?? 0) answers"),
            (
                "latency p99", latency.map { Durations.milliseconds($0.p99) } ?? "–",
                "p99.9 " + (latency.map { Durations.milliseconds($0.p999) } ?? "–")
            ),
            ("duration", Durations.text(wallSeconds), "\(Durations.text(stats.seconds)) sending"),
            (
                "throughput", String(format: "%.0f/s", averagePerSecond),
                "busiest second \(peak.map { $0.delivered + $0.failed } ?? 0)"
            ),
        ]
        if let slices {
            let workers = "\(slices.workers.count) worker\(slices.workers.count == 1 ? "" : "s")"
            cards.append(("slices", "\(slices.done) / \(slices.total)", "done; sent by \(workers)"))
        }
        body += "<section class=\"cards\">\n"
        for (label, value, note) in cards {
            body += "<div class=\"card\"><div class=\"label\">\(escape(label))</div>"
            body += "<div class=\"value\">\(escape(value))</div><div class=\"note\">\(escape(note))</div></div>\n"
        }
        body += "</section>\n"

        body += "<section id=\"outcomes\"><h2>Outcomes by status and reason</h2>\n"
        body += "<div class=\"chart\">"
        body += Charts.horizontalBars(
            outcomes.filter { $0.count > 0 || $0.kind == .delivered }.map {
                (
                    label: label(of: $0), value: Double($0.count), text: "\($0.count) (\(percent($0.count)))",
                    kind: $0.kind.rawValue
                )
            }
        )
        body += "</div></section>\n"

        if !funnelRows.isEmpty || !variantRows.isEmpty || !localeRows.isEmpty {
            body += "<section class=\"pair\">"
            if !funnelRows.isEmpty {
                body += table(
                    "Plan: where the audience went" + (holdoutText.map { " (holdout \($0))" } ?? ""),
                    ["step", "recipients"],
                    funnelRows.map { [$0.label, "\($0.count)"] },
                    numeric: [1]
                )
            }
            if !localeRows.isEmpty {
                body += table(
                    "By locale",
                    ["locale", "planned", "delivered", "failed", "rate"],
                    localeRows.map { row in
                        [row.name, row.planned.map(String.init) ?? "–", "\(row.delivered)", "\(row.failed)", rate(row)]
                    },
                    numeric: [1, 2, 3, 4]
                )
            }
            body += "</section>\n"
        }
        for (title, column, rows) in [
            ("By platform", "platform", platformRows),
            ("By variant (A/B readout)" + assignmentNote, "variant", variantRows),
        ] where !rows.isEmpty {
            body += "<section class=\"readout\">"
            body += table(
                title,
                [column, "planned", "delivered", "failed", "rate", "p50", "p99", "top failures"],
                rows.map { row in
                    [
                        row.label,
                        row.planned.map(String.init) ?? "–", "\(row.delivered)", "\(row.failed)", rate(row),
                        row.p50.map(Durations.milliseconds) ?? "–", row.p99.map(Durations.milliseconds) ?? "–",
                        row.reasonsText(),
                    ]
                },
                numeric: [1, 2, 3, 4, 5, 6]
            )
            body += "</section>\n"
        }

        if let readout {
            body += "<section class=\"readout\" id=\"engagement\"><h2>Engagement</h2>"
            for event in readout.events {
                if let verdict = readout.verdict(for: event) {
                    body +=
                        "<p class=\"verdict\"><strong>\(escape(readout.title(of: event))): \(escape(verdict))</strong></p>"
                }
                for localized in [false, true] {
                    let figures = readout.table(for: event, locales: localized)
                    guard !figures.rows.isEmpty else { continue }
                    // What decides first (rate, interval, lift, value), the counts after: on a
                    // phone the table scrolls sideways past what matters least.
                    body += table(localized ? "\(event) by locale" : event, figures)
                    if !localized, let compared = readout.comparisonTable(for: event) {
                        body += table("\(event) compared", compared)
                    }
                }
            }
            if let over = engagementOverTime, let (curves, secondsPerPoint) = over.curves(for: readout) {
                body += "<h3 id=\"over-time\">\(escape(over.event)) over time</h3><div class=\"chart\">"
                body += Charts.curves(
                    curves.map { ($0.name, $0.isHoldout, $0.rates) },
                    secondsPerPoint: secondsPerPoint,
                    event: over.event
                )
                body += "</div><p class=\"note\">"
                body += escape(
                    "the share of each arm's \(readout.unit == "person" ? "people" : "recipients") assigned that had "
                        + "\(over.event) by then, from the run's start"
                        + (readoutSpec.window.map { " to the end of its attribution window (\(TimeSpan(seconds: $0)))" }
                            ?? "")
                        + "; the holdout dashed."
                )
                body += "</p>\n"
            }
            for note in [readout.note, readout.unitNote].compactMap({ $0 }) {
                body += "<p class=\"note\">\(escape(note))</p>\n"
            }
            body += "<p class=\"note\">\(escape(EngagementReadout.method))</p></section>\n"
        }

        let series = series(width: 600)
        body += "<section><h2>Answers per second</h2>\n"
        if series.points.isEmpty {
            body += "<p class=\"empty\">No answers recorded.</p>"
        } else {
            body += "<div class=\"chart\">"
            body += Charts.timeSeries(
                series.points,
                failed: series.failed,
                retried: series.retried,
                gaps: series.gaps,
                start: series.start,
                secondsPerPoint: series.secondsPerPoint,
                label: { Timestamps.text(Double($0)).dropFirst(11).description }
            )
            body += "</div>"
            var notes = ["final answers per second (UTC); failures in red, answers to retries in orange"]
            if series.secondsPerPoint > 1 { notes.append("each point averages \(series.secondsPerPoint) seconds") }
            if !series.gaps.isEmpty {
                notes.append(
                    "shaded: \(series.gaps.count) pause\(series.gaps.count == 1 ? "" : "s") with no answer (an interruption, a wait for retries or quiet hours)"
                )
            }
            if stats.totalRetries > 0 {
                notes.append(
                    "\(stats.totalRetries) retries: \(sortedRetries.prefix(3).map { "\($0.cause) \($0.count)" }.joined(separator: ", "))"
                )
            }
            body += "<p class=\"note\">" + escape(notes.joined(separator: " · ")) + ".</p>"
        }
        body += "</section>\n"

        body += "<section><h2>Latency distribution</h2>\n"
        if let latency {
            body += "<div class=\"chart\">"
            body += Charts.verticalBars(
                latencyDistribution.map { (label: Self.short($0.from), value: Double($0.count)) },
                axis: "latency from (answers per bin, bins 1.25× wide)"
            )
            body += "</div>"
            body +=
                "<table class=\"numbers\"><tr><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr><tr>"
            for value in [latency.p50, latency.p90, latency.p99, latency.p999, latency.max] {
                body += "<td>\(Durations.milliseconds(value))</td>"
            }
            body += "</tr></table>"
        } else {
            body += "<p class=\"empty\">No answers measured.</p>"
        }
        body += "</section>\n"

        if !stats.retries.isEmpty || !stats.disconnects.isEmpty {
            body += "<section class=\"pair\">"
            body += table("Retries by cause", ["cause", "sends"], sortedRetries.map { [$0.cause, "\($0.count)"] })
            body += table(
                "Connections (\(stats.connectionsOpened) opened)",
                ["ended by", "count"],
                stats.disconnects.sorted { $0.key < $1.key }.map { [$0.key, "\($0.value)"] }
            )
            body += "</section>\n"
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <style>\(Self.style)</style></head>
            <body>
            \(body)<footer>pushcamp report · \(escape(run.campaign)) run \(run.id)</footer>
            </body></html>

            """
    }

    func percent(_ count: Int) -> String {
        String(format: "%.2f%%", Double(count) * 100 / Double(max(1, recipients)))
    }

    func table(_ title: String, _ header: [String], _ rows: [[String]], numeric: Set<Int> = []) -> String {
        func cell(_ tag: String, _ column: Int, _ text: String) -> String {
            "<\(tag)\(numeric.contains(column) ? " class=\"num\"" : "")>\(escape(text))</\(tag)>"
        }
        var out = "<div class=\"scroll\"><h3>\(escape(title))</h3><table>"
        out += "<tr>" + header.enumerated().map { cell("th", $0.offset, $0.element) }.joined() + "</tr>"
        if rows.isEmpty { out += "<tr><td colspan=\"\(header.count)\">none</td></tr>" }
        for row in rows {
            out += "<tr>" + row.enumerated().map { cell("td", $0.offset, $0.element) }.joined() + "</tr>"
        }
        return out + "</table></div>"
    }

    /// A readout table, its columns in its decisive order, numbers to the right.
    func table(_ title: String, _ readout: EngagementReadout.Table) -> String {
        let order = readout.decisiveOrder
        return table(
            title,
            order.map { readout.header[$0] },
            readout.rows.map { row in order.map { row[$0] } },
            numeric: Set(order.indices.filter { readout.numeric.contains(order[$0]) })
        )
    }

    func rate(_ row: ReadoutRow) -> String {
        row.deliveryRate.map { String(format: "%.1f%%", $0 * 100) } ?? "–"
    }

    /// The header's badge: the run's status and what came of it, coloured by the outcome (a run
    /// that finished with every push failed is not green).
    var outcomeBadge: (text: String, tone: String) {
        switch run.status {
        case .finished:
            if failed == 0 && count(.unsent) == 0 && count(.waiting) == 0 && count(.unknown) == 0 {
                return (delivered > 0 ? "finished · all delivered" : "finished · nothing to send", "good")
            }
            if delivered == 0 { return ("finished · all failed", "bad") }
            return ("finished · \(failed) failed", "warn")
        case .cancelled: return ("cancelled", "warn")
        case .interrupted: return ("interrupted · send again to resume", "warn")
        case .running: return ("running", "info")
        case .superseded: return ("superseded", "info")
        case .expired: return ("expired", "info")
        }
    }

    /// A latency bin's lower bound: `160 µs`, `1.2 ms`, `25 ms`, `2.5 s`.
    static func short(_ micros: UInt64) -> String {
        func scaled(_ value: Double, _ unit: String) -> String {
            let text = value < 10 ? String(format: "%.2g", value) : String(format: "%.0f", value)
            return text + " " + unit
        }
        if micros >= 1_000_000 { return scaled(Double(micros) / 1_000_000, "s") }
        if micros >= 1000 { return scaled(Double(micros) / 1000, "ms") }
        return "\(micros) µs"
    }

    static let style = """
        body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1000px;\
        padding:24px;color:#1d2430;background:#fff}
        h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}h3{font-size:14px;margin:0 0 6px}
        .meta{color:#5b6575;margin:0}code{font-size:12px}
        .status{font-size:12px;padding:2px 8px;border-radius:10px;vertical-align:middle;background:#e6e9ef;white-space:nowrap}
        .status.good{background:#d6f0dd;color:#1b6b34}.status.warn{background:#fbe6cf;color:#8a4b08}
        .status.bad{background:#f8d7d6;color:#9b1c1c}.status.info{background:#e1ebfa;color:#1f4f96}
        .cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(108px,1fr));gap:10px;margin-top:18px}
        .card{border:1px solid #e2e6ec;border-radius:8px;padding:10px}
        .card .label{color:#5b6575;font-size:12px}.card .value{font-size:20px;font-weight:600}
        .card .note,.note,.empty{color:#7a8494;font-size:12px}
        svg{display:block;width:100%;height:auto}svg text{font-size:11px;fill:#3a4352}
        .bar{fill:#3b7dd8}.bar.delivered{fill:#2f9e55}.bar.failed{fill:#d9534f}.bar.waiting,.bar.unknown,.bar.unsent{fill:#e3a33b}
        .axis{stroke:#c9d0da;stroke-width:1}.grid{stroke:#eef1f5;stroke-width:1}
        .line{fill:none;stroke:#3b7dd8;stroke-width:1.5}.area{fill:#3b7dd8;fill-opacity:.15}
        .arm{fill:none;stroke-width:2}.arm0{stroke:#3b7dd8}.arm1{stroke:#e07b39}.arm2{stroke:#2f9e55}
        .arm3{stroke:#8e5bd0}.arm4{stroke:#c2417a}.arm5{stroke:#1f9aa3}.arm.holdout{stroke:#7a8494;stroke-dasharray:5 4}
        .line.failed{stroke:#d9534f}.line.retried{stroke:#e3a33b}.gap{fill:#9aa3b0;fill-opacity:.18}.axis-label{font-size:12px;fill:#5b6575}
        table{border-collapse:collapse;font-size:13px}th,td{padding:4px 10px;border-bottom:1px solid #e8ebf0;text-align:left}
        table.numbers td,table.numbers th,td.num,th.num{text-align:right;white-space:nowrap}
        .scroll,.chart{overflow-x:auto}.readout{margin-top:24px}.description{margin:8px 0 0}
        #engagement .scroll{margin-top:14px}
        .copy code{white-space:pre-wrap;word-break:break-word}
        .pair{display:grid;grid-template-columns:1fr 1fr;gap:24px;margin-top:28px}
        @media (max-width:640px){body{padding:12px}.pair{grid-template-columns:1fr}h1{font-size:18px}
        .chart svg{min-width:640px}
        th,td{padding:3px 6px}}
        footer{margin-top:32px;color:#9aa3b0;font-size:12px}
        """
}

/// What other pages share with the report's: escaping and the style sheet, so `serve`'s console
/// looks like the reports it links to.
public enum HTML {
    /// `text` with `&`, `<`, `>` and `"` escaped.
    public static func escape(_ text: String) -> String { PushcampReport.escape(text) }

    public static var style: String { RunReport.style }
}

/// `text` with `&`, `<`, `>` and `"` escaped for HTML and SVG.
func escape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for character in text {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        default: out.append(character)
        }
    }
    return out
}
