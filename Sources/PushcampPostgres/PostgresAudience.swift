import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import PushcampAudience
import PushcampJournal
import PushcampModel

/// Opens PostgreSQL audiences (`source: { postgres: …, query: … }`) for the campaign loader, with
/// `PGPASSWORD` from `environment` when the URL carries no password.
public struct PostgresAudiences: AudienceServers {
    let environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    public func postgres(
        url: String,
        query: String,
        tokenColumn: String,
        location: SourceLocation
    ) throws(AudienceError) -> any AudienceSource {
        try PostgresAudienceSource(
            url: url,
            query: query,
            tokenColumn: tokenColumn,
            location: location,
            environment: environment
        )
    }
}

/// A PostgreSQL audience: a query whose columns are the token and the attributes, read through a
/// server-side cursor a page at a time, so memory holds one page whatever the table's size.
///
/// The query runs in a read-only transaction (`REPEATABLE READ`: one snapshot of the data for the
/// whole read) on a connection of its own, a read replica's as well, and must be one `SELECT` (or
/// `WITH … SELECT`, `VALUES`): a subquery takes nothing else. Its columns are learnt without reading
/// any of its rows (`validate` reads none). NULL is an absent attribute; integers, floating
/// and numeric values are numbers, booleans are booleans, a `bytea` is hex, a timestamp is
/// `2026-11-21T09:30:00Z` (UTC, to the second), anything else is its text.
///
/// Its rows are not part of the campaign's revision (they change without any file changing): a run
/// planned from it is planned once into the journal (`isLive`).
public struct PostgresAudienceSource: AudienceSource {
    let address: PostgresJournal.Address
    let password: String?
    public let query: String
    public let tokenColumn: String
    public let location: SourceLocation
    /// Rows a fetch brings.
    public var pageSize = 5_000

    public var name: String { "postgres \(address.name)" }
    public var isLive: Bool { true }

