import ArgumentParser
import Foundation
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner
import PushcampReport
import PushcampSend

/// Options of the commands that read the journal without a campaign file.
/// `--journal` and `--password-env`: which journal a command uses instead of the project's.
struct JournalLocationOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The journal: a SQLite file or a postgres:// URL (default: journal in the nearest pushcamp.yaml, else .pushcamp/journal.sqlite beside it).",
            valueName: "file-or-url"
        )
    )
    var journal: String?

    @Option(
        help: ArgumentHelp(
            "The environment variable holding a PostgreSQL journal's password (default: journal.password_env, else PGPASSWORD).",
            valueName: "name"
        )
    )
    var passwordEnv: String?

    /// The project's journal setting with these options applied.
    func setting(_ project: JournalSetting) -> JournalSetting {
        var setting = project.overridden(by: journal)
        if let passwordEnv { setting.passwordVariable = passwordEnv }
        return setting
    }

    /// Runs `body` with the journal `project` names, or the one these options name; nil when
    /// `readOnly` and there is no such file yet. Prints the problem and exits 1 when it cannot be used.
    func withJournal<T>(
        _ project: JournalSetting,
        readOnly: Bool = false,
        _ body: ((any Journal)?) async throws -> T
    ) async throws -> T {
        try await Self.withJournal(access(project), readOnly: readOnly, body)
    }

    /// `withJournal` to write: the journal is created when there is none yet.
    func withWritableJournal<T>(_ project: JournalSetting, _ body: (any Journal) async throws -> T) async throws -> T {
        try await withJournal(project) { journal in
            guard let journal else { throw ExitCode(1) }  // only a read finds no journal
            return try await body(journal)
        }
    }

    func access(_ project: JournalSetting) throws -> JournalAccess {
        try Self.access(setting(project))
    }

    /// How to reach the journal `setting` names; prints the problem and exits 1 when its URL is
    /// not one.
    static func access(_ setting: JournalSetting) throws -> JournalAccess {
        do {
            return try JournalAccess(
                setting.address,
                passwordVariable: setting.passwordVariable,
                lease: setting.lease
            )
        } catch {
            throw Failure("error: the journal: \(error.message)", exitCode: 1)
        }
    }

    /// Runs `body` with the journal `access` reaches (nil when `readOnly` and there is no such
    /// file yet), closed when it ends; prints the problem (as a refusal to send `campaign`, when
    /// given) and exits 1 when it cannot be opened. What `body` throws goes through as it is.
    static func withJournal<T>(
        _ access: JournalAccess,
        readOnly: Bool,
        refusing campaign: LoadedCampaign? = nil,
        _ body: ((any Journal)?) async throws -> T
    ) async throws -> T {
        var opened = false
        do {
            return try await access.withJournal(readOnly: readOnly) { journal in
                opened = true
                return try await body(journal)
            }
        } catch let error as JournalError where !opened {
            if let campaign {
                printError("\(campaign.path): error: \(error.message); nothing was sent")
            } else {
                printError("error: \(error.message)")
            }
            throw ExitCode(1)
        }
    }
}

/// Options of the commands that read the journal without a campaign file.
struct JournalOption: ParsableArguments {
    @OptionGroup var projectOption: ProjectOption
    @OptionGroup var location: JournalLocationOption

    @Flag(help: "Read the rehearsal journal (what `pushcamp rehearse` recorded) instead of the real one.")
    var rehearsal = false

