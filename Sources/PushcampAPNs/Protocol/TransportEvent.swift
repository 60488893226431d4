/// What a transport reports while it runs, in order.
public enum TransportEvent: Sendable {
    /// Answers (and losses), batched per read.
    case outcomes([APNsOutcome])
    /// A connection is up (TLS done, HTTP/2 agreed).
    case connected(connection: Int)
    /// A connection could not be made; the pool tries again after a back-off.
    case connectFailed(connection: Int, error: APNsClientError)
    /// A connection ended; `reason` says why (GOAWAY with its reason, closed by peer, PING timeout…).
    case disconnected(connection: Int, reason: String)
    /// The stream limit Pushcamp applies to a connection changed: the server's SETTINGS, one stream
    /// until the provider token is accepted, and the ramp of a new connection. Never reported before
    /// the server's first SETTINGS frame.
    case streamLimit(connection: Int, limit: Int)
    /// Requests never processed (refused after GOAWAY) went back to the queue for another connection.
    case requeued(count: Int)
    /// APNs called the provider token expired; a new one was minted (or already was) and the request
    /// went back to the queue.
    case providerTokenRenewed(minted: Bool)
    /// APNs refused a new provider token as too frequent (another process minted one for the same
    /// key); the token before it is back in use and the request went back to the queue.
    case providerTokenReverted
    /// FCM refused the access token a request was sent with (401); the token was retired, a fresh
    /// one is fetched, and the request went back to the queue.
    case accessTokenRefused
    /// Requests still queued when the transport shut down, or submitted after: never sent.
    case unsent([APNsRequest])
}

/// Where a transport reports what happens, in order: called on the transport's own threads (the
/// connections' event loop), so it must only hand the event over.
public typealias TransportEventSink = @Sendable (TransportEvent) -> Void

/// The seam between the executor and the network: a pool of connections to APNs, or an in-memory twin.
public protocol PushTransport: Sendable {
    /// Keeps the transport going until `shutdown()` and every connection has ended, reporting to
    /// `events` as things happen (straight into the caller's own queue: no stream in between); every
    /// event is reported before it returns.
    func run(reporting events: @escaping TransportEventSink) async
    /// Hands requests over without waiting: the caller bounds how many it submits (by the stream
    /// limits reported). Returns what it can no longer take (submitted after `shutdown()`): never sent.
    func submit(_ requests: consuming [APNsRequest]) -> [APNsRequest]
    /// Stops taking requests; in-flight streams finish, queued ones are reported as `unsent`.
    func shutdown()
    /// Requests written to a connection and not yet answered: what is really on the wire.
    var openStreams: Int { get }
    /// Where the task driving this transport should run, if it has a preference (the connections'
    /// event loop); nil runs it on the global executor.
    var taskExecutor: (any TaskExecutor)? { get }
}

extension PushTransport {
    public var taskExecutor: (any TaskExecutor)? { nil }
}
