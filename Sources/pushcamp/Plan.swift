import ArgumentParser
import Foundation
import PushcampAPNsCore
import PushcampAudience
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner
// Only for --fcm-dry-run: Google's dry run is a send (validate_only) over the campaign's FCM
// connections, the one thing plan takes from the send module; planning itself imports no send.
import PushcampSend

struct Plan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show exactly what a campaign would send, without sending anything.",
        discussion: """
            Streams the whole audience through the campaign: token checks, de-duplication, the \
            where: filter, exclusions, dead tokens (suppressed: tokens APNs called Unregistered, \
            ExpiredToken or BadDeviceToken for the topic, remembered in the journal), the \
            frequency cap (capped: recipients the journal shows delivered frequency_cap.max times \
            within frequency_cap.per, by any campaign), the App Store subscriptions of \
            audience.subscriptions (no subscription: rows joined to none in the selected states), \
            holdout and A/B buckets, locale fallback, rendering, and the \
            pre-flight checks APNs would otherwise fail (payload size, collapse id length, priority \
            and push-type rules, missing template variables). Prints counts, payload sizes, every \
            failure by reason with its first examples, rendered samples and the duration at the \
            campaign's throttle. The same files (and journal) give the same output, byte for byte.

            The plan starts with what the project's journal says of the campaign: never sent, \
            already sent by run N (which `send` refuses to repeat without --new-run), or run N \
            interrupted (which `send` resumes, picking up the recipients left). For a trigger \
            campaign it shows the rows a notification could reach and how many notifications of \
            the last 30 days would have fired it.

            --out FILE writes a plan file beside the output: the campaign id and revision, the \
            SHA-256 of every file the campaign is made of (campaign, templates, strings, audiences, \
            pushcamp.yaml), the counts and the time. Commit it with the campaign for review; \
            `pushcamp send --plan FILE` sends only while every one of those files still matches, \
            and otherwise refuses, naming what changed.

            A broadcast campaign (channel: NAME) plans its one request instead: the channel's id \
            from the journal, the headers and the payload rendered now, checked offline (event, \
            timestamp, content-state, size, expiration, priority); see docs/live-activities.md.

            Rows whose token is not one are counted as invalid and left out; --max-invalid N or P% \
            (or the campaign's audience.max_invalid) fails the plan when there are more, so a broken \
            audience export fails CI instead of sending to what is left of it. Only plan checks \
            the limit: send counts invalid rows in its report.

            --review plans as a pull request's CI can, without personal data (what `pushcamp \
            review` does for each campaign a change touches): against the campaign's \
            audience.sample (made-up recipients with the real columns) when it has one; an \
            audience or exclusion that cannot be read here (not committed, or an ${env:…} path \
            whose variable is not set) is marked as not read instead of failing; no journal; every \
            token masked as its first six characters and a hash; rendered copy only of the \
            sample's recipients, or of a masked recipient whose attributes are their column's \
            names (‹first_name›).

            Exit status: 0 when every push passes; 1 when the campaign, a template or the audience \
            is invalid or nobody would be sent anything; 3 when some pushes would be refused or \
            more rows than --max-invalid have an invalid token.

            Examples:
              pushcamp plan campaigns/spring-sale.yaml
              pushcamp plan --format markdown campaigns/spring-sale.yaml > plan.md
              pushcamp plan --at 2027-03-20T09:00:00Z campaigns/spring-sale.yaml
              pushcamp plan --samples 5 campaigns/spring-sale.yaml
              pushcamp plan --out plans/spring-sale.json campaigns/spring-sale.yaml
              pushcamp plan --fcm-dry-run 50 campaigns/app-update.yaml
              pushcamp plan --max-invalid 1% campaigns/spring-sale.yaml
              pushcamp plan --review --format markdown campaigns/spring-sale.yaml

            --fcm-dry-run N asks Google to check the first N Android messages of the plan: each \
            goes to FCM with validate_only, which runs every check a send gets (the access token, \
            the project, each field, the size, whether the registration token is known) and \
            delivers nothing. Answers are counted by reason as a send reports them; exit 3 when \
            Google would refuse a message for a reason other than a dead token, 2 when the app's \
            credentials do not work. See docs/android.md.
            """
    )

    @Argument(help: "The campaign file.", completion: .campaignFiles)
    var file: String

    @Option(help: "Output: text, json, or markdown (for pasting into a pull request).")
    var format: PlanFormat = .text

    @Option(help: "How many rendered pushes to show.")
    var samples: Int = 3

    @Option(
        help: ArgumentHelp(
            "The send time (ISO 8601 with a zone), to show absolute expirations.",
            discussion:
                "Defaults to the campaign's schedule.at; without either, expirations are shown relative to the send.",
            valueName: "time"
        )
    )
    var at: String?

    @Option(
        help: ArgumentHelp(
            "Also write a plan file: the campaign's revision, a digest of each of its files and the counts.",
            discussion: "`pushcamp send --plan FILE` then sends only while the campaign still matches it.",
            valueName: "file"
        )
    )
    var out: String?

    @Option(
        name: .customLong("fcm-dry-run"),
        help: ArgumentHelp(
            "Ask Google to check the first N Android messages (validate_only: nothing is delivered).",
            valueName: "n"
        )
    )
    var fcmDryRun: Int?

    @OptionGroup var invalidLimit: InvalidLimitOption

    @Flag(help: "Plan as a pull request's CI: audience.sample, nothing unread fails, tokens masked, no journal.")
    var review = false

    func validate() throws {
        if review && (out != nil || fcmDryRun != nil) {
            throw ValidationError("--review plans made-up or masked recipients: it takes no --out or --fcm-dry-run")
        }
        if samples < 0 { throw ValidationError("--samples must be 0 or more") }
        if let fcmDryRun, !(1...10_000).contains(fcmDryRun) {
            throw ValidationError("--fcm-dry-run must be 1 to 10000 messages")
        }
        if let at, case .failure(let error) = Timestamp.parse(at) { throw ValidationError("--at: \(error.message)") }
    }

    @OptionGroup var projectOption: ProjectOption

    func run() async throws {
        try projectOption.enter()
        let loaded = CampaignLoader.forCommands(reviewing: review).load(file)
        for diagnostic in loaded.diagnostics { printError(diagnostic.description) }
        guard let campaign = loaded.campaign else { throw ExitCode(1) }
        let sendTime = at.flatMap { try? Timestamp.parse($0).get() }
        if review, campaign.broadcast == nil { return try await planReviewed(campaign, sendTime: sendTime) }
        // Plans are made where the journal may not be reachable (a pull request's CI): without it,
        // the plan says so and leaves out what only the journal knows.
        let access = try JournalLocationOption.access(campaign.journal)
        var opened = false
        do {
            try await access.withJournal(readOnly: true) { journal in
                opened = true
                try await plan(campaign, journal: journal, sendTime: sendTime)
            }
        } catch let error as JournalError where !opened {
            guard access.isShared else {
                throw Failure("\(campaign.path): error: \(error.message)", exitCode: 1)
            }
            printError(
                "\(campaign.path): warning: the journal cannot be read (\(error.message)); planned without its dead "
                    + "tokens, frequency caps and what it says of the campaign"
            )
            try await plan(campaign, journal: nil, sendTime: sendTime)
        }
    }

    /// Plans `campaign` with what `journal` knows (nil: none, or not reachable) and prints it.
    func plan(_ campaign: LoadedCampaign, journal: (any Journal)?, sendTime: Timestamp?) async throws {
        if campaign.broadcast != nil {
            try await planBroadcast(campaign, journal: journal, sendTime: sendTime)
            return
        }
        let summary = try await planOrExit(campaign, journal: journal, sendTime: sendTime, samples: samples)
        var dryRun: FCMDryRun?
        if let fcmDryRun { dryRun = try await askGoogle(campaign, sample: fcmDryRun, sendTime: sendTime) }
        switch format {
        case .text: printDocument(summary.text() + (dryRun.map { "\n" + $0.text(source: summary.source) } ?? ""))
        case .json:
            var document = summary.json()
            if let dryRun, document.hasSuffix("}\n") {
                document = String(document.dropLast(2)) + #","fcm_dry_run":"# + dryRun.json() + "}\n"
            }
            print(document, terminator: "")
        case .markdown:
            print(
                summary.markdown() + (dryRun.map { "\n" + $0.markdown(source: summary.source) } ?? ""),
                terminator: ""
            )
        }
        if let failure = dryRun?.failure {
            throw Failure("\(campaign.path): error: Google's dry run stopped: \(failure)", exitCode: 2)
        }
        if let emptiness = summary.emptiness(of: campaign) { throw Failure(emptiness) }
        if let limit = invalidLimit.maxInvalid ?? campaign.maxInvalid, let beyond = summary.invalidBeyond(limit) {
            throw Failure(beyond, exitCode: 3)
        }
        if let out {
            try PlanFile(summary, of: campaign, now: commandClock.now()).write(to: out)
            printError(
                "plan written to \(out): `pushcamp send --plan \(out) \(file)` sends it while the campaign matches"
            )
        }
        if summary.failed > 0 || dryRun?.refusesMessages == true { throw ExitCode(3) }
    }

    /// `--review`: the plan a pull request's CI shows.
    func planReviewed(_ campaign: LoadedCampaign, sendTime: Timestamp?) async throws {
        let summary: PlanSummary
        do {
            summary = try await PlanSummary.reviewed(
                campaign,
                sendTime: sendTime,
                samples: samples,
                clock: commandClock
            )
        } catch let error as AudienceError {
            throw Failure(error.diagnostic.description, exitCode: 1)
        }
        switch format {
        case .text: printDocument(summary.text())
        case .json: print(summary.json(), terminator: "")
        case .markdown: print(summary.markdown(), terminator: "")
        }
        switch summary.verdict(of: campaign, file: file, maxInvalid: invalidLimit.maxInvalid) {
        case .passes: break
        case .invalid(let why): throw Failure(why, exitCode: 1)
        case .refused(let why): throw Failure(why, exitCode: 3)
        }
    }

    /// Google's dry run of the first `sample` Android messages (`--fcm-dry-run`).
    func askGoogle(_ campaign: LoadedCampaign, sample: Int, sendTime: Timestamp?) async throws -> FCMDryRun {
        guard let paths = ProjectPaths.locate(campaignFile: file) else { throw ExitCode(1) }
        do throws(RunRefusal) {
            return try await FCMDryRun.run(
                campaign,
                sample: sample,
                sendTime: sendTime ?? Timestamp(secondsSince1970: Int64(commandClock.now())),
                paths: paths,
                environment: ProcessInfo.processInfo.environment
            )
        } catch {
            throw Failure("\(campaign.path): error: \(error.message)", exitCode: 2)
        }
    }
}

