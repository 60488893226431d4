import ArgumentParser
import Foundation
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampServe

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What the project is doing: runs, next slots, problems, dead tokens, App Store notifications.",
        discussion: """
            One screen from the project's folders and journal: runs being sent or interrupted (with \
            the command that resumes one), the next slot of each scheduled campaign in the folders \
            `serve` watches, the problems of the last day (campaign files serve cannot read, slots \
            skipped and why, runs with failed pushes), the dead tokens remembered per topic, and \
            the App Store notifications received in the last day. A project that has sent nothing \
            yet shows empty lists. Nothing is changed.

            Examples:
              pushcamp status
              pushcamp status --format json | jq '.runs'
            """
    )

    @OptionGroup var journalOption: JournalOption

    @Option(help: "text or json.")
    var format: Runs.RunsFormat = .text

    func run() async throws {
        let (project, paths) = try journalOption.projectOption.load()
        let status = try await journalOption.withJournal { journal, name in
            try await ProjectStatus.read(
                paths: paths,
                folders: project.serve.campaignFolders,
                journal: journal,
                journalName: name,
                now: commandClock.now()
            )
        }
        if format == .json { print(status.json(), terminator: "") } else { printDocument(status.text()) }
    }
}
