import NIOCore
import PushcampAPNsCore

/// The rules of one APNs connection, without sockets: how many streams may be open, when to stop
/// taking work, when to PING and when to give up on it.
///
/// - Streams: never more than the server's current `SETTINGS_MAX_CONCURRENT_STREAMS`; with provider
///   tokens, one until a request was answered with anything but 403 (the token was accepted). Before the
///   server's first SETTINGS frame, one.
/// - Ramp: a new connection starts at the server's first limit and doubles it each time that many
///   answers came back, up to the server's current limit, so a connection that is dropped soon after
///   it opened loses a few streams, not a thousand.
/// - SETTINGS: a server that sends none within `settingsTimeout` of TLS is closed (and replaced).
/// - Health: when a quarter or more of the last 64 answers were `BadDeviceToken` (APNs drops providers
///   who send many), the connection uses a quarter of its budget until the next window looks better.
/// - Refused credentials: a connection whose token was never accepted drains after
///   `credentialRefusalLimit` refusals, so a wrong key costs a handful of requests per connection
///   however slowly the run reacts.
/// - GOAWAY: no new streams; streams up to its last id finish, later ones come back as refused.
/// - Idle: after `idleTimeout` without traffic a PING; no answer within `pingTimeout` closes it.
public struct ConnectionStateMachine: Sendable {
    public enum Authentication: Sendable { case providerToken, certificate }

    public enum Phase: Equatable, Sendable {
        case active
        /// GOAWAY received or shutdown asked: finish open streams, open none.
        case draining
    }

    public static let healthWindow = 64
    public static let credentialRefusalLimit = 3

    public private(set) var phase = Phase.active
    public private(set) var serverLimit: UInt32?
    public private(set) var authenticated: Bool
    public private(set) var openStreams = 0
    /// The quarter-budget penalty for a burst of bad device tokens.
    public private(set) var throttledForBadTokens = false
    private var credentialRefusals = 0
    private var windowAnswers = 0
    private var windowBadTokens = 0
    /// The ramp's current ceiling, and answers toward its next step.
    public private(set) var ramp = 1
    private var rampAnswers = 0
    private var reportedLimit: Int?

    public var idleTimeout: TimeAmount
    public var pingTimeout: TimeAmount
    public var settingsTimeout: TimeAmount
    private let openedAt: NIODeadline
    private var lastActivity: NIODeadline
    private var pingSentAt: NIODeadline?

    public init(
        authentication: Authentication,
        now: NIODeadline,
        idleTimeout: TimeAmount = .seconds(60),
        pingTimeout: TimeAmount = .seconds(10),
        settingsTimeout: TimeAmount = .seconds(10)
    ) {
        self.authenticated = authentication == .certificate
        self.openedAt = now
        self.lastActivity = now
        self.idleTimeout = idleTimeout
        self.pingTimeout = pingTimeout
        self.settingsTimeout = settingsTimeout
    }

    /// How many streams this connection may hold open now.
    public var streamLimit: Int {
        guard let serverLimit else { return 1 }
        guard authenticated else { return min(1, Int(serverLimit)) }
        var limit = Int(min(serverLimit, UInt32(Int32.max)))
        limit = min(limit, ramp)
        return throttledForBadTokens ? max(1, limit / 4) : limit
    }

    /// What the handler does after an event.
    public enum Action: Equatable, Sendable {
        case none
        /// The stream limit applied changed: report it.
        case reportStreamLimit(Int)
        /// Stop taking work: finish open streams, then close (the reason says why).
        case drain(reason: String)
    }

    /// Reports the limit when it changed since last reported (never before the server's first SETTINGS).
    private mutating func limitAction() -> Action {
        guard serverLimit != nil, reportedLimit != streamLimit else { return .none }
        reportedLimit = streamLimit
        return .reportStreamLimit(streamLimit)
    }

    /// How many more streams may be opened now (0 while draining).
    public var budget: Int {
        phase == .active ? max(0, streamLimit - openStreams) : 0
    }

    /// The credentials were refused `credentialRefusalLimit` times and never accepted: draining.
    public var credentialsRefused: Bool { credentialRefusals >= Self.credentialRefusalLimit }

    /// Draining and nothing left in flight: the connection can close.
    public var finished: Bool { phase == .draining && openStreams == 0 }

    public mutating func settingsReceived(maxConcurrentStreams: UInt32) -> Action {
        if serverLimit == nil { ramp = max(1, Int(min(maxConcurrentStreams, UInt32(Int32.max)))) }
        serverLimit = maxConcurrentStreams
        return limitAction()
    }

    public mutating func streamOpened(now: NIODeadline) {
        openStreams += 1
        lastActivity = now
    }

    /// A stream ended; `status` is nil when no response arrived (reset, refused, lost).
    public mutating func streamClosed(status: Int?, reason: APNsReason?, now: NIODeadline) -> Action {
        openStreams -= 1
        lastActivity = now
        guard let status else { return .none }
        // 403 is APNs' refusal of a provider token, 401 FCM's of an access token.
        if status != 403 && status != 401 { authenticated = true }
        if !authenticated, reason?.disposition == .credentials {
            credentialRefusals += 1
            if credentialsRefused {
                phase = .draining
                return .drain(
                    reason:
                        "APNs refused the credentials \(Self.credentialRefusalLimit) times (\(status) \(reason.map { "\($0)" } ?? ""))"
                )
            }
        }
        // Doubles while it is what holds the connection back (a server may raise its limit later).
        if authenticated, let serverLimit, ramp < Int(min(serverLimit, UInt32(Int32.max))) {
            rampAnswers += 1
            if rampAnswers >= ramp {
                rampAnswers = 0
                ramp *= 2
            }
        }
        windowAnswers += 1
        if reason == .badDeviceToken { windowBadTokens += 1 }
        if windowAnswers == Self.healthWindow {
            throttledForBadTokens = windowBadTokens * 4 >= Self.healthWindow
            windowAnswers = 0
            windowBadTokens = 0
        }
        return limitAction()
    }

    /// GOAWAY from the server, or our own decision to stop using the connection.
    public mutating func drain() {
        phase = .draining
    }

    public enum TickAction: Equatable, Sendable {
        case none
        case ping
        case close(reason: String)
    }

    /// Called periodically: decides on PINGs for idle connections and closes dead ones.
    public mutating func tick(now: NIODeadline) -> TickAction {
        if serverLimit == nil, now - openedAt >= settingsTimeout {
            return .close(reason: "the server sent no HTTP/2 SETTINGS within \(settingsTimeout) of TLS")
        }
        if let pingSentAt {
            return now - pingSentAt >= pingTimeout ? .close(reason: "no answer to PING within \(pingTimeout)") : .none
        }
        if openStreams == 0, now - lastActivity >= idleTimeout {
            pingSentAt = now
            return .ping
        }
        return .none
    }

    public mutating func pingAcknowledged(now: NIODeadline) {
        pingSentAt = nil
        lastActivity = now
    }
}
