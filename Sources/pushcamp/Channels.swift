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

        /// Runs `body` with the project, its journal (a SQLite file not made yet reads as empty
        /// unless `forWriting`) and clients made on demand, closed when it ends.
        func withOpened<T>(forWriting: Bool, _ body: (Opened) async throws -> T) async throws -> T {
            let (project, paths) = try projectOption.load()
            let setting = location.setting(JournalSetting(project, paths: paths))
            let access = try JournalLocationOption.access(setting)
            return try await JournalLocationOption.withJournal(access, readOnly: !forWriting) { journal in
                let opened = Opened(
                    project: project,
                    paths: paths,
                    // A journal not made yet: nothing is recorded in it.
                    journal: journal ?? MemoryJournal(),
                    tokenCache: (setting.path as NSString).deletingLastPathComponent
                )
                do {
                    let result = try await body(opened)
                    await opened.closeClients()
                    return result
                } catch {
                    await opened.closeClients()
                    throw error
                }
            }
        }
    }

    final class Opened {
        let project: Project
        let paths: ProjectPaths
        let journal: any Journal
        let tokenCache: String
        private var clients: [ChannelPlan.Place: ChannelClient] = [:]

        init(project: Project, paths: ProjectPaths, journal: any Journal, tokenCache: String) {
            self.project = project
            self.paths = paths
            self.journal = journal
            self.tokenCache = tokenCache
        }

        /// Each declaration with its app's bundle id.
        var declared: [(spec: ChannelSpec, bundleID: String)] {
            project.channels.compactMap { spec in project.apps[spec.app].map { (spec, $0.topic) } }
        }

        /// Every place a channel is declared or recorded.
        func places(recorded: [ChannelRecord]) -> [ChannelPlan.Place] {
            var places = Set(
                declared.map { ChannelPlan.Place(bundleID: $0.bundleID, environment: $0.spec.environment) }
            )
            for record in recorded {
                places.insert(
                    ChannelPlan.Place(
                        bundleID: record.bundleID,
                        environment: APNsEnvironment(rawValue: record.environment) ?? .production
                    )
                )
            }
            return places.sorted()
        }

        /// The client for `place`, with the credentials of the first app of that bundle id;
        /// prints why there is none and exits 2.
        func client(_ place: ChannelPlan.Place) async throws -> ChannelClient {
            if let client = clients[place] { return client }
            guard
                let app = project.appNames.compactMap({ project.apps[$0] }).first(where: { $0.topic == place.bundleID })
            else {
                printError(
                    "error: no app in pushcamp.yaml has the bundle id \(place.bundleID) of channels in the journal; "
                        + "add the app back to manage them"
                )
                throw ExitCode(2)
            }
            let environment = ProcessInfo.processInfo.environment
            if let problem = SendRun.credentialsProblem(of: app, paths: paths, environment: environment) {
                throw Failure((problem.location.map { "\($0): " } ?? "") + "error: \(problem.message)", exitCode: 2)
            }
            do {
                let client = try await ChannelClient.make(
                    app: app,
                    environment: place.environment,
                    paths: paths,
                    variables: environment,
                    tokenCache: tokenCache,
                    journal: journal
                )
                clients[place] = client
                return client
            } catch {
                throw Failure("error: \(error.message)", exitCode: 2)
            }
        }

        /// What APNs lists per place; prints the failure and exits 2.
        func appleChannels(recorded: [ChannelRecord]) async throws -> [ChannelPlan.Place: [String]] {
            var lists: [ChannelPlan.Place: [String]] = [:]
            for place in places(recorded: recorded) {
                let client = try await self.client(place)
                lists[place] = try await Self.orExit { () async throws(ChannelClient.Failure) in
                    try await client.list()
                }
            }
            return lists
        }

        /// The plan: the declarations against the journal and, when `askingAPNs`, what APNs lists
        /// (nil when it was not asked).
        func plan(askingAPNs: Bool) async throws -> (ChannelPlan, apple: [ChannelPlan.Place: [String]]?) {
            let recorded = try await Self.orExit { try await journal.channels() }
            let apple = askingAPNs ? try await appleChannels(recorded: recorded) : nil
            return (ChannelPlan.make(declared: declared, recorded: recorded, apple: apple), apple)
        }

        /// Runs a management request; prints its failure and exits 2.
        static func orExit<T>(_ body: () async throws -> T) async throws -> T {
            do {
                return try await body()
            } catch let failure as ChannelClient.Failure {
                throw Failure("error: \(failure.message)", exitCode: 2)
            } catch let error as JournalError {
                throw Failure("error: the journal: \(error.message)", exitCode: 1)
            }
        }

        func closeClients() async {
            for client in clients.values { await client.close() }
        }
    }

    static func describe(_ place: ChannelPlan.Place) -> String {
        "\(place.bundleID) (\(place.environment.rawValue))"
    }

    /// The plan in words, or as JSON.
    static func render(_ plan: ChannelPlan, asked apple: Bool, format: Format) -> String {
        switch format {
        case .json:
            return JSONValue.members([
                (
                    "channels",
                    .array(
                        plan.entries.map { entry in
                            JSONValue.members([
                                ("name", .string(entry.name)), ("action", .string(entry.action.rawValue)),
                                ("bundle_id", .string(entry.place.bundleID)),
                                ("environment", .string(entry.place.environment.rawValue)),
                                ("storage", .string(entry.storage.rawValue)),
                                ("channel_id", entry.recorded.map { .string($0.channelID) }),
                                ("drift", entry.drift.map(JSONValue.string)),
                            ])
                        }
                    )
                ),
                (
                    "orphans",
                    .array(
                        plan.orphans.keys.sorted().flatMap { place in
                            plan.orphans[place, default: []].map { id in
                                JSONValue.members([
                                    ("bundle_id", .string(place.bundleID)),
                                    ("environment", .string(place.environment.rawValue)), ("channel_id", .string(id)),
                                ])
                            }
                        }
                    )
                ),
                (
                    "counts",
                    .array(
                        plan.counts.map { count in
                            JSONValue.members([
                                ("bundle_id", .string(count.place.bundleID)),
                                ("environment", .string(count.place.environment.rawValue)),
                                ("now", count.now.map(JSONValue.integer)), ("after", .integer(count.after)),
                                ("cap", .integer(10_000)),
                            ])
                        }
                    )
                ),
                ("asked_apns", .bool(apple)),
            ]).text + "\n"
        case .text:
            var text = ""
            let symbols: [ChannelPlan.Action: String] = [.create: "+", .keep: " ", .recreate: "!", .delete: "-"]
            let rows = plan.entries.map { entry -> [String] in
                let detail: String
                switch entry.action {
                case .create: detail = "(create)"
                case .keep: detail = "id \(entry.recorded!.channelID)"
                case .recreate: detail = "(create again: APNs no longer has \(entry.recorded!.channelID))"
                case .delete: detail = "id \(entry.recorded!.channelID)  (delete: no longer declared)"
                }
                return [entry.name, describe(entry.place), "storage \(entry.storage.rawValue)", detail]
            }
            let lines = TextColumns.render(rows).split(separator: "\n")
            for (entry, line) in zip(plan.entries, lines) {
                text += "\(symbols[entry.action]!) \(line)\n"
                if let drift = entry.drift {
                    text +=
                        "    warning: \(drift); a channel cannot be changed: `pushcamp channels delete \(entry.name)`, then apply, makes a new one (devices must subscribe to its new id)\n"
                }
            }
            if plan.entries.isEmpty { text += "No channels are declared or recorded.\n" }
            for place in plan.orphans.keys.sorted() {
                let ids = plan.orphans[place, default: []]
                text +=
                    "\(ids.count) channel\(ids.count == 1 ? "" : "s") of \(describe(place)) at APNs \(ids.count == 1 ? "is" : "are") in no journal: "
                    + ids.prefix(5).joined(separator: ", ") + (ids.count > 5 ? ", …" : "")
                    + " (pushcamp channels delete --id ID --app APP)\n"
            }
            for count in plan.counts {
                let now = count.now.map { "\($0) now, " } ?? ""
                text += "\(describe(count.place)): \(now)\(count.after) after apply, of Apple's 10,000\n"
            }
            if !apple { text += "note: APNs was not asked (--offline): recorded channels are assumed to exist\n" }
            return text
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
            try await context.withOpened(forWriting: false) { opened in
                let (plan, apple) = try await opened.plan(askingAPNs: !offline)
                let document = Channels.render(plan, asked: apple != nil, format: format)
                if format == .json { print(document, terminator: "") } else { printDocument(document) }
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
            try await context.withOpened(forWriting: true) { opened in
                let journal = opened.journal
                let (plan, _) = try await opened.plan(askingAPNs: true)
                printDocument(Channels.render(plan, asked: true, format: .text))
                let summary = try await Opened.orExit {
                    try await ChannelApply.apply(
                        plan,
                        journal: journal,
                        client: opened.client
                    ) { step in
                        switch step {
                        case .created(let name, let id):
                            print("created \(name): \(id)")
                        case .duplicateDeleted(let name, let id):
                            print("\(name) was created by another apply meanwhile; deleted the duplicate \(id)")
                        case .deleted(let name, let id, let found):
                            print(found ? "deleted \(name): \(id)" : "\(name) (\(id)) was deleted already; retired it")
                        }
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
            try await context.withOpened(forWriting: false) { opened in
                let (plan, apple) = try await opened.plan(askingAPNs: !offline)
                switch format {
                case .json: print(Channels.render(plan, asked: apple != nil, format: .json), terminator: "")
                case .text:
                    var rows: [[String]] = []
                    for entry in plan.entries {
                        let state: String
                        switch entry.action {
                        case .create: state = "declared, not created (pushcamp channels apply)"
                        case .keep:
                            state =
                                "created \(Timestamps.iso(entry.recorded!.createdAt))  id \(entry.recorded!.channelID)"
                        case .recreate: state = "recorded, but APNs no longer has \(entry.recorded!.channelID)"
                        case .delete: state = "created, no longer declared  id \(entry.recorded!.channelID)"
                        }
                        rows.append([
                            entry.name, Channels.describe(entry.place), "storage \(entry.storage.rawValue)", state,
                        ])
                    }
                    for place in plan.orphans.keys.sorted() {
                        for id in plan.orphans[place, default: []] {
                            rows.append(["(orphan)", Channels.describe(place), "", "id \(id)  in no journal"])
                        }
                    }
                    var text = rows.isEmpty ? "No channels are declared or recorded.\n" : TextColumns.render(rows)
                    for count in plan.counts {
                        let held = count.now.map { "\($0) at APNs" } ?? "\(count.after) recorded"
                        text += "\(Channels.describe(count.place)): \(held), of Apple's 10,000\n"
                    }
                    printDocument(text)
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
            try await context.withOpened(forWriting: name != nil) { opened in
                if let id, let app {
                    guard let config = opened.project.apps[app] else {
                        printError(
                            "error: --app \(app.escapingControlCharacters): pushcamp.yaml has no such app (it has \(opened.project.appNames.joined(separator: ", ")))"
                        )
                        throw ExitCode(64)
                    }
                    let place = ChannelPlan.Place(
                        bundleID: config.topic,
                        environment: environment ?? config.environment
                    )
                    let client = try await opened.client(place)
                    let found = try await Opened.orExit { () async throws(ChannelClient.Failure) in
                        try await client.delete(id)
                    }
                    print(
                        found
                            ? "deleted \(id) of \(Channels.describe(place))"
                            : "APNs has no channel \(id): nothing to delete"
                    )
                    return
                }
                let name = name!
                let recorded = try await Opened.orExit { try await opened.journal.channels() }
                guard let record = recorded.first(where: { $0.name == name }) else {
                    printError(
                        "error: no channel named \(name.escapingControlCharacters) is recorded"
                            + Suggestion.didYouMean(name, in: recorded.map(\.name))
                    )
                    throw ExitCode(1)
                }
                let client = try await opened.client(ChannelPlan.place(of: record))
                let found = try await Opened.orExit { () async throws(ChannelClient.Failure) in
                    try await client.delete(record.channelID)
                }
                _ = try await Opened.orExit {
                    try await opened.journal.retireChannel(
                        named: name,
                        channelID: record.channelID,
                        now: SystemWallClock().now()
                    )
                }
                print(
                    found
                        ? "deleted \(name) (\(record.channelID))"
                        : "APNs no longer had \(name) (\(record.channelID)); retired it in the journal"
                )
                if let spec = opened.project.channels.first(where: { $0.name == name }) {
                    printError(
                        "\(spec.location): warning: \(name) is still declared: the next `pushcamp channels apply` creates it again with a new id; remove it from pushcamp.yaml to retire it"
                    )
                }
            }
        }
    }
}

extension APNsEnvironment: ExpressibleByArgument {}
