import PostgresNIO
import PushcampJournal

/// Leases on the database's clock (`clock_timestamp()`), the one time every node agrees on.
extension PostgresJournal: LeaseStore {
    public func acquire(_ resource: String, owner: String, duration: Double) async throws(JournalError) -> Lease? {
        try await leases(
            """
            INSERT INTO lease AS held (resource, owner, fence, expires_at)
            VALUES (\(resource), \(owner), 1, extract(epoch FROM clock_timestamp()) + \(duration))
            ON CONFLICT (resource) DO UPDATE SET
                fence = CASE WHEN held.owner = excluded.owner AND held.expires_at > extract(epoch FROM clock_timestamp())
                    THEN held.fence ELSE held.fence + 1 END,
                owner = excluded.owner,
                expires_at = excluded.expires_at
            WHERE held.owner = excluded.owner OR held.expires_at <= extract(epoch FROM clock_timestamp())
            RETURNING resource, owner, fence, expires_at
            """
        ).first
    }

    public func renew(_ lease: Lease, duration: Double) async throws(JournalError) -> Lease? {
        try await leases(
            """
            UPDATE lease SET expires_at = extract(epoch FROM clock_timestamp()) + \(duration)
            WHERE resource = \(lease.resource) AND owner = \(lease.owner) AND fence = \(lease.fence)
                AND expires_at > extract(epoch FROM clock_timestamp())
            RETURNING resource, owner, fence, expires_at
            """
        ).first
    }

    public func takeOver(_ holder: Lease, owner: String, duration: Double) async throws(JournalError) -> Lease? {
        try await leases(
            """
            UPDATE lease SET owner = \(owner), fence = fence + 1,
                expires_at = extract(epoch FROM clock_timestamp()) + \(duration)
            WHERE resource = \(holder.resource) AND owner = \(holder.owner) AND fence = \(holder.fence)
            RETURNING resource, owner, fence, expires_at
            """
        ).first
    }

    public func release(_ lease: Lease) async throws(JournalError) {
        try await execute(
            """
            UPDATE lease SET expires_at = least(expires_at, extract(epoch FROM clock_timestamp()))
            WHERE resource = \(lease.resource) AND owner = \(lease.owner) AND fence = \(lease.fence)
            """
        )
    }

    public func lease(of resource: String) async throws(JournalError) -> Lease? {
        try await leases("SELECT resource, owner, fence, expires_at FROM lease WHERE resource = \(resource)").first
    }

    public func clockNow() async throws(JournalError) -> Double {
        let rows = try await rows("SELECT extract(epoch FROM clock_timestamp())::float8 AS now")
        return try decode(rows.first, "now", Double.self)
    }

    private func leases(_ query: PostgresQuery) async throws(JournalError) -> [Lease] {
        try await rows(query, Self.lease(from:))
    }

    static func lease(from row: PostgresRandomAccessRow) throws -> Lease {
        Lease(
            resource: try row["resource"].decode(String.self),
            owner: try row["owner"].decode(String.self),
            fence: try row["fence"].decode(Int64.self),
            expiresAt: try row["expires_at"].decode(Double.self)
        )
    }
}
