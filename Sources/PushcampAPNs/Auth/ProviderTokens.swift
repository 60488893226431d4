import Crypto
import Foundation
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
    }

    /// With a `cacheFile`, a token minted by an earlier process (a send killed and started again) is
    /// reused while young enough: APNs answers TooManyProviderTokenUpdates to a new token within 20
    /// minutes of the last. The file holds only the JWT (readable by its owner only); it is ignored
    /// unless this key signed it for this team and key id.
    public init(
        teamID: String,
        keyID: String,
        key: P256.Signing.PrivateKey,
        clock: any WallClock = SystemWallClock(),
        cacheFile: String? = nil
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
        self.clock = clock
        self.cacheFile = cacheFile
        var initial = State()
        if let cacheFile,
            let cached = (try? String(contentsOfFile: cacheFile, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines),
            let issuedAt = Self.issuedAt(cached, publicKey: key.publicKey, teamID: teamID, keyID: keyID)
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

    /// The `iat` of `token` when it is an ES256 token signed by `publicKey`'s private half, for
    /// `teamID` and `keyID` (any, when nil): what APNs checks, and what a cached token must pass.
    public static func issuedAt(
        _ token: String,
        publicKey: P256.Signing.PublicKey,
        teamID: String?,
        keyID: String?
    ) -> Int64? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]),
            let claimsBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: Data(claimsBytes)) as? [String: Any],
            header["alg"] as? String == "ES256",
            let kid = header["kid"] as? String, keyID == nil || kid == keyID,
            let iss = claims["iss"] as? String, teamID == nil || iss == teamID,
            let iat = (claims["iat"] as? NSNumber)?.int64Value,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8))
        else { return nil }
        return iat
    }

    /// Reads an Apple `.p8` key (PKCS#8 PEM).
    public convenience init(
        teamID: String,
        keyID: String,
        keyFile path: String,
        clock: any WallClock = SystemWallClock(),
        cacheFile: String? = nil
    ) throws(APNsClientError) {
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw APNsClientError(.credentials, "cannot read key file \(path): \(error.localizedDescription)")
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw APNsClientError(
                .credentials,
                "\(path) is not an ES256 (P-256) private key in PEM form, as Apple's .p8 files are"
            )
        }
        self.init(teamID: teamID, keyID: keyID, key: key, clock: clock, cacheFile: cacheFile)
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
        state.bearer = "bearer " + Self.token(teamID: teamID, keyID: keyID, issuedAt: Int64(now), key: key)
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

    /// A JWT: `{"alg":"ES256","kid":…}.{"iss":…,"iat":…}` signed with ECDSA P-256 / SHA-256.
    public static func token(teamID: String, keyID: String, issuedAt: Int64, key: P256.Signing.PrivateKey) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
        let input = header + "." + claims
        // Signing a digest with a fresh nonce cannot fail for a valid key.
        let signature = try! key.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}

/// Base64 with the URL alphabet and no padding, as JWTs use.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { Array($0) }
    }
}
