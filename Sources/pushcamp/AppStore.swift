import ArgumentParser
import Crypto
import Foundation
import Logging
import PushcampAPNsCore
import PushcampAppStore
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner
import PushcampReport
import PushcampServe

struct AppStore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore",
        abstract:
            "App Store Server Notifications: what `pushcamp serve` received, subscriptions, trigger firings, the history back-fill.",
        discussion: """
            `pushcamp serve` receives Apple's signed notifications for the apps of pushcamp.yaml with \
            an `app_store:` key, verifies them to Apple's root, and keeps each once (by its UUID) \
            before answering 200. See docs/app-store.md.
            """,
        subcommands: [
            AppStoreNotifications.self, AppStoreSubscriptions.self, AppStoreTriggers.self, AppStoreReprocess.self,
            AppStoreHistory.self,
        ]
    )
}

struct AppStoreNotifications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "List received notifications, newest first: stored, or quarantined with the reason.",
        discussion: """
            A notification is quarantined when it is correctly signed but names a bundle id, app id \
            or environment pushcamp.yaml does not accept (or carries no signedDate): it is kept, \
            answered 200, and never acted on. Refused payloads (bad signature, chain or date) are \
            not kept; /metrics counts them by reason.

            Examples:
              pushcamp appstore notifications
              pushcamp appstore notifications --quarantined --format json
            """
    )

    @OptionGroup var journalOption: JournalOption

    @Flag(help: "Only quarantined notifications.")
    var quarantined = false

    @Option(help: "How many to show.")
    var limit = 50

    @Option(help: "text or json.")
    var format: Runs.RunsFormat = .text

    func run() async throws {
        try await journalOption.withJournal { journal, _ in
            let records: [AppStoreNotificationRecord] = try await journal.notifications(
                limit: limit,
                quarantined: quarantined
            )
            let listing = NotificationListing(records: records)
            switch format {
            case .text:
                if records.isEmpty && quarantined {
                    print("no quarantined App Store notifications")
                } else {
                    print(listing.text(), terminator: "")
                }
            case .json: print(listing.json())
            }
        }
    }
}

struct AppStoreReprocess: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reprocess",
        abstract: "Verify quarantined notifications again against pushcamp.yaml, and keep those it now accepts.",
        discussion: """
            After fixing an app's app_store: key (its bundle_id, app_apple_id or environments), run \
            this to release the notifications quarantined meanwhile: each is verified again (its \
            signature and chain at its signedDate; the 7-day age limit does not apply, as it was \
            fresh when it came) and, when the configuration now accepts it, stored for its app.

            Examples:
              pushcamp appstore reprocess
            """
    )

    @OptionGroup var projectOption: ProjectOption

    @OptionGroup var journalLocation: JournalLocationOption

    func run() async throws {
        let (project, paths) = try projectOption.load()
        var logger = Logger(label: "pushcamp.appstore")
        logger.logLevel = .error
        let intake = try AppStoreReceiver.requiredIntake(
            for: project,
            paths: paths,
            environment: ProcessInfo.processInfo.environment,
            logger: logger
        )
        let result = try await journalLocation.withWritableJournal(JournalSetting(project, paths: paths)) { store in
            try await AppStoreReceiver.reprocess(
                store,
                intake: intake,
                now: Date(timeIntervalSince1970: commandClock.now())
            )
        }
        for (uuid, app) in result.released { print("released \(uuid.escapingControlCharacters) for \(app)") }
        for (uuid, reason) in result.stillQuarantined {
            print("still quarantined \(uuid.escapingControlCharacters): \(reason.escapingControlCharacters)")
        }
        print("\(result.released.count) released, \(result.stillQuarantined.count) still quarantined")
    }
}

struct AppStoreSubscriptions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscriptions",
        abstract: "List subscriptions as the latest notification about each (by signedDate) left them.",
        discussion: """
            One line per original transaction: its status (active, expired, billing-retry, \
            grace-period, revoked), product, auto-renew, expiry, grace-period end, app account \
            token and the notification that set it. A notification signed earlier than the one \
            that set a subscription's state is kept but changes nothing, whatever order they came in.

            Examples:
              pushcamp appstore subscriptions --status billing-retry
              pushcamp appstore subscriptions --format json
            """
    )

    @OptionGroup var journalOption: JournalOption

    @Option(help: "Only subscriptions in this status (active, expired, billing-retry, grace-period, revoked).")
    var status: String?

    @Option(help: "How many to show.")
    var limit = 100

    @Option(help: "text or json.")
    var format: Runs.RunsFormat = .text

    func run() async throws {
        try await journalOption.withJournal { journal, _ in
            let states: [SubscriptionState] = try await journal.subscriptions(status: status, limit: limit)
            let listing = SubscriptionListing(states: states, status: status)
            print(format == .json ? listing.json() : listing.text(), terminator: format == .json ? "\n" : "")
        }
    }
}

