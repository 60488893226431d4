import ArgumentParser
import Foundation
import PushcampAPNsCore
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner

/// `pushcamp journal`: what a journal is, whether it answers, and its schema brought forward.
struct JournalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Check a journal (SQLite file or PostgreSQL database), bring its schema forward, or prune old runs.",
        discussion: """
            A journal is a SQLite file (journal.path in pushcamp.yaml, the default) or a PostgreSQL \
            database named by a URL: postgres://USER@HOST:5432/DATABASE, with ?sslmode=disable for \
            a server on loopback or a private network only (by default the server's certificate and \
            host name are verified; ?sslrootcert=FILE names the authorities to trust). The password \
            is never in the URL: it is read from PGPASSWORD, or from the variable --password-env names.

            Examples:
              pushcamp journal check
              pushcamp journal check --journal postgres://pushcamp@db:5432/pushcamp
              PGPASSWORD=… pushcamp journal migrate --journal postgres://db/pushcamp
              pushcamp journal prune --older-than 180d --dry-run
            """,
        subcommands: [Check.self, Migrate.self, Prune.self]
    )

    struct Target: ParsableArguments {
        @OptionGroup var projectOption: ProjectOption
        @OptionGroup var location: JournalLocationOption

        /// The journal named by the options, else by the nearest pushcamp.yaml; prints the problem
        /// and exits 1 when it cannot be said.
        func access() throws -> JournalAccess {
            switch ProjectJournal.setting(workingDirectory: projectOption.directory) {
            case .success(let setting): return try location.access(setting)
            case .failure(let error):
                guard let journal = location.journal else {
                    throw Failure(error.description, exitCode: 1)
                }
                return try location.access(JournalSetting(path: journal))
            }
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say what the journal is, whether it answers, and its schema version.",
            discussion: """
                Exit status: 0 when the journal answers and this pushcamp can use it; 1 when it cannot \
                be reached or opened, has not been migrated, or was migrated by a newer pushcamp.
                """
        )

        @OptionGroup var target: Target

        func run() async throws {
            try await target.access().check { print($0) }
        }
    }

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the journal, or bring its schema to this pushcamp's version.",
            discussion: """
                Safe to run on every node at once: PostgreSQL migrates under an advisory lock, in one \
                transaction, so one node migrates and the others find nothing left to do. A journal \
                migrated by a newer pushcamp is refused, never changed. Every command that writes to \
                the journal (send, serve, cancel, …) also brings it forward when it opens it.
                """
        )

        @OptionGroup var target: Target

        func run() async throws {
            print(try await target.access().migrate())
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop the per-recipient rows of runs that ended long ago, keeping their reports.",
            discussion: """
                A journal keeps a row (or a share of a range) for every recipient of every run. For \
                each run that ended for good (finished, cancelled, superseded or expired: never \
                resumed) before the cutoff, prune keeps with the run's statistics every figure its \
                report shows (counts, failures by reason, answers per second), then drops its \
                recipients' rows, the ranges of those sent and delivered, and a sliced run's \
                snapshot: one run per transaction, oldest first. `runs`, `report` and the console \
                show a pruned run as before; `replay` refuses it (who failed is gone).

                Kept: every run, dead tokens (the suppression list), possible duplicates, schedule \
                slots, trigger firings, App Store notifications, a test's assignments and \
                engagement. An interrupted run is kept whole: a send may resume it.

                A frequency cap counts deliveries from the rows of the runs within its window, so \
                the cutoff may not be younger than the project's longest cap (pushcamp.yaml's \
                default and every campaign's under serve.campaigns): a shorter --older-than is \
                refused. `serve` prunes on its own with journal.retention in pushcamp.yaml.

                A SQLite file keeps the freed pages for its next rows (run `sqlite3 FILE VACUUM` to \
                give them back to the disk); PostgreSQL's autovacuum reuses them.

                Examples:
                  pushcamp journal prune --older-than 180d --dry-run
                  pushcamp journal prune --older-than 90d
                  pushcamp journal prune --ended-before 2026-06-01T00:00:00Z
                """
        )

        @Option(help: ArgumentHelp("Prune runs that ended longer ago than this (90d, 24h).", valueName: "duration"))
        var olderThan: String?

        @Option(help: ArgumentHelp("Prune runs that ended before this time (2026-06-01T00:00:00Z).", valueName: "time"))
        var endedBefore: String?

        @Flag(help: "List the runs that would be pruned; change nothing.")
        var dryRun = false

        @OptionGroup var target: Target

        func run() async throws {
            let now = SystemWallClock().now()
            let cutoff = try cutoff(now: now)
            guard
                case .success(let (project, paths)) = ProjectJournal.project(
                    workingDirectory: target.projectOption.directory
                )
            else {
                throw Failure(
                    "error: prune reads the project's frequency caps first: run it inside the project, or name it with --project",
                    exitCode: 1
                )
            }
            if let floor = RetentionFloor.of(project, paths: paths), cutoff > now - Double(floor.window.seconds) {
                throw Failure(
                    """
                    error: \(floor.source) caps deliveries over \(floor.window), counted from the rows of the runs \
                    within it; prune runs that ended more than \(floor.window) ago (--older-than \(floor.window) or \
                    more), or the cap would let recipients through
                    """,
                    exitCode: 1
                )
            }
            let access = try target.access()
            // Pruning never creates a journal: a file not there yet has nothing to prune.
            var exists = true
            if case .file(let path) = access.kind { exists = FileManager.default.fileExists(atPath: path) }
            let pruned = try await JournalLocationOption.withJournal(access, readOnly: dryRun || !exists) { journal in
                guard let journal else { return [Retention.Pruned]() }
                return try await Retention.prune(journal, endedBefore: cutoff, now: now, dryRun: dryRun)
            }
            for item in pruned {
                let run = item.run
                let rows = dryRun ? "" : ": \(item.rows) rows dropped"
                print("run \(run.id) (\(run.campaign)) \(run.status.rawValue) \(Timestamps.text(run.updatedAt))\(rows)")
            }
            let when = Timestamps.text(cutoff)
            if dryRun {
                print("\(pruned.count) run\(pruned.count == 1 ? "" : "s") ended before \(when) would be pruned")
            } else {
                let rows = pruned.reduce(0) { $0 + $1.rows }
                print(
                    "pruned \(pruned.count) run\(pruned.count == 1 ? "" : "s") ended before \(when): \(rows) rows dropped; "
                        + "their reports keep their figures"
                )
            }
        }

        /// The cutoff `--older-than` or `--ended-before` names (one of them, not both).
        func cutoff(now: Double) throws -> Double {
            switch (olderThan, endedBefore) {
            case (let text?, nil):
                guard case .success(let span) = TimeSpan.parse(text) else {
                    throw Failure(
                        "error: --older-than: '\(text)' is not a duration; write it like 90d or 24h",
                        exitCode: 64
                    )
                }
                return now - Double(span.seconds)
            case (nil, let text?):
                guard case .success(let time) = Timestamp.parse(text) else {
                    throw Failure(
                        "error: --ended-before: '\(text)' is not a time; write it like 2026-06-01T00:00:00Z",
                        exitCode: 64
                    )
                }
                return Double(time.secondsSince1970)
            default:
                throw Failure(
                    "error: name which runs to prune: --older-than DURATION or --ended-before TIME",
                    exitCode: 64
                )
            }
        }
    }
}
