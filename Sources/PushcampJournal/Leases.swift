import GRDB
import PushcampAPNsCore
import Synchronization

/// Who holds a resource (a run being sent) and until when: what replaces a lock file once several
/// machines share the journal. Every claim raises the fence, so whoever held it before can tell
/// (and be told) that it is no longer theirs; the expiry is on the store's clock, never a node's.
public struct Lease: Sendable, Hashable {
    public var resource: String
    public var owner: String
    /// Rises by one on every claim that is not a renewal: a write carrying an older fence is
    /// refused.
    public var fence: Int64
    /// When it ends unless renewed, in seconds since 1970 on the store's clock.
    public var expiresAt: Double

    public init(resource: String, owner: String, fence: Int64, expiresAt: Double) {
        self.resource = resource
        self.owner = owner
        self.fence = fence
        self.expiresAt = expiresAt
    }
}

/// Leases, on the store's clock: the database's `now()` for PostgreSQL (every node sees the same
/// time), the machine's for SQLite (one machine), an injected clock for the memory twin.
public protocol LeaseStore: Sendable {
    /// Claims `resource` for `owner` for `duration` seconds when nobody holds it, its lease has
    /// expired, or `owner` holds it already (then it is renewed, its fence kept). Nil while another
    /// owner's lease runs.
    func acquire(_ resource: String, owner: String, duration: Double) async throws(JournalError) -> Lease?
    /// Extends `lease` to `duration` seconds from now while it is still the resource's lease (same
    /// owner and fence) and has not expired; nil when it was lost: stop acting on it.
    func renew(_ lease: Lease, duration: Double) async throws(JournalError) -> Lease?
    /// Claims the resource from `holder` before its lease ends, for an owner known to be dead (a
    /// process of this machine that no longer exists): only while `holder` is still the
    /// resource's lease (same owner and fence), so of two nodes taking over at once one wins; the
    /// fence rises as on any claim. Nil when the lease moved since `holder` was read.
    func takeOver(_ holder: Lease, owner: String, duration: Double) async throws(JournalError) -> Lease?
    /// Ends `lease` now, if it is still the resource's lease, so another owner need not wait for
    /// its expiry.
    func release(_ lease: Lease) async throws(JournalError)
    /// The resource's lease as the store has it, expired or not; nil when it was never claimed.
    func lease(of resource: String) async throws(JournalError) -> Lease?
    /// The store's clock, in seconds since 1970.
    func clockNow() async throws(JournalError) -> Double
}

extension MemoryJournal: LeaseStore {
    public func acquire(_ resource: String, owner: String, duration: Double) async throws(JournalError) -> Lease? {
        let now = clock.now()
        return state.withLock { state in
            guard let held = state.leases[resource] else {
                let lease = Lease(resource: resource, owner: owner, fence: 1, expiresAt: now + duration)
                state.leases[resource] = lease
                return lease
            }
            let running = held.expiresAt > now
            guard !running || held.owner == owner else { return nil }
            let lease = Lease(
                resource: resource,
                owner: owner,
                fence: running ? held.fence : held.fence + 1,
                expiresAt: now + duration
            )
            state.leases[resource] = lease
            return lease
        }
    }

    public func renew(_ lease: Lease, duration: Double) async throws(JournalError) -> Lease? {
        let now = clock.now()
        return state.withLock { state in
            guard let held = state.leases[lease.resource], held.owner == lease.owner, held.fence == lease.fence,
                held.expiresAt > now
            else { return nil }
            state.leases[lease.resource]?.expiresAt = now + duration
            return state.leases[lease.resource]
        }
    }

    public func takeOver(_ holder: Lease, owner: String, duration: Double) async throws(JournalError) -> Lease? {
        let now = clock.now()
        return state.withLock { state in
            guard let held = state.leases[holder.resource], held.owner == holder.owner, held.fence == holder.fence
            else {
                return nil
            }
            let lease = Lease(resource: holder.resource, owner: owner, fence: held.fence + 1, expiresAt: now + duration)
            state.leases[holder.resource] = lease
            return lease
        }
    }

    public func release(_ lease: Lease) async throws(JournalError) {
        let now = clock.now()
        state.withLock { state in
            guard let held = state.leases[lease.resource], held.owner == lease.owner, held.fence == lease.fence else {
                return
            }
            state.leases[lease.resource]?.expiresAt = min(held.expiresAt, now)
        }
    }

    public func lease(of resource: String) async throws(JournalError) -> Lease? {
        state.withLock { state in state.leases[resource] }
    }

    public func clockNow() async throws(JournalError) -> Double { clock.now() }
}

extension SQLiteJournal: LeaseStore {
    /// This machine's clock as SQLite reads it, in seconds since 1970 (to the millisecond).
    static let sqliteNow = "((julianday('now') - 2440587.5) * 86400.0)"

    public func acquire(_ resource: String, owner: String, duration: Double) async throws(JournalError) -> Lease? {
        try await write { db in
            try Row.fetchOne(
                db,
                sql: """
                    INSERT INTO lease (resource, owner, fence, expires_at) VALUES (?, ?, 1, \(Self.sqliteNow) + ?)
                    ON CONFLICT (resource) DO UPDATE SET
                        fence = CASE WHEN lease.owner = excluded.owner AND lease.expires_at > \(Self.sqliteNow)
                            THEN lease.fence ELSE lease.fence + 1 END,
                        owner = excluded.owner,
                        expires_at = excluded.expires_at
                    WHERE lease.owner = excluded.owner OR lease.expires_at <= \(Self.sqliteNow)
                    RETURNING resource, owner, fence, expires_at
                    """,
                arguments: [resource, owner, duration]
            ).map(Self.lease(from:))
        }
    }

    public func renew(_ lease: Lease, duration: Double) async throws(JournalError) -> Lease? {
        try await write { db in
            try Row.fetchOne(
                db,
                sql: """
                    UPDATE lease SET expires_at = \(Self.sqliteNow) + ?
                    WHERE resource = ? AND owner = ? AND fence = ? AND expires_at > \(Self.sqliteNow)
                    RETURNING resource, owner, fence, expires_at
                    """,
                arguments: [duration, lease.resource, lease.owner, lease.fence]
            ).map(Self.lease(from:))
        }
    }

    public func takeOver(_ holder: Lease, owner: String, duration: Double) async throws(JournalError) -> Lease? {
        try await write { db in
            try Row.fetchOne(
                db,
                sql: """
                    UPDATE lease SET owner = ?, fence = fence + 1, expires_at = \(Self.sqliteNow) + ?
                    WHERE resource = ? AND owner = ? AND fence = ?
                    RETURNING resource, owner, fence, expires_at
                    """,
                arguments: [owner, duration, holder.resource, holder.owner, holder.fence]
            ).map(Self.lease(from:))
        }
    }

    public func release(_ lease: Lease) async throws(JournalError) {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE lease SET expires_at = min(expires_at, \(Self.sqliteNow))
                    WHERE resource = ? AND owner = ? AND fence = ?
                    """,
                arguments: [lease.resource, lease.owner, lease.fence]
            )
        }
    }

    public func lease(of resource: String) async throws(JournalError) -> Lease? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM lease WHERE resource = ?", arguments: [resource])
                .map(Self.lease(from:))
        }
    }

    public func clockNow() async throws(JournalError) -> Double {
        try await read { db in try Double.fetchOne(db, sql: "SELECT \(Self.sqliteNow)") ?? 0 }
    }

    static func lease(from row: Row) -> Lease {
        Lease(resource: row["resource"], owner: row["owner"], fence: row["fence"], expiresAt: row["expires_at"])
    }
}
