import ArgumentParser
import Foundation
import PushcampModel
import PushcampPlanner

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the project and its campaigns without reading their audience's rows.",
        discussion: """
            With no files, checks the nearest pushcamp.yaml and every campaign file `serve` would \
            watch (the folders of serve.campaigns, default campaigns/), and that no two of them \
            define one campaign. With files, checks those: a campaign with the pushcamp.yaml above \
            it, or pushcamp.yaml itself as the project file.

            For each campaign: reads it and its project, compiles its templates and strings, opens \
            its audience sources (CSV header, SQLite query columns; a PostgreSQL query's columns, \
            asked of the server without reading a row) and checks filter and template names against them, plus the pre-flight rules that depend only on the campaign (push \
            type, priority, topic, payload shape). Every problem is printed like a compiler error: \
            path:line:col: error: message. Exit status 1 when anything is invalid.

            --review checks as a pull request's CI can (see `pushcamp review`): a campaign's \
            audience.sample is checked instead of its audience, and an audience or exclusion that \
            cannot be read here (not committed, or an ${env:…} path whose variable is not set) is a \
            warning instead of an error.

            Examples:
              pushcamp validate
              pushcamp validate campaigns/spring-sale.yaml
              pushcamp validate --format github --review   # in GitHub Actions
            """
    )

    @Argument(
        help: "Campaign files, or pushcamp.yaml (default: the project and its campaigns).",
        completion: .campaignFiles
    )
    var files: [String] = []

    @Option(help: "Output: text (compiler-style lines), json, or github (workflow annotations).")
    var format: DiagnosticFormat = .text

    @Flag(help: "Check the audience.sample of campaigns that have one; an audience not here is a warning.")
    var review = false

    @OptionGroup var projectOption: ProjectOption

    func run() throws {
        try projectOption.enter()
        let validation = Validation(loader: CampaignLoader.forCommands(reviewing: review))
        let results: [Validation.FileResult]
        if files.isEmpty {
            results = validation.checkProject()
        } else {
            results = files.map { file in
                guard (file as NSString).lastPathComponent == ProjectPaths.projectFileName else {
                    return validation.check(file)
                }
                let url = URL(fileURLWithPath: file, relativeTo: validation.loader.workingDirectory)
                return validation.checkProjectFile(url.standardizedFileURL).1
            }
        }
        let rendered = format.render(results)
        if format == .text {
            print(Styling.standardOutput ? TerminalStyle.diagnostics(rendered) : rendered, terminator: "")
        } else {
            print(rendered, terminator: "")
        }
        if results.contains(where: { !$0.isValid }) { throw ExitCode(1) }
    }
}

extension DiagnosticFormat: ExpressibleByArgument {}
