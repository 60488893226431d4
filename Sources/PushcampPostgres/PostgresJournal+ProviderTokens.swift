import PostgresNIO
import PushcampJournal

/// The provider token every node shares, replaced by compare-and-swap.
extension PostgresJournal: ProviderTokenStore {
    public func providerToken(for key: String) async throws(JournalError) -> String? {
        let rows = try await rows("SELECT token FROM provider_token WHERE key = \(key)")
        guard let row = rows.first else { return nil }
        return try decode(row, "token", String.self)
    }

    public func replaceProviderToken(
        for key: String,
        replacing: String?,
        with token: String
    ) async throws(JournalError) -> Bool {
        let rows: [PostgresRandomAccessRow]
        if let replacing {
            rows = try await self.rows(
                "UPDATE provider_token SET token = \(token) WHERE key = \(key) AND token = \(replacing) RETURNING key"
            )
        } else {
            rows = try await self.rows(
                "INSERT INTO provider_token (key, token) VALUES (\(key), \(token)) ON CONFLICT (key) DO NOTHING RETURNING key"
            )
        }
        return !rows.isEmpty
    }

    public func holdProviderToken(for key: String, seconds: Double) async throws(JournalError) {
        try await execute(
            """
            INSERT INTO provider_token_hold (key, held_until)
            VALUES (\(key), extract(epoch FROM clock_timestamp()) + \(seconds))
            ON CONFLICT (key) DO UPDATE SET held_until = greatest(provider_token_hold.held_until, excluded.held_until)
            """
        )
    }

    public func providerTokenHold(for key: String) async throws(JournalError) -> Double? {
        let rows = try await rows(
            """
            SELECT held_until - extract(epoch FROM clock_timestamp())::double precision AS left
            FROM provider_token_hold WHERE key = \(key)
            """
        )
        guard let row = rows.first else { return nil }
        let left = try decode(row, "left", Double.self)
        return left > 0 ? left : nil
    }
}
