import Crypto
import Foundation
import PushcampAPNsCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ES256 provider tokens (JWT) for one Apple key: the one owner of that key's tokens in the
/// process (`ProviderTokenOwners` hands the same instance to every run), shared by every
/// connection of every pool that sends with the key.
///
/// Thread-safe: connections on several event loops ask for the current token; minting follows
/// `ProviderTokenSchedule`. With a cache directory, every process on the machine that keeps its
/// journal there shares one token too: the cache file is read again under an exclusive lock before
/// a token is minted, so a token another process minted meanwhile is adopted instead of a second
/// one that APNs would refuse (`TooManyProviderTokenUpdates`).
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
        /// The token before `bearer`, while the schedule may go back to it.
        var previousBearer: String?
        var minted = 0
        /// The hold (`schedule.holdUntil`) the journal's store has, as far as this process knows.
        var sharedHold: Double?
        /// After APNs refused a token as too frequent and the one before it went back into use:
        /// the refused JWT and the one to put back in its place in the store.
        var putBack: (refused: String, token: String)?
    }

    /// A token ready for the `authorization` header.
    public struct Current: Sendable, Equatable {
        public var bearer: String
        public var generation: Int

        package init(bearer: String, generation: Int) {
            self.bearer = bearer
            self.generation = generation
        }
    }

    /// With a `cacheDirectory`, a token minted by an earlier or another process (a send killed and
    /// started again, a second `serve`) is reused while young enough: APNs answers
    /// TooManyProviderTokenUpdates to a new token within 20 minutes of the last. The cache file is
    /// named after the team, the key id and the key's fingerprint, so a wrong key given for the same
    /// key id never replaces the right key's token; it holds only the JWT (readable by its owner
    /// only) and is ignored unless this key signed it for this team and key id.
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
        if let cacheDirectory {
            // The folder beside the journal file, which a PostgreSQL journal never creates.
            try? FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        }
        self.cacheFile = cacheDirectory.map { directory in
            (directory as NSString).appendingPathComponent(
                "provider-token-\(teamID)-\(keyID)-\(ProviderTokenJWT.fingerprint(of: key.publicKey)).jwt"
            )
        }
        self.state = Mutex(State())
    }

    /// Reads an Apple `.p8` key (PKCS#8 PEM).
    static func readKey(_ path: String) throws(APNsClientError) -> P256.Signing.PrivateKey {
        do {
            return try SigningKeyFile.read(path)
        } catch {
            throw APNsClientError(.credentials, error.description)
        }
    }

    /// The token to send now, minted (or adopted from the cache) first if the schedule says so.
    public func current() -> Current {
        let now = clock.now()
        return state.withLock { state in
            if state.schedule.needsToken(now: now) { renew(&state, now: now) }
            return Current(bearer: state.bearer, generation: state.schedule.generation)
        }
    }

    /// APNs called the token of `generation` expired.
    public func expired(generation: Int) -> ProviderTokenSchedule.ExpiredVerdict {
        let now = clock.now()
        return state.withLock { state in
            let verdict = state.schedule.expired(generation: generation, now: now)
            if verdict == .mint { renew(&state, now: now) }
            return verdict
        }
    }

    /// APNs refused the token of `generation` as too frequent (`TooManyProviderTokenUpdates`): the
    /// token before it goes back into use when it can (and back into the cache file, if the refused
    /// one is there), so a refused token never outlives the answer.
    public func refused(generation: Int) -> ProviderTokenSchedule.RefusedVerdict {
        let now = clock.now()
        return state.withLock { state in
            let refusedBearer = state.bearer
            let verdict = state.schedule.refused(generation: generation, now: now)
            guard verdict != .alreadyReplaced else { return verdict }
            if verdict == .reverted, let previous = state.previousBearer {
                state.bearer = previous
                state.previousBearer = nil
                state.putBack = (Self.jwt(of: refusedBearer), Self.jwt(of: previous))
            } else if verdict == .stands {
                // Nothing to go back to: an empty token in its place, which no node adopts.
                state.putBack = (Self.jwt(of: refusedBearer), "")
            }
            if let cacheFile {
                CacheLock.withExclusiveLock(on: cacheFile) {
                    guard Self.read(cacheFile)?.token == Self.jwt(of: refusedBearer) else { return }
                    if verdict == .reverted {
                        // With the hold, so that no process on the machine mints for 20 minutes.
                        Self.write(
                            CachedToken(token: Self.jwt(of: state.bearer), holdUntil: state.schedule.holdUntil),
                            to: cacheFile
                        )
                    } else {
                        unlink(cacheFile)
                    }
                }
            }
            return verdict
        }
    }

    /// The key's name where its token is shared: team, key id and the key's fingerprint.
    public var sharedName: String {
        "\(teamID)/\(keyID)/\(ProviderTokenJWT.fingerprint(of: key.publicKey))"
    }

    /// Shares one token with every node on the journal: adopts the stored token when it is newer
    /// than ours and still usable; when ours is due for refresh within `lookahead` seconds (or
    /// there is none), mints one and stores it in place of the stored one, so that of several
    /// nodes refreshing at once one token wins and the others adopt it. Run before a send and
    /// every minute while it lasts; when the store cannot be reached, `current()` goes on as on
    /// one machine.
    public func synchronize(
        read: @Sendable () async throws -> String?,
        replace: @Sendable (_ replacing: String?, _ token: String) async throws -> Bool,
        lookahead: Double = 120
    ) async throws {
        let stored = try await read()
        let now = clock.now()
        let (candidate, share): (String?, String?) = state.withLock { state in
            if let stored, let issuedAt = usableIssuedAt(stored, now: now),
                issuedAt > state.schedule.issuedAt ?? -.infinity
            {
                adopt("bearer " + stored, issuedAt: issuedAt, into: &state)
            }
            // A token this machine's processes cached is as good as the store's: a process on
            // another journal (or none) may have minted it within the last 20 minutes.
            adoptCached(&state, now: now)
            if let holdUntil = state.schedule.holdUntil, now < holdUntil { return (nil, nil) }
            guard state.schedule.needsToken(now: now + lookahead) else {
                // Ours is good: shared when the store has none yet.
                return (nil, stored == nil && !state.bearer.isEmpty ? Self.jwt(of: state.bearer) : nil)
            }
            return (ProviderTokenJWT.make(teamID: teamID, keyID: keyID, issuedAt: Int64(now), key: key), nil)
        }
        if let share {
            _ = try await replace(nil, share)
            return
        }
        guard let candidate else { return }
        if try await replace(stored, candidate) {
            state.withLock { state in
                adopt("bearer " + candidate, issuedAt: Double(Int64(now)), into: &state)
                state.minted += 1
            }
            if let cacheFile {
                CacheLock.withExclusiveLock(on: cacheFile) {
                    Self.write(CachedToken(token: candidate, holdUntil: nil), to: cacheFile)
                }
            }
        } else if let winner = try await read() {
            state.withLock { state in
                if let issuedAt = usableIssuedAt(winner, now: now), issuedAt > state.schedule.issuedAt ?? -.infinity {
                    adopt("bearer " + winner, issuedAt: issuedAt, into: &state)
                }
            }
        }
    }

    public var heldBack: String? {
        let now = clock.now()
        return state.withLock { state in
            guard let until = state.schedule.holdUntil, until > now else { return nil }
            if let issuedAt = state.schedule.issuedAt, now - issuedAt < ProviderTokenSchedule.lastUsableAge,
                !state.bearer.isEmpty
            {
                return nil
            }
            return "APNs refused a new provider token for key \(keyID) of team \(teamID) as too frequent "
                + "(TooManyProviderTokenUpdates, here or on a node sharing this journal), and no earlier token is "
                + "at hand: no token is minted before \(Self.utc(until)), \(Int(((until - now) / 60).rounded(.up))) min from now"
        }
    }

    /// "2026-12-06 03:41:07 UTC".
    private static func utc(_ seconds: Double) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d UTC",
            parts.tm_year + 1900,
            parts.tm_mon + 1,
            parts.tm_mday,
            parts.tm_hour,
            parts.tm_min,
            parts.tm_sec
        )
    }

    public var hasNews: Bool {
        let now = clock.now()
        return state.withLock { state in
            state.putBack != nil || (state.schedule.holdUntil.map { $0 > now && $0 != state.sharedHold } ?? false)
        }
    }

    /// Shares APNs's refusal of a token as too frequent with every node on the journal, as the
    /// cache file does with the processes on this machine: a hold learnt here is stored (no node
    /// mints into it), the token gone back to replaces the refused one in the store (no node
    /// adopts the refused one); a hold another node stored is kept here, measured on the store's
    /// clock (`read` answers the seconds left).
    public func synchronizeHold(
        read: @Sendable () async throws -> Double?,
        hold: @Sendable (_ seconds: Double) async throws -> Void,
        replace: @Sendable (_ replacing: String?, _ token: String) async throws -> Bool
    ) async throws {
        let now = clock.now()
        let (learnt, putBack) = state.withLock { state -> (Double?, (refused: String, token: String)?) in
            let learnt = state.schedule.holdUntil.flatMap { $0 > now && $0 != state.sharedHold ? $0 : nil }
            return (learnt, state.putBack)
        }
        if let putBack {
            _ = try await replace(putBack.refused, putBack.token)
            state.withLock { state in
                if state.putBack?.refused == putBack.refused { state.putBack = nil }
            }
        }
        if let learnt {
            try await hold(learnt - now)
            state.withLock { $0.sharedHold = max($0.sharedHold ?? learnt, learnt) }
            return
        }
        guard let left = try await read() else { return }
        state.withLock { state in
            state.schedule.hold(until: now + left)
            state.sharedHold = state.schedule.holdUntil
        }
    }

    /// Adopts the cache file's token when it is usable and newer than ours (with its hold).
    private func adoptCached(_ state: inout State, now: Double) {
        guard let cacheFile else { return }
        CacheLock.withExclusiveLock(on: cacheFile) {
            guard let cached = Self.read(cacheFile), let issuedAt = usableIssuedAt(cached.token, now: now),
                issuedAt > state.schedule.issuedAt ?? -.infinity
            else { return }
            adopt("bearer " + cached.token, issuedAt: issuedAt, into: &state)
            if let holdUntil = cached.holdUntil { state.schedule.hold(until: holdUntil) }
        }
    }

    /// How many tokens this process has minted.
    public var mintedCount: Int { state.withLock { $0.minted } }

    /// A new token in use: the cache's, when another process put a usable one there since ours, or
    /// one minted now and put there. A cached token too old to refresh with (but not yet expired)
    /// becomes the one to go back to should APNs refuse the new one.
    private func renew(_ state: inout State, now: Double) {
        guard let cacheFile else {
            mint(&state, now: now)
            return
        }
        CacheLock.withExclusiveLock(on: cacheFile) {
            if let cached = Self.read(cacheFile), let issuedAt = usableIssuedAt(cached.token, now: now),
                issuedAt > state.schedule.issuedAt ?? -.infinity
            {
                adopt("bearer " + cached.token, issuedAt: issuedAt, into: &state)
                if let holdUntil = cached.holdUntil { state.schedule.hold(until: holdUntil) }
                if !state.schedule.needsToken(now: now) { return }
            }
            mint(&state, now: now)
            Self.write(CachedToken(token: Self.jwt(of: state.bearer), holdUntil: nil), to: cacheFile)
        }
    }

    /// The `iat` of a cached token that is ours and that APNs still takes.
    private func usableIssuedAt(_ token: String, now: Double) -> Double? {
        guard let iat = ProviderTokenJWT.issuedAt(token, publicKey: key.publicKey, teamID: teamID, keyID: keyID)
        else { return nil }
        let issuedAt = Double(iat)
        guard now - issuedAt < ProviderTokenSchedule.lastUsableAge, issuedAt <= now + 60 else { return nil }
        return issuedAt
    }

    private func adopt(_ bearer: String, issuedAt: Double, into state: inout State) {
        state.previousBearer = state.bearer.isEmpty ? nil : state.bearer
        state.bearer = bearer
        state.schedule.minted(at: issuedAt)
    }

    private func mint(_ state: inout State, now: Double) {
        let token = ProviderTokenJWT.make(teamID: teamID, keyID: keyID, issuedAt: Int64(now), key: key)
        adopt("bearer " + token, issuedAt: Double(Int64(now)), into: &state)
        state.minted += 1
    }

    private static func jwt(of bearer: String) -> String {
        String(bearer.dropFirst("bearer ".count))
    }

    /// The cache file: the JWT on its first line, and, after APNs refused a newer token as too
    /// frequent, `hold-until SECONDS` on the second (no token is minted before then).
    struct CachedToken: Equatable {
        var token: String
        var holdUntil: Double?
    }

    private static func read(_ file: String) -> CachedToken? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let token = lines.first, !token.isEmpty else { return nil }
        let hold = lines.dropFirst().first { $0.hasPrefix("hold-until ") }.flatMap {
            Double($0.dropFirst("hold-until ".count))
        }
        return CachedToken(token: token, holdUntil: hold)
    }

    /// Best effort: without it, a restart within 20 minutes meets TooManyProviderTokenUpdates.
    private static func write(_ cached: CachedToken, to file: String) {
        let temporary = file + ".tmp"
        let text = cached.token + (cached.holdUntil.map { "\nhold-until \(Int64($0.rounded(.up)))" } ?? "") + "\n"
        if FileManager.default.createFile(
            atPath: temporary,
            contents: Data(text.utf8),
            attributes: [.posixPermissions: 0o600]
        ) {
            _ = rename(temporary, file)
        }
    }
}

/// An exclusive `flock` on a file beside the cached token, held while it is read and replaced: the
/// lock every process on the machine takes before it mints. Best effort: without the lock file
/// (a read-only folder), the body runs unlocked.
enum CacheLock {
    static func withExclusiveLock(on file: String, _ body: () -> Void) {
        let descriptor = open(file + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            body()
            return
        }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        defer { _ = flock(descriptor, LOCK_UN) }
        body()
    }
}
