/// When to fetch an FCM access token and what a 401 means, as a plain value: tested without a clock or
/// a network (`reference/FCM.md`, section 2).
///
/// A token is used until shortly before it expires and fetched again a few minutes ahead, so a run never
/// sends with an expired one. A 401 (`UNAUTHENTICATED`) retires the token it was sent with and asks for one
/// fresh token; a 401 for that fresh token, before any request with it was accepted, means the
/// credentials are wrong: the run stops.
public struct AccessTokenSchedule: Sendable, Equatable {
    /// A token is fetched again this long before it expires (or, for a token living less than
    /// twice that, halfway through the time it may be sent with).
    public static let refreshAhead: Double = 300
    /// No request goes out with a token that expires within this (a request's time on the wire).
    public static let safetyMargin: Double = 60

    public private(set) var bearer: String?
    /// When the token expires (seconds since 1970).
    public private(set) var expires: Double = 0
    /// When the next token should be fetched.
    public private(set) var refreshAt: Double = 0
    /// Rises with each token taken into use; a 401 names the generation it was sent with.
    public private(set) var generation = 0
    /// A 401 retired the current token.
    public private(set) var retired = false
    /// The current token replaced one a 401 retired, and no request with it was accepted yet.
    private var fetchedAfterRefusal = false
    /// The last token a 401 retired: never adopted again from a shared store.
    private var refusedBearer: String?

    public init() {}

    /// The token to send with now, and its generation; nil when there is none fit to send with.
    public func usable(now: Double) -> (bearer: String, generation: Int)? {
        guard let bearer, !retired, now < expires - Self.safetyMargin else { return nil }
        return (bearer, generation)
    }

    /// A token should be fetched now: none yet, the current one retired, or it expires within
    /// `refreshAhead` (plus `lookahead`, to fetch before a pause).
    public func due(now: Double, lookahead: Double = 0) -> Bool {
        bearer == nil || retired || now + lookahead >= refreshAt
    }

    /// A token fetched now that lives `lifetime` seconds.
    public mutating func fetched(_ token: String, lifetime: Double, now: Double) {
        fetchedAfterRefusal = retired
        use(token, expires: now + lifetime, lifetime: lifetime)
    }

    /// Takes a token another node fetched, when it outlives ours, is not one a 401 retired, and is fit
    /// to send with. Returns whether it was taken.
    @discardableResult
    public mutating func adopt(_ token: String, expires: Double, now: Double) -> Bool {
        guard token != bearer, token != refusedBearer, expires - Self.safetyMargin > now,
            retired || bearer == nil || expires > self.expires
        else { return false }
        fetchedAfterRefusal = retired
        use(token, expires: expires, lifetime: expires - now)
        return true
    }

    private mutating func use(_ token: String, expires: Double, lifetime: Double) {
        bearer = token
        self.expires = expires
        // Google's tokens live an hour: fetched again 5 minutes ahead. A shorter-lived one (a
        // simulator's) halfway through the time it may be sent with, so it is never refetched in a loop.
        let window = max(0, lifetime - Self.safetyMargin)
        refreshAt = expires - Self.safetyMargin - min(Self.refreshAhead - Self.safetyMargin, window / 2)
        generation += 1
        retired = false
    }

    /// A request with the token of `generation` was accepted: the credentials work.
    public mutating func accepted(generation: Int) {
        if generation == self.generation { fetchedAfterRefusal = false }
    }

    public enum RefusedVerdict: Equatable, Sendable {
        /// Fetch one fresh token and send the request again.
        case fetch
        /// A newer token is already in use (or being fetched): send again with it.
        case alreadyReplaced
        /// The fresh token was refused too: the credentials are wrong; stop.
        case stop
    }

    /// FCM answered 401 `UNAUTHENTICATED` to a request sent with the token of `generation`.
    public mutating func refused(generation: Int) -> RefusedVerdict {
        guard generation == self.generation else { return .alreadyReplaced }
        if retired { return .alreadyReplaced }
        if fetchedAfterRefusal { return .stop }
        retired = true
        refusedBearer = bearer
        return .fetch
    }
}

/// An access token as the journal keeps it for every node: `<expires> <token>`, where `expires` is in
/// whole seconds since 1970. The store's key names the service account and its key
/// (`fcm/<client_email>/<key fingerprint>`), so a rotated key never reuses the old key's token.
public struct SharedAccessToken: Sendable, Equatable {
    public var token: String
    public var expires: Double

    public init(token: String, expires: Double) {
        self.token = token
        self.expires = expires
    }

    public init?(encoded: String) {
        let parts = encoded.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let expires = Int64(parts[0]), !parts[1].isEmpty else { return nil }
        self.init(token: String(parts[1]), expires: Double(expires))
    }

    public var encoded: String { "\(Int64(expires.rounded(.down))) \(token)" }

    /// The store's key for `account`'s tokens.
    public static func key(for account: ServiceAccount) -> String {
        "fcm/\(account.clientEmail)/\(account.fingerprint)"
    }
}
