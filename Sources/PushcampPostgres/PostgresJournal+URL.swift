import Foundation
import Logging
import NIOSSL
import PostgresNIO
import PushcampJournal

extension PostgresJournal {
    /// Where a PostgreSQL journal is, read from its URL (`pushcamp journal --journal`):
    /// `postgres://USER@HOST:PORT/DATABASE?sslmode=…`. The password is never in the URL: it comes
    /// from the environment (`PGPASSWORD`, or the variable `password_env` names), so it is never
    /// in a file in git nor in a message.
    public struct Address: Sendable, Equatable {
        public enum TLS: String, Sendable {
            /// No TLS: for a server on loopback or a private network only.
            case disable
            /// TLS, the server's certificate verified against the system's roots (or `sslrootcert`)
            /// and its host name: the default.
            case verifyFull = "verify-full"
        }

        public var host: String
        public var port: Int
        public var user: String
        public var database: String
        public var tls: TLS
        /// A PEM file of the certificate authorities the server's certificate must chain to.
        public var rootCertificates: String?

        /// TLS as `tls` asks (nil: none): the server's certificate verified against the system's
        /// roots, or `rootCertificates`, and its host name.
        var tlsConfiguration: TLSConfiguration? {
            guard tls == .verifyFull else { return nil }
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .fullVerification
            if let rootCertificates { configuration.trustRoots = .file(rootCertificates) }
            return configuration
        }

        /// How messages name it: `host:port/database`.
        public var name: String { "\(host):\(port)/\(database)" }

        /// Reads `url`; errors name what is wrong and never repeat a password.
        public init(url: String) throws(JournalError) {
            guard let components = URLComponents(string: url),
                components.scheme == "postgres" || components.scheme == "postgresql"
            else {
                throw JournalError(
                    .cannotOpen,
                    "a PostgreSQL journal is named by a postgres://user@host:5432/database URL (a SQLite journal by its file)"
                )
            }
            try self.init(components, what: "journal URL")
        }

        /// Reads a URL's parts (the scheme checked by the caller), `what` naming it in errors: a
        /// password is refused.
        init(_ components: URLComponents, what: String) throws(JournalError) {
            guard components.password == nil else {
                throw JournalError(
                    .cannotOpen,
                    "the \(what) must not carry a password (it would be in files, shell history and logs); "
                        + "set PGPASSWORD, or name the variable that holds it with --password-env"
                )
            }
            guard let host = components.host, !host.isEmpty else {
                throw JournalError(.cannotOpen, "the \(what) names no host")
            }
            let database = String(components.path.drop { $0 == "/" })
            guard !database.isEmpty, !database.contains("/") else {
                throw JournalError(
                    .cannotOpen,
                    "the \(what) names no database (postgres://user@host:5432/database)"
                )
            }
            guard let user = components.user, !user.isEmpty else {
                throw JournalError(.cannotOpen, "the \(what) names no user (postgres://user@host:5432/database)")
            }
            self.host = host
            self.port = components.port ?? 5432
            self.user = user
            self.database = database
            self.tls = .verifyFull
            for item in components.queryItems ?? [] {
                switch (item.name, item.value) {
                case ("sslmode", "disable"?): tls = .disable
                case ("sslmode", "require"?), ("sslmode", "verify-full"?), ("sslmode", "verify-ca"?): tls = .verifyFull
                case ("sslmode", _):
                    throw JournalError(
                        .cannotOpen,
                        "the \(what)'s sslmode must be verify-full (the default: the certificate and host name are checked) "
                            + "or disable (loopback and private networks only)"
                    )
                case ("sslrootcert", let path?): rootCertificates = path
                default:
                    throw JournalError(
                        .cannotOpen,
                        "the \(what) has an unknown parameter '\(item.name)' (known: sslmode, sslrootcert)"
                    )
                }
            }
        }
    }

    /// A journal at `address` (not connected until `run()`), with the password from `environment`:
    /// `passwordVariable` when given (it must be set), else `PGPASSWORD` when set.
    ///
    /// The server ends any of its sessions left idle inside a transaction for `idleInTransaction`
    /// (`idle_in_transaction_session_timeout`): a node frozen between two statements of one (a
    /// SIGSTOP, a VM paused) would otherwise hold its row locks (a lease `FOR SHARE`, a run `FOR
    /// UPDATE`) for as long as it is frozen, and every other node's takeover would wait on them
    /// past the lease. Keep it under the lease.
    public static func connect(
        _ address: Address,
        passwordVariable: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        maximumConnections: Int = 20,
        timeout: Duration = .seconds(10),
        idleInTransaction: Duration = .seconds(5),
        logger: Logger = Logger(label: "pushcamp.journal")
    ) throws(JournalError) -> PostgresJournal {
        var password = environment["PGPASSWORD"]
        if let passwordVariable {
            guard let value = environment[passwordVariable] else {
                throw JournalError(
                    .cannotOpen,
                    "the password variable \(passwordVariable) is not set in the environment"
                )
            }
            password = value
        }
        let tls: PostgresClient.Configuration.TLS = address.tlsConfiguration.map { .require($0) } ?? .disable
        var configuration = PostgresClient.Configuration(
            host: address.host,
            port: address.port,
            username: address.user,
            password: password,
            database: address.database,
            tls: tls
        )
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        let idle = idleInTransaction.components
        let idleMilliseconds = max(1, idle.seconds * 1000 + idle.attoseconds / 1_000_000_000_000_000)
        configuration.options.additionalStartupParameters = [
            ("application_name", "pushcamp"),
            ("idle_in_transaction_session_timeout", String(idleMilliseconds)),
        ]
        let problems = ConnectionProblems()
        return PostgresJournal(
            client: PostgresClient(
                configuration: configuration,
                backgroundLogger: problems.logger(label: "pushcamp.journal.pool")
            ),
            name: address.name,
            timeout: timeout,
            problems: problems,
            logger: logger
        )
    }
}
