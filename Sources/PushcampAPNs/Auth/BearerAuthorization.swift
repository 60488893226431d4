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
