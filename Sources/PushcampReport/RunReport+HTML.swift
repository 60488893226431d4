import Foundation
import PushcampJournal

extension RunReport {
    /// The report as one self-contained HTML page: no scripts, no external files; the charts
    /// (outcomes by reason, answers per second over time, latency distribution) are inline SVG.
    public func html() -> String {
        let title = "\(runTitle) of \(run.campaign)"
        var body = "<header><h1>\(escape(title)) <span class=\"status \(run.status.rawValue)\">"
        body += "\(run.status.rawValue)</span></h1>\n<p class=\"meta\">revision <code>\(escape(run.revision))</code>"
        if let file = run.file { body += " · <code>\(escape(file))</code>" }
        if let replay = run.replay {
            body += " · replay of run \(replay.run) (\(escape(replay.reasons.joined(separator: ", "))))"
        }
        body += "<br>started \(Timestamps.text(run.startedAt)) · last update \(Timestamps.text(run.updatedAt))</p>"
        body += "</header>\n"

        let cards: [(String, String, String)] = [
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
        body += "<section class=\"cards\">\n"
        for (label, value, note) in cards {
            body += "<div class=\"card\"><div class=\"label\">\(escape(label))</div>"
            body += "<div class=\"value\">\(escape(value))</div><div class=\"note\">\(escape(note))</div></div>\n"
        }
        body += "</section>\n"

        body += "<section><h2>Outcomes by status and reason</h2>\n"
        body += Charts.horizontalBars(
            outcomes.filter { $0.count > 0 || $0.kind == .delivered }.map {
                (
                    label: $0.label, value: Double($0.count), text: "\($0.count) (\(percent($0.count)))",
                    kind: $0.kind.rawValue
                )
            }
        )
        body += "</section>\n"

        let series = series(width: 600)
        body += "<section><h2>Answers per second</h2>\n"
        if series.points.isEmpty {
            body += "<p class=\"empty\">No answers recorded.</p>"
        } else {
            body += Charts.timeSeries(
                series.points,
                start: series.start,
                secondsPerPoint: series.secondsPerPoint,
                label: { Timestamps.text(Double($0)).dropFirst(11).description }
            )
            if series.secondsPerPoint > 1 {
                body += "<p class=\"note\">Each point averages \(series.secondsPerPoint) seconds.</p>"
            }
        }
        body += "</section>\n"

        body += "<section><h2>Latency distribution</h2>\n"
        if let latency {
            body += Charts.verticalBars(
                latencyDistribution.map { (label: Self.range($0.from, $0.to), value: Double($0.count)) }
            )
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

    func table(_ title: String, _ header: [String], _ rows: [[String]]) -> String {
        var out = "<div><h3>\(escape(title))</h3><table>"
        out += "<tr>" + header.map { "<th>\(escape($0))</th>" }.joined() + "</tr>"
        if rows.isEmpty { out += "<tr><td colspan=\"\(header.count)\">none</td></tr>" }
        for row in rows { out += "<tr>" + row.map { "<td>\(escape($0))</td>" }.joined() + "</tr>" }
        return out + "</table></div>"
    }

    /// A latency bin's label: `1–2 ms`, `≥ 10 s`.
    static func range(_ from: UInt64, _ to: UInt64) -> String {
        func short(_ micros: UInt64) -> String {
            if micros >= 1_000_000 { return "\(micros / 1_000_000) s" }
            if micros >= 1000 { return "\(micros / 1000) ms" }
            return "\(micros) µs"
        }
        if to > LatencyHistogram.highestMicroseconds { return "≥ \(short(from))" }
        if from == 0 { return "< \(short(to))" }
        return "\(short(from))–\(short(to))"
    }

    static let style = """
        body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1000px;\
        padding:24px;color:#1d2430;background:#fff}
        h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}h3{font-size:14px;margin:0 0 6px}
        .meta{color:#5b6575;margin:0}code{font-size:12px}
        .status{font-size:12px;padding:2px 8px;border-radius:10px;vertical-align:middle;background:#e6e9ef}
        .status.finished{background:#d6f0dd;color:#1b6b34}.status.cancelled,.status.interrupted{background:#fbe6cf;color:#8a4b08}
        .cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(108px,1fr));gap:10px;margin-top:18px}
        .card{border:1px solid #e2e6ec;border-radius:8px;padding:10px}
        .card .label{color:#5b6575;font-size:12px}.card .value{font-size:20px;font-weight:600}
        .card .note,.note,.empty{color:#7a8494;font-size:12px}
        svg{display:block;width:100%;height:auto}svg text{font-size:11px;fill:#3a4352}
        .bar{fill:#3b7dd8}.bar.delivered{fill:#2f9e55}.bar.failed{fill:#d9534f}.bar.waiting,.bar.unknown,.bar.unsent{fill:#e3a33b}
        .axis{stroke:#c9d0da;stroke-width:1}.grid{stroke:#eef1f5;stroke-width:1}
        .line{fill:none;stroke:#3b7dd8;stroke-width:1.5}.area{fill:#3b7dd8;fill-opacity:.15}
        table{border-collapse:collapse;font-size:13px}th,td{padding:4px 10px;border-bottom:1px solid #e8ebf0;text-align:left}
        table.numbers td,table.numbers th{text-align:right}
        .pair{display:grid;grid-template-columns:1fr 1fr;gap:24px;margin-top:28px}
        footer{margin-top:32px;color:#9aa3b0;font-size:12px}
        """
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
