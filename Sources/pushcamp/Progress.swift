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
        // The rate of the last 5 seconds: 0 as soon as nothing is answered, not an average decaying.
        let window = Mutex(RateWindow(seconds: 5))
        // Colour on a terminal, unless NO_COLOR is set (https://no-color.org): TerminalStyle's rule.
        let color = Styling.standardError
        return { progress in
            var progress = progress
            progress.recentRate = window.withLock {
                $0.add(at: progress.seconds, answered: progress.delivered + progress.failed)
            }
            if !terminal {
                guard lastLog.due(progress.seconds) else { return }
                printError("progress: " + progress.line(width: nil, color: false))
                return
            }
            // One line, redrawn in place: never wider than the terminal, or it wraps into a stack.
            let line = progress.line(width: Self.columns().map { $0 - 1 }, color: color)
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
        }
    }

    /// The terminal's width, from standard error.
    static func columns() -> Int? {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
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