    /// Runs `body` with the journal (read-only unless `forWriting`: reading never changes it, and
    /// works on a journal this user may not write) and its name; prints the problem and exits 1
    /// when it cannot be used. A project that has sent (or rehearsed) nothing yet has no journal
    /// file: reading it gives an empty journal, so lists are empty rather than errors; writing to
    /// it is an error.
    func withJournal<T>(
        forWriting: Bool = false,
        _ body: (any Journal, _ name: String) async throws -> T
    ) async throws -> T {
        var project: JournalSetting
        switch ProjectJournal.setting(workingDirectory: projectOption.directory) {
        case .success(let found): project = found
        case .failure(let error):
            guard let journal = location.journal else {
                throw Failure(error.description, exitCode: 1)
            }
            project = JournalSetting(path: journal)
        }
        var access = try location.access(project)
        if rehearsal {
            // Rehearsals are kept on this machine, beside the project's journal file.
            access = try location.access(
                JournalSetting(path: ProjectJournal.rehearsalPath(beside: location.setting(project).path))
            )
        }
        if case .file(let path) = access.kind, !FileManager.default.fileExists(atPath: path) {
            let nothing =
                rehearsal
                ? "nothing has been rehearsed in this project yet" : "nothing has been sent from this project yet"
            if forWriting {
                throw Failure("error: no journal at \(path): \(nothing)", exitCode: 1)
            }
            if !rehearsal && FileManager.default.fileExists(atPath: ProjectJournal.rehearsalPath(beside: path)) {
                printError("note: \(nothing); rehearsals are kept apart: add --rehearsal")
            }
            // A journal with nothing in it: its lists are empty, as they would be in a new one.
            return try await body(MemoryJournal(), access.name)
        }
        return try await JournalLocationOption.withJournal(access, readOnly: !forWriting) { journal in
            guard let journal else { throw ExitCode(1) }
            return try await body(journal, access.name)
        }
    }
}

struct Runs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the runs in the journal, newest first.",
        discussion: """
            Each `pushcamp send` of a campaign, and each schedule slot `pushcamp serve` fires (shown \
            with its slot), records a run: running (a process is sending it), \
            interrupted (stopped or killed; the next send of the campaign resumes it), finished, \
            cancelled, or superseded (given up for a new run with --new-run). --rehearsal lists \
            what `pushcamp rehearse` recorded, in its own journal.

            "sent" counts recipients with at least one request sent; "pending" those waiting to \
            retry or whose last request had no answer. "planned" is how many the run sends to, \
            counted ahead of the send in its first seconds (from the first second for a test, \
            which keeps its assignment before its first push); "-" until then. "done" is \
            answered of planned; the JSON adds the rate and the time left.

            Examples:
              pushcamp runs
              pushcamp runs --limit 5 --format json
            """
    )

    @OptionGroup var journalOption: JournalOption

    @Option(help: "How many runs to show.")
    var limit = 20

    @Option(help: "text or json.")
    var format: RunsFormat = .text

    enum RunsFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func run() async throws {
        let listing = try await journalOption.withJournal { journal, path in
            (try await RunListing.read(from: journal, limit: limit), path)
        }
        switch format {
        case .text:
            if journalOption.rehearsal {
                print("Rehearsals (against the local simulator; nothing reached APNs), from \(listing.1)")
            }
            print(listing.0.text(), terminator: "")
        case .json: print(listing.0.json())
        }
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop a run, from another terminal or machine sharing the journal.",
        discussion: """
            The process sending the run notices within half a second, stops taking new pushes, \
            waits for the answers to requests already sent, and records the run as cancelled. \
            This command waits for that and reports exactly how many recipients were sent to \
            before the cancel. A cancelled run is never resumed: sending the campaign again starts \
            a new run. A run no process is sending (interrupted, or killed) is cancelled at once.

            Exit status: 0 cancelled; 1 no such run, or it already ended; 6 the sending process \
            did not stop within --wait seconds.

            Examples:
              pushcamp cancel 12
            """
    )

    @OptionGroup var journalOption: JournalOption

    @Argument(help: ArgumentHelp("The run's number, as `pushcamp runs` shows it.", valueName: "run"))
    var number: Int64

    @Option(help: "Seconds to wait for the sending process to stop.")
    var wait: Double = 30

    func run() async throws {
        let outcome = try await journalOption.withJournal(forWriting: true) { journal, path in
            try await RunCancellation.cancel(RunID(number), in: journal, name: path, wait: wait)
        }
        print(outcome.text)
    }
}
