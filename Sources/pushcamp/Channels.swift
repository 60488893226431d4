import ArgumentParser
import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner
import PushcampSend

/// `pushcamp channels`: Live Activity broadcast channels as code.
struct Channels: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Live Activity broadcast channels, declared in pushcamp.yaml: plan, apply, list, delete.",
        discussion: """
            A broadcast channel lets one request update the Live Activity of every device \
            subscribed to it (iOS 18). Declare channels in pushcamp.yaml; `apply` creates the \
            missing ones with APNs' channel-management API and keeps Apple's ids in the journal, so \
            campaigns name channels by name (`channel: NAME`) and no id is copied by hand:

              channels:
                final-2026:
                  app: shop-ios
                  storage: latest      # or none: APNs keeps nothing, broadcasts expire at once

            Removing a channel from pushcamp.yaml makes the next `apply` delete it at APNs. Apple \
            allows 10,000 channels per app and environment; delete a channel when its event ends. \
            The App ID needs the Broadcast capability. See docs/live-activities.md.

            Exit status: 0 when done; 1 when pushcamp.yaml or the journal cannot be used; 2 when \
            APNs refused a request or could not be reached.

            Examples:
              pushcamp channels plan
              pushcamp channels apply
              pushcamp channels list --format json
              pushcamp channels delete final-2026
            """,
        subcommands: [Plan.self, Apply.self, List.self, Delete.self]
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    /// The project, its journal and clients for the places its channels live.
    struct Context: ParsableArguments {
        @OptionGroup var projectOption: ProjectOption
        @OptionGroup var location: JournalLocationOption

        /// Runs `body` with the project's channels: its journal (a SQLite file not made yet reads
        /// as empty unless `forWriting`) and clients made on demand, closed when it ends.
        func withOpened<T>(
            forWriting: Bool,
            _ body: (ProjectChannels) async throws(ProjectChannels.Failure) -> T
        ) async throws -> T {
            let (project, paths) = try projectOption.load()
            let setting = location.setting(JournalSetting(project, paths: paths))
            let access = try JournalLocationOption.access(setting)
            return try await JournalLocationOption.withJournal(access, readOnly: !forWriting) { journal in
                let channels = ProjectChannels(
                    project: project,
                    paths: paths,
                    // A journal not made yet: nothing is recorded in it.
                    journal: journal ?? MemoryJournal(),
                    tokenCache: (setting.path as NSString).deletingLastPathComponent,
                    environment: ProcessInfo.processInfo.environment
                )
                return try await channels.use(body)
            }
        }
    }

    struct Plan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what `channels apply` would create and delete.",
            discussion: """
                Compares the channels pushcamp.yaml declares with those the journal records and \
                those APNs lists (GET all-channels), and prints one line per channel: + create, \
                - delete (no longer declared), ! create again (APNs no longer has it), blank: \
                unchanged. Channels APNs holds that no journal records are listed as orphans, with \
                the count against Apple's cap of 10,000. Nothing is changed.

                Examples:
                  pushcamp channels plan
                  pushcamp channels plan --offline --format json
                """
        )

        @OptionGroup var context: Context

        @Flag(help: "Do not ask APNs: compare pushcamp.yaml with the journal only (no credentials needed).")
        var offline = false

        @Option(help: "text or json.")
        var format: Format = .text

        func run() async throws {
            try await context.withOpened(forWriting: false) { channels throws(ProjectChannels.Failure) in
                let (plan, apple) = try await channels.plan(askingAPNs: !offline)
                switch format {
                case .json: print(plan.json(asked: apple != nil), terminator: "")
                case .text: printDocument(plan.text(asked: apple != nil))
                }
            }
        }
    }

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the declared channels that do not exist, and delete those no longer declared.",
            discussion: """
                Prints the plan, then carries it out: each channel is created with APNs' \
                channel-management API and its id recorded in the journal at once; a channel \
                removed from pushcamp.yaml is deleted at APNs and retired. Running it again \
                changes nothing. Each management request is retried on 429, 5xx and lost \
                answers (1, 2, 4, then 8 s, eight attempts); an apply that still fails stops, and the next apply \
                finishes what it left. On a shared journal two applies may run at once: each name \
                keeps the first channel recorded, the other apply deletes the one it made, and a \
                channel is retired only by its own id.

                Examples:
                  pushcamp channels apply
                """
        )

        @OptionGroup var context: Context

        func run() async throws {
            try await context.withOpened(forWriting: true) { channels throws(ProjectChannels.Failure) in
                let (plan, _) = try await channels.plan(askingAPNs: true)
                printDocument(plan.text(asked: true))
                let summary = try await channels.apply(plan) { step in
                    switch step {
                    case .created(let name, let id): print("created \(name): \(id)")
                    case .duplicateDeleted(let name, let id):
                        print("\(name) was created by another apply meanwhile; deleted the duplicate \(id)")
                    case .deleted(let name, let id, let found):
                        print(found ? "deleted \(name): \(id)" : "\(name) (\(id)) was deleted already; retired it")
                    }
                }
                print(
                    plan.changes == 0
                        ? "Nothing to do: every declared channel exists."
                        : "Applied: \(summary.created) created, \(summary.deleted) deleted."
                )
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List declared, created and orphaned channels, with the count against Apple's cap.",
            discussion: """
                Every channel the journal records (name, app's bundle id, environment, storage, \
                Apple's id, when it was created), the declared ones not created yet, and channels \
                APNs holds that no journal records (orphans: created by hand, or by an apply that \
                died before recording). --offline lists from the journal only.

                Examples:
                  pushcamp channels list
                  pushcamp channels list --format json
                """
        )

        @OptionGroup var context: Context

        @Flag(help: "Do not ask APNs: list the journal and pushcamp.yaml only.")
        var offline = false

        @Option(help: "text or json.")
        var format: Format = .text

        func run() async throws {
            try await context.withOpened(forWriting: false) { channels throws(ProjectChannels.Failure) in
                let (plan, apple) = try await channels.plan(askingAPNs: !offline)
                switch format {
                case .json: print(plan.json(asked: apple != nil), terminator: "")
                case .text: printDocument(plan.listing())
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a channel at APNs and retire it in the journal.",
            discussion: """
                Deleting cannot be undone: devices subscribed to the channel get no further \
                updates, though a message APNs stored may still be delivered. A channel still \
                declared in pushcamp.yaml is created anew (with a new id) by the next apply: remove \
                it from pushcamp.yaml to retire it for good. An orphan (a channel no journal \
                records) is deleted by its id and app: --id ID --app APP.

                Examples:
                  pushcamp channels delete final-2026
                  pushcamp channels delete --id 'dHN0LXNyY2gtY2hubA==' --app shop-ios
                """
        )

        @OptionGroup var context: Context

        @Argument(help: ArgumentHelp("The channel's name.", valueName: "name"))
        var name: String?

        @Option(help: ArgumentHelp("Delete a channel no journal records, by Apple's id (with --app).", valueName: "id"))
        var id: String?

        @Option(help: ArgumentHelp("The app an orphan belongs to (with --id).", valueName: "app"))
        var app: String?

        @Option(help: ArgumentHelp("The orphan's environment (default: the app's).", valueName: "environment"))
        var environment: APNsEnvironment?

        func validate() throws {
            switch (name, id) {
            case (nil, nil): throw ValidationError("name the channel, or give --id and --app for an orphan")
            case (.some, .some): throw ValidationError("give a channel's name or --id, not both")
            case (nil, .some) where app == nil:
                throw ValidationError("--id needs --app: the app the channel belongs to")
            default: break
            }
        }

        func run() async throws {
            try await context.withOpened(forWriting: name != nil) { channels throws(ProjectChannels.Failure) in
                if let id, let app {
                    let (found, place) = try await channels.deleteOrphan(id, app: app, environment: environment)
                    let described = ChannelPlan.describe(place)
                    print(found ? "deleted \(id) of \(described)" : "APNs has no channel \(id): nothing to delete")
                    return
                }
                let name = name!
                let (record, found) = try await channels.delete(named: name)
                print(
                    found
                        ? "deleted \(name) (\(record.channelID))"
                        : "APNs no longer had \(name) (\(record.channelID)); retired it in the journal"
                )
                if let spec = channels.project.channels.first(where: { $0.name == name }) {
                    printError(
                        "\(spec.location): warning: \(name) is still declared: the next `pushcamp channels apply` creates it again with a new id; remove it from pushcamp.yaml to retire it"
                    )
                }
            }
        }
    }
}

extension APNsEnvironment: ExpressibleByArgument {}
