import ArgumentParser
import Foundation
import PushcampModel
import PushcampPlanner

struct Review: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Plan what a pull request changes, for its CI: no real audience needed, nothing personal shown.",
        discussion: """
            Loads every campaign `serve` watches (the folders of serve.campaigns, default \
            campaigns/) and plans those the change touches: its campaign file, a template, strings \
            file or audience it reads, or pushcamp.yaml. --changed FILE names the change's files, \
            one per line, as `git diff --name-only` prints them (relative to the current folder); \
            without it every campaign is planned.

            A review plans as `plan --review` does: a campaign with audience.sample is planned \
            against its sample (made-up recipients with the real columns, committed to git) \
            instead of its audience; an audience or exclusion that cannot be read here (not \
            committed, or named by an ${env:…} not set in CI) is marked as not read instead of \
            failing. Every token is masked (its first six characters and a hash), and rendered copy \
            is shown only for the sample's made-up recipients or for a masked recipient whose every \
            attribute is its column's name (‹first_name›). No journal is read.

            --comment FILE writes a pull request comment under GitHub's limit of 65,536 characters: \
            a table of every campaign planned, then whole plans, failing ones first, as many as fit; \
            --full FILE writes every plan (upload it as the job's artifact). The comment is empty \
            when the change touches no campaign and every campaign is valid. Without either, the \
            full review is printed.

            Exit status: 1 when a campaign of the watched folders is invalid (whether or not the \
            change touches it) or a planned one would send nobody anything; 3 when a planned \
            campaign has pushes APNs or FCM would refuse, or more invalid tokens than its \
            audience.max_invalid (or --max-invalid) allows; else 0.

            In GitHub Actions, `git diff --name-only HEAD^1 HEAD > changed.txt` lists what a pull \
            request changes (the checkout is its merge commit; fetch-depth: 2). docs/ci.md has \
            the workflow.

            Examples:
              pushcamp review --changed changed.txt --comment comment.md --full plan.md
              pushcamp review                # every campaign, printed
            """
    )

    @Option(
        help: ArgumentHelp(
            "The change's files, one per line (`git diff --name-only`); - reads them from standard input.",
            valueName: "file"
        )
    )
    var changed: String?

    @Option(help: ArgumentHelp("Write the pull request's comment here.", valueName: "file"))
    var comment: String?

    @Option(help: ArgumentHelp("Write every plan in full here (the job's artifact).", valueName: "file"))
    var full: String?

    @Option(help: "The comment's limit in characters (GitHub's: 65536).")
    var commentLimit: Int = PlanReview.commentLimit

    @Option(help: "How many pushes to render for each campaign (of made-up or masked recipients).")
    var samples: Int = 1

    @OptionGroup var invalidLimit: InvalidLimitOption

    @OptionGroup var projectOption: ProjectOption

    func validate() throws {
        if samples < 0 { throw ValidationError("--samples must be 0 or more") }
        if commentLimit < 1_000 { throw ValidationError("--comment-limit must be at least 1000 characters") }
    }

    func run() async throws {
        try projectOption.enter()
        let (project, paths) = try projectOption.load()
        let loader = CampaignLoader.forCommands(reviewing: true)
        let review = await PlanReview.make(
            paths: paths,
            folders: project.serve.campaignFolders,
            changed: try changed.map { try Self.changedFiles($0, in: loader.workingDirectory) },
            loader: loader,
            samples: samples,
            maxInvalid: invalidLimit.maxInvalid,
            clock: commandClock
        )
        if let full { try Self.write(review.full(), to: full) }
        if let comment {
            let artifact = full.map { "the full plan (\(($0 as NSString).lastPathComponent), the job's artifact)" }
            // Nothing to say on a change that touches no campaign: the workflow posts no comment.
            let text =
                review.touchesNothing
                ? "" : review.comment(limit: commentLimit, artifact: artifact ?? "the full review")
            try Self.write(text, to: comment)
        }
        if full == nil && comment == nil { print(review.full(), terminator: "") }
        printError(review.line)
        if review.exitCode != 0 { throw ExitCode(review.exitCode) }
    }

    /// The files a change names, absolute: `git diff --name-only`'s lines, relative to `directory`.
    static func changedFiles(_ list: String, in directory: URL) throws -> Set<String> {
        let text: String
        do {
            if list == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                text = try String(contentsOfFile: list, encoding: .utf8)
            }
        } catch {
            throw Failure("error: --changed \(list.escapingControlCharacters): cannot be read", exitCode: 64)
        }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        return Set(lines.filter { !$0.isEmpty }.map { directory.appendingPathComponent($0).standardizedFileURL.path })
    }

    static func write(_ text: String, to path: String) throws {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            throw Failure(
                "error: cannot write \(path.escapingControlCharacters): \(error.localizedDescription)",
                exitCode: 1
            )
        }
    }
}
