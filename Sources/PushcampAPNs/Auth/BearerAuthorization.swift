import PushcampAPNsCore

/// Credentials that arrive as a bearer token fetched elsewhere (FCM's OAuth 2.0 access tokens): a
/// connection asks for the current token without waiting and holds its requests while there is none;
/// it reports what the server said of the token it sent; the pool keeps a token at hand while it runs.
public protocol BearerAuthorization: Sendable {
    /// The token to send with now; nil while none is fit to send with.
    func current() -> ProviderTokens.Current?
    /// A request with the token of `generation` was accepted.
    func accepted(generation: Int)
    /// The server refused the token of `generation` (401): true when the request should go again
    /// (a fresh token is fetched, or already was); false when the credentials are wrong.
    func retryRefused(generation: Int) -> Bool
    /// Keeps a token at hand until cancelled: fetched ahead of its expiry and after a refusal, with
    /// `clock`'s waits. Throws `.credentials` when the credentials are refused (the run stops).
    func keepFresh(clock: any WallClock) async throws(APNsClientError)
}

/// Credentials every node on a journal shares through its compare-and-swap store (APNs provider
/// tokens, FCM access tokens): one in use for the cluster, replaced by one node and adopted by the
/// others.
public protocol SharedCredential: Sendable {
    /// The credential's key in the store.
    var sharedName: String { get }
    /// Adopts the stored credential when it is better than ours; replaces it when ours is due within
    /// `lookahead` seconds, so that of several nodes replacing at once one wins.
    func synchronize(
        read: @Sendable () async throws -> String?,
        replace: @Sendable (_ replacing: String?, _ token: String) async throws -> Bool,
        lookahead: Double
    ) async throws
    /// Whether the credential learnt something since it last synchronized that the other nodes
    /// must hear of at once (APNs refused a provider token as too frequent).
    var hasNews: Bool { get }
    /// Why nothing can be sent with it now (a hold, and no token to send with), or nil.
    var heldBack: String? { get }
    /// Shares what the provider refused: a hold this process learnt is stored (`hold`: seconds
    /// from now), a token it went back to is put back in place of the refused one (`replace`);
    /// a hold another node stored (`read`: seconds left) is kept here. Run before `synchronize`.
    func synchronizeHold(
        read: @Sendable () async throws -> Double?,
        hold: @Sendable (_ seconds: Double) async throws -> Void,
        replace: @Sendable (_ replacing: String?, _ token: String) async throws -> Bool
    ) async throws
}

extension SharedCredential {
    /// Credentials without holds (FCM's access tokens) have none to share.
    public var hasNews: Bool { false }
    public var heldBack: String? { nil }

    public func synchronizeHold(
        read: @Sendable () async throws -> Double?,
        hold: @Sendable (_ seconds: Double) async throws -> Void,
        replace: @Sendable (_ replacing: String?, _ token: String) async throws -> Bool
    ) async throws {}
}

extension ProviderTokens: SharedCredential {}
