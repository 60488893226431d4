import ArgumentParser

@main
struct Pushcamp: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushcamp",
        abstract: "Declarative push campaigns for Apple Push Notification service.",
        discussion: """
            Campaigns are YAML files kept in git. Pushcamp checks them (validate) and shows exactly \
            what a campaign would send, to whom, before anything is sent (plan).

            Exit codes: 0 success; 1 invalid campaign, template or audience; 3 the plan has pushes \
            that pre-flight checks refuse; 64 bad command-line usage.
            """,
        version: "0.1.0",
        subcommands: [Validate.self, Plan.self]
    )
}
