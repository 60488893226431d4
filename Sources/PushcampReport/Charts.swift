import Foundation

/// The report's charts as inline SVG: fixed view boxes that scale to the page, text in the page's
/// font, colours from the page's style sheet (classes), no scripts.
enum Charts {
    /// One bar per row, longest for the largest value; a non-zero value always shows a sliver.
    static func horizontalBars(_ rows: [(label: String, value: Double, text: String, kind: String)]) -> String {
        let width = 960.0
        let labelWidth = 260.0
        let valueWidth = 150.0
        let rowHeight = 26.0
        let height = rowHeight * Double(max(1, rows.count)) + 8
        let top = rows.map(\.value).max() ?? 0
        let span = width - labelWidth - valueWidth
        var svg = open(width, height, "bars")
        for (index, row) in rows.enumerated() {
            let y = 4 + Double(index) * rowHeight
            let length = top > 0 ? (row.value > 0 ? max(2, span * row.value / top) : 0) : 0
            svg += text(labelWidth - 8, y + 17, row.label, anchor: "end")
            svg += "<rect class=\"bar \(escape(row.kind))\" x=\"\(labelWidth)\" y=\"\(format(y + 4))\" "
            svg += "width=\"\(format(length))\" height=\"\(format(rowHeight - 8))\" rx=\"2\"/>"
            svg += text(labelWidth + length + 6, y + 17, row.text)
        }
        return svg + "</svg>\n"
    }

    /// A line over an area: `points[i]` is the value `secondsPerPoint` × i seconds after `start`,
    /// `failed[i]` the failures among it (a red line), `retried[i]` the answers to retries (an
    /// orange line), `gaps` spans of points shaded as pauses;
    /// `label` names a second (for the time axis). Both axes are labelled.
    static func timeSeries(
        _ points: [Double],
        failed: [Double] = [],
        retried: [Double] = [],
        gaps: [ClosedRange<Int>] = [],
        start: Int64,
        secondsPerPoint: Int,
        label: (Int64) -> String
    ) -> String {
        let (width, height) = (960.0, 300.0)
        let (left, right, top, bottom) = (78.0, 16.0, 12.0, 50.0)
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let step = niceStep(for: points.max() ?? 0)
        let steps = max(1, Int(((points.max() ?? 0) / step).rounded(.up)))
        let ceiling = step * Double(steps)
        func x(_ index: Int) -> Double {
            points.count > 1 ? left + plotWidth * Double(index) / Double(points.count - 1) : left + plotWidth / 2
        }
        func y(_ value: Double) -> Double { top + plotHeight * (1 - value / ceiling) }
        var svg = open(width, height, "answers per second over time")
        for gap in gaps where gap.lowerBound <= gap.upperBound && gap.upperBound < points.count {
            let from = x(max(0, gap.lowerBound - 1))
            let to = x(min(points.count - 1, gap.upperBound + 1))
            svg += "<rect class=\"gap\" x=\"\(format(from))\" y=\"\(format(top))\" width=\"\(format(to - from))\" "
            svg += "height=\"\(format(plotHeight))\"><title>no answers: paused</title></rect>"
        }
        for index in 0...steps {
            let value = step * Double(index)
            svg += line(left, y(value), width - right, y(value), step == 0 ? "axis" : "grid")
            svg += text(left - 6, y(value) + 4, number(value), anchor: "end")
        }
        svg += line(left, top + plotHeight, width - right, top + plotHeight, "axis")
        let coordinates = points.indices.map { "\(format(x($0))),\(format(y(points[$0])))" }
        if points.count == 1 {
            svg += "<rect class=\"bar\" x=\"\(format(x(0) - 6))\" y=\"\(format(y(points[0])))\" width=\"12\" "
            svg += "height=\"\(format(plotHeight - (y(points[0]) - top)))\"/>"
        } else {
            svg += "<polygon class=\"area\" points=\"\(format(left)),\(format(y(0))) "
            svg += coordinates.joined(separator: " ") + " \(format(x(points.count - 1))),\(format(y(0)))\"/>"
            svg += "<polyline class=\"line\" points=\"" + coordinates.joined(separator: " ") + "\"/>"
            for (values, kind) in [(retried, "retried"), (failed, "failed")]
            where values.count == points.count && values.contains(where: { $0 > 0 }) {
                let line = values.indices.map { "\(format(x($0))),\(format(y(values[$0])))" }
                svg += "<polyline class=\"line \(kind)\" points=\"" + line.joined(separator: " ") + "\"/>"
            }
        }
        // Time labels under the first, middle and last points, anchored so none leaves the chart.
        let last = points.count - 1
        for index in Set([0, last / 2, last]).sorted() {
            let anchor = last == 0 || (index != 0 && index != last) ? "middle" : index == 0 ? "start" : "end"
            svg += text(x(index), top + plotHeight + 18, label(start + Int64(index * secondsPerPoint)), anchor: anchor)
        }
        svg += "<text class=\"axis-label\" x=\"\(format(left + plotWidth / 2))\" y=\"\(format(height - 6))\" "
        svg += "text-anchor=\"middle\">time (UTC)</text>"
        svg += "<text class=\"axis-label\" transform=\"translate(16 \(format(top + plotHeight / 2))) rotate(-90)\" "
        svg += "text-anchor=\"middle\">answers per second</text>"
        return svg + "</svg>\n"
    }