struct AppStoreTriggers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "triggers",
        abstract: "List trigger firings, newest first: which notification fired which campaign, and what came of it.",
        discussion: """
            A campaign with `trigger: { app_store: TYPE }` fires once for each notification of that \
            type `pushcamp serve` stores for its app; the firing is recorded with the notification. \
            Status: pending (waiting for its delay), fired (sent by the run shown), no-recipient (no \
            audience row is joined to the subscription, or the notification names no app account \
            token), skipped (the campaign was removed, invalid or refused; see the detail).

            Examples:
              pushcamp appstore triggers
              pushcamp appstore triggers --campaign card-failed --format json
            """
    )

    @OptionGroup var journalOption: JournalOption

    @Option(help: "Only the firings of this campaign.")
    var campaign: String?

    @Option(help: "How many to show.")
    var limit = 50

    @Option(help: "text or json.")
    var format: Runs.RunsFormat = .text

    func run() async throws {
        try await journalOption.withJournal { journal, _ in
            let firings: [TriggerFiring] = try await journal.firings(campaign: campaign, limit: limit)
            let listing = FiringListing(firings: firings, campaign: campaign)
            print(format == .json ? listing.json() : listing.text(), terminator: format == .json ? "\n" : "")
        }
    }
}

struct AppStoreHistory: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Recover notifications `serve` missed, from the App Store Server API's Get Notification History.",
        discussion: """
            Asks Apple for the notifications it sent for the app over a time range (all, or only \
            those it failed to deliver), page by page, waiting out its rate limit, and keeps each \
            through the receiver's own path: verified to Apple's root (the chain at its \
            signedDate; the 7-day age limit does not apply), kept once per notificationUUID \
            (those already received are counted, not stored again), quarantined when \
            pushcamp.yaml does not accept it, and applied to subscription state by signedDate.

            It needs an In-App Purchase key of App Store Connect (Users and Access › \
            Integrations › In-App Purchase) under the app's app_store: key:
              api: { issuer_id: 57246542-96fe-1a63-e053-0824d011072a, key_id: 2X9R4HXF34, key_file: ${env:IAP_KEY} }

            Back-filled notifications fire no trigger campaign unless --fire-triggers: then \
            those that match a trigger campaign of the campaign folders are recorded as firings, \
            which `pushcamp serve` sends (checking the subscription's state then).

            Exit status: 0 when every page was read; 1 on a configuration, journal or API \
            problem; 2 when Apple refuses the key.

            Examples:
              pushcamp appstore history --since 72h
              pushcamp appstore history --since 30d --only-failures --app shop-ios
              pushcamp appstore history --environment sandbox --since 7d
            """
    )

    enum Environment: String, ExpressibleByArgument, CaseIterable {
        case production, sandbox
    }

    @OptionGroup var projectOption: ProjectOption

    @OptionGroup var journalLocation: JournalLocationOption

    @Option(help: "The app (default: the only app whose app_store: has an api: key).")
    var app: String?

    @Option(help: "How far back (72h, 7d; at most 180d, Apple's limit in production).")
    var since = "72h"

    @Flag(help: "Only the notifications Apple failed to deliver (including those it is still retrying).")
    var onlyFailures = false

    @Option(help: "production (default) or sandbox: which of Apple's hosts to ask.")
    var environment: Environment = .production

    @Flag(help: "Record trigger firings for back-filled notifications, for `serve` to send.")
    var fireTriggers = false

    func validate() throws {
        guard case .success(let span) = TimeSpan.parse(since), span.seconds > 0, span.seconds <= 180 * 86_400 else {
            throw ValidationError("--since takes a span such as 72h or 7d, at most 180d")
        }
    }

    func run() async throws {
        let (project, paths) = try projectOption.load()
        var logger = Logger(label: "pushcamp.appstore")
        logger.logLevel = .error
        try await journalLocation.withWritableJournal(JournalSetting(project, paths: paths)) { store in
            let setup = try HistoryBackfill.setUp(
                project: project,
                paths: paths,
                app: app,
                sandbox: environment == .sandbox,
                fireTriggers: fireTriggers,
                store: store,
                environment: ProcessInfo.processInfo.environment,
                logger: logger
            )
            let now = Date(timeIntervalSince1970: commandClock.now())
            let span = (try? TimeSpan.parse(since).get())?.seconds ?? 72 * 3600
            let query = NotificationHistoryQuery(
                start: now.addingTimeInterval(-Double(span)),
                end: now,
                onlyFailures: onlyFailures
            )
            let backfill = await HistoryBackfill.run(query, api: setup.api, receiver: setup.receiver)
            if let (message, exitCode) = backfill.failureMessage {
                print(backfill.summary)
                throw Failure(message, exitCode: exitCode)
            }
            for refusal in backfill.refusals { printError("refused: \(refusal.escapingControlCharacters)") }
            print(backfill.heading(app: setup.app, environment: environment.rawValue, query: query))
            print(backfill.summary)
        }
    }
}
