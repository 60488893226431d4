import Foundation
import PushcampModel

/// Writes a line to standard error; on a terminal, its `error:` and `warning:` in colour.
func printError(_ line: String) {
    let styled = Styling.standardError ? TerminalStyle.diagnostics(line) : line
    FileHandle.standardError.write(Array((styled + "\n").utf8).withUnsafeBufferPointer { Data(buffer: $0) })
}

/// Prints a document for people (a plan, a report, a status) to standard output; on a terminal,
/// its headings in bold and its diagnostics' severities in colour.
func printDocument(_ text: String) {
    print(Styling.standardOutput ? TerminalStyle.diagnostics(TerminalStyle.headings(text)) : text, terminator: "")
}

/// Whether each stream is styled (TerminalStyle.enabled), decided once.
enum Styling {
    static let standardError = TerminalStyle.enabled(
        isTerminal: isatty(STDERR_FILENO) == 1,
        environment: ProcessInfo.processInfo.environment
    )
    static let standardOutput = TerminalStyle.enabled(
        isTerminal: isatty(STDOUT_FILENO) == 1,
        environment: ProcessInfo.processInfo.environment
    )
}

/// A command's failure: what standard error says, and the exit code (`pushcamp --help` lists
/// them). Thrown from anywhere in a command; `Pushcamp.main` says it and exits, in one place.
struct Failure: Error {
    let message: String
    let exitCode: Int32

    init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }
}
