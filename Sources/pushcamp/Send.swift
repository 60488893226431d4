import ArgumentParser
import Foundation
import PushcampAPNs
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a campaign to APNs.",
        discussion: """
            Plans the campaign (as `pushcamp plan` shows it) and sends each push over the app's \
            connections from pushcamp.yaml: Apple's host for its environment, or its endpoint with \
            its ca_file (a simulator, a test server). The campaign's throttle sets the rate and the \
            number of connections; each connection keeps no more streams open than the server \
            allows. Failed pushes are retried as Apple advises and as the campaign's retry: says; \
            refused credentials stop the run after a few requests. Ctrl-C drains in-flight requests \
            and stops.

            Every recipient's state is kept in the project's journal (.pushcamp/journal.sqlite, or \
            journal.path in pushcamp.yaml). Sending a campaign whose last run did not finish \
            resumes that run: delivered and failed recipients are skipped, retries keep their due \
            time, and requests that were in flight when it stopped are sent once more and counted \
            as possible duplicates (the default apns-collapse-id, the campaign id, makes such a \
            second push replace the first on the device). A campaign edited since its run started \
            is refused unless --new-run is given. `pushcamp runs` lists runs, `pushcamp cancel RUN` \
            stops one from another terminal.

            Tokens APNs answers Unregistered, ExpiredToken or BadDeviceToken are remembered for the \
            topic, and later campaigns pass over them (counted as suppressed) unless the audience's \
            registered_at attribute (audience.registered_at names another) is newer. `pushcamp tokens \
            invalid` exports them. A campaign with a frequency_cap holds back recipients the \
            journal shows delivered frequency_cap.max times within frequency_cap.per (counted as \
            capped).

            Try a campaign with `pushcamp rehearse` first: the same send against a local simulator.

            Exit status: 0 every push delivered; 1 invalid campaign or audience, or a journal that \
            cannot be used; 2 credentials refused or no connection; 4 some pushes failed or were not \
            sent; 5 the campaign is being sent by another process; 130 interrupted or cancelled.

            Examples:
              pushcamp send campaigns/spring-sale.yaml
              pushcamp send --quiet campaigns/order-tracking.yaml 2> send.log
            """
    )

    @Argument(help: "The campaign file.")
    var file: String

    @Flag(help: "No progress line, only the report.")
    var quiet = false

    @Flag(
        help: """
            Start a new run even though the campaign has an unfinished one (which is then given up). \
            Recipients the old run reached may get the notification again.
            """
    )
    var newRun = false

    @Option(
        help: ArgumentHelp(
            """
            The journal file (default: journal.path in pushcamp.yaml, else .pushcamp/journal.sqlite beside             it). `:memory:` keeps it in memory: no resume, no dead-token or frequency-cap memory; for             experiments and benchmarks.
            """,
            valueName: "file"
        )
    )
    var journal: String?

    func run() async throws {
        let (campaign, paths) = try loadCampaign(file)
        // The journal first: a journal that cannot be used stops the send before anything is sent.
        let opened: OpenedRun
        do {
            opened = try OpenedRun.open(campaign, journalPath: journal ?? campaign.journalPath, newRun: newRun)
        } catch let error as RunRefusal {
            printError("\(campaign.path): error: \(error.message)")
            throw ExitCode(error.exitCode)
        }
        if let note = opened.note { printError(note) }
        let history: DeliveryHistory
        do {
            history = try DeliveryHistory.read(for: campaign, from: opened.journal.store)
        } catch {
            printError("\(campaign.path): error: \(error); nothing was sent")
            throw ExitCode(1)
        }
        try await sendRun(campaign, paths: paths, opened: opened, history: history, quiet: quiet)
    }
}

/// Sends `opened` (a new, resumed or replay run): connects, runs the executor with progress and
/// Ctrl-C handling, prints the report and exits with its status.
func sendRun(
    _ campaign: LoadedCampaign,
    paths: ProjectPaths,
    opened: OpenedRun,
    history: DeliveryHistory?,
    only: SeqSet? = nil,
    quiet: Bool
) async throws {
    let transport: APNsConnectionPool
    let endpoint: String
    do {
        (transport, endpoint) = try SendPipeline.transport(for: campaign, paths: paths)
    } catch {
        printError("\(campaign.path): error: \(error.message)")
        throw ExitCode(2)
    }
    let executor = SendPipeline.executor(
        campaign: campaign,
        transport: transport,
        endpoint: endpoint,
        journal: opened.journal,
        resume: opened.resume,
        history: history,
        only: only
    )
    let printer = ProgressPrinter()
    let signals = StopSignals { executor.stop() }
    let progress = printer.callback(enabled: !quiet)
    let report = await executor.run(progress: progress)
    withExtendedLifetime((signals, opened.lock)) {}
    printer.finish()
    print(report.text(), terminator: "")
    if report.exitCode != 0 { throw ExitCode(report.exitCode) }
}