/// `--max-invalid`, of `plan` and `review`.
struct InvalidLimitOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Fail (exit 3) when more audience rows than this have an invalid token: a count (0, 25) or a share of the rows read (2%); overrides the campaign's audience.max_invalid.",
            valueName: "n|p%"
        ),
        transform: { text in
            switch InvalidLimit.parse(text) {
            case .success(let limit): return limit
            case .failure(let error): throw ValidationError("--max-invalid: \(error.message)")
            }
        }
    )
    var maxInvalid: InvalidLimit?
}

/// The campaign planned as `plan` and `diff` show it (`--at` as the send time's source); a problem
/// with the audience is printed where it is, and exits 1.
extension Plan {
    /// A broadcast campaign's plan: its one request, checked offline.
    func planBroadcast(_ campaign: LoadedCampaign, journal: (any Journal)?, sendTime: Timestamp?) async throws {
        let now = sendTime.map { Double($0.secondsSince1970) } ?? commandClock.now()
        let (message, diagnostics): (BroadcastMessage?, [Diagnostic])
        do {
            (message, diagnostics) = try await BroadcastMessage.planned(
                campaign,
                journal: journal ?? MemoryJournal(),
                now: now
            )
        } catch {
            throw Failure("\(campaign.path): error: the journal: \(error.message)", exitCode: 1)
        }
        for diagnostic in diagnostics { printError(diagnostic.description) }
        guard let message else { throw ExitCode(1) }
        switch format {
        case .text: printDocument(message.text())
        case .json: print(message.json(), terminator: "")
        case .markdown: print(message.markdown(), terminator: "")
        }
        if diagnostics.hasErrors { throw ExitCode(1) }
    }
}

func planOrExit(
    _ campaign: LoadedCampaign,
    journal: (any Journal)?,
    sendTime: Timestamp?,
    samples: Int
) async throws -> PlanSummary {
    do {
        return try await PlanSummary.planned(
            campaign,
            journal: journal,
            sendTime: sendTime,
            sendTimeSource: "--at",
            samples: samples
        )
    } catch let error as AudienceError {
        throw Failure(error.diagnostic.description, exitCode: 1)
    } catch {
        throw Failure("\(campaign.path): error: \(error)", exitCode: 1)
    }
}

enum PlanFormat: String, CaseIterable, ExpressibleByArgument {
    case text
    case json
    case markdown
}
