import Foundation
import Logging
import PostgresNIO
import PushcampJournal
import PushcampPostgres
import PushcampTestSupport
import Testing

/// What only the PostgreSQL journal has: its schema versions, its URL, its server's failures.
@Suite("The PostgreSQL journal")
struct PostgresJournalTests {
    @Test func nodesStartingAtOnceOnAnEmptyDatabaseMigrateItOnce() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let (_, url) = try TestPostgres.newDatabase()
        let nodes = try (0..<4).map { _ in try Store.postgres(url, in: project) }
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for node in nodes { group.addTask { try await node.migrate() } }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        #expect(applied == Array(1...PostgresJournal.schemaVersion))
        #expect(try await nodes[0].version() == PostgresJournal.schemaVersion)
        try await nodes[1].checkVersion()
        #expect(try await nodes[2].migrate().isEmpty)
    }

    @Test func aSchemaNewerThanThisBuildIsRefusedAndAnEmptyOneAskedToMigrate() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let (name, url) = try TestPostgres.newDatabase()
        let journal = try Store.postgres(url, in: project)
        do {
            try await journal.checkVersion()
            Issue.record("an empty database passed the version check")
        } catch {
            #expect(error.message.contains("is not a Pushcamp journal yet: run `pushcamp journal migrate`"))
        }
        try await journal.migrate()
        let server = try TestPostgres.server()
        try TestPostgres.psql(
            server.on(database: name),
            "INSERT INTO pushcamp_schema (version, name) VALUES (\(PostgresJournal.schemaVersion + 1), 'from the future')"
        )
        for attempt in [{ try await journal.checkVersion() }, { _ = try await journal.migrate() }]
            as [@Sendable () async throws -> Void]
        {
            do {
                try await attempt()
                Issue.record("a newer schema was accepted")
            } catch let error as JournalError {
                #expect(error.code == .newerVersion)
                #expect(error.message.contains("newer than this Pushcamp knows"))
            }
        }
    }

    @Test func aDatabaseWithTablesOfItsOwnIsNotTakenOver() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let (name, url) = try TestPostgres.newDatabase()
        try TestPostgres.psql(try TestPostgres.server().on(database: name), "CREATE TABLE orders (id int)")
        let journal = try Store.postgres(url, in: project)
        do {
            try await journal.migrate()
            Issue.record("someone else's database was migrated")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.contains("has tables of its own (orders)"))
        }
    }

    /// A node frozen (SIGSTOP, a paused VM) between two statements of a transaction holds its row
    /// locks (here a lease `FOR SHARE`, as a slice's close does) for as long as it is frozen, and
    /// a takeover of that lease waits on them: the server ends such a session after the journal's
    /// idle limit, the takeover goes through, and the frozen node, woken, finds its transaction
    /// gone rather than committing it.
    @Test func aTransactionLeftIdleByAFrozenNodeIsEndedAndItsLocksFreed() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let (_, url) = try TestPostgres.newDatabase()
        // Woken, the frozen node's next statement on its ended session may not be answered
        // (postgres-nio 1.33): its deadline ends the call, as a node's journal timeout would.
        let frozen = try Store.postgres(url, in: project, timeout: .seconds(20), idleInTransaction: .seconds(1))
        // Without the limit, the takeover would wait for the lock until this deadline.
        let other = try Store.postgres(url, in: project, timeout: .seconds(60))
        try await other.migrate()
        let resource = "run:1/slice:0"
        let held = try #require(try await frozen.acquire(resource, owner: "frozen", duration: 0.2))

        let (locked, lockedNow) = AsyncStream.makeStream(of: Void.self)
        let (woken, wake) = AsyncStream.makeStream(of: Void.self)
        async let frozenTransaction: Result<Void, any Error> = {
            do {
                try await frozen.transaction { connection in
                    _ = try await connection.query(
                        "SELECT 1 FROM lease WHERE resource = \(resource) AND fence = \(held.fence) FOR SHARE",
                        logger: Logger(label: "test")
                    ).collect()
                    lockedNow.yield()
                    for await _ in woken { break }  // frozen here, inside the transaction
                    _ = try await connection.query("SELECT 1", logger: Logger(label: "test")).collect()
                }
                return .success(())
            } catch {
                return .failure(error)
            }
        }()
        for await _ in locked { break }

        // The other node takes the expired lease over: its statement waits on the frozen lock
        // until the server ends the frozen session.
        var taken: Lease?
        while taken == nil {
            taken = try await other.acquire(resource, owner: "other", duration: 30)
        }
        #expect(taken?.fence == held.fence + 1)
        wake.yield()
        switch await frozenTransaction {
        case .success: Issue.record("the frozen node's transaction committed after its session was ended")
        case .failure: break
        }
        #expect(try await other.lease(of: resource)?.owner == "other")
    }

    @Test func aServerThatDoesNotAnswerIsACleanErrorNamingItNeverAHang() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        // Port 1 on loopback: nothing listens there.
        let journal = try Store.postgres(
            "postgres://pushcamp@127.0.0.1:1/journal?sslmode=disable",
            in: project,
            timeout: .seconds(2)
        )
        for attempt in 0..<2 {
            do {
                _ = try await journal.runs(limit: 1)
                Issue.record("a query answered without a server")
            } catch {
                #expect(error.code == .cannotOpen, "attempt \(attempt)")
                #expect(error.message.hasPrefix("cannot reach the journal 127.0.0.1:1/journal"), "\(error.message)")
            }
        }
    }

    /// How postgres-nio's connection failures are said, from the descriptions it gives them: a
    /// refused port, a cut link, a dropped connection, a silent one, pg_hba, a wrong password.
    @Test(
        arguments: [
            (
                "PSQLError(code: connectionError, underlying: Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:5432, error: connection reset (error set): Connection refused (errno: 111)))",
                "connection refused"
            ),
            (
                "SingleConnectionFailure(target: [IPv4]10.231.40.2/10.231.40.2:46425, error: connection reset (error set): No route to host) (errno: 113)",
                "no route to the server (its network is down or cut off)"
            ),
            (
                "PSQLError(code: connectionError, underlying: Connection errors: SingleConnectionFailure(target: [IPv4]10.231.221.2/10.231.221.2:53259, error: connection reset (no error set): Connection reset by peer) (errno: 104)))",
                "the connection was dropped (the server closed it, or its network cut it)"
            ),
            (
                "connectTimeout(TimeAmount(nanoseconds: 5000000000))",
                "the connection timed out (the server or its network does not answer)"
            ),
            (
                "server: no pg_hba.conf entry for host \"10.0.0.9\", user \"pushcamp\" (28000)",
                "the server refused the connection: this host, user or database is not let in (pg_hba.conf)"
            ),
            (
                "server: password authentication failed for user \"pushcamp\" (28P01)",
                "the server refused the user or password (PGPASSWORD, or the variable --password-env names)"
            ),
        ]
    )
    func connectionFailuresAreSaidInWords(description: String, words: String) {
        #expect(ConnectionProblems.words(for: description) == words)
    }

    @Test func aURLSaysWhatIsWrongAndNeverRepeatsAPassword() throws {
        func refusal(_ url: String) -> String? {
            do {
                _ = try PostgresJournal.Address(url: url)
                return nil
            } catch {
                return error.message
            }
        }
        let secret = "hunter2-s3cret"
        let withPassword = try #require(refusal("postgres://app:\(secret)@db.internal:5432/pushcamp"))
        #expect(withPassword.contains("must not carry a password") && !withPassword.contains(secret))
        #expect(refusal("mysql://app@db/pushcamp")?.contains("is named by a postgres://") == true)
        #expect(refusal("postgres://app@db.internal:5432/")?.contains("names no database") == true)
        #expect(refusal("postgres://db.internal/pushcamp")?.contains("names no user") == true)
        #expect(refusal("postgres://app@db/pushcamp?sslmode=allow")?.contains("sslmode must be verify-full") == true)
        #expect(refusal("postgres://app@db/pushcamp?timeout=3")?.contains("unknown parameter 'timeout'") == true)

        let address = try PostgresJournal.Address(url: "postgres://app@db.internal/pushcamp")
        #expect(address.port == 5432 && address.tls == .verifyFull && address.name == "db.internal:5432/pushcamp")
        #expect(try PostgresJournal.Address(url: "postgresql://app@10.0.0.5:6432/j?sslmode=disable").tls == .disable)
        do {
            _ = try PostgresJournal.connect(address, passwordVariable: "PUSHCAMP_JOURNAL_PASSWORD", environment: [:])
            Issue.record("a password variable that is not set was accepted")
        } catch {
            #expect(
                error.message
                    == "the password variable PUSHCAMP_JOURNAL_PASSWORD is not set in the environment"
            )
        }
    }
}
