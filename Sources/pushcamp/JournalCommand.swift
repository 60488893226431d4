import ArgumentParser
import Foundation
import PushcampJournal
import PushcampJournalAccess
import PushcampModel
import PushcampPlanner

/// `pushcamp journal`: what a journal is, whether it answers, and its schema brought forward.
struct JournalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Check a journal (SQLite file or PostgreSQL database) or bring its schema forward.",
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
            """,
        subcommands: [Check.self, Migrate.self]
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
}
