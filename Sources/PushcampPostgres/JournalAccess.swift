import Foundation
import Logging
import PushcampJournal
import PushcampModel

/// How every command reaches its journal: a SQLite file, a PostgreSQL database (by URL), or
/// memory (`:memory:`, gone when the process ends). The only place outside the stores that
/// knows which store a journal is; everything above holds an `any Journal`.
public struct JournalAccess: Sendable {
    public enum Kind: Sendable, Equatable {
        case file(String)
        case postgres(PostgresJournal.Address)
        case memory
    }

    public let kind: Kind
    /// The environment variable holding the PostgreSQL password (PGPASSWORD when nil).
    public let passwordVariable: String?
    let environment: [String: String]

    /// The address that means "in memory, gone when the process ends".
    public static let inMemory = ":memory:"

    /// The journal at `address`: a `postgres://` (or `postgresql://`) URL, `:memory:`, or a file.
    public init(
        _ address: String,
        passwordVariable: String? = nil,
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
        self.environment = environment
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

    /// The journal to keep open for a long-running process, and the PostgreSQL client to run in
    /// its `ServiceGroup` (nil for the others). Bring the schema forward first with `connect`.
    public func open(
        maximumConnections: Int = 20,
        logger: Logger = Logger(label: "pushcamp.journal")
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
                logger: logger
            )
            return (journal, journal)
        case .memory:
            return (MemoryJournal(), nil)
        }
    }

    /// A journal opened for one command: its PostgreSQL client runs in a task until `close()`.
    public struct Opened: Sendable {
        public let journal: any Journal
        let client: Task<Void, Never>?

        /// A journal with nothing in it, for reading a project that has sent nothing yet: its
        /// lists are empty, as they would be in a new journal.
        public static func empty() -> Opened { Opened(journal: MemoryJournal(), client: nil) }

        /// Stops the PostgreSQL client (nothing to do for the others).
        public func close() async {
            client?.cancel()
            await client?.value
        }
    }

    /// Opens the journal for a command, its schema brought forward (only checked when
    /// `readOnly`: then a journal never migrated is an error, and a SQLite file that does not
    /// exist is nil, since reading never creates one).
    public func connect(
        readOnly: Bool = false,
        logger: Logger = Logger(label: "pushcamp.journal")
    ) async throws(JournalError) -> Opened? {
        switch kind {
        case .file(let path):
            if readOnly && !FileManager.default.fileExists(atPath: path) { return nil }
            return Opened(journal: try SQLiteJournal(path: path, readOnly: readOnly), client: nil)
        case .memory:
            return Opened(journal: MemoryJournal(), client: nil)
        case .postgres:
            let (journal, client) = try open(maximumConnections: 4, logger: logger)
            let opened = Opened(journal: journal, client: Task { await client?.run() })
            do {
                if readOnly {
                    try await client?.checkVersion()
                } else {
                    _ = try await client?.migrate()
                }
            } catch {
                await opened.close()
                throw error
            }
            return opened
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
            let (_, client) = try open(maximumConnections: 2)
            guard let client else { return }
            let running = Task { await client.run() }
            defer { running.cancel() }
            guard let version = try await client.version() else {
                throw JournalError(.cannotOpen, "not a Pushcamp journal yet: run `pushcamp journal migrate`")
            }
            report("schema: version \(version) (this pushcamp: \(PostgresJournal.schemaVersion))")
            try await client.checkVersion()
            report("state: ready")
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
            let (_, client) = try open(maximumConnections: 2)
            guard let client else { return "" }
            let running = Task { await client.run() }
            defer { running.cancel() }
            let applied = try await client.migrate()
            let what =
                applied.isEmpty
                ? "already at schema version \(PostgresJournal.schemaVersion)"
                : "migrated to schema version \(PostgresJournal.schemaVersion) (applied \(applied.map(String.init).joined(separator: ", ")))"
            return "journal: PostgreSQL \(address.name) \(what)"
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
