import ArgumentParser
import Foundation
import PushcampAPNsCore
import PushcampAudience
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner
import PushcampReport
import PushcampSend
import ServiceLifecycle

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
            and stops. On a terminal a progress line shows answered of the run's total \
            ("21340/50000", the plan counted ahead of the send in its first seconds; "/1200+" \
            until then), delivered, failed, retries waiting and the time left.

            A campaign naming an Android app (app: [shop-ios, shop-android], or the Android app \
            alone) sends its Android recipients to FCM HTTP v1 over connections of their own, \
            under the same throttle and the app's quota, with an access token from the service \
            account renewed before it expires; FCM's answers are reported as fcm/REASON, and dead \
            registration tokens are passed over next time as APNs' are (docs/android.md). \
            Connections go through an HTTP proxy when pushcamp.yaml's proxy: or HTTPS_PROXY names \
            one.

            Every recipient's state is kept in the project's journal (.pushcamp/journal.sqlite, or \
            journal.path in pushcamp.yaml). Sending a campaign whose last run did not finish \
            resumes that run: delivered and failed recipients are skipped, retries keep their due \
            time, and requests that were in flight when it stopped are sent once more and counted \
            as possible duplicates (the default apns-collapse-id, the campaign id, makes such a \
            second push replace the first on the device). A campaign edited since its run started \
            is refused unless --new-run is given. `pushcamp runs` lists runs, `pushcamp cancel RUN` \
            stops one from another terminal.

            A broadcast campaign (channel: NAME) sends one request to the channel's devices, \
            recorded in flight before it goes: a run stopped with it in flight is not sent again \
            when resumed (APNs may have it); it ends unknown-not-resent. Exit status 0 when APNs \
            took it, 4 when it refused it (see docs/live-activities.md).

            Sends are deliberate: a campaign whose last run finished or was cancelled is not sent \
            again (whatever its revision: an edited campaign would reach the same people again); \
            the refusal names the run and what it delivered. --new-run sends it again on purpose. \
            A campaign `pushcamp serve` is due to send (schedule.at in the future, or a recurring \
            cron or every schedule) is refused unless --now is given; the refusal says the next \
            slot. Expirations always count from the real send time. Quiet hours apply to every \
            send: pushes that would land in them wait for their end (or are dropped).

            A new connection ramps up from the server's first stream limit, doubling per round of \
            answers; requests lost with a dropped connection are sent again on a budget of their \
            own (the pool slows down instead of failing them). An endpoint that answers nothing \
            for --stall-timeout seconds while requests are pending (no streams allowed, no HTTP/2 \
            SETTINGS, no answers) stops the send with exit status 2, naming what it did. \
            TooManyProviderTokenUpdates stops the run at once: no new token is minted, and for \
            20 minutes no process on the journal mints one (a send without a token young \
            enough waits, refused with exit status 2).

            Tokens APNs answers Unregistered, ExpiredToken or BadDeviceToken are remembered for the \
            topic, and later campaigns pass over them (counted as suppressed) unless the audience's \
            registered_at attribute (audience.registered_at names another) is newer. `pushcamp tokens \
            invalid` exports them. A campaign with a frequency_cap holds back recipients the \
            journal shows delivered frequency_cap.max times within frequency_cap.per (counted as \
            capped).

            A send to APNs production (an app with environment: production and no endpoint) \
            shows the plan's summary and asks for `yes` first; --yes skips the question, and so \
            does --plan FILE, which sends only while the campaign's files are byte for byte the \
            ones `pushcamp plan --out FILE` planned (otherwise it refuses, naming what changed). \
            Without a terminal, a production send needs one of the two.

            Try a campaign with `pushcamp rehearse` first: the same send against a local simulator.

            Exit status: 0 every push delivered; 1 invalid campaign or audience, a journal that \
            cannot be used, a campaign already sent or scheduled later, a plan file that no longer \
            matches, a production send not confirmed; 2 credentials missing, \
            refused or held, no connection, or a stalled endpoint; 4 some pushes failed or were not \
            sent; 5 the campaign is being sent by another process; 130 interrupted or cancelled.

            Examples:
              pushcamp send campaigns/spring-sale.yaml
              pushcamp send --quiet campaigns/order-tracking.yaml 2> send.log
              pushcamp plan --out plans/sale.json campaigns/spring-sale.yaml  # review it
              pushcamp send --plan plans/sale.json campaigns/spring-sale.yaml
            """
    )

    @Argument(help: "The campaign file.", completion: .campaignFiles)
    var file: String

    @Flag(name: .shortAndLong, help: "No progress line, only the report.")
    var quiet = false

    @Flag(
        help: """
            Start a new run although the campaign was already sent, or has an unfinished run (which \
            is then given up). Recipients earlier runs reached may get the notification again.
            """
    )
    var newRun = false

    @Flag(
        help: """
            On a PostgreSQL journal with journal.slice: plan the run into the journal, cut into \
            slices, and leave it to the `pushcamp serve` nodes on that journal instead of sending \
            from here (`pushcamp runs` shows how it goes); the nodes start on each slice as soon as \
            it is planned. Without it, this process sends slices too, while it plans the rest. \
            Campaigns with an Android app are sent whole, by one process, under their project's FCM quota.
            """
    )
    var detach = false

    @OptionGroup var journalLocation: JournalLocationOption

    @Flag(
        help: """
            Send once now although `pushcamp serve` is due to send the campaign (schedule.at in the \
            future, a recurring schedule, or a trigger: then to every row joined to a subscription); \
            expirations count from the real send time.
            """
    )
    var now = false

    @Option(
        help: ArgumentHelp(
            """
            A plan file from `pushcamp plan --out`: send only while the campaign, its templates, its \
            audience and pushcamp.yaml are byte for byte the ones planned (and without asking).
            """,
            valueName: "file"
        )
    )
    var plan: String?

    @OptionGroup var confirm: ConfirmOption

    @OptionGroup var stall: StallOption

    @OptionGroup var format: SendFormatOption

    @OptionGroup var projectOption: ProjectOption

    func run() async throws {
        try projectOption.enter()
        let (campaign, paths) = try loadCampaign(file)
        let planFile = try plan.map { (try PlanFile.read(from: $0), $0) }
        let access = try journalLocation.access(campaign.journal)
        let sliced = access.isShared && journalLocation.setting(campaign.journal).slice != nil
        if detach, let problem = SendRun.detachProblem(campaign, sliced: sliced) {
            throw Failure("\(campaign.path): error: \(problem)")
        }
        if campaign.broadcast != nil {
            try await sendBroadcast(campaign, paths: paths, access: access)
            return
        }
        // Everything that can refuse without the journal is asked first: a send refused or not
        // confirmed leaves no journal behind where there was none.
        try await confirmDeliberate(
            campaign,
            paths: paths,
            kind: .send,
            ignoreSchedule: now,
            planFile: planFile != nil,
            confirm: confirm,
            preview: { try await Self.preview(campaign, access: access) }
        )
        try await JournalLocationOption.withJournal(access, readOnly: false, refusing: campaign) { opened in
            var options = try options(access, opened: opened, campaign: campaign)
            options.stallTimeout = stall.stallTimeout
            options.plan = planFile
            options.detach = detach
            try await sendToApp(
                campaign,
                paths: paths,
                options: options,
                quiet: quiet,
                format: format,
                announce: { $0.note }
            )
        }
    }

    /// The send's options in the journal `opened` (nil: it could not be, and was said).
    func options(_ access: JournalAccess, opened: (any Journal)?, campaign: LoadedCampaign) throws -> SendRun.Options {
        guard let journal = opened else { throw ExitCode(1) }
        var options = SendRun.Options(access, journal: journal, setting: journalLocation.setting(campaign.journal))
        options.newRun = newRun
        options.ignoreSchedule = now
        return options
    }

    /// The plan's summary (a broadcast's message), as the question before a production send shows it.
    static func preview(_ campaign: LoadedCampaign, access: JournalAccess) async throws -> String {
        try await JournalLocationOption.withJournal(access, readOnly: true) { journal in
            guard campaign.broadcast == nil else {
                let now = commandClock.now()
                let (message, _) = try await BroadcastMessage.planned(
                    campaign,
                    journal: journal ?? MemoryJournal(),
                    now: now
                )
                return message?.text() ?? ""
            }
            return try await PlanSummary.planned(
                campaign,
                journal: journal,
                sendTime: Timestamp(secondsSince1970: Int64(commandClock.now())),
                sendTimeSource: "now",
                samples: 0
            ).brief()
        }
    }
}

extension Send {
    /// A broadcast campaign: its one request, once, journaled; the run's report after it.
    func sendBroadcast(_ campaign: LoadedCampaign, paths: ProjectPaths, access: JournalAccess) async throws {
        try await confirmDeliberate(
            campaign,
            paths: paths,
            kind: .send,
            ignoreSchedule: now,
            planFile: false,
            confirm: confirm,
            preview: { try await Self.preview(campaign, access: access) }
        )
        try await JournalLocationOption.withJournal(access, readOnly: false, refusing: campaign) { opened in
            let options = try options(access, opened: opened, campaign: campaign)
            let outcome: BroadcastRun.Outcome
            do throws(RunRefusal) {
                outcome = try await BroadcastRun.send(
                    campaign,
                    options: options,
                    paths: paths,
                    variables: ProcessInfo.processInfo.environment
                )
            } catch {
                throw Failure(error, of: campaign)
            }
            if let note = outcome.note { printError("note: \(note)") }
            switch format.format {
            case .json: try await format.printJSON(outcome.run, journal: options.journal, rehearsal: false)
            case .text: print(outcome.line(campaign: campaign.id))
            }
            if let stopped = outcome.stopped {
                throw Failure("\(campaign.path): error: \(stopped); `pushcamp send` resumes run \(outcome.run)")
            }
            if !outcome.delivered { throw ExitCode(4) }
        }
    }
}

/// `--yes`, for every command that may send to APNs production.
struct ConfirmOption: ParsableArguments {
    @Flag(
        help: """
            Send to APNs production without asking first (required without a terminal, unless \
            --plan is given).
            """
    )
    var yes = false

    /// Asks on the terminal before a send to APNs production (`preview` says what would be sent),
    /// or refuses one without a terminal; throws `ExitCode(1)` when the send must not go ahead.
    func check(_ campaign: LoadedCampaign, planFile: Bool, preview: () async throws -> String) async throws {
        let interactive = isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1
        switch SendRun.confirmation(for: campaign, yes: yes, planFile: planFile, interactive: interactive) {
        case .notNeeded:
            return
        case .refuse(let message):
            throw Failure("\(campaign.path): error: \(message)", exitCode: 1)
        case .ask:
            let summary: String
            do {
                summary = try await preview()
            } catch let error as AudienceError {
                throw Failure(error.diagnostic.description, exitCode: 1)
            }
            printError(SendRun.confirmationQuestion(for: campaign, summary: summary))
            FileHandle.standardError.write(Data("Type yes to send: ".utf8))
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "yes" else {
                throw Failure("not confirmed: nothing was sent", exitCode: 1)
            }
        }
    }
}

/// Refuses a send `serve` is due to make (unless `ignoreSchedule`) or one whose credentials cannot
/// be used (exit 2), then asks before a send to APNs production (see `ConfirmOption`): what `send`
/// and `replay` check before they send.
func confirmDeliberate(
    _ campaign: LoadedCampaign,
    paths: ProjectPaths,
    kind: SendRun.Kind,
    ignoreSchedule: Bool,
    planFile: Bool,
    confirm: ConfirmOption,
    preview: () async throws -> String
) async throws {
    do {
        try SendRun.refuseUndeliberate(
            campaign,
            kind: kind,
            ignoreSchedule: ignoreSchedule,
            now: commandClock.now()
        )
    } catch {
        throw Failure(error, of: campaign)
    }
    // Credentials that cannot be used are refused before anything is asked: a `yes` typed for a
    // send that then stops on a missing key is a question asked for nothing.
    if let problem = SendRun.credentialsProblem(
        of: campaign,
        paths: paths,
        environment: ProcessInfo.processInfo.environment
    ) {
        // Blamed on pushcamp.yaml's line when a setting there is at fault, not on the campaign.
        throw Failure(
            "\(problem.location?.description ?? campaign.path): error: \(problem.message); nothing was sent",
            exitCode: 2
        )
    }
    try await confirm.check(campaign, planFile: planFile, preview: preview)
}

/// Prepares a run to the app's endpoint, says `announce` of it, sends it with the progress line,
/// prints the report and exits with its status: what `send` and `replay` share.
func sendToApp(
    _ campaign: LoadedCampaign,
    paths: ProjectPaths,
    options: SendRun.Options,
    quiet: Bool,
    format: SendFormatOption,
    announce: (SendRun) -> String?
) async throws {
    let printer = ProgressPrinter()
    let send: SendRun
    do {
        send = try await SendRun.prepare(
            campaign,
            options: options,
            transport: .app(paths: paths, environment: ProcessInfo.processInfo.environment),
            progress: printer.callback(enabled: !quiet)
        )
    } catch {
        throw Failure(error, of: campaign)
    }
    if let line = announce(send) { printError(line) }
    if options.detach {
        print(await send.detachedLine(journal: options.journal))
        return
    }
    let report = try await runServices([send], until: send, printer: printer)
    try await format.print(report, journal: options.journal)
    if report.exitCode != 0 { throw ExitCode(report.exitCode) }
}

/// `--format text|json`, for the commands that send: json prints the run's report as
/// `pushcamp report --format json` does (docs/report-json.md), read back from the journal.
struct SendFormatOption: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(
        help: ArgumentHelp(
            "text (the send report), or json: the run's report as `pushcamp report --format json` prints it (docs/report-json.md)."
        )
    )
    var format: Format = .text

    /// Prints the finished send: its text report, or the run's JSON report read back from `journal`.
    func print(_ report: SendReport, journal: any Journal, rehearsal: Bool = false, textExtra: String = "") async throws
    {
        guard format == .json else {
            Swift.print(report.text() + textExtra, terminator: "")
            return
        }
        guard let run = report.run else {
            throw Failure(
                "error: --format json reads the run back from the journal, and this send recorded none",
                exitCode: 1
            )
        }
        try await printJSON(RunID(run), journal: journal, rehearsal: rehearsal)
    }

    /// Prints run `run`'s JSON report, read back from `journal`.
    func printJSON(_ run: RunID, journal: any Journal, rehearsal: Bool) async throws {
        Swift.print(try await RunReport.shown(run, from: journal, rehearsal: rehearsal).json(), terminator: "")
    }
}

/// `--stall-timeout`, for every command that sends.
struct StallOption: ParsableArguments {
    @Option(
        name: .customLong("stall-timeout"),
        help: ArgumentHelp(
            """
            Seconds the endpoint may answer nothing while requests are pending (no streams allowed, \
            no HTTP/2 SETTINGS, no answers) before the send stops with exit status 2.
            """,
            valueName: "seconds"
        )
    )
    var stallTimeout: Double = 60

    func validate() throws {
        guard stallTimeout.isFinite, stallTimeout >= 1, stallTimeout <= 86_400 else {
            throw ValidationError("--stall-timeout takes 1 to 86400 seconds")
        }
    }
}

/// Runs `services` until `send` ends (or a signal drains it), with the progress line, and returns
/// its report.
func runServices(_ services: [any Service], until send: SendRun, printer: ProgressPrinter) async throws -> SendReport {
    let report = try await send.runInGroup(with: services)
    printer.finish()
    guard let report else { throw Failure("error: the send ended without a report", exitCode: 1) }
    if report.stop == .interrupted {
        printError("interrupted: in-flight requests were drained; send the campaign again to resume")
    }
    return report
}

/// Loads and checks a campaign, printing diagnostics; exits 1 when it is invalid.
func loadCampaign(_ file: String) throws -> (LoadedCampaign, ProjectPaths) {
    let loaded = CampaignLoader.forCommands().load(file)
    for diagnostic in loaded.diagnostics { printError(diagnostic.description) }
    guard let campaign = loaded.campaign, let paths = ProjectPaths.locate(campaignFile: file) else { throw ExitCode(1) }
    return (campaign, paths)
}

extension CampaignLoader {
    /// How the commands load campaigns: from the working directory, audiences on PostgreSQL
    /// included.
    static func forCommands(reviewing: Bool = false) -> CampaignLoader {
        CampaignLoader(reviewing: reviewing, servers: JournalAccess.audienceServers)
    }
}

extension ProjectPaths {
    /// The project around campaign `file` (a path as typed, from the working directory).
    static func locate(campaignFile file: String) -> ProjectPaths? {
        let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let url = URL(fileURLWithPath: file, relativeTo: workingDirectory).standardizedFileURL
        return ProjectPaths.locate(campaign: url, workingDirectory: workingDirectory)
    }
}

extension SendRun.Options {
    /// The options of a send recording into `opened` (reached through `access`), as the project's
    /// `journal` setting says: its lease, and where provider tokens are cached (beside the
    /// journal file; not for a journal in memory).
    init(_ access: JournalAccess, journal: any Journal, setting: JournalSetting) {
        self.init(journal: journal)
        let (cache, lease, slicing) = setting.sending(through: access)
        if access.kind != .memory { tokenCache = cache }
        if let lease { leaseDuration = lease }
        self.slicing = slicing
    }
}

extension JournalSetting {
    /// What a send takes from the journal setting, reached through `access`: where provider tokens
    /// are cached (beside the journal file), the lease, and slices: several machines share a
    /// PostgreSQL journal, and with journal.slice a run is cut into slices every node sends.
    func sending(through access: JournalAccess) -> (tokenCache: String, lease: Double?, slicing: Slicing?) {
        let slicing: Slicing? =
            if case .postgres = access.kind, let seconds = slice { Slicing(seconds: seconds) } else { nil }
        return ((path as NSString).deletingLastPathComponent, lease, slicing)
    }
}
