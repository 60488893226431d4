import GRDB
import PushcampAPNsCore
import Synchronization

/// One provider token per Apple key for every node on the journal: APNs answers
/// TooManyProviderTokenUpdates to a team whose tokens change more often than every 20 minutes, so
/// N nodes must share one token rather than mint one each. A token is a signed JWT good for an
/// hour at most; it cannot be used to sign another.
public protocol ProviderTokenStore: Sendable {
    /// The token the nodes share for `key` (the team, key id and key fingerprint), if any.
    func providerToken(for key: String) async throws(JournalError) -> String?
    /// Stores `token` for `key` while the stored one is still `replacing` (nil: none is stored):
    /// of several nodes refreshing at once, one stores its token and the others adopt it.
    func replaceProviderToken(
        for key: String,
        replacing: String?,
        with token: String
    ) async throws(JournalError)
        -> Bool
    /// APNs refused a token for `key` as too frequent: no node mints one for `seconds` from now on
    /// the store's clock (a longer hold already stored stands).
    func holdProviderToken(for key: String, seconds: Double) async throws(JournalError)
    /// Seconds left of `key`'s hold on the store's clock; nil when there is none, or it is over.
    func providerTokenHold(for key: String) async throws(JournalError) -> Double?
}

extension MemoryJournal: ProviderTokenStore {
    public func providerToken(for key: String) async throws(JournalError) -> String? {
        state.withLock { $0.providerTokens[key] }
    }

    public func replaceProviderToken(
        for key: String,
        replacing: String?,
        with token: String
    ) async throws(JournalError) -> Bool {
        state.withLock { state in
            guard state.providerTokens[key] == replacing else { return false }
            state.providerTokens[key] = token
            return true
        }
    }

    public func holdProviderToken(for key: String, seconds: Double) async throws(JournalError) {
        let until = clock.now() + seconds
        state.withLock { $0.providerTokenHolds[key] = max($0.providerTokenHolds[key] ?? until, until) }
    }

    public func providerTokenHold(for key: String) async throws(JournalError) -> Double? {
        let now = clock.now()
        return state.withLock { state in state.providerTokenHolds[key].map { $0 - now }.flatMap { $0 > 0 ? $0 : nil } }
    }
}

extension SQLiteJournal: ProviderTokenStore {
    public func providerToken(for key: String) async throws(JournalError) -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT token FROM provider_token WHERE key = ?", arguments: [key])
        }
    }

    public func replaceProviderToken(
        for key: String,
        replacing: String?,
        with token: String
    ) async throws(JournalError) -> Bool {
        try await write { db in
            if let replacing {
                try db.execute(
                    sql: "UPDATE provider_token SET token = ? WHERE key = ? AND token = ?",
                    arguments: [token, key, replacing]
                )
            } else {
                try db.execute(
                    sql: "INSERT INTO provider_token (key, token) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                    arguments: [key, token]
                )
            }
            return db.changesCount == 1
        }
    }

    public func holdProviderToken(for key: String, seconds: Double) async throws(JournalError) {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO provider_token_hold (key, held_until) VALUES (?, \(Self.sqliteNow) + ?)
                    ON CONFLICT (key) DO UPDATE SET held_until = max(held_until, excluded.held_until)
                    """,
                arguments: [key, seconds]
            )
        }
    }

    public func providerTokenHold(for key: String) async throws(JournalError) -> Double? {
        try await read { db in
            let left = try Double.fetchOne(
                db,
                sql: "SELECT held_until - \(Self.sqliteNow) FROM provider_token_hold WHERE key = ?",
                arguments: [key]
            )
            return left.flatMap { $0 > 0 ? $0 : nil }
        }
    }
}
