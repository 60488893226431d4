import Foundation
import Logging
import PushcampAudience
import PushcampJournal
import PushcampModel
import PushcampPostgres
import ServiceLifecycle

/// How every command reaches its journal: a SQLite file, a PostgreSQL database (by URL), or
/// memory (`:memory:`, gone when the process ends). The only place outside the stores that
/// knows which store a journal is; everything above holds an `any Journal`.
///
/// A long-running process (`serve`) opens the journal with `open` and runs its PostgreSQL client
/// as a `Service` in its group; a one-shot command uses it within `withJournal { }`, which runs
/// the client as a child task beside the command's work and stops it, awaited, when that ends.
public struct JournalAccess: Sendable {
    public enum Kind: Sendable, Equatable {
        case file(String)
        case postgres(PostgresJournal.Address)
        case memory
    }

    public let kind: Kind
    /// The environment variable holding the PostgreSQL password (PGPASSWORD when nil).
    public let passwordVariable: String?
    /// Seconds the project's leases last (`journal.lease`), when it says.
    public let lease: Double?
    let environment: [String: String]

    /// The address that means "in memory, gone when the process ends".
    public static let inMemory = ":memory:"

    /// The journal at `address`: a `postgres://` (or `postgresql://`) URL, `:memory:`, or a file.
    public init(
        _ address: String,
        passwordVariable: String? = nil,
        lease: Double? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(JournalError) {
        if Project.namesPostgres(address) {
            kind = .postgres(try PostgresJournal.Address(url: address))
        } else if address == Self.inMemory {
            kind = .memory
        } else {
            kind = .file(address)
        }
        self.passwordVariable = passwordVariable
        self.lease = lease
        self.environment = environment
    }

    /// How long PostgreSQL lets one of this process's sessions sit idle inside a transaction
    /// before ending it: half a lease, and at most 5 s (no transaction of the journal waits on
    /// anything but the network between its statements), so a frozen node's row locks are gone
    /// before its leases expire and a takeover never waits on them.
    public var idleInTransaction: Duration {
        .milliseconds(Int64(min(5, (lease ?? 15) / 2) * 1000))
    }

    /// How messages name it: the file's path, `host:port/database`, or "memory".
    public var name: String {
        switch kind {
        case .file(let path): path
        case .postgres(let address): address.name
        case .memory: "memory"
        }
    }

    /// Whether other processes, on other machines too, may share it.
    public var isShared: Bool {
        if case .postgres = kind { return true }
        return false
    }

    /// The journal to keep open for a long-running process, and the service to run in its
    /// `ServiceGroup` for it (PostgreSQL's client; nil for the others). Bring the schema forward
    /// first with `withJournal`.
    public func open(
        maximumConnections: Int = 20,
        logger: Logger = Logger(label: "pushcamp.journal")
    ) throws(JournalError) -> (journal: any Journal, client: (any Service)?) {
        let (journal, client) = try openClient(maximumConnections: maximumConnections, logger: logger)
        return (journal, client)
    }

    func openClient(
        maximumConnections: Int,
        logger: Logger
    ) throws(JournalError) -> (journal: any Journal, client: PostgresJournal?) {
        switch kind {
        case .file(let path):
            return (try SQLiteJournal(path: path), nil)
        case .postgres(let address):
            let journal = try PostgresJournal.connect(
                address,
                passwordVariable: passwordVariable,
                environment: environment,
                maximumConnections: maximumConnections,
                idleInTransaction: idleInTransaction,
                logger: logger
            )
            return (journal, journal)
        case .memory:
            return (MemoryJournal(), nil)
        }
    }

    /// Runs `body` with the journal open for one command, its schema brought forward (only
    /// checked when `readOnly`: then a journal never migrated is an error, and a SQLite file that
    /// does not exist is given as nil, since reading never creates one). A PostgreSQL client runs
    /// as a child task beside `body` and is stopped, awaited, when `body` returns or throws.
    public func withJournal<T>(
        readOnly: Bool = false,
        logger: Logger = Logger(label: "pushcamp.journal"),
        _ body: ((any Journal)?) async throws -> T
    ) async throws -> T {
        switch kind {
        case .file(let path):
            if readOnly && !FileManager.default.fileExists(atPath: path) { return try await body(nil) }
            return try await body(try SQLiteJournal(path: path, readOnly: readOnly))
        case .memory:
            return try await body(MemoryJournal())
        case .postgres:
            let (journal, client) = try openClient(maximumConnections: 4, logger: logger)
            guard let client else { return try await body(journal) }
            return try await Self.running(client) {
                if readOnly {
                    try await client.checkVersion()
                } else {
                    _ = try await client.migrate()
                }
                return try await body(journal)
            }
        }
    }

    /// `body` with `client` running beside it as a child task (postgres-nio's `run()`), stopped
    /// and awaited when `body` ends.
    static func running<T>(_ client: PostgresJournal, _ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }  // the connection pool, for as long as `body` runs
            defer { group.cancelAll() }
            return try await body()
        }
    }
}

