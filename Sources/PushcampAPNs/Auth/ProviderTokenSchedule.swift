/// When to mint a provider token: the rules of Apple's token authentication, as a state machine.
///
/// - A token is reused for its lifetime: never one per request.
/// - It is replaced before it is an hour old (APNs answers `ExpiredProviderToken` after that) —
///   at `refreshAge`, 50 minutes.
/// - It is never replaced sooner than 20 minutes after the last one (`TooManyProviderTokenUpdates`).
/// - When APNs calls the current token expired, one new token is minted, however many streams say so;
///   if the token was younger than 20 minutes, the clocks disagree and minting would not help.
public struct ProviderTokenSchedule: Sendable, Equatable {
    public static let refreshAge: Double = 50 * 60
    public static let minimumAge: Double = 20 * 60

    /// When the current token was minted; nil before the first.
    public private(set) var issuedAt: Double?
    /// Increases with every token; responses carry the generation they were sent with.
    public private(set) var generation = 0

    public init() {}

    /// Whether the token must be replaced before the next request at `now`.
    public func needsToken(now: Double) -> Bool {
        guard let issuedAt else { return true }
        return now - issuedAt >= Self.refreshAge
    }

    public mutating func minted(at now: Double) {
        issuedAt = now
        generation += 1
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
}