    /// Columns with their labels under them and counts over them.
    static func verticalBars(_ bars: [(label: String, value: Double)], axis: String? = nil) -> String {
        let (width, height) = (960.0, axis == nil ? 240.0 : 262.0)
        let (top, bottom) = (20.0, axis == nil ? 36.0 : 58.0)
        let plotHeight = height - top - bottom
        let slot = width / Double(max(1, bars.count))
        let highest = bars.map(\.value).max() ?? 0
        var svg = open(width, height, "latency distribution")
        svg += line(0, height - bottom, width, height - bottom, "axis")
        for (index, bar) in bars.enumerated() {
            let barHeight = highest > 0 ? (bar.value > 0 ? max(2, plotHeight * bar.value / highest) : 0) : 0
            let x = Double(index) * slot
            svg += "<rect class=\"bar\" x=\"\(format(x + slot * 0.15))\" y=\"\(format(height - bottom - barHeight))\" "
            svg += "width=\"\(format(slot * 0.7))\" height=\"\(format(barHeight))\" rx=\"2\"/>"
            svg += text(x + slot / 2, height - bottom - barHeight - 5, number(bar.value), anchor: "middle")
            // Every label when they fit, else every other one.
            if bars.count <= 16 || index % 2 == 0 {
                svg += text(x + slot / 2, height - bottom + 20, bar.label, anchor: "middle")
            }
        }
        if let axis {
            svg += "<text class=\"axis-label\" x=\"\(format(width / 2))\" y=\"\(format(height - 6))\" "
            svg += "text-anchor=\"middle\">\(escape(axis))</text>"
        }
        return svg + "</svg>\n"
    }

    /// Lines from 0, one per arm (`curves`, the holdout dashed): each arm's share (0–1) that had
    /// done `event` by each point, `secondsPerPoint` apart after the run's start; a legend above.
    static func curves(
        _ curves: [(name: String, isHoldout: Bool, rates: [Double])],
        secondsPerPoint: Double,
        event: String
    ) -> String {
        let (width, height) = (960.0, 280.0)
        let (left, right, top, bottom) = (78.0, 16.0, 30.0, 50.0)
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let highest = curves.flatMap(\.rates).max() ?? 0
        let step = niceStep(for: highest * 100)
        let steps = max(1, Int((highest * 100 / step).rounded(.up)))
        let ceiling = step * Double(steps)
        let points = curves.map(\.rates.count).max() ?? 0
        func x(_ index: Int) -> Double { left + plotWidth * Double(index) / Double(max(1, points)) }
        func y(_ rate: Double) -> Double { top + plotHeight * (1 - rate * 100 / ceiling) }
        var svg = open(width, height, "\(event) over time, per arm")
        for index in 0...steps {
            let value = step * Double(index)
            svg += line(left, y(value / 100), width - right, y(value / 100), index == 0 ? "axis" : "grid")
            svg += text(left - 6, y(value / 100) + 4, number(value) + "%", anchor: "end")
        }
        var legend = left
        for (index, curve) in curves.enumerated() {
            let kind = curve.isHoldout ? "arm holdout" : "arm arm\(index % 6)"
            let coordinates = ([0] + curve.rates).enumerated().map {
                "\(format(x($0.offset))),\(format(y($0.element)))"
            }
            svg += "<polyline class=\"\(kind)\" points=\"" + coordinates.joined(separator: " ") + "\"/>"
            svg += line(legend, 12, legend + 18, 12, kind)
            let label = curve.name + " " + String(format: "%.1f%%", (curve.rates.last ?? 0) * 100)
            svg += text(legend + 22, 16, label)
            legend += 40 + Double(label.count) * 6.5
        }
        for index in Set([0, points / 2, points]).sorted() {
            let anchor = index == 0 ? "start" : index == points ? "end" : "middle"
            svg += text(x(index), top + plotHeight + 18, elapsed(Double(index) * secondsPerPoint), anchor: anchor)
        }
        svg += "<text class=\"axis-label\" x=\"\(format(left + plotWidth / 2))\" y=\"\(format(height - 6))\" "
        svg += "text-anchor=\"middle\">time since the run started</text>"
        svg += "<text class=\"axis-label\" transform=\"translate(16 \(format(top + plotHeight / 2))) rotate(-90)\" "
        svg += "text-anchor=\"middle\">\(escape(event)), of those assigned</text>"
        return svg + "</svg>\n"
    }

