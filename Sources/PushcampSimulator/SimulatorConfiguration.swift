import Crypto
import NIOCore
import PushcampAPNsCore
import PushcampFCMCore

/// What the simulator checks and what it does wrong on purpose.
public struct SimulatorConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port.
    public var port = 0
    public var credentials: SimulatorCredentials
    /// Provider-token checks; nil accepts requests without `authorization`.
    public var verifier: ProviderTokenVerifier?
    /// Certificate auth: clients may present a TLS certificate signed by the simulator's CA (see
    /// `SimulatorCredentials.clientCertificatePEM`); their requests then need no provider token.
    public var acceptsClientCertificates = false
    public var rules: RequestRules
    /// Token → behaviour; unlisted tokens get 200.
    public var tokens: [String: TokenBehaviour] = [:]
    /// The stream limit announced after the first authenticated request (every connection starts at 1).
    public var maxConcurrentStreams: UInt32 = 500
    /// Sends GOAWAY after this many requests on a connection.
    public var goawayAfter: Int?
    /// Drops the TCP connection, streams in flight, after this many requests on a connection.
    public var dropAfter: Int?
    /// Lowers the stream limit to `to` after `after` requests on a connection, as APNs does under load.
    public var lowerLimit: (after: Int, to: UInt32)?
    /// Added before every answer.
    public var latency: TimeAmount = .zero
    /// Share of well-formed requests answered 500 InternalServerError.
    public var errorRate: Double = 0
    /// The broadcast API (channel management and broadcast sends, on the same port).
    public var broadcast = BroadcastRules(bundleID: nil)
    /// What the broadcast API does wrong on purpose: a per-channel throttle, 5xx, a script of the
    /// first broadcast sends' fates.
    public var broadcastFaults = BroadcastFaults()
    /// Where channels are kept between runs (`channels.json` in `pushcamp sim`'s state folder);
    /// nil keeps them in memory.
    public var channelsFile: String?
    /// FCM HTTP v1 on the same port (the token endpoint at `/token`, `messages:send` under `/v1/projects/`);
    /// nil answers those paths 404.
    public var fcm: FCMSimulation?

    public init(credentials: SimulatorCredentials, verifier: ProviderTokenVerifier?, rules: RequestRules) {
        self.credentials = credentials
        self.verifier = verifier
        self.rules = rules
    }

    /// Checks provider tokens signed with `credentials.signingKey` (and `teamID`/`keyID` when given),
    /// and topics of `bundleID` (any when nil), on the system clock.
    public init(credentials: SimulatorCredentials, teamID: String?, keyID: String?, bundleID: String?) {
        let verifier = ProviderTokenVerifier(
            publicKey: credentials.signingKey.publicKey,
            teamID: teamID,
            keyID: keyID,
            clock: SystemWallClock()
        )
        self.init(credentials: credentials, verifier: verifier, rules: RequestRules(bundleID: bundleID))
        broadcast = BroadcastRules(bundleID: bundleID)
    }
}
