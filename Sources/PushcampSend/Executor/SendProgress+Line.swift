import Foundation
import PushcampModel

extension SendProgress {
    /// Public for tests and other front ends: a moment of a send, from its counts.
    public init(
        planned: Int,
        planFinished: Bool,
        expected: Int? = nil,
        delivered: Int,
        failed: Int,
        waitingToRetry: Int = 0,
        nextRetryIn: Double? = nil,
        inFlight: Int = 0,
        onTheWire: Int = 0,
        queued: Int = 0,
        seconds: Double,
        topFailures: [(String, Int)] = [],
        retries: [(String, Int)] = [],
        run: RunWide? = nil
    ) {
        self.planned = planned
        self.planFinished = planFinished
        self.expected = expected
        self.delivered = delivered
        self.failed = failed
        self.waitingToRetry = waitingToRetry
        self.nextRetryIn = nextRetryIn
        self.inFlight = inFlight
        self.onTheWire = onTheWire
        self.queued = queued
        self.seconds = seconds
        self.topFailures = topFailures
        self.retries = retries
        self.run = run
    }

    /// How many the run sends to, once known: the plan's total, or the count ahead of it.
    public var total: Int? { planFinished ? planned : expected }

    /// Seconds until every planned push has an answer, at the rate so far, and never before the
    /// next retry's back-off ends while retries wait; nil while the rate is unknown.
    public var eta: Double? {
        let answered = delivered + failed
        guard let total, seconds > 0, answered > 0 else { return nil }
        let rate = recentRate.flatMap { $0 > 0 ? $0 : nil } ?? Double(answered) / seconds
        let left = Double(max(0, total - settledBefore - answered)) / rate
        if waitingToRetry > 0, let next = nextRetryIn { return max(left, next) }
        return left
    }

    /// The progress line: the most useful parts first, each dropped (from the least useful) until
    /// the line fits `width` columns; colour (ANSI) only when `color`.
    public func line(width: Int?, color: Bool) -> String {
        let answered = delivered + failed
        let rate = recentRate ?? (seconds > 0 ? Double(answered) / seconds : 0)
        func paint(_ text: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        // (text, visible length), most important first.
        var parts: [(String, Int)] = []
        func add(_ plain: String, painted: String? = nil) { parts.append((painted ?? plain, plain.count)) }
        // A run cut into slices: the whole run first, then this worker's part ("here").
        if let run {
            add("run \(run.answered)/\(run.planned)")
            add("slices \(run.slicesDone)/\(run.slices) done, \(run.slicesHeld) sending")
        }
        // "21340/50000": answered of planned (of those handed over so far, with a "+", while the
        // plan is still being read and not counted yet), those a resumed run had answered before
        // included.
        add((run == nil ? "" : "here ") + "\(settledBefore + answered)/" + (total.map(String.init) ?? "\(planned)+"))
        add("delivered \(delivered)", painted: "delivered " + paint("\(delivered)", "32"))
        add("failed \(failed)", painted: "failed " + (failed > 0 ? paint("\(failed)", "31") : "0"))
        if waitingToRetry > 0 {
            var text = "retrying \(waitingToRetry)"
            if let next = nextRetryIn, next >= 1 { text += " in \(Self.duration(next))" }
            add(text, painted: paint(text, "33"))
        }
        if let eta { add("ETA \(Self.duration(eta))") }
        add("in flight \(inFlight)")
        add(String(format: "%.0f/s", rate))
        if !retries.isEmpty {
            add("retries: " + retries.map { "\($0.0.escapingControlCharacters) \($0.1)" }.joined(separator: ", "))
        }
        if !topFailures.isEmpty {
            add("failed: " + topFailures.map { "\($0.0.escapingControlCharacters) \($0.1)" }.joined(separator: ", "))
        }
        if queued > 0 { add("queued \(queued)") }
        let separator = " · "
        var kept = parts
        func length(_ parts: [(String, Int)]) -> Int {
            parts.reduce(0) { $0 + $1.1 } + max(0, parts.count - 1) * separator.count
        }
        if let width {
            while kept.count > 1, length(kept) > width { kept.removeLast() }
            if length(kept) > width {
                // Even the first part is too long: cut it (uncoloured).
                return String(kept[0].0.prefix(max(1, width - 1))) + "…"
            }
        }
        return kept.map(\.0).joined(separator: separator)
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        if whole < 120 { return "\(whole) s" }
        if whole < 7200 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }
}
