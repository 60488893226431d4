import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PushcampAPNsCore
import Synchronization

/// HTTP/2 to an APNs host for requests of any method and path, a few at a time: the broadcast
/// API's channel management (`/1/apps/…`) and broadcast sends (`/4/broadcasts/apps/…`). A broadcast
/// reaches every device on a channel with one request, so these are few; the pool is for the
/// millions of device pushes.
///
/// Its connections keep the same discipline as the pool's, through the same
/// `ConnectionStateMachine` (see `ExchangeConnection`): one stream until the server's SETTINGS
/// and the first accepted token, never more than its limit; a GOAWAY stops new streams on that
/// connection, and a request it did not process (refused after the GOAWAY, or never written)
/// goes again on a new connection, here, without the caller seeing it; PING on idle connections,
/// and a connection that stops answering is closed. A request that went out and got no answer
/// throws `.unanswered` (the server may have it); one that could not go throws `.connect`.
///
/// The connection opens at the first request and is kept for the next; one that closed or drains
/// is replaced. Provider tokens come from the same `ProviderTokens` as the app's pushes.
public final class APNsExchange: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// Header fields beyond the pseudo-headers and `authorization`.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(method: String, path: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        public func value(_ name: String) -> String? { headers.first { $0.name == name }?.value }

        /// The `reason` of an error answer.
        public var reason: APNsReason? { APNsConnectionHandler.parseError(body).0 }

        /// `retry-after` in seconds from `now` (delta-seconds, or an HTTP date), when the server
        /// sent one.
        public func retryAfter(now: Double) -> Double? {
            guard let text = value("retry-after")?.trimmingCharacters(in: .whitespaces) else { return nil }
            if let seconds = Int(text), seconds >= 0 { return Double(seconds) }
            let format = DateFormatter()
            format.locale = Locale(identifier: "en_US_POSIX")
            format.timeZone = TimeZone(identifier: "GMT")
            format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            return format.date(from: text).map { max(0, $0.timeIntervalSince1970 - now) }
        }
    }

    /// How many connections that answered nothing may give one request back before it fails.
    public static let refusalLimit = 5
    /// How many draining connections (each of which answered others) one request may move on
    /// from: a bound only a server answering one request per connection forever would reach.
    public static let moveLimit = 1_000

    private let configuration: APNsClientConfiguration
    private let tlsContext: NIOSSLContext
    private let eventLoop: any EventLoop
    private let connection = Mutex<ExchangeConnection?>(nil)

    public init(
        configuration: APNsClientConfiguration,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(APNsClientError) {
        self.configuration = configuration
        tlsContext = try configuration.makeTLSContext()
        eventLoop = group.next()
    }

    /// `host[:port]`, as requests name it.
    public var authority: String {
        configuration.port == 443 ? configuration.host : "\(configuration.host):\(configuration.port)"
    }

    /// Sends `request` and waits for its answer (at most the configuration's request timeout on
    /// the wire). A connection that gives it back unprocessed (its GOAWAY) is left to drain and
    /// the request goes on a new one: freely when that connection answered others (GOAWAY after
    /// N requests, as APNs does), up to `refusalLimit` connections that answered nothing.
    public func send(_ request: Request) async throws(APNsClientError) -> Response {
        var refusals = 0
        var moves = 0
        while true {
            let connection = try await connected()
            do {
                return try await connection.send(fields(of: request), body: request.body)
            } catch  where error.code == .notProcessed || error.code == .notSent {
                if error.code == .notProcessed { refusals += 1 } else { moves += 1 }
                if refusals >= Self.refusalLimit || moves >= Self.moveLimit {
                    throw APNsClientError(
                        .connect,
                        "\(authority) did not process the request on \(refusals + moves) connections in a row: \(error.message)"
                    )
                }
            }
        }
    }

    private func fields(of request: Request) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [
            (":method", request.method), (":scheme", "https"), (":authority", authority), (":path", request.path),
        ]
        switch configuration.authentication {
        case .providerToken(let tokens): fields.append(("authorization", tokens.current().bearer))
        case .bearer(let source): if let token = source.current() { fields.append(("authorization", token.bearer)) }
        case .certificate, .inRequest: break
        }
        fields += request.headers
        if !request.body.isEmpty { fields.append(("content-length", String(request.body.count))) }
        return fields
    }

    /// Opens the connection now (TLS and HTTP/2), rather than with the first request.
    public func connect() async throws(APNsClientError) {
        _ = try await connected()
    }

    /// Closes the connection, if open.
    public func close() async {
        let current = connection.withLock { current in
            defer { current = nil }
            return current
        }
        try? await current?.channel.close()
    }

    /// The kept connection while it takes requests; otherwise a new one.
    private func connected() async throws(APNsClientError) -> ExchangeConnection {
        if let current = connection.withLock({ $0 }), current.isUsable { return current }
        let opened = try await ExchangeConnection.open(
            configuration: configuration,
            tlsContext: tlsContext,
            eventLoop: eventLoop
        )
        // Two requests may have opened one each: the first kept wins, the other closes. A
        // connection replaced while draining finishes its streams and closes by itself.
        let kept = connection.withLock { current -> ExchangeConnection in
            if let current, current.isUsable { return current }
            current = opened
            return opened
        }
        if kept !== opened { opened.channel.close(promise: nil) }
        return kept
    }
}