    /// "0", "45 min", "36 h", "12 d".
    static func elapsed(_ seconds: Double) -> String {
        if seconds <= 0 { return "0" }
        if seconds < 2 * 3600 { return "\(Int((seconds / 60).rounded())) min" }
        if seconds < 4 * 86400 { return number((seconds / 3600 * 10).rounded() / 10) + " h" }
        return number((seconds / 86400 * 10).rounded() / 10) + " d"
    }

    /// Bars shown by a sparkline: the last hour of a run at a minute a bar.
    static let sparkBuckets = 60

    /// A run's answers per bucket of `width` seconds as a row of bars, the last `sparkBuckets` of
    /// them, scaled to the highest; one unit wide each, stretched by the page's style sheet (class
    /// `spark`). What the console's script draws from `/api/runs` too.
    static func sparkline(_ counts: [Int], width: Int64) -> String {
        let shown = counts.suffix(sparkBuckets)
        guard let peak = shown.max(), peak > 0 else { return "" }
        let label = "answers per \(width == 60 ? "minute" : "\(width / 60) minutes"): at most \(peak)"
        var svg = "<svg class=\"spark\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(shown.count) 20\" "
        svg +=
            "preserveAspectRatio=\"none\" role=\"img\" aria-label=\"\(escape(label))\"><title>\(escape(label))</title>"
        for (index, count) in shown.enumerated() where count > 0 {
            let height = max(1, 20 * Double(count) / Double(peak))
            svg += "<rect x=\"\(index)\" y=\"\(format(20 - height))\" width=\"0.8\" height=\"\(format(height))\"/>"
        }
        return svg + "</svg>"
    }

    // MARK: Pieces

    static func open(_ width: Double, _ height: Double, _ label: String) -> String {
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(format(width)) \(format(height))\" role=\"img\" "
            + "aria-label=\"\(escape(label))\">"
    }

    static func text(_ x: Double, _ y: Double, _ content: String, anchor: String = "start") -> String {
        "<text x=\"\(format(x))\" y=\"\(format(y))\" text-anchor=\"\(anchor)\">\(escape(content))</text>"
    }

    static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, _ kind: String) -> String {
        "<line class=\"\(kind)\" x1=\"\(format(x1))\" y1=\"\(format(y1))\" x2=\"\(format(x2))\" y2=\"\(format(y2))\"/>"
    }

    /// A coordinate to a tenth.
    static func format(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
    }

    /// `950`, `5k`, `12.5k`, `1.2M`: a tenth at most, no trailing `.0`.
    static func number(_ value: Double) -> String {
        func short(_ scaled: Double, _ unit: String) -> String {
            let text = String(format: "%.1f", scaled)
            return (text.hasSuffix(".0") ? String(text.dropLast(2)) : text) + unit
        }
        if value >= 1_000_000 { return short(value / 1_000_000, "M") }
        if value >= 10_000 { return String(format: "%.0fk", value / 1000) }
        if value >= 1000 { return short(value / 1000, "k") }
        return short(value, "")
    }

    /// Gridline spacing for values up to `top`: 1, 2, 2.5 or 5 × a power of ten, giving at most
    /// five gridlines above zero (1 for nothing).
    static func niceStep(for top: Double) -> Double {
        guard top > 0 else { return 1 }
        let raw = top / 5
        let magnitude = pow(10, log10(raw).rounded(.down))
        for factor in [1.0, 2, 2.5, 5] where factor * magnitude >= raw { return factor * magnitude }
        return 10 * magnitude
    }
}
