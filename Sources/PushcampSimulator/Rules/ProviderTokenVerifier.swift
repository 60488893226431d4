import Crypto
import Foundation
import PushcampAPNsCore
import Synchronization

/// Checks provider tokens as APNs does: ES256 only, the right key and team, signature valid, not older
/// than an hour, and not replaced more often than every 20 minutes.
public final class ProviderTokenVerifier: Sendable {
    public let publicKey: P256.Signing.PublicKey
    public let teamID: String?
    public let keyID: String?
    private let clock: any WallClock
    private let state = Mutex(State())

    struct State {
        /// Tokens already verified, with their `iat`.
        var known: [String: Int64] = [:]
        /// When the latest new token was first seen (simulator clock).
        var lastNewTokenAt: Double?
        var tokensSeen = 0
        var tooManyUpdates = 0
    }

    public init(publicKey: P256.Signing.PublicKey, teamID: String?, keyID: String?, clock: any WallClock) {
        self.publicKey = publicKey
        self.teamID = teamID
        self.keyID = keyID
        self.clock = clock
    }

    /// Different tokens seen so far, and how often a refresh came too soon.
    public var statistics: (tokens: Int, tooManyUpdates: Int) {
        state.withLock { ($0.tokensSeen, $0.tooManyUpdates) }
    }

    /// nil when the `authorization` header carries a token APNs would accept now.
    public func check(_ authorization: String?) -> APNsReason? {
        guard let authorization, authorization.hasPrefix("bearer ") else { return .missingProviderToken }
        let token = String(authorization.dropFirst("bearer ".count))
        let now = clock.now()
        if let issuedAt = state.withLock({ $0.known[token] }) {
            return now - Double(issuedAt) > 3600 ? .expiredProviderToken : nil
        }
        guard let issuedAt = verify(token) else { return .invalidProviderToken }
        if now - Double(issuedAt) > 3600 { return .expiredProviderToken }
        return state.withLock { state in
            if state.known[token] != nil { return nil }  // verified meanwhile on another connection
            if let last = state.lastNewTokenAt, now - last < 20 * 60 {
                state.tooManyUpdates += 1
                return .tooManyProviderTokenUpdates
            }
            state.lastNewTokenAt = now
            state.tokensSeen += 1
            if state.known.count > 10_000 { state.known.removeAll() }
            state.known[token] = issuedAt
            return nil
        }
    }

    /// The token's `iat` when its form, key, team and signature are right.
    func verify(_ token: String) -> Int64? {
        ProviderTokenJWT.issuedAt(token, publicKey: publicKey, teamID: teamID, keyID: keyID)
    }
}
