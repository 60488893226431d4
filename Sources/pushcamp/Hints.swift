import ArgumentParser
import PushcampBuildInfo
import PushcampModel

/// Usage errors said better than the parser would say them, before it sees the arguments: a
/// command that does not exist gets the nearest one (the parser would only call it unexpected),
/// and `--dry-run` on a command that sends points at `plan` and `rehearse` (the parser's nearest
/// option to it is `--new-run`, which sends to everyone again).
enum Hints {
    /// Commands that send to APNs or FCM, where a dry run is asked of another command.
    static let sending: Set<String> = ["send", "replay"]

    /// The problem with `arguments` (without the program's name), or nil to let the parser go on.
    static func problem(in arguments: [String], root: any ParsableCommand.Type = Pushcamp.self) -> String? {
        var command = root
        var path = [String]()
        for argument in arguments {
            guard !argument.hasPrefix("-") else { break }
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { break }
            guard let next = subcommands.first(where: { $0._commandName == argument }) else {
                if argument == "help" { return nil }
                let names = subcommands.map { $0._commandName }
                let place = (["pushcamp"] + path).joined(separator: " ")
                let nearest = Suggestion.closest(to: argument, in: names).map { "; did you mean '\($0)'?" } ?? ";"
                return "error: '\(argument.escapingControlCharacters)' is not a command of \(place)\(nearest) "
                    + "`\(place) --help` lists them"
            }
            command = next
            path.append(argument)
        }
        if let name = path.first, sending.contains(name), arguments.contains(where: Self.asksForADryRun) {
            return "error: \(name) has no --dry-run: it sends. `pushcamp plan CAMPAIGN` shows what would be "
                + "sent and to whom; `pushcamp rehearse CAMPAIGN` sends it to a local simulator, and "
                + "`pushcamp plan --fcm-dry-run N CAMPAIGN` asks Google to check Android messages"
        }
        return nil
    }

    static func asksForADryRun(_ argument: String) -> Bool {
        ["--dry-run", "--dryrun", "--dry", "-n"].contains(argument.split(separator: "=").first.map(String.init) ?? "")
    }

    /// `-V` is `--version`, as in most command-line tools.
    static func normalized(_ arguments: [String]) -> [String] {
        arguments == ["-V"] ? ["--version"] : arguments
    }
}

/// `pushcamp version`: what `--version` and `-V` print.
struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print this pushcamp's version (as --version and -V do).",
        discussion: """
            The release version, and for a build from source the commit it was built from. A CI \
            workflow made by `pushcamp init` pins this version and its binary's SHA-256.
            """
    )

    func run() {
        print(BuildInfo.summary)
    }
}