/// Loads and checks a campaign, printing diagnostics; exits 1 when it is invalid.
func loadCampaign(_ file: String) throws -> (LoadedCampaign, ProjectPaths) {
    let loaded = CampaignLoader().load(file)
    for diagnostic in loaded.diagnostics { printError(diagnostic.description) }
    let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    let url = URL(fileURLWithPath: file, relativeTo: workingDirectory).standardizedFileURL
    guard let campaign = loaded.campaign,
        let paths = ProjectPaths.locate(campaign: url, workingDirectory: workingDirectory)
    else { throw ExitCode(1) }
    return (campaign, paths)
}

/// Why a send does not start: the journal cannot be used, the campaign changed under an unfinished
/// run, or another process is sending it.
struct RunRefusal: Error {
    var message: String
    var exitCode: Int32
}

/// The run a send records into: the campaign's unfinished run (resumed) or a new one, with the lock
/// that keeps a second process from sending the same campaign.
struct OpenedRun {
    var journal: RunJournal
    var resume: ResumePoint
    /// Nil for an in-memory journal, which no other process can see.
    var lock: RunLock?
    /// What to tell the user before sending (resuming, giving up an old run).
    var note: String?

    /// The journal path that means "in memory, gone when the process ends".
    static let inMemory = ":memory:"

    /// Throws `RunRefusal` only.
    static func open(_ campaign: LoadedCampaign, journalPath path: String, newRun: Bool) throws -> OpenedRun {
        if path == inMemory {
            let store = MemoryJournal()
            let run = try store.createRun(
                campaign: campaign.id,
                revision: campaign.revision,
                now: Date().timeIntervalSince1970
            )
            return OpenedRun(journal: RunJournal(store: store, run: run), resume: ResumePoint(), lock: nil, note: nil)
        }
        do {
            let store = try SQLiteJournal(path: path)
            let lock = try lock(journalPath: path, campaign: campaign.id)
            let now = Date().timeIntervalSince1970
            var note: String?
            if let unfinished = try store.unfinishedRun(campaign: campaign.id) {
                if unfinished.revision == campaign.revision && !newRun {
                    return try resuming(
                        unfinished,
                        in: store,
                        lock: lock,
                        named: "run \(unfinished.id) of \(campaign.id)"
                    )
                }
                guard newRun else {
                    throw RunRefusal(
                        message: """
                            campaign \(campaign.id) has an unfinished run \(unfinished.id) (started \
                            \(Timestamps.text(unfinished.startedAt))) from revision \(unfinished.revision), but \
                            the campaign file, its templates or its audience changed since (revision now \
                            \(campaign.revision)); resuming would send a different plan. Restore the files to \
                            finish run \(unfinished.id), or start over with `pushcamp send --new-run` (recipients \
                            run \(unfinished.id) reached may get it again)
                            """,
                        exitCode: 1
                    )
                }
                try store.setStatus(.superseded, of: unfinished.id, now: now)
                note = "run \(unfinished.id) of \(campaign.id) given up for a new run (--new-run)"
            }
            let run = try store.createRun(
                campaign: campaign.id,
                revision: campaign.revision,
                now: now,
                file: URL(fileURLWithPath: campaign.path).standardizedFileURL.path,
                replay: nil
            )
            return OpenedRun(journal: RunJournal(store: store, run: run), resume: ResumePoint(), lock: lock, note: note)
        } catch let error as JournalError {
            throw RunRefusal(message: error.message + "; nothing was sent", exitCode: 1)
        } catch let refusal as RunRefusal {
            throw refusal
        } catch {
            throw RunRefusal(message: "the journal \(path) cannot be read: \(error); nothing was sent", exitCode: 1)
        }
    }
}

extension OpenedRun {
    /// The campaign's run lock; refused (exit 5) while another process sends it.
    static func lock(journalPath: String, campaign: String) throws -> RunLock {
        guard let lock = try RunLock(journalPath: journalPath, campaign: campaign) else {
            throw RunRefusal(
                message: "campaign \(campaign) is being sent by another pushcamp process; "
                    + "wait for it, or stop it with `pushcamp cancel`",
                exitCode: 5
            )
        }
        return lock
    }

    /// Picks up the unfinished `run`, saying so in the note (`name` is how it calls the run).
    static func resuming(
        _ run: RunRecord,
        in store: SQLiteJournal,
        lock: RunLock,
        named name: String
    ) throws -> OpenedRun {
        let resume = try ResumePoint(journal: store, run: run.id)
        try store.setStatus(.running, of: run.id, now: Date().timeIntervalSince1970)
        let duplicates = resume.possibleDuplicates
        let note =
            "resuming \(name): \(resume.delivered) delivered and \(resume.failed) failed before, "
            + "\(resume.pending.count) to pick up"
            + (duplicates > 0 ? " (\(duplicates) were in flight: sent again, possible duplicates)" : "")
        return OpenedRun(
            journal: RunJournal(store: store, run: run, resume: resume),
            resume: resume,
            lock: lock,
            note: note
        )
    }
}
