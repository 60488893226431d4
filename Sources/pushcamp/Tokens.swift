import ArgumentParser
import Foundation
import PushcampJournal
import PushcampModel
import PushcampReport

struct Tokens: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export what the journal knows about device tokens.",
        subcommands: [Invalid.self]
    )

    struct Invalid: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export the tokens APNs called dead, for clean-up in your own database.",
            discussion: """
                Every send remembers, per topic, the tokens APNs answered Unregistered or \
                ExpiredToken (410, with the time APNs last knew the token valid) or BadDeviceToken \
                (400). Later campaigns to the same topic pass over them (`pushcamp plan` counts them \
                as suppressed) unless the audience row's registered_at is newer. Export them here \
                and delete or mark them where your tokens live.

                CSV columns (json keys): topic, token, reason, apns_timestamp (APNs' time in \
                milliseconds since 1970, empty for BadDeviceToken), apns_time (the same as \
                ISO 8601), seen_at (when Pushcamp was told, ISO 8601). Oldest first.

                Examples:
                  pushcamp tokens invalid > dead-tokens.csv
                  pushcamp tokens invalid --since 2026-11-01T00:00:00Z --format json
                  pushcamp tokens invalid --topic com.example.shop
                """
        )

        @OptionGroup var journalOption: JournalOption

        @Option(
            help: ArgumentHelp(
                "Only tokens Pushcamp learned of at or after this time (ISO 8601 with a zone).",
                valueName: "time"
            )
        )
        var since: String?

        @Option(help: "Only this topic (the app's bundle id, or its .voip/.complication/… topic).")
        var topic: String?

        @Option(help: "csv or json.")
        var format: TokensFormat = .csv

        enum TokensFormat: String, ExpressibleByArgument, CaseIterable {
            case csv, json
        }

        func validate() throws {
            if let since, case .failure(let error) = Timestamp.parse(since) {
                throw ValidationError("--since: \(error.message)")
            }
        }

        func run() async throws {
            try await journalOption.withJournal { journal, _ in
                let since = try since.map { Double(try Timestamp.parse($0).get().secondsSince1970) }
                let tokens = try await journal.invalidTokens(topic: topic, since: since)
                switch format {
                case .csv: print(InvalidTokenListing(tokens: tokens).csv(), terminator: "")
                case .json: print(InvalidTokenListing(tokens: tokens).json())
                }
            }
        }
    }
}
