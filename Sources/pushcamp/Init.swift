import ArgumentParser
import Foundation
import PushcampPlanner

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start a project: pushcamp.yaml, a campaign, its template and audience, CI.",
        discussion: """
            Writes, into DIR (default: the current folder), a project that validates, plans and \
            rehearses as it is: pushcamp.yaml with its keys commented, campaigns/welcome.yaml with \
            templates/welcome.yaml and a four-row audiences/welcome.csv, a .gitignore for the \
            journal (.pushcamp/), and .github/workflows/pushcamp.yml, which runs `validate --format \
            github` and posts `plan --format markdown` on pull requests. It never overwrites: a \
            folder that holds anything is refused and nothing is written.

            Examples:
              pushcamp init my-pushes && cd my-pushes && pushcamp rehearse campaigns/welcome.yaml
              pushcamp init --bundle-id com.example.shop
            """
    )

    @Argument(help: ArgumentHelp("The folder to create the project in.", valueName: "dir"))
    var directory: String = "."

    @Option(help: ArgumentHelp("The app's bundle id, written as its topic.", valueName: "id"))
    var bundleID: String = "com.example.app"

    func validate() throws {
        guard !bundleID.isEmpty,
            bundleID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-".contains($0)) })
        else { throw ValidationError("--bundle-id takes a bundle id like com.example.shop") }
    }

    func run() throws {
        let url = URL(
            fileURLWithPath: directory,
            relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        ).standardizedFileURL
        let written: [String]
        do {
            written = try ProjectScaffold.write(into: url, bundleID: bundleID)
        } catch let refusal as ProjectScaffold.Refusal {
            printError("error: \(refusal)")
            throw ExitCode(1)
        } catch {
            printError("error: cannot write the project into \(directory): \(error)")
            throw ExitCode(1)
        }
        print("Created a Pushcamp project in \(directory == "." ? "this folder" : directory):")
        for path in written { print("  \(path)") }
        let cd = directory == "." ? "" : "cd \(directory) && "
        print(
            """

            Next:
              \(cd)pushcamp plan campaigns/welcome.yaml        # what would be sent, to whom
              pushcamp rehearse campaigns/welcome.yaml              # the whole send, against a local APNs simulator
            Then put your team id, key id and key file in pushcamp.yaml, and `pushcamp send`.
            """
        )
    }
}
