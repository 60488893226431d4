import Foundation
import Logging
import PostgresNIO
import PushcampJournal
import ServiceLifecycle

/// The journal on PostgreSQL: every concern of `Journal` in one database that several `pushcamp`
/// processes on several machines share. The same answers as `SQLiteJournal` and `MemoryJournal`
/// (one contract suite holds all three to them); what differs is what the database does for it:
/// a slot or a firing is claimed in one transaction across every node (a unique key, `SKIP
/// LOCKED`), and a notification is stored once per UUID (`ON CONFLICT DO NOTHING`).
///
/// A `Service`: `run()` runs postgres-nio's `PostgresClient` (its connection pool), and nothing
/// reaches the database until it does. Put it in the `ServiceGroup` of whatever uses it.
public final class PostgresJournal: Service, Sendable {
    let client: PostgresClient
    let logger: Logger
    /// Why the pool could not connect, last time it could not.
    let problems: ConnectionProblems
    /// How messages name the journal: `host:port/database`, never the password.
    public let name: String
    /// How long one call may take, waiting for a connection included, before it fails as
    /// unreachable: a caller (the App Store receiver's 503, a sender's lease) must hear of an
    /// unreachable database in time to act on it, not when the pool gives up.
    public let timeout: Duration

    package init(
        client: PostgresClient,
        name: String,
        timeout: Duration = .seconds(10),
        problems: ConnectionProblems = ConnectionProblems(),
        logger: Logger = Logger(label: "pushcamp.journal")
    ) {
        self.client = client
        self.name = name
        self.timeout = timeout
        self.problems = problems
        self.logger = logger
    }

    public func run() async {
        await client.run()
    }

    // MARK: queries and errors

    /// Runs `query` and collects its rows (every query the journal makes answers a bounded page).
    func rows(_ query: PostgresQuery) async throws(JournalError) -> [PostgresRandomAccessRow] {
        let (client, logger) = (self.client, self.logger)
        return try await withDeadline {
            var rows: [PostgresRandomAccessRow] = []
            for try await row in try await client.query(query, logger: logger) { rows.append(row.makeRandomAccess()) }
            return rows
        }
    }

    /// The rows `query` answers, each made a value by `transform`: a row that does not decode is
    /// the journal's error, like any other.
    func rows<T>(
        _ query: PostgresQuery,
        _ transform: (PostgresRandomAccessRow) throws -> T
    ) async throws(JournalError) -> [T] {
        let rows = try await rows(query)
        do {
            return try rows.map(transform)
        } catch {
            throw translate(error)
        }
    }

    func execute(_ query: PostgresQuery) async throws(JournalError) {
        _ = try await rows(query)
    }

    /// `body` in one transaction, committed when it returns, rolled back when it throws.
    ///
    /// Not postgres-nio's `withTransaction`: when the server has ended the session (a node frozen
    /// past `idle_in_transaction_session_timeout`, then woken), a `ROLLBACK` on that connection
    /// may never answer (postgres-nio 1.33), and the call would wait out the deadline instead of
    /// failing at once. So a transaction that failed on the database's side (any of postgres-nio's
    /// errors: the session ended, the connection lost, a statement refused) is ended by closing
    /// its connection, which the server rolls back and the pool replaces; one that `body` gave up
    /// on (a fence that no longer holds) is rolled back on a connection still sound.
    package func transaction<T: Sendable>(
        within timeout: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(JournalError) -> T {
        let (client, logger) = (self.client, self.logger)
        return try await withDeadline(timeout) {
            try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                let value: T
                do {
                    value = try await body(connection)
                } catch {
                    if error is PSQLError || connection.isClosed {
                        try? await connection.close()
                    } else {
                        _ = try? await connection.query("ROLLBACK", logger: logger)
                    }
                    throw error
                }
                try await connection.query("COMMIT", logger: logger)
                return value
            }
        }
    }

    /// `body`, cancelled when it takes longer than `timeout` (by default the journal's: a
    /// transaction it was in rolls back).
    func withDeadline<T: Sendable>(
        _ timeout: Duration? = nil,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws(JournalError) -> T {
        let timeout = timeout ?? self.timeout
        let answer: T?
        do {
            answer = try await PushcampJournal.withDeadline(timeout, body)
        } catch {
            throw translate(error)
        }
        guard let answer else {
            let why = problems.latest.map { ": \($0)" } ?? ""
            throw JournalError(
                .cannotOpen,
                "cannot reach the journal \(name): no answer within \(timeout.components.seconds) s\(why)"
            )
        }
        return answer
    }

    /// `body` on one connection of the pool, within the deadline.
    func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(JournalError) -> T {
        let client = self.client
        return try await withDeadline { try await client.withConnection { connection in try await body(connection) } }
    }

    /// The rows `query` answers on `connection` (inside a transaction).
    static func rows(
        _ query: PostgresQuery,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> [PostgresRandomAccessRow] {
        var rows: [PostgresRandomAccessRow] = []
        for try await row in try await connection.query(query, logger: logger) { rows.append(row.makeRandomAccess()) }
        return rows
    }

    /// Why a connection ended, in words: postgres-nio's own description of a `PSQLError` is a
    /// placeholder, and the cause may be nested (the server's shutdown notice inside a closed
    /// connection).
    static func words(for error: PSQLError) -> String {
        if let message = error.serverInfo?[.message] {
            return message + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        let what =
            switch error.code {
            case .serverClosedConnection: "the server closed the connection"
            case .clientClosedConnection: "the connection was closed"
            case .poolClosed: "the connection pool was shut down"
            default: "the connection failed"
            }
        switch error.underlying {
        case let inner as PSQLError: return "\(what): \(words(for: inner))"
        case let cause?: return "\(what): \(ConnectionProblems.words(for: "\(cause)"))"
        case nil: return what
        }
    }

    /// A database error in words that name the journal and never a value a query carried.
    func translate(_ error: any Error) -> JournalError {
        if let error = error as? JournalError { return error }
        if let error = error as? PostgresTransactionError,
            let cause = error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError
        {
            return translate(cause)
        }
        if error is CancellationError {
            return JournalError(.failed, "the journal \(name) was not written: the task was cancelled (shutting down)")
        }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return JournalError(.failed, "the journal \(name) failed: \(message)\(state)")
            }
            switch error.code {
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .poolClosed:
                return JournalError(.cannotOpen, "cannot reach the journal \(name): \(Self.words(for: error))")
            case .queryCancelled:
                return JournalError(.failed, "the journal \(name) was not written: the query was cancelled")
            default:
                return JournalError(.failed, "the journal \(name) failed: \(error.code)")
            }
        }
        // Not the server's answer: the pool could not get a connection (refused, unreachable, a
        // TLS failure) and gave up; its last attempt says why.
        return JournalError(
            .cannotOpen,
            "cannot reach the journal \(name): \(problems.latest ?? "no connection could be made")"
        )
    }
}
