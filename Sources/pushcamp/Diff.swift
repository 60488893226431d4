import ArgumentParser
import Foundation
import PushcampAudience
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner

struct Diff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what changed in a campaign's plan since its last run, or since a plan file.",
        discussion: """
            Plans the campaign as it is now and compares it with what its last run planned (kept in \
            the journal with the run), or with --run N, or with a plan file (--plan FILE, made by \
            `plan --out`): where it sends, the topic, the audience funnel (read, invalid, filtered \
            out, suppressed, capped, held out, planned, refused), the split by variant, and the \
            sample pushes matched by device token — each header that changed and the payload before \
            and after. A plan file also names the campaign's files that changed since. Identity \
            headers (:path, apns-id) and apns-expiration differ on every send and are left out. A \
            campaign never sent has nothing to compare: diff says so and exits 0.

            Exit status: 0 (with --exit-code: 0 when nothing changed, 1 when something did); 1 when \
            the campaign or the plan file cannot be read.

            Examples:
              pushcamp diff campaigns/spring-sale.yaml
              pushcamp diff --plan plans/spring-sale.json campaigns/spring-sale.yaml
              pushcamp diff --exit-code campaigns/morning-digest.yaml   # in a script
            """
    )

    @Argument(help: "The campaign file.", completion: .campaignFiles)
    var file: String

    @Option(help: ArgumentHelp("Compare with this plan file instead of the last run.", valueName: "file"))
    var plan: String?

    @Option(name: .customLong("run"), help: ArgumentHelp("Compare with this run of the campaign.", valueName: "n"))
    var runNumber: Int64?

    @Flag(help: "Exit 1 when anything changed, like `git diff --exit-code`.")
    var exitCode = false

    @OptionGroup var projectOption: ProjectOption

    func validate() throws {
        if plan != nil && runNumber != nil { throw ValidationError("--plan and --run name two baselines; give one") }
    }

    func run() async throws {
        try projectOption.enter()
        let loaded = CampaignLoader.forCommands().load(file)
        for diagnostic in loaded.diagnostics { printError(diagnostic.description) }
        guard let campaign = loaded.campaign else { throw ExitCode(1) }
        if campaign.broadcast != nil {
            printError(
                "\(campaign.path): error: diff compares audiences and their pushes; a broadcast campaign is one request: `pushcamp plan \(file)` shows it, and `pushcamp report` what the last run sent"
            )
            throw ExitCode(1)
        }
        let access = try JournalLocationOption.access(campaign.journal)
        try await JournalLocationOption.withJournal(access, readOnly: true, refusing: nil) { journal in
            let baseline: PlanDiff.Baseline = plan.map { .planFile($0) } ?? .run(runNumber.map(RunID.init))
            guard let (before, changedFiles) = try await PlanDiff.before(campaign, baseline: baseline, journal: journal)
            else {
                print(
                    "\(campaign.id): never sent, so there is nothing to compare its plan with; "
                        + "`pushcamp plan \(file)` shows it, `diff --plan FILE` compares it with a plan file"
                )
                return
            }
            let summary = try await planOrExit(
                campaign,
                journal: journal,
                sendTime: nil,
                samples: max(3, before.samples?.count ?? 0)
            )
            let diff = PlanDiff(
                campaign: campaign.id,
                before: before,
                now: PlanDiff.side(summary),
                changedFiles: changedFiles
            )
            printDocument(diff.text())
            if exitCode && diff.hasDifferences { throw ExitCode(1) }
        }
    }
}
