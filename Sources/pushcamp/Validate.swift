import ArgumentParser
import PushcampPlanner

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check campaign files without reading their audience's rows.",
        discussion: """
            Reads each campaign and the pushcamp.yaml above it, compiles its templates and strings, \
            opens its audience sources (CSV header, SQLite query columns) and checks filter and \
            template names against them, plus the pre-flight rules that depend only on the campaign \
            (push type, priority, topic, payload shape). Every problem is printed like a compiler \
            error: path:line:col: error: message.

            Examples:
              pushcamp validate campaigns/*.yaml
              pushcamp validate --format github campaigns/*.yaml  # in GitHub Actions
            """
    )

    @Argument(help: "Campaign files to check.", completion: .campaignFiles)
    var files: [String]

    @Option(help: "Output: text (compiler-style lines), json, or github (workflow annotations).")
    var format: DiagnosticFormat = .text

    func validate() throws {
        if files.isEmpty { throw ValidationError("name at least one campaign file") }
    }

    @OptionGroup var projectOption: ProjectOption

    func run() throws {
        try projectOption.enter()
        let validation = Validation()
        let results = files.map { validation.check($0) }
        print(format.render(results), terminator: "")
        if results.contains(where: { !$0.isValid }) { throw ExitCode(1) }
    }
}

extension DiagnosticFormat: ExpressibleByArgument {}
