import ArgumentParser
import PushcampBuildInfo

@main
struct Pushcamp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushcamp",
        abstract: "Declarative push campaigns for Apple Push Notification service.",
        discussion: """
            Campaigns are YAML files kept in git. Pushcamp checks them (validate), shows exactly \
            what a campaign would send, to whom, before anything is sent (plan), tries the whole \
            send against a local APNs simulator (rehearse) and sends it to APNs (send). Every send is \
            kept in the project's journal: a killed send resumes where it stopped, `runs` lists \
            sends and `cancel` stops one. Tokens APNs calls dead are remembered and skipped by later \
            campaigns; `tokens invalid` exports them. Campaigns with a `schedule:` are sent by \
            `serve`, the long-running side, at each slot, each slot once; `schedules` lists them. \
            `serve` also receives App Store Server Notifications (`appstore` lists them and \
            back-fills missed ones) and sends `trigger:` campaigns when they arrive. A new \
            project starts with `init`; `status` shows what it is doing, `diff` what changed in a \
            campaign since its last run, `doctor` whether this machine can send, and `review` what a \
            pull request's campaigns would send, for its CI, without real audiences.

            Exit codes: 0 success; 1 invalid campaign, template or audience; 2 credentials refused \
            or no connection; 3 the plan has pushes that pre-flight checks refuse; 4 some pushes \
            failed or were not sent; 5 the campaign is being sent by another process; 6 `cancel`: the \
            sending process did not stop in time; 64 bad command-line usage; 130 interrupted or \
            cancelled.

            `pushcamp version` (or --version, -V) prints the version.

            Shell completions: `pushcamp --generate-completion-script bash|zsh|fish` prints a \
            script (campaign arguments complete to .yaml files); the README has the install lines.
            """,
        version: BuildInfo.summary,
        subcommands: [
            Init.self, Validate.self, Plan.self, Diff.self, Rehearse.self, Send.self, Status.self, Runs.self,
            Report.self,
            Cancel.self, Replay.self, Tokens.self, Serve.self, Schedules.self, AppStore.self, JournalCommand.self,
            Channels.self, Engagement.self, Doctor.self, Sim.self, Review.self, Version.self,
        ]
    )
}

extension Pushcamp {
    /// Parses and runs the command; a `Failure`, or a library error `Failure` maps, is said on
    /// standard error and exits with its code, everything else as ArgumentParser says it (usage
    /// errors, `--help`, `ExitCode`).
    static func main() async {
        let arguments = Hints.normalized(Array(CommandLine.arguments.dropFirst()))
        if let problem = Hints.problem(in: arguments) {
            printError(problem)
            exit(withError: ExitCode(64))
        }
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            guard let failure = Failure(error) else { exit(withError: error) }
            printError(failure.message)
            exit(withError: ExitCode(failure.exitCode))
        }
    }
}

extension CompletionKind {
    /// Campaign arguments complete to YAML files.
    static var campaignFiles: CompletionKind { .file(extensions: ["yaml", "yml"]) }
}