    init(
        url: String,
        query: String,
        tokenColumn: String,
        location: SourceLocation,
        environment: [String: String]
    ) throws(AudienceError) {
        guard var components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw AudienceError(
                "the audience's URL must be a postgres://user@host:5432/database URL",
                at: location
            )
        }
        // A password may come with the URL from the environment; it goes no further than here.
        password = components.password ?? environment["PGPASSWORD"]
        components.password = nil
        do {
            address = try PostgresJournal.Address(components, what: "audience URL")
        } catch {
            throw AudienceError(error.message, at: location)
        }
        var trimmed = Substring(query)
        while let last = trimmed.last, last.isWhitespace || last == ";" { trimmed.removeLast() }
        guard !trimmed.drop(while: \.isWhitespace).isEmpty else {
            throw AudienceError("the query on '\(address.name)' is empty", at: location)
        }
        let first = trimmed.drop { $0.isWhitespace || $0 == "(" }.prefix { $0.isLetter }.uppercased()
        guard ["SELECT", "WITH", "VALUES", "TABLE"].contains(first) else {
            throw AudienceError(
                "the query on '\(address.name)' must be a SELECT (or WITH … SELECT), found \(first.isEmpty ? "something else" : first)",
                at: location
            )
        }
        self.query = String(trimmed)
        self.tokenColumn = tokenColumn
        self.location = location
    }

    public func columns() throws(AudienceError) -> [String]? {
        let names: [String]
        do {
            names = try session { connection in try probe(connection).map(\.name) }
        } catch let error as AudienceError {
            throw error
        } catch {
            throw AudienceError("the query on '\(address.name)' fails: \(error)", at: location)
        }
        try check(names)
        return names
    }

    public func forEachRow(tokensOnly: Bool, _ body: (SourceRow) throws -> Void) throws {
        try session { connection in
            let columns = try probe(connection)
            let names = columns.map(\.name)
            try check(names)
            let schema = AttributeSchema(names: names)
            let tokenIndex = names.firstIndex(of: tokenColumn)!
            // Every column as PostgreSQL prints it (its type known from the probe), so that any
            // type arrives: enums, arrays, dates, JSON.
            let selected = tokensOnly ? [names[tokenIndex]] : names
            let casts = selected.map { "q.\(Self.quoted($0))::text" }.joined(separator: ", ")
            _ = try connection.query(
                PostgresQuery(
                    unsafeSQL: "DECLARE pushcamp_audience NO SCROLL CURSOR FOR SELECT \(casts) FROM (\(query)) AS q"
                ),
                logger: Self.logger
            ).wait()
            var number = 0
            let fetch = PostgresQuery(unsafeSQL: "FETCH FORWARD \(pageSize) FROM pushcamp_audience")
            var next = connection.query(fetch, logger: Self.logger)
            while true {
                let page = try next.wait().rows
                // The next page comes while this one is planned: the server and the planner overlap.
                let more = page.count == pageSize
                if more { next = connection.query(fetch, logger: Self.logger) }
                for row in page {
                    number += 1
                    var token: String?
                    var attributes = Attributes.empty
                    if tokensOnly {
                        token = row.first.flatMap { Self.value($0.bytes, type: columns[tokenIndex].type) }?.text
                    } else {
                        var values = [AttributeValue?](repeating: nil, count: columns.count)
                        for (index, cell) in row.enumerated() {
                            values[index] = Self.value(cell.bytes, type: columns[index].type)
                        }
                        token = values[tokenIndex]?.text
                        attributes = Attributes(schema: schema, values: values)
                    }
                    try body(SourceRow(token: token, attributes: attributes, row: number))
                }
                if !more { break }
            }
        }
    }

    /// The query's columns, names and types, without reading any of its rows: its result joined,
    /// emptied (`LIMIT 0`), to one row of its own, which comes back with every column NULL. A
    /// subquery takes one SELECT without data-modifying parts, as a cursor does.
    func probe(_ connection: PostgresConnection) throws -> [(name: String, type: PostgresDataType)] {
        let probe = try connection.query(
            PostgresQuery(
                unsafeSQL:
                    "SELECT * FROM (VALUES (1)) AS pushcamp_probe(pushcamp_probe) LEFT JOIN (SELECT * FROM (\(query)) AS q LIMIT 0) AS q ON true"
            ),
            logger: Self.logger
        ).wait()
        guard let row = probe.rows.first else { return [] }
        return row.dropFirst().map { ($0.columnName, $0.dataType) }
    }

    /// `name` as an SQL identifier, quoted.
    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    func check(_ names: [String]) throws(AudienceError) {
        guard names.contains(tokenColumn) else {
            throw AudienceError(
                "the query returns no '\(tokenColumn)' column\(Suggestion.didYouMean(tokenColumn, in: names)) (columns: \(names.joined(separator: ", ")); name it with AS \(tokenColumn) or set token_column)",
                at: location
            )
        }
    }

    /// Runs `work` in a read-only transaction (one snapshot of the data for all it reads) on a
    /// connection of its own, then closes it. The server's errors become the audience's, naming
    /// the server and never the URL; an error `work`'s caller threw passes as is.
    @discardableResult
    func session<T>(_ work: (PostgresConnection) throws -> T) throws -> T {
        let connection = try connect()
        defer { _ = try? connection.close().wait() }
        do {
            _ = try connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: Self.logger).wait()
            let result = try work(connection)
            _ = try connection.query("ROLLBACK", logger: Self.logger).wait()
            return result
        } catch let error as PSQLError {
            throw AudienceError(
                "the query on '\(address.name)' fails: \(PostgresJournal.words(for: error))",
                at: location
            )
        }
    }

    func connect() throws(AudienceError) -> PostgresConnection {
        do {
            let tls: PostgresConnection.Configuration.TLS =
                try address.tlsConfiguration.map { .require(try NIOSSLContext(configuration: $0)) } ?? .disable
            var configuration = PostgresConnection.Configuration(
                host: address.host,
                port: address.port,
                username: address.user,
                password: password,
                database: address.database,
                tls: tls
            )
            configuration.options.connectTimeout = .seconds(10)
            // Rows in the same order from one read to the next (a plan reads the audience more
            // than once): no scan joins another midway, no parallel workers interleave.
            configuration.options.additionalStartupParameters = [
                ("application_name", "pushcamp-audience"),
                ("TimeZone", "UTC"),
                ("DateStyle", "ISO"),
                ("bytea_output", "hex"),
                ("synchronize_seqscans", "off"),
                ("max_parallel_workers_per_gather", "0"),
            ]
            return try PostgresConnection.connect(
                on: PostgresConnection.defaultEventLoopGroup.any(),
                configuration: configuration,
                id: 1,
                logger: Self.logger
            ).wait()
        } catch let error as PSQLError {
            throw AudienceError(
                "cannot read the audience at '\(address.name)': \(PostgresJournal.words(for: error))",
                at: location
            )
        } catch {
            throw AudienceError(
                "cannot read the audience at '\(address.name)': \(ConnectionProblems.words(for: "\(error)"))",
                at: location
            )
        }
    }

    static let logger = Logger(label: "pushcamp.audience")

    /// A cell's value, from PostgreSQL's text for `type`.
    static func value(_ bytes: ByteBuffer?, type: PostgresDataType) -> AttributeValue? {
        guard let bytes else { return nil }
        let text = String(buffer: bytes)
        switch type {
        case .bool: return .bool(text == "true" || text == "t")
        case .int2, .int4, .int8, .oid: return Int64(text).map { .integer($0) } ?? .string(text)
        case .float4, .float8, .numeric: return Double(text).map { .number($0) } ?? .string(text)
        case .bytea: return .string(text.hasPrefix("\\x") ? String(text.dropFirst(2)) : text)
        case .timestamp, .timestamptz: return .string(timestamp(text) ?? text)
        default: return .string(text)
        }
    }

    /// `2026-11-21 09:30:00.25+00` (or without a zone: the session's zone is UTC) as
    /// `2026-11-21T09:30:00Z`; nil for what is not in that shape (infinity, years before 1000).
    public static func timestamp(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        let shape = Array("0000-00-00 00:00:00".utf8)
        guard bytes.count >= shape.count else { return nil }
        for (byte, expected) in zip(bytes, shape) {
            let isDigit = (0x30...0x39).contains(byte)
            guard expected == 0x30 ? isDigit : byte == expected else { return nil }
        }
        var iso = bytes[0..<shape.count]
        iso[10] = 0x54  // T
        return String(decoding: iso, as: UTF8.self) + "Z"
    }
}
