import Foundation
import PushcampAPNsCore
import PushcampAudience
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampServe

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

/// What every "now" of a command is read from: the wall clock libraries default to, in one place.
let commandClock: any WallClock = SystemWallClock()

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

extension Failure {
    /// What the libraries' errors mean on the command line, in one place: the line standard error
    /// says and the exit code. Nil for an error that is not one of them (ArgumentParser's own go
    /// through as they are). A command catches an error itself only to say more than this.
    init?(_ error: any Error) {
        switch error {
        case let failure as Failure: self = failure
        case let error as JournalError: self.init("error: \(error.message)", exitCode: 1)
        case let error as PlanFileError: self.init("error: \(error.message)", exitCode: 1)
        case let error as PlanDiff.Refusal: self.init("error: \(error.message)", exitCode: 1)
        case let error as AudienceError: self.init(error.diagnostic.description, exitCode: 1)
        case let error as RunRefusal: self.init("error: \(error.message)", exitCode: error.exitCode)
        case let error as EngagementImport.Refusal: self.init("error: \(error)", exitCode: 1)
        case let error as ServeNode.Failure: self.init(error.message, exitCode: 1)
        case let error as HistoryBackfill.SetupError: self.init(error.message, exitCode: 1)
        case let error as AppStoreSetupError: self.init("error: \(error)", exitCode: 1)
        case let error as ProjectChannels.Failure:
            let code: Int32 =
                switch error.kind {
                case .apns: 2  // APNs refused or could not be reached
                case .journal: 1
                case .project: 64  // a name the project does not have
                }
            self.init(error.message, exitCode: code)
        case let error as Checkup.Refusal: self.init("error: \(error.message)", exitCode: 64)
        default: return nil
        }
    }
}

extension Failure {
    /// A refusal to send `campaign`, said at its file (unless the refusal names a place of its own).
    init(_ refusal: RunRefusal, of campaign: LoadedCampaign) {
        let said =
            refusal.message.hasPrefix(campaign.path) ? refusal.message : "\(campaign.path): error: \(refusal.message)"
        self.init(said, exitCode: refusal.exitCode)
    }
}
