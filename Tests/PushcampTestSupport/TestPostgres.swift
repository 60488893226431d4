import Foundation
import Synchronization

/// The PostgreSQL server the tests use: the one `PUSHCAMP_TEST_POSTGRES` names (scripts/test.sh
/// starts a throwaway cluster and sets it), else a throwaway cluster this process starts with
/// scripts/postgres.sh on first use and removes when it exits. Never skipped: without a server the
/// PostgreSQL tests fail and say how to get one.
public enum TestPostgres {
    public struct Server: Sendable {
        public var host: String
        public var port: Int
        public var user: String
        /// The database psql runs in.
        public var database = "postgres"

        /// The same server, psql running in `database`.
        public func on(database: String) -> Server {
            var copy = self
            copy.database = database
            return copy
        }

        /// The same server, reached at `host`.
        public func at(host: String) -> Server {
            var copy = self
            copy.host = host
            return copy
        }

        /// A URL for `database` on this server.
        public func url(_ database: String) -> String {
            "postgres://\(user)@\(host):\(port)/\(database)?sslmode=disable"
        }
    }

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    private static let started = Mutex<Result<Server, Unavailable>?>(nil)
    /// The folder of the cluster this process started, removed at exit.
    private static let startedDirectory = Mutex<String?>(nil)
    private static let databases = Atomic<Int>(0)

    /// The server, started once per process.
    public static func server() throws -> Server {
        try started.withLock { started in
            if started == nil { started = Result { () throws(Unavailable) in try start() } }
            return try started!.get()
        }
    }

    /// A new, empty database on the server, named for the test process: every test gets its own.
    public static func newDatabase() throws -> (name: String, url: String) {
        let server = try server()
        let name = "pushcamp_test_\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        try psql(server, "CREATE DATABASE \(name)")
        return (name, server.url(name))
    }

    /// Runs `sql` with psql, in the server's `database`.
    public static func psql(_ server: Server, _ sql: String) throws {
        let (status, output) = try run(
            "/usr/bin/env",
            ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", server.url(server.database), "-c", sql]
        )
        guard status == 0 else { throw Unavailable(description: "psql failed: \(output)") }
    }

    /// The rows `sql` answers in the server's `database`, one line each, columns separated by `|`.
    public static func query(_ server: Server, _ sql: String) throws -> [String] {
        let (status, output) = try run(
            "/usr/bin/env",
            ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", server.url(server.database), "-c", sql]
        )
        guard status == 0 else { throw Unavailable(description: "psql failed: \(output)") }
        return output.split(separator: "\n").map(String.init)
    }

    private static func start() throws(Unavailable) -> Server {
        if let given = ProcessInfo.processInfo.environment["PUSHCAMP_TEST_POSTGRES"], !given.isEmpty {
            guard let server = parse(given) else {
                throw Unavailable(description: "PUSHCAMP_TEST_POSTGRES is not a postgres://user@host:port/… URL")
            }
            return server
        }
        let cluster = try Cluster.start()
        startedDirectory.withLock { $0 = cluster.directory }
        atexit { TestPostgres.stopStarted() }
        return cluster.server
    }

    private static func stopStarted() {
        guard let directory = startedDirectory.withLock({ $0 }) else { return }
        Cluster(directory: directory).remove()
    }

    /// A throwaway cluster of a test's own (scripts/postgres.sh in a temporary folder), for a test
    /// that stops and starts the server under the nodes; `remove()` stops it and deletes it.
    public struct Cluster: Sendable {
        public let directory: String
        public private(set) var server = Server(host: "127.0.0.1", port: 0, user: "pushcamp")

        fileprivate init(directory: String) { self.directory = directory }

        /// initdb and start a new cluster on a free port: on 127.0.0.1, or on `listen` in the
        /// network namespace `network` (`server` then names the first of them).
        public static func start(in network: String? = nil, listen: [String] = []) throws(Unavailable) -> Cluster {
            var cluster = Cluster(
                directory: FileManager.default.temporaryDirectory
                    .appendingPathComponent("pushcamp-postgres-\(UUID().uuidString)").path
            )
            do {
                try FileManager.default.createDirectory(atPath: cluster.directory, withIntermediateDirectories: true)
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: cluster.directory)
            } catch {
                throw Unavailable(description: "no folder for a PostgreSQL cluster: \(error)")
            }
            var environment: [String: String] = [:]
            environment["PUSHCAMP_POSTGRES_NETNS"] = network
            if !listen.isEmpty { environment["PUSHCAMP_POSTGRES_LISTEN"] = listen.joined(separator: ",") }
            let output = try cluster.script("start", environment: environment)
            guard let server = parse(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                cluster.remove()
                throw Unavailable(description: "scripts/postgres.sh could not start a cluster: \(output)")
            }
            cluster.server = server
            return cluster
        }

        /// Stops the server (a fast shutdown: sessions are cut, the cluster is kept).
        public func halt() throws(Unavailable) { _ = try script("halt") }

        /// Starts a halted server again, on the same port.
        public func resume() throws(Unavailable) { _ = try script("resume") }

        /// Stops the server and deletes the cluster.
        public func remove() {
            _ = try? script("stop")
            try? FileManager.default.removeItem(atPath: directory)
        }

        private func script(_ command: String, environment: [String: String] = [:]) throws(Unavailable) -> String {
            let result: (Int32, String)
            do {
                result = try run(TestPostgres.script.path, [command, directory + "/pg"], environment: environment)
            } catch {
                throw Unavailable(description: "scripts/postgres.sh could not be run: \(error)")
            }
            guard result.0 == 0 else {
                throw Unavailable(description: "scripts/postgres.sh \(command) failed: \(result.1)")
            }
            return result.1
        }
    }

    private static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/postgres.sh")
    }

    private static func parse(_ url: String) -> Server? {
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql",
            let host = components.host, let port = components.port
        else { return nil }
        return Server(host: host, port: port, user: components.user ?? "postgres")
    }

    /// Runs a command to its end; its output through a file, not a pipe, since the server the
    /// script starts outlives it and would hold a pipe open.
    private static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:]
    ) throws -> (Int32, String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("pushcamp-psql-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: try Data(contentsOf: output), as: UTF8.self))
    }
}
