import Crypto
import PushcampAPNsCore
import Synchronization

/// The one `ProviderTokens` per Apple key (team, key id, key fingerprint) in a process: every run
/// that sends with a key asks here, so ten campaigns of one app starting in the same second share
/// one token instead of minting ten (nine of which APNs would refuse as
/// `TooManyProviderTokenUpdates`). `shared` serves the whole process; tests make their own.
public final class ProviderTokenOwners: Sendable {
    public static let shared = ProviderTokenOwners()

    private let owners = Mutex<[String: ProviderTokens]>([:])

    public init() {}

    /// The owner of `key`'s tokens, made on first use with `clock` and `cacheDirectory`.
    public func tokens(
        teamID: String,
        keyID: String,
        key: P256.Signing.PrivateKey,
        clock: any WallClock,
        cacheDirectory: String?
    ) -> ProviderTokens {
        let name = "\(teamID)\u{1F}\(keyID)\u{1F}\(ProviderTokenJWT.fingerprint(of: key.publicKey))"
        return owners.withLock { owners in
            if let owner = owners[name] { return owner }
            let owner = ProviderTokens(
                teamID: teamID,
                keyID: keyID,
                key: key,
                clock: clock,
                cacheDirectory: cacheDirectory
            )
            owners[name] = owner
            return owner
        }
    }

    /// How many tokens this process minted per key (team and key id), adopted ones not counted:
    /// first mints and renewals alike.
    public func minted() -> [(teamID: String, keyID: String, count: Int)] {
        owners.withLock { owners in
            var counts: [String: (teamID: String, keyID: String, count: Int)] = [:]
            for owner in owners.values {
                counts["\(owner.teamID)/\(owner.keyID)", default: (owner.teamID, owner.keyID, 0)].count +=
                    owner.mintedCount
            }
            return counts.keys.sorted().map { counts[$0]! }
        }
    }

    /// The owner of the tokens of the `.p8` key at `path` (read now, so a replaced key file is a
    /// new key).
    public func tokens(
        teamID: String,
        keyID: String,
        keyFile path: String,
        clock: any WallClock,
        cacheDirectory: String?
    ) throws(APNsClientError) -> ProviderTokens {
        tokens(
            teamID: teamID,
            keyID: keyID,
            key: try ProviderTokens.readKey(path),
            clock: clock,
            cacheDirectory: cacheDirectory
        )
    }
}