extension JournalAccess {
    /// What `pushcamp journal check` prints: what the journal is, its schema version, and whether
    /// this pushcamp can use it. Throws when it cannot be reached or used.
    public func check(report: @Sendable (String) -> Void) async throws(JournalError) {
        switch kind {
        case .memory:
            report("journal: in memory (gone when the process ends)")
        case .file(let path):
            report("journal: SQLite file \(path)")
            guard FileManager.default.fileExists(atPath: path) else {
                report("state: none yet (the first send or `pushcamp journal migrate` creates it)")
                return
            }
            let journal = try SQLiteJournal(path: path, readOnly: true)
            let version = try await journal.appliedVersion()
            report("schema: version \(version) (this pushcamp: \(SQLiteJournal.schemaVersion))")
            let runs = try await journal.runs(limit: 1).first.map { "latest run \($0.id)" } ?? "no runs yet"
            report("state: ready (\(runs))")
        case .postgres(let address):
            report("journal: PostgreSQL \(address.name) (\(address.tlsDescription))")
            let (_, client) = try openClient(maximumConnections: 2, logger: Logger(label: "pushcamp.journal"))
            guard let client else { return }
            try await Self.typed {
                try await Self.running(client) {
                    guard let version = try await client.version() else {
                        throw JournalError(.cannotOpen, "not a Pushcamp journal yet: run `pushcamp journal migrate`")
                    }
                    report("schema: version \(version) (this pushcamp: \(PostgresJournal.schemaVersion))")
                    try await client.checkVersion()
                    report("state: ready")
                }
            }
        }
    }

    /// What `pushcamp doctor` says of the journal in one line: whether it opens for reading, and
    /// its latest run; `problem` when it cannot be used.
    public func checkup() async -> (problem: Bool, detail: String) {
        let notYet = "no file yet; the first send creates it"
        if case .file(let path) = kind, !FileManager.default.fileExists(atPath: path) { return (false, notYet) }
        do {
            let runs = try await withJournal(readOnly: true) { journal in try await journal?.runs(limit: 1) }
            guard let runs else { return (false, notYet) }
            return (false, runs.first.map { "opens; last run \($0.id) (\($0.campaign))" } ?? "opens; no runs yet")
        } catch {
            return (true, (error as? JournalError)?.message ?? "\(error)")
        }
    }

    /// Creates the journal, or brings its schema to this pushcamp's version; says which.
    public func migrate() async throws(JournalError) -> String {
        switch kind {
        case .memory:
            return "journal: in memory, nothing to migrate"
        case .file(let path):
            let journal = try SQLiteJournal(path: path)
            return "journal: SQLite file \(path) at schema version \(try await journal.appliedVersion())"
        case .postgres(let address):
            let (_, client) = try openClient(maximumConnections: 2, logger: Logger(label: "pushcamp.journal"))
            guard let client else { return "" }
            let applied = try await Self.typed { try await Self.running(client) { try await client.migrate() } }
            let what =
                applied.isEmpty
                ? "already at schema version \(PostgresJournal.schemaVersion)"
                : "migrated to schema version \(PostgresJournal.schemaVersion) (applied \(applied.map(String.init).joined(separator: ", ")))"
            return "journal: PostgreSQL \(address.name) \(what)"
        }
    }
}

extension JournalAccess {
    /// `body`'s journal error as it is; any other error (a cancellation) as a journal failure.
    static func typed<T>(_ body: () async throws -> T) async throws(JournalError) -> T {
        do {
            return try await body()
        } catch let error as JournalError {
            throw error
        } catch {
            throw JournalError(.failed, "\(error)")
        }
    }
}

extension PostgresJournal.Address {
    /// How the connection is protected, for `journal check`.
    public var tlsDescription: String {
        switch tls {
        case .disable: "no TLS: sslmode=disable"
        case .verifyFull: "TLS, certificate and host name verified"
        }
    }
}

extension JournalAccess {
    /// What opens audiences kept on a database server (`source: { postgres: … }`) for the commands'
    /// campaign loader: PostgreSQL, as the journal is reached, with `PGPASSWORD` from the
    /// environment.
    public static var audienceServers: any AudienceServers { PostgresAudiences() }
}
