import PushcampModel

/// One row as a source yields it: the token as written (checked later), its attributes and its place.
public struct SourceRow {
    public var token: String?
    public var attributes: Attributes
    /// 1-based line (CSV, JSON Lines, inline) or row number (SQLite) for locating problems.
    public var row: Int

    public init(token: String?, attributes: Attributes, row: Int) {
        self.token = token
        self.attributes = attributes
        self.row = row
    }
}

/// Where recipients come from. Sources stream: they hand rows to `body` one at a time and never hold
/// the whole audience, so ten million rows cost what ten thousand do.
public protocol AudienceSource: Sendable {
    /// The source as shown in reports and diagnostics (`audiences/customers.csv`).
    var name: String { get }
    /// The column or key holding device tokens.
    var tokenColumn: String { get }
    /// The attribute names every row has, when the source knows them before reading rows
    /// (a CSV header, a query's columns), for checking filters and templates ahead of time.
    func columns() throws(AudienceError) -> [String]?
    /// Calls `body` with each row in order. With `tokensOnly`, sources may skip building attributes.
    func forEachRow(tokensOnly: Bool, _ body: (SourceRow) throws -> Void) throws
    /// Whether its rows can change without any file of the campaign changing (a query on a database
    /// server): a run planned from it is planned once into the journal, and sent from there.
    var isLive: Bool { get }
}

extension AudienceSource {
    public var isLive: Bool { false }
}

/// Opens audiences kept on a database server, which this module cannot reach itself (it never
/// imports NIO): the layer that can (PushcampPostgres) hands one to the campaign loader.
public protocol AudienceServers: Sendable {
    /// The rows of `query` on the PostgreSQL server at `url` (a `postgres://` URL, with `${env:…}`
    /// resolved; it may carry a password, which no message repeats).
    func postgres(
        url: String,
        query: String,
        tokenColumn: String,
        location: SourceLocation
    ) throws(AudienceError) -> any AudienceSource
}

/// A problem with an audience source, located in the source file (or the campaign that names it).
public struct AudienceError: Error, Sendable, CustomStringConvertible {
    public var location: SourceLocation
    public var message: String

    public init(_ message: String, at location: SourceLocation) {
        self.message = message
        self.location = location
    }

    public var diagnostic: Diagnostic { .error(message, at: location) }
    public var description: String { diagnostic.description }
}
