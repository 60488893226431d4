import Foundation
import PushcampTestSupport
import Testing

/// `pushcamp journal check|migrate` against the built binary: a SQLite file, and a real PostgreSQL
/// database on the tests' throwaway cluster.
@Suite("pushcamp journal from the command line")
struct JournalCommandCLITests {
    @Test func aPostgreSQLJournalIsMigratedOnceAndCheckedAsReady() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        let (_, url) = try TestPostgres.newDatabase()
        let before = try CLI.run(["journal", "check", "--journal", url], in: project.root)
        #expect(before.status == 1)
        #expect(before.stdout.hasPrefix("journal: PostgreSQL 127.0.0.1:"), "\(before.stdout)")
        #expect(before.stdout.contains("(no TLS: sslmode=disable)"))
        #expect(
            before.stderr == "error: not a Pushcamp journal yet: run `pushcamp journal migrate`\n",
            "\(before.stderr)"
        )

        let migrated = try CLI.run(["journal", "migrate", "--journal", url], in: project.root)
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(
            migrated.stdout.hasSuffix("migrated to schema version 11 (applied 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)\n"),
            "\(migrated.stdout)"
        )
        let again = try CLI.run(["journal", "migrate", "--journal", url], in: project.root)
        #expect(again.stdout.hasSuffix("already at schema version 11\n"), "\(again.stdout)")

        let ready = try CLI.run(["journal", "check", "--journal", url], in: project.root)
        #expect(ready.status == 0, "\(ready.stderr)")
        #expect(ready.stdout.contains("schema: version 11 (this pushcamp: 11)\nstate: ready\n"), "\(ready.stdout)")
        #expect(ready.stderr.isEmpty, "\(ready.stderr)")
    }

    @Test func aJournalThatCannotBeUsedSaysWhyAndNeverRepeatsAPassword() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        let server = try TestPostgres.server()
        let secret = "s3cret-Pa55"
        let withPassword = try CLI.run(
            ["journal", "check", "--journal", "postgres://pushcamp:\(secret)@127.0.0.1:\(server.port)/x"],
            in: project.root
        )
        #expect(withPassword.status == 1)
        #expect(withPassword.stderr.contains("must not carry a password"))
        #expect(!(withPassword.stdout + withPassword.stderr).contains(secret))
        // The cluster offers no TLS, and TLS is verified unless the URL says otherwise.
        let (_, url) = try TestPostgres.newDatabase()
        let tls = try CLI.run(
            ["journal", "check", "--journal", url.replacingOccurrences(of: "?sslmode=disable", with: "")],
            in: project.root
        )
        #expect(tls.status == 1)
        #expect(tls.stderr.contains(": the server does not offer TLS"), "\(tls.stderr)")
        let missing = try CLI.run(
            ["journal", "check", "--journal", server.url("no_such_database")],
            in: project.root
        )
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("the database does not exist"), "\(missing.stderr)")
    }

    @Test func theProjectsSQLiteJournalIsCreatedByMigrateAndChecked() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        let none = try CLI.run(["journal", "check"], in: project.root)
        #expect(none.status == 0)
        #expect(none.stdout.hasSuffix("state: none yet (the first send or `pushcamp journal migrate` creates it)\n"))
        let created = try CLI.run(["journal", "migrate"], in: project.root)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.contains(".pushcamp/journal.sqlite at schema version 18"), "\(created.stdout)")
        let ready = try CLI.run(["journal", "check"], in: project.root)
        #expect(
            ready.stdout.contains("schema: version 18 (this pushcamp: 18)\nstate: ready (no runs yet)\n"),
            "\(ready.stdout)"
        )
    }
}
