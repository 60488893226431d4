import Dispatch
import Foundation
import PushcampModel
import PushcampSend
import Synchronization

/// Prints progress: a live line on a terminal, a plain log line every 10 s otherwise.
struct ProgressPrinter: Sendable {
    let terminal = isatty(STDERR_FILENO) != 0

    func callback(enabled: Bool) -> @Sendable (SendProgress) -> Void {
        let terminal = self.terminal
        if !enabled { return { _ in } }
        let lastLog = LastLog()
        return { progress in
            if !terminal {
                guard lastLog.due(progress.seconds) else { return }
            }
            let rate = progress.seconds > 0 ? Double(progress.delivered + progress.failed) / progress.seconds : 0
            var line = String(
                format: "%@ %d/%d%@ answered, %.0f/s, delivered %d, failed %d, on the wire %d",
                terminal ? "sending" : "progress:",
                progress.delivered + progress.failed,
                progress.planned,
                progress.planFinished ? "" : "+",
                rate,
                progress.delivered,
                progress.failed,
                progress.onTheWire
            )
            if progress.queued > 0 { line += ", queued \(progress.queued)" }
            if progress.waitingToRetry > 0 {
                line += ", retrying \(progress.waitingToRetry)"
                if let next = progress.nextRetryIn, next >= 1 { line += String(format: " (next in %.0f s)", next) }
            }
            if progress.planFinished, rate > 0 {
                let left = Double(progress.planned - progress.delivered - progress.failed) / rate
                line += String(format: ", ETA %.0f s", max(0, left))
            }
            if !progress.topFailures.isEmpty {
                line +=
                    " ("
                    + progress.topFailures.map { "\($0.0.escapingControlCharacters) \($0.1)" }.joined(separator: ", ")
                    + ")"
            }
            if terminal {
                FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            } else {
                printError(line)
            }
        }
    }

    /// Ends the live line before the report.
    func finish() {
        if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}

private final class LastLog: Sendable {
    private let last = Mutex(-10.0)
    func due(_ now: Double) -> Bool {
        last.withLock { last in
            guard now - last >= 10 else { return false }
            last = now
            return true
        }
    }
}
