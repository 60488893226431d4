/// When to mint a provider token: the rules of Apple's token authentication, as a state machine.
///
/// - A token is reused for its lifetime: never one per request.
/// - It is replaced before it is an hour old (APNs answers `ExpiredProviderToken` after that) —
///   at `refreshAge`, 50 minutes.
/// - It is never replaced sooner than 20 minutes after the last one (`TooManyProviderTokenUpdates`).
/// - When APNs calls the current token expired, one new token is minted, however many streams say so;
///   if the token was younger than 20 minutes, the clocks disagree and minting would not help.
/// - When APNs refuses a new token as too frequent (another process minted one for the same key),
///   the token before it goes back into use while it is young enough, and no token is minted for
///   20 minutes: a refused token is never kept.
public struct ProviderTokenSchedule: Sendable, Equatable {
    public static let refreshAge: Double = 50 * 60
    public static let minimumAge: Double = 20 * 60
    /// APNs refuses a token older than an hour; a token is not put back into use past this age.
    public static let lastUsableAge: Double = 59 * 60

    /// When the current token was minted; nil before the first.
    public private(set) var issuedAt: Double?
    /// Increases with every token; responses carry the generation they were sent with.
    public private(set) var generation = 0
    /// When the token before the current one was minted: the one to go back to if APNs refuses
    /// the current one as too frequent.
    public private(set) var previousIssuedAt: Double?
    /// No new token before this moment (set when APNs refused one as too frequent).
    public private(set) var holdUntil: Double?

    public init() {}

    /// Whether the token must be replaced before the next request at `now`.
    public func needsToken(now: Double) -> Bool {
        guard let issuedAt else { return true }
        let age = now - issuedAt
        if age >= Self.lastUsableAge { return true }
        if let holdUntil, now < holdUntil { return false }
        return age >= Self.refreshAge
    }

    /// A token issued at `issuedAt` is now in use (minted here, or adopted from another process).
    public mutating func minted(at issuedAt: Double) {
        previousIssuedAt = self.issuedAt
        self.issuedAt = issuedAt
        generation += 1
    }

    /// No token is minted before `moment` (another process saw APNs refuse one as too frequent),
    /// unless the current one is about to expire.
    public mutating func hold(until moment: Double) {
        holdUntil = max(holdUntil ?? moment, moment)
    }

    public enum ExpiredVerdict: Equatable, Sendable {
        /// Mint a new token, then retry.
        case mint
        /// A newer token already replaced the one rejected: just retry.
        case alreadyReplaced
        /// The rejected token is younger than 20 minutes: this machine's clock or APNs' disagree.
        case clockSkew(ageSeconds: Int)
    }

    /// APNs answered `ExpiredProviderToken` to a request sent with token `generation`.
    public func expired(generation rejected: Int, now: Double) -> ExpiredVerdict {
        guard rejected == generation, let issuedAt else { return .alreadyReplaced }
        let age = now - issuedAt
        return age < Self.minimumAge ? .clockSkew(ageSeconds: Int(age)) : .mint
    }

    public enum RefusedVerdict: Equatable, Sendable {
        /// The token before the refused one is in use again (a new generation): retry with it.
        case reverted
        /// A newer token already replaced the one refused: just retry.
        case alreadyReplaced
        /// No earlier token is young enough to go back to: the refusal stands.
        case stands
    }

    /// APNs answered `TooManyProviderTokenUpdates` to a request sent with token `generation`: that
    /// token was minted within 20 minutes of another one for the same key, somewhere else.
    public mutating func refused(generation rejected: Int, now: Double) -> RefusedVerdict {
        guard rejected == generation else { return .alreadyReplaced }
        // Whoever minted the other token did so less than 20 minutes ago: wait that long.
        holdUntil = now + Self.minimumAge
        guard let previous = previousIssuedAt, now - previous < Self.lastUsableAge else { return .stands }
        issuedAt = previous
        previousIssuedAt = nil
        generation += 1
        return .reverted
    }
}
