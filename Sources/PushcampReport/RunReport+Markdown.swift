import Foundation
import PushcampJournal
import PushcampModel

extension RunReport {
    /// The report for a pull request, an issue or a wiki page.
    public func markdown() -> String {
        var out = "### \(runTitle) of \(Markdown.code(run.campaign)): \(run.status.rawValue)\n\n"
        out += "| | |\n|---|---|\n"
        out += "| revision | \(Markdown.code(run.revision)) |\n"
        if let file = fileDisplay ?? run.file { out += "| file | \(Markdown.code(file)) |\n" }
        if let sent = stats.sent {
            out += "| app | \(Markdown.code(sent.app)) · topic \(Markdown.code(sent.topic)) |\n"
            out += "| sent to | \(Markdown.text(sent.environment)) (\(Markdown.code(sent.endpoint))) |\n"
            out +=
                "| throttle | \(Markdown.text(sent.rate)) over \(sent.connections) connection\(sent.connections == 1 ? "" : "s") |\n"
        }
        if let replay = run.replay {
            out +=
                "| replay of | run \(replay.run) (\(replay.reasons.map { "\(Markdown.code($0))" }.joined(separator: ", "))) |\n"
        }
        out += "| started | \(Timestamps.text(run.startedAt)) |\n| last update | \(Timestamps.text(run.updatedAt)) |\n"
        out += "| duration | \(Durations.text(wallSeconds)) (\(Durations.text(stats.seconds)) sending) |\n"
        out += String(format: "| throughput | %.0f answers/s while sending", averagePerSecond)
        out += (peak.map { "; busiest second \($0.delivered + $0.failed)" } ?? "") + " |\n"
        out += "| retries | \(stats.totalRetries) |\n| possible duplicates | \(run.possibleDuplicates) |\n"
        if let slices {
            out += "| slices | \(slices.total): \(slices.done) done, \(slices.leased) held, \(slices.free) free; "
            out += "\(slices.workers.count) worker\(slices.workers.count == 1 ? "" : "s") |\n"
        }
        out += "\n"
        if let description = campaignDescription { out += Markdown.text(description) + "\n\n" }
        if !copies.isEmpty {
            out += "#### Copy\n\n| variant | locale | payload |\n|---|---|---|\n"
            for copy in copies {
                out += "| \(Markdown.code(copy.variant)) | \(copy.locale.map(Markdown.code) ?? "–") | "
                out += Markdown.code(copy.payload) + " |\n"
            }
            out += "\n"
        }

        if timelineMatters {
            out += "#### Timeline\n\n| at | what |\n|---|---|\n"
            for event in timeline { out += "| \(Timestamps.text(event.at)) | \(Markdown.text(Self.words(event))) |\n" }
            out += "\n"
        }
        out += "#### Outcomes\n\n| outcome | recipients | share |\n|---|---:|---:|\n"
        let total = max(1, recipients)
        for outcome in outcomes where outcome.count > 0 || outcome.kind == .delivered {
            out += "| \(Markdown.text(label(of: outcome))) | \(outcome.count) | "
            out += String(format: "%.2f%%", Double(outcome.count) * 100 / Double(total)) + " |\n"
        }
        out += "| **total** | **\(recipients)** | |\n\n"
        if !funnelRows.isEmpty {
            out += "#### Plan\n\n| step | recipients |\n|---|---:|\n"
            for (label, count) in funnelRows {
                out += label == "planned" ? "| **planned** | **\(count)** |\n" : "| \(label) | \(count) |\n"
            }
            if let holdoutText { out += "\nHoldout: \(Markdown.text(holdoutText)).\n" }
            out += "\n"
        }
        for (title, rows) in [("Platforms", platformRows), ("Variants", variantRows), ("Locales", localeRows)]
        where !rows.isEmpty {
            let latency = title != "Locales"
            let column = ["Platforms": "platform", "Variants": "variant"][title] ?? "locale"
            out +=
                "#### \(title)\(title == "Variants" ? Markdown.text(assignmentNote) : "")\n\n| \(column) | planned | delivered | failed | rate |"
            out += latency ? " p50 | p99 |" : ""
            out += " top failures |\n|---|---:|---:|---:|---:|" + (latency ? "---:|---:|" : "") + "---|\n"
            for row in rows {
                out +=
                    "| \(title == "Platforms" ? row.label : Markdown.code(row.name)) | \(row.planned.map(String.init) ?? "-") | \(row.delivered) | \(row.failed) | "
                out += (row.deliveryRate.map { String(format: "%.1f%%", $0 * 100) } ?? "-") + " |"
                if latency {
                    out +=
                        " \(row.p50.map(Durations.milliseconds) ?? "-") | \(row.p99.map(Durations.milliseconds) ?? "-") |"
                }
                out += " \(Markdown.text(row.reasonsText())) |\n"
            }
            out += "\n"
        }

        if let readout {
            out += "#### Engagement\n\n"
            for event in readout.events {
                if let verdict = readout.verdict(for: event) {
                    out += "**\(Markdown.text(readout.title(of: event))): \(Markdown.text(verdict))**\n\n"
                }
                var tables = [false, true].map { readout.table(for: event, locales: $0) }
                if let compared = readout.comparisonTable(for: event) { tables.insert(compared, at: 1) }
                for table in tables where !table.rows.isEmpty {
                    out += "| " + table.header.map(Markdown.text).joined(separator: " | ") + " |\n|"
                    out += table.header.indices.map { table.numeric.contains($0) ? "---:|" : "---|" }.joined() + "\n"
                    for row in table.rows { out += "| " + row.map(Markdown.text).joined(separator: " | ") + " |\n" }
                    out += "\n"
                }
            }
            for note in [readout.note, readout.unitNote].compactMap({ $0 }) { out += Markdown.text(note) + "\n\n" }
            out += Markdown.text(EngagementReadout.method) + "\n\n"
        }
        if !stats.retries.isEmpty {
            out += "#### Retries\n\n| cause | sends |\n|---|---:|\n"
            for retry in sortedRetries { out += "| \(Markdown.text(retry.cause)) | \(retry.count) |\n" }
            out += "\n"
        }
        if let latency {
            out +=
                "#### Latency (\(latency.count) answers)\n\n| p50 | p90 | p99 | p99.9 | max |\n|---:|---:|---:|---:|---:|\n"
            out +=
                "| "
                + [latency.p50, latency.p90, latency.p99, latency.p999, latency.max].map(Durations.milliseconds)
                .joined(separator: " | ") + " |\n"
        }
        return out
    }
}
