import PushcampAPNs
import PushcampAPNsCore
import PushcampFCMCore
import Synchronization

/// The OAuth 2.0 access tokens of one service account, for every connection that sends with it: fetched
/// from the token endpoint and used until shortly before they expire (`AccessTokenSchedule`), shared
/// with every node on the journal so that the cluster uses one token per service account per lifetime.
///
/// Connections read `current()` without waiting; fetching is `refresh()`, run by whoever drives the send
/// (before it starts, when a token is due, after a 401).
public final class AccessTokens: Sendable {
    public let account: ServiceAccount
    private let clock: any WallClock
    private let issue: @Sendable (ServiceAccount, Double) async throws(FCMClientError) -> TokenEndpoint.Issued
    private let state = Mutex(State())

    struct State {
        var schedule = AccessTokenSchedule()
        var fetched = 0
        /// A fresh token was refused too: the credentials are wrong.
        var stopped = false
    }

    /// A token ready for the `authorization` header, with its generation (a 401 names it): the same
    /// value a connection gets from APNs provider tokens.
    public typealias Current = ProviderTokens.Current

    public init(
        account: ServiceAccount,
        clock: any WallClock = SystemWallClock(),
        issue: @escaping @Sendable (ServiceAccount, Double) async throws(FCMClientError) -> TokenEndpoint.Issued
    ) {
        self.account = account
        self.clock = clock
        self.issue = issue
    }

    /// Tokens fetched at `endpoint`.
    public convenience init(account: ServiceAccount, endpoint: TokenEndpoint, clock: any WallClock = SystemWallClock())
    {
        self.init(account: account, clock: clock) { account, now throws(FCMClientError) in
            try await endpoint.issue(for: account, now: now)
        }
    }

    /// The token to send with now; nil while none is fit to send with (none fetched yet, the last one
    /// refused or about to expire): requests then wait for `refresh()`.
    public func current() -> Current? {
        let now = clock.now()
        return state.withLock {
            $0.schedule.usable(now: now).map { Current(bearer: "Bearer \($0.bearer)", generation: $0.generation) }
        }
    }

    /// Whether a token should be fetched within `lookahead` seconds.
    public func due(lookahead: Double = 0) -> Bool {
        let now = clock.now()
        return state.withLock { $0.schedule.due(now: now, lookahead: lookahead) }
    }

    /// When the current token should be replaced (seconds since 1970); nil when one is due now.
    public var renewAt: Double? {
        state.withLock { state in
            state.schedule.bearer == nil || state.schedule.retired
                ? nil : state.schedule.refreshAt
        }
    }

    /// How many tokens this process fetched.
    public var fetchedCount: Int { state.withLock { $0.fetched } }

    /// A request with the token of `generation` was accepted.
    public func accepted(generation: Int) {
        state.withLock { $0.schedule.accepted(generation: generation) }
    }

    /// FCM answered 401 to a request sent with the token of `generation`.
    public func refused(generation: Int) -> AccessTokenSchedule.RefusedVerdict {
        state.withLock { state in
            let verdict = state.schedule.refused(generation: generation)
            if verdict == .stop { state.stopped = true }
            return verdict
        }
    }

    /// Fetches a token when one is due (within `lookahead` seconds).
    public func refresh(lookahead: Double = 0) async throws(FCMClientError) {
        guard due(lookahead: lookahead) else { return }
        let now = clock.now()
        let issued = try await issue(account, now)
        state.withLock { state in
            state.schedule.fetched(issued.token, lifetime: issued.lifetime, now: now)
            state.fetched += 1
        }
    }

    /// The journal's key for this account's token.
    public var sharedName: String { SharedAccessToken.key(for: account) }

    /// Shares one token with every node on the journal: adopts the stored one when it outlives ours;
    /// when ours is due within `lookahead` seconds (or there is none), fetches one and stores it in place
    /// of the stored one, so that of several nodes fetching at once one token wins and the others adopt
    /// it. When the store cannot be reached, the error is thrown and the caller goes on with
    /// `refresh()` alone.
    public func synchronize(
        read: @Sendable () async throws -> String?,
        replace: @Sendable (_ replacing: String?, _ token: String) async throws -> Bool,
        lookahead: Double = 120
    ) async throws {
        let stored = try await read()
        var now = clock.now()
        let needed = state.withLock { state -> Bool in
            if let stored, let shared = SharedAccessToken(encoded: stored) {
                state.schedule.adopt(shared.token, expires: shared.expires, now: now)
            }
            return state.schedule.due(now: now, lookahead: lookahead)
        }
        guard needed else {
            // Ours is good: shared when the store has none, or one that expires sooner.
            let ours = state.withLock { state in
                state.schedule.bearer.map { SharedAccessToken(token: $0, expires: state.schedule.expires) }
            }
            let theirs = stored.flatMap(SharedAccessToken.init(encoded:))
            if let ours, ours.token != theirs?.token, ours.expires > theirs?.expires ?? 0 {
                _ = try await replace(stored, ours.encoded)
            }
            return
        }
        now = clock.now()
        let issued = try await issue(account, now)
        let fresh = SharedAccessToken(token: issued.token, expires: now + issued.lifetime)
        if try await replace(stored, fresh.encoded) {
            state.withLock { state in
                state.schedule.fetched(issued.token, lifetime: issued.lifetime, now: now)
                state.fetched += 1
            }
        } else if let winner = try await read().flatMap(SharedAccessToken.init(encoded:)) {
            let now = clock.now()
            state.withLock { _ = $0.schedule.adopt(winner.token, expires: winner.expires, now: now) }
        }
    }
}

extension AccessTokens: BearerAuthorization {
    public func retryRefused(generation: Int) -> Bool {
        refused(generation: generation) != .stop
    }

    /// Fetches a token whenever one is due (ahead of expiry, after a 401), looking four times a
    /// second; a token endpoint that cannot be reached is tried again after 1, 2, 4… up to 30 s.
    /// Throws `.credentials` when the endpoint refuses the service account, or when a fresh token
    /// was refused too.
    public func keepFresh(clock: any WallClock) async throws(APNsClientError) {
        var backoff = 1.0
        var stopped = false
        while !Task.isCancelled {
            if state.withLock({ $0.stopped }) { stopped = true }
            if stopped {
                throw APNsClientError(
                    .credentials,
                    "FCM refused a fresh access token for \(account.clientEmail) (401 UNAUTHENTICATED): the service "
                        + "account cannot send in this project"
                )
            }
            var wait = 0.25
            if due() {
                do {
                    try await refresh()
                    backoff = 1
                } catch  where error.code == .credentials {
                    throw APNsClientError(.credentials, error.message)
                } catch {
                    wait = backoff
                    backoff = min(backoff * 2, 30)
                }
            }
            do {
                try await clock.sleep(until: clock.now() + wait)
            } catch {
                return
            }
        }
    }
}

extension AccessTokens: SharedCredential {}
