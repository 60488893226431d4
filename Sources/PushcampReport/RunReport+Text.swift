import Foundation
import PushcampJournal

extension RunReport {
    /// How many possible duplicates the text names; JSON lists them all.
    static let listedDuplicates = 10

    /// The report for a terminal.
    public func text() -> String {
        var out = "\(runTitle) of \(run.campaign): \(run.status.rawValue)\n"
        out += "  revision \(run.revision)" + ((fileDisplay ?? run.file).map { " · \($0)" } ?? "") + "\n"
        if let sentLine { out += "  \(sentLine)\n" }
        if let replay = run.replay {
            out += "  replay of run \(replay.run) (reasons: \(replay.reasons.joined(separator: ", ")))\n"
        }
        out += "  started \(Timestamps.text(run.startedAt)) · last update \(Timestamps.text(run.updatedAt))"
        out += " · \(Durations.text(wallSeconds)) (\(Durations.text(stats.seconds)) sending)\n"
        out += copyText + "\n" + timelineText

        out += "Outcomes\n"
        let total = max(1, recipients)
        for outcome in outcomes where outcome.count > 0 || outcome.kind == .delivered {
            out += "  " + pad(label(of: outcome), 32) + pad(String(outcome.count), 10, right: true)
            out += String(format: "  %6.2f%%", Double(outcome.count) * 100 / Double(total)) + "\n"
        }
        out += "  " + pad("total", 32) + pad(String(recipients), 10, right: true)
        out +=
            run.total(stats: stats).map { $0 == recipients ? "  (the whole plan)" : "  of \($0) planned" }
            ?? "  (plan not read to its end)"
        out += "\n\n"
        if !funnelRows.isEmpty {
            out += "Plan (the audience)\n"
            for (label, count) in funnelRows {
                out += "  " + pad(label, 32) + pad(String(count), 10, right: true) + "\n"
            }
            if let holdoutText { out += "  holdout \(holdoutText)\n" }
            out += "\n"
        }
        for (title, rows) in [("Platforms", platformRows), ("Variants", variantRows), ("Locales", localeRows)]
        where !rows.isEmpty {
            let latency = title != "Locales"
            out += title + (title == "Variants" ? assignmentNote : "") + "\n"
            out += "  " + pad("", 16) + pad("planned", 10, right: true) + pad("delivered", 11, right: true)
            out += pad("failed", 8, right: true) + pad("rate", 9, right: true)
            out += latency ? pad("p50", 10, right: true) + pad("p99", 10, right: true) : ""
            out += "\n"
            for row in rows {
                out += "  " + pad(row.label, 16) + pad(row.planned.map(String.init) ?? "-", 10, right: true)
                out += pad(String(row.delivered), 11, right: true) + pad(String(row.failed), 8, right: true)
                out += pad(row.deliveryRate.map { String(format: "%.1f%%", $0 * 100) } ?? "-", 9, right: true)
                if latency {
                    out += pad(row.p50.map(Durations.milliseconds) ?? "-", 10, right: true)
                    out += pad(row.p99.map(Durations.milliseconds) ?? "-", 10, right: true)
                }
                out += row.reasons.isEmpty ? "" : "   \(row.reasonsText())"
                out += "\n"
            }
            out += "\n"
        }
        if let readout {
            out += readout.text + "\n"
        }

        out += "Retries \(stats.totalRetries)"
        if !stats.retries.isEmpty {
            out += ": " + sortedRetries.map { "\($0.cause) \($0.count)" }.joined(separator: " · ")
        }
        out += "\nPossible duplicates \(run.possibleDuplicates)"
        if run.possibleDuplicates > 0 {
            out += " (sent again after their first request's answer was lost; the collapse id makes the second "
            out += "replace the first on the device)"
        }
        out += "\n"
        for duplicate in duplicates.prefix(Self.listedDuplicates) {
            out += "  seq \(duplicate.seq)  \(duplicate.token)\n"
        }
        if duplicates.count > Self.listedDuplicates {
            out += "  … and \(duplicates.count - Self.listedDuplicates) more (--format json lists them all)\n"
        }
        if let slices {
            out += "Slices \(slices.total): \(slices.done) done · \(slices.leased) held · \(slices.free) free"
            out += ", sent by \(slices.workers.count) worker\(slices.workers.count == 1 ? "" : "s")\n"
            for worker in slices.workers {
                out += "  \(worker.owner)  \(worker.slices) slice\(worker.slices == 1 ? "" : "s") · "
                out += "\(worker.answers) answers · " + String(format: "%.0f/s while sending", worker.perSecond) + "\n"
            }
        }
        if let latency {
            out += "Latency (\(latency.count) answers): p50 \(Durations.milliseconds(latency.p50))"
            out += " · p90 \(Durations.milliseconds(latency.p90)) · p99 \(Durations.milliseconds(latency.p99))"
            out += " · p99.9 \(Durations.milliseconds(latency.p999)) · max \(Durations.milliseconds(latency.max))\n"
        } else {
            out += "Latency: no answers measured\n"
        }
        out += String(format: "Throughput %.0f answers/s while sending", averagePerSecond)
        if let peak {
            out += "; busiest second \(peak.delivered + peak.failed) (\(Timestamps.text(Double(peak.second))))"
        }
        out += "\n"
        let series = series(width: 60)
        if !series.points.isEmpty {
            out += "  " + Self.sparkline(series.points)
            out +=
                series.secondsPerPoint == 1 ? "  (a mark a second)\n" : "  (a mark per \(series.secondsPerPoint) s)\n"
        }
        out += "Connections \(stats.connectionsOpened) opened"
        if !stats.disconnects.isEmpty {
            out +=
                "; ended: "
                + stats.disconnects.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }
                .joined(separator: ", ")
        }
        return out + "\n"
    }

    /// Retries by cause, most first.
    var sortedRetries: [(cause: String, count: Int)] {
        stats.retries.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Values as block characters, ▁ (zero) to █ (the largest).
    static func sparkline(_ values: [Double]) -> String {
        let marks = Array("▁▂▃▄▅▆▇█")
        let top = values.max() ?? 0
        guard top > 0 else { return String(repeating: "▁", count: values.count) }
        return String(values.map { marks[min(marks.count - 1, Int(($0 / top) * Double(marks.count - 1) + 0.5))] })
    }

    func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let gap = String(repeating: " ", count: max(0, width - text.count))
        return right ? gap + text : text + gap
    }
}
