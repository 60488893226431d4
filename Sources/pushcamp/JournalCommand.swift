import ArgumentParser
import Foundation
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampPostgres

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
              pushcamp journal check --journal postgres://pushcamp@db.internal:5432/pushcamp
              PGPASSWORD=… pushcamp journal migrate --journal postgres://pushcamp@db.internal/pushcamp
            """,
        subcommands: [Check.self, Migrate.self]
    )

    struct Target: ParsableArguments {
        @OptionGroup var projectOption: ProjectOption

        @Option(
            help: ArgumentHelp(
                "The journal: a SQLite file, or a postgres:// URL (default: journal.path of the nearest pushcamp.yaml).",
                valueName: "file-or-url"
            )
        )
        var journal: String?

        @Option(
            help: ArgumentHelp(
                "The environment variable holding the PostgreSQL password (default: PGPASSWORD).",
                valueName: "name"
            )
        )
        var passwordEnv: String?

        enum Location {
            case sqlite(String)
            case postgres(PostgresJournal.Address)
        }

        /// Where the journal is; prints the problem and exits 1 when it cannot be said.
        func location() throws -> Location {
            if let journal, journal.hasPrefix("postgres://") || journal.hasPrefix("postgresql://") {
                do {
                    return .postgres(try PostgresJournal.Address(url: journal))
                } catch {
                    printError("error: --journal: \(error.message)")
                    throw ExitCode(1)
                }
            }
            if let journal { return .sqlite(journal) }
            switch ProjectJournal.path(workingDirectory: projectOption.directory) {
            case .success(let path): return .sqlite(path)
            case .failure(let error):
                printError(error.description)
                throw ExitCode(1)
            }
        }

        /// Runs `body` with the PostgreSQL journal at `address`, its client running meanwhile.
        func withPostgres<T: Sendable>(
            _ address: PostgresJournal.Address,
            _ body: @escaping @Sendable (PostgresJournal) async throws -> T
        ) async throws -> T {
            let journal: PostgresJournal
            do {
                journal = try PostgresJournal.connect(address, passwordVariable: passwordEnv, maximumConnections: 2)
            } catch {
                printError("error: \(error.message)")
                throw ExitCode(1)
            }
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask {
                    await journal.run()
                    return nil
                }
                defer { group.cancelAll() }
                return try await body(journal)
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
            switch try target.location() {
            case .sqlite(let path):
                print("journal: SQLite file \(path)")
                guard FileManager.default.fileExists(atPath: path) else {
                    print("state: none yet (the first send or `pushcamp journal migrate` creates it)")
                    return
                }
                do {
                    let journal = try SQLiteJournal(path: path, readOnly: true)
                    let version = try await journal.appliedVersion()
                    print("schema: version \(version) (this pushcamp: \(SQLiteJournal.schemaVersion))")
                    let runs = try await journal.runs(limit: 1).first.map { "latest run \($0.id)" } ?? "no runs yet"
                    print("state: ready (\(runs))")
                } catch {
                    printError("error: \(error.message)")
                    throw ExitCode(1)
                }
            case .postgres(let address):
                print("journal: PostgreSQL \(address.name) (\(Self.tls(address)))")
                let outcome: Result<String, JournalError> = try await target.withPostgres(address) { journal in
                    do throws(JournalError) {
                        let version = try await journal.version()
                        guard let version else {
                            return .failure(
                                JournalError(.cannotOpen, "not a Pushcamp journal yet: run `pushcamp journal migrate`")
                            )
                        }
                        print("schema: version \(version) (this pushcamp: \(PostgresJournal.schemaVersion))")
                        try await journal.checkVersion()
                        return .success("state: ready")
                    } catch {
                        return .failure(error)
                    }
                }
                switch outcome {
                case .success(let line): print(line)
                case .failure(let error):
                    printError("error: \(error.message)")
                    throw ExitCode(1)
                }
            }
        }

        static func tls(_ address: PostgresJournal.Address) -> String {
            switch address.tls {
            case .disable: "no TLS: sslmode=disable"
            case .verifyFull: "TLS, certificate and host name verified"
            }
        }
    }

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the journal, or bring its schema to this pushcamp's version.",
            discussion: """
                Safe to run on every node at once: PostgreSQL migrates under an advisory lock, in one \
                transaction, so one node migrates and the others find nothing left to do. A journal \
                migrated by a newer pushcamp is refused, never changed. Every other command also \
                migrates a SQLite journal forward when it first writes to it.
                """
        )

        @OptionGroup var target: Target

        func run() async throws {
            switch try target.location() {
            case .sqlite(let path):
                do {
                    let journal = try SQLiteJournal(path: path)
                    print("journal: SQLite file \(path) at schema version \(try await journal.appliedVersion())")
                } catch {
                    printError("error: \(error.message)")
                    throw ExitCode(1)
                }
            case .postgres(let address):
                let outcome: Result<[Int], JournalError> = try await target.withPostgres(address) { journal in
                    do throws(JournalError) {
                        return .success(try await journal.migrate())
                    } catch {
                        return .failure(error)
                    }
                }
                switch outcome {
                case .success(let applied):
                    let what =
                        applied.isEmpty
                        ? "already at schema version \(PostgresJournal.schemaVersion)"
                        : "migrated to schema version \(PostgresJournal.schemaVersion) (applied \(applied.map(String.init).joined(separator: ", ")))"
                    print("journal: PostgreSQL \(address.name) \(what)")
                case .failure(let error):
                    printError("error: \(error.message)")
                    throw ExitCode(1)
                }
            }
        }
    }
}
