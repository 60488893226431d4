import Logging
import Synchronization

/// What postgres-nio's connection pool says, in the background, about connections it could not
/// make: kept (the last one) so that an error can say why the journal cannot be reached
/// (refused, a TLS mismatch, a wrong password) instead of "the pool gave up", and not printed: the
/// pool retries several times a second, and the journal's own error says it once.
package final class ConnectionProblems: Sendable {
    private let last = Mutex<String?>(nil)

    package var latest: String? { last.withLock { $0 } }

    package func record(_ problem: String) { last.withLock { $0 = problem } }

    /// A logger whose messages go nowhere but here.
    package func logger(label: String) -> Logger {
        Logger(label: label) { _ in Handler(problems: self) }
    }

    struct Handler: LogHandler {
        let problems: ConnectionProblems
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard let error = event.metadata?["psql_error"] ?? metadata["psql_error"] else { return }
            problems.record(ConnectionProblems.words(for: "\(error)"))
        }
    }

    /// postgres-nio's description of a failed connection, in words (never a value a query
    /// carried: connections fail before any query).
    package static func words(for error: String) -> String {
        if error.contains("sslUnsupported") {
            return "the server does not offer TLS (the journal verifies TLS unless its URL says "
                + "?sslmode=disable, which is for loopback and private networks only)"
        }
        if error.contains("Connection refused") { return "connection refused" }
        if error.contains("No route to host") || error.contains("Network is unreachable") {
            return "no route to the server (its network is down or cut off)"
        }
        if error.contains("Connection reset by peer") || error.contains("Broken pipe") {
            return "the connection was dropped (the server closed it, or its network cut it)"
        }
        if error.contains("connectTimeout") || error.contains("timed out") {
            return "the connection timed out (the server or its network does not answer)"
        }
        if error.contains("28000") {
            return "the server refused the connection: this host, user or database is not let in (pg_hba.conf)"
        }
        if error.contains("authentication") || error.contains("28P01") {
            return "the server refused the user or password (PGPASSWORD, or the variable --password-env names)"
        }
        if error.contains("certificate") || error.contains("handshake") {
            return "TLS failed: the server's certificate is not trusted or does not name the host "
                + "(sslrootcert names the authorities to trust)"
        }
        if error.contains("3D000") { return "the database does not exist" }
        return error
    }
}
