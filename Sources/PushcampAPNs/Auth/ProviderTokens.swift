import Crypto
import Foundation
import PushcampAPNsCore
import Synchronization

/// ES256 provider tokens (JWT) for one Apple key, shared by every connection of a pool.
///
/// Thread-safe: connections on several event loops ask for the current token; minting follows
/// `ProviderTokenSchedule`.
public final class ProviderTokens: Sendable {
    public let teamID: String
    public let keyID: String
    private let key: P256.Signing.PrivateKey
    private let clock: any WallClock
    private let state: Mutex<State>
    /// Where the current token is kept between processes, if anywhere.
    public let cacheFile: String?

    struct State {
        var schedule = ProviderTokenSchedule()
        var bearer = ""
        var minted = 0
    }

    /// A token ready for the `authorization` header.
    public struct Current: Sendable {
        public var bearer: String
        public var generation: Int

        package init(bearer: String, generation: Int) {
            self.bearer = bearer
            self.generation = generation
        }
    }

    /// With a `cacheDirectory`, a token minted by an earlier process (a send killed and started again)
    /// is reused while young enough: APNs answers TooManyProviderTokenUpdates to a new token within 20
    /// minutes of the last. The cache file is named after the team, the key id and the key's
    /// fingerprint, so a wrong key given for the same key id never replaces the right key's token;
    /// it holds only the JWT (readable by its owner only) and is ignored unless this key signed it
    /// for this team and key id.
    public init(
        teamID: String,
        keyID: String,
        key: P256.Signing.PrivateKey,
        clock: any WallClock = SystemWallClock(),
        cacheDirectory: String? = nil
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
        self.clock = clock
        self.cacheFile = cacheDirectory.map { directory in
            (directory as NSString).appendingPathComponent(
                "provider-token-\(teamID)-\(keyID)-\(ProviderTokenJWT.fingerprint(of: key.publicKey)).jwt"
            )
        }
        var initial = State()
        if let cacheFile,
            let cached = (try? String(contentsOfFile: cacheFile, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines),
            let issuedAt = ProviderTokenJWT.issuedAt(cached, publicKey: key.publicKey, teamID: teamID, keyID: keyID)
        {
            initial.schedule.minted(at: Double(issuedAt))
            if initial.schedule.needsToken(now: clock.now()) || Double(issuedAt) > clock.now() + 60 {
                initial = State()
            } else {
                initial.bearer = "bearer " + cached
            }
        }
        self.state = Mutex(initial)
    }

    /// Reads an Apple `.p8` key (PKCS#8 PEM).
    public convenience init(
        teamID: String,
        keyID: String,
        keyFile path: String,
        clock: any WallClock = SystemWallClock(),
        cacheDirectory: String? = nil
    ) throws(APNsClientError) {
        let key: P256.Signing.PrivateKey
        do {
            key = try SigningKeyFile.read(path)
        } catch {
            throw APNsClientError(.credentials, error.description)
        }
        self.init(teamID: teamID, keyID: keyID, key: key, clock: clock, cacheDirectory: cacheDirectory)
    }

    /// The token to send now, minted first if the schedule says so.
    public func current() -> Current {
        let now = clock.now()
        return state.withLock { state in
            if state.schedule.needsToken(now: now) { mint(&state, now: now) }
            return Current(bearer: state.bearer, generation: state.schedule.generation)
        }
    }

    /// APNs called the token of `generation` expired.
    public func expired(generation: Int) -> ProviderTokenSchedule.ExpiredVerdict {
        let now = clock.now()
        return state.withLock { state in
            let verdict = state.schedule.expired(generation: generation, now: now)
            if verdict == .mint { mint(&state, now: now) }
            return verdict
        }
    }

    /// How many tokens this process has minted.
    public var mintedCount: Int { state.withLock { $0.minted } }

    private func mint(_ state: inout State, now: Double) {
        state.bearer = "bearer " + ProviderTokenJWT.make(teamID: teamID, keyID: keyID, issuedAt: Int64(now), key: key)
        state.schedule.minted(at: now)
        state.minted += 1
        if let cacheFile {
            // Best effort: without it, a restart within 20 minutes meets TooManyProviderTokenUpdates.
            let token = String(state.bearer.dropFirst("bearer ".count))
            let temporary = cacheFile + ".tmp"
            if FileManager.default.createFile(
                atPath: temporary,
                contents: Data(token.utf8),
                attributes: [.posixPermissions: 0o600]
            ) {
                _ = rename(temporary, cacheFile)
            }
        }
    }
}
