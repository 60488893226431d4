import Foundation
import GRDB
import PushcampAPNsCore
import Synchronization

/// An App Store Server Notification as the receiver keeps it: the raw signed payload and the
/// facts decoded from it, stored (for a configured app) or quarantined (correctly signed, but for
/// an app, app id or environment the configuration does not name).
public struct AppStoreNotificationRecord: Sendable, Hashable {
    public enum Disposition: String, Sendable {
        case stored
        case quarantined
    }

    public var uuid: String
    public var type: String
    public var subtype: String?
    /// Seconds since 1970.
    public var signedDate: Double?
    public var environment: String?
    public var bundleID: String?
    /// The configured app it was accepted for.
    public var app: String?
    public var disposition: Disposition
    /// Why it was quarantined.
    public var reason: String?
    public var originalTransactionID: String?
    public var productID: String?
    public var appAccountToken: String?
    public var signedPayload: String
    public var receivedAt: Double

    public init(
        uuid: String,
        type: String,
        subtype: String?,
        signedDate: Double?,
        environment: String?,
        bundleID: String?,
        app: String?,
        disposition: Disposition,
        reason: String?,
        originalTransactionID: String?,
        productID: String?,
        appAccountToken: String?,
        signedPayload: String,
        receivedAt: Double
    ) {
        self.uuid = uuid
        self.type = type
        self.subtype = subtype
        self.signedDate = signedDate
        self.environment = environment
        self.bundleID = bundleID
        self.app = app
        self.disposition = disposition
        self.reason = reason
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.appAccountToken = appAccountToken
        self.signedPayload = signedPayload
        self.receivedAt = receivedAt
    }
}

/// A subscription as the latest notification about it (by `signedDate`) left it, per original
/// transaction: what audiences select by and triggers act on.
public struct SubscriptionState: Sendable, Hashable {
    /// `active`, `expired`, `billing-retry`, `grace-period`, `revoked`; nil when no notification said.
    public var status: String?
    public var originalTransactionID: String
    public var app: String?
    public var productID: String?
    public var autoRenew: Bool?
    /// Seconds since 1970.
    public var expiresAt: Double?
    public var gracePeriodExpiresAt: Double?
    public var appAccountToken: String?
    /// The notification that set this state.
    public var lastType: String
    public var lastSubtype: String?
    public var signedDate: Double
    public var notification: String

    public init(
        status: String?,
        originalTransactionID: String,
        app: String?,
        productID: String?,
        autoRenew: Bool?,
        expiresAt: Double?,
        gracePeriodExpiresAt: Double?,
        appAccountToken: String?,
        lastType: String,
        lastSubtype: String?,
        signedDate: Double,
        notification: String
    ) {
        self.status = status
        self.originalTransactionID = originalTransactionID
        self.app = app
        self.productID = productID
        self.autoRenew = autoRenew
        self.expiresAt = expiresAt
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.appAccountToken = appAccountToken
        self.lastType = lastType
        self.lastSubtype = lastSubtype
        self.signedDate = signedDate
        self.notification = notification
    }
}

/// Where received notifications are kept: once per `notificationUUID`, durably before the
/// receiver answers. `SQLiteJournal` and `MemoryNotificationStore` (tests, with failures on demand).
public protocol NotificationStore: Sendable {
    /// Commits `record` with a synchronous (fsynced) commit; false when a notification with its
    /// UUID is kept already (Apple's retry, or a concurrent duplicate), which changes nothing.
    func storeNotification(_ record: AppStoreNotificationRecord) async throws(JournalError) -> Bool
    /// `storeNotification`, and in the same transaction, when the notification is new, the
    /// subscription state it carries — unless a notification signed later set that subscription
    /// already (an older one arriving late is kept, but changes no state) — and the trigger
    /// campaigns it fires, so each fires once per notification.
    func storeNotification(
        _ record: AppStoreNotificationRecord,
        subscription: SubscriptionState?,
        firings: [TriggerFiring]
    ) async throws(JournalError) -> Bool
    /// Subscriptions, most recently signed first; of one status when given.
    func subscriptions(status: String?, limit: Int) async throws(JournalError) -> [SubscriptionState]
    /// Every subscription of `app`, in no particular order, without holding them all in memory.
    func forEachSubscription(app: String, _ body: (SubscriptionState) throws -> Void) async throws
    /// Notifications, newest received first; only quarantined ones when `quarantined`.
    func notifications(limit: Int, quarantined: Bool) async throws(JournalError) -> [AppStoreNotificationRecord]
    /// A quarantined notification accepted for `app` after the configuration was fixed, with the
    /// subscription state it carries (applied as `storeNotification` would).
    func release(_ uuid: String, app: String, subscription: SubscriptionState?) async throws(JournalError)
    /// Stored notifications of `app` and `type` (one of `subtypes`, any when empty) signed since
    /// `since`: how many, and about how many subscriptions. What `plan` shows of a trigger.
    func countNotifications(
        app: String,
        type: String,
        subtypes: [String],
        since: Double
    ) async throws(JournalError) -> (events: Int, subscriptions: Int)
}

extension NotificationStore {
    public func storeNotification(_ record: AppStoreNotificationRecord) async throws(JournalError) -> Bool {
        try await storeNotification(record, subscription: nil, firings: [])
    }

    public func storeNotification(
        _ record: AppStoreNotificationRecord,
        subscription: SubscriptionState?
    ) async throws(JournalError) -> Bool {
        try await storeNotification(record, subscription: subscription, firings: [])
    }
}

extension SQLiteJournal: NotificationStore {
    /// Stored notifications of `app` and `type` (one of `subtypes`, any when empty) signed since
    /// `since`: how many, and about how many subscriptions. What `plan` shows of a trigger.
    public func countNotifications(
        app: String,
        type: String,
        subtypes: [String],
        since: Double
    ) async throws(JournalError) -> (events: Int, subscriptions: Int) {
        try await read { db in
            let subtypeClause =
                subtypes.isEmpty ? "" : "AND subtype IN (\(databaseQuestionMarks(count: subtypes.count)))"
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*) AS events, count(DISTINCT original_transaction_id) AS subscriptions
                    FROM appstore_notification
                    WHERE disposition = 'stored' AND app = ? AND type = ? AND signed_date >= ? \(subtypeClause)
                    """,
                arguments: StatementArguments([app, type, since] as [any DatabaseValueConvertible] + subtypes)
            )
            return (row?["events"] ?? 0, row?["subscriptions"] ?? 0)
        }
    }

    public func storeNotification(
        _ record: AppStoreNotificationRecord,
        subscription: SubscriptionState?,
        firings: [TriggerFiring]
    ) async throws(JournalError) -> Bool {
        try await writeDurably { db in
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO appstore_notification (
                        uuid, type, subtype, signed_date, environment, bundle_id, app, disposition, reason,
                        original_transaction_id, product_id, app_account_token, signed_payload, received_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    record.uuid, record.type, record.subtype, record.signedDate, record.environment, record.bundleID,
                    record.app, record.disposition.rawValue, record.reason, record.originalTransactionID,
                    record.productID, record.appAccountToken, record.signedPayload, record.receivedAt,
                ]
            )
            guard db.changesCount == 1 else { return false }
            if let subscription { try Self.apply(subscription, in: db) }
            try Self.insert(firings, in: db)
            return true
        }
    }

    public func forEachSubscription(app: String, _ body: (SubscriptionState) throws -> Void) async throws {
        var after = ""
        while true {
            let page = try await read { [after] db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM subscription WHERE app = ? AND original_transaction_id > ?
                        ORDER BY original_transaction_id LIMIT 10000
                        """,
                    arguments: [app, after]
                ).map(Self.subscription(from:))
            }
            for subscription in page { try body(subscription) }
            guard page.count == 10_000, let last = page.last else { return }
            after = last.originalTransactionID
        }
    }

    public func subscriptions(status: String?, limit: Int) async throws(JournalError) -> [SubscriptionState] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM subscription \(status != nil ? "WHERE status = ?" : "")
                    ORDER BY signed_date DESC LIMIT ?
                    """,
                arguments: StatementArguments(
                    (status.map { [$0] } ?? []) as [any DatabaseValueConvertible] + [limit]
                )
            ).map(Self.subscription(from:))
        }
    }

    static func subscription(from row: Row) -> SubscriptionState {
        SubscriptionState(
            status: row["status"],
            originalTransactionID: row["original_transaction_id"],
            app: row["app"],
            productID: row["product_id"],
            autoRenew: row["auto_renew"],
            expiresAt: row["expires_at"],
            gracePeriodExpiresAt: row["grace_period_expires_at"],
            appAccountToken: row["app_account_token"],
            lastType: row["last_type"],
            lastSubtype: row["last_subtype"],
            signedDate: row["signed_date"],
            notification: row["notification"]
        )
    }

    public func release(_ uuid: String, app: String, subscription: SubscriptionState?) async throws(JournalError) {
        try await writeDurably { db in
            try db.execute(
                sql: """
                    UPDATE appstore_notification SET disposition = 'stored', app = ?, reason = NULL
                    WHERE uuid = ? AND disposition = 'quarantined'
                    """,
                arguments: [app, uuid]
            )
            if db.changesCount == 1, let subscription { try Self.apply(subscription, in: db) }
        }
    }

    /// Sets `state` as its subscription's, unless a notification signed later set it already;
    /// the fields `state` does not carry keep their value.
    private static func apply(_ state: SubscriptionState, in db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO subscription (
                    original_transaction_id, app, product_id, status, auto_renew, expires_at,
                    grace_period_expires_at, app_account_token, last_type, last_subtype, signed_date,
                    notification)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (original_transaction_id) DO UPDATE SET
                    app = coalesce(excluded.app, app),
                    product_id = coalesce(excluded.product_id, product_id),
                    status = coalesce(excluded.status, status),
                    auto_renew = coalesce(excluded.auto_renew, auto_renew),
                    expires_at = coalesce(excluded.expires_at, expires_at),
                    grace_period_expires_at = coalesce(excluded.grace_period_expires_at, grace_period_expires_at),
                    app_account_token = coalesce(excluded.app_account_token, app_account_token),
                    last_type = excluded.last_type, last_subtype = excluded.last_subtype,
                    signed_date = excluded.signed_date, notification = excluded.notification
                WHERE excluded.signed_date > subscription.signed_date
                """,
            arguments: [
                state.originalTransactionID, state.app, state.productID, state.status, state.autoRenew,
                state.expiresAt, state.gracePeriodExpiresAt, state.appAccountToken, state.lastType,
                state.lastSubtype, state.signedDate, state.notification,
            ]
        )
    }

    public func notifications(limit: Int, quarantined: Bool) async throws(JournalError) -> [AppStoreNotificationRecord]
    {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM appstore_notification \(quarantined ? "WHERE disposition = 'quarantined'" : "")
                    ORDER BY received_at DESC LIMIT ?
                    """,
                arguments: [limit]
            ).map { row in
                AppStoreNotificationRecord(
                    uuid: row["uuid"],
                    type: row["type"],
                    subtype: row["subtype"],
                    signedDate: row["signed_date"],
                    environment: row["environment"],
                    bundleID: row["bundle_id"],
                    app: row["app"],
                    disposition: AppStoreNotificationRecord.Disposition(rawValue: row["disposition"]) ?? .quarantined,
                    reason: row["reason"],
                    originalTransactionID: row["original_transaction_id"],
                    productID: row["product_id"],
                    appAccountToken: row["app_account_token"],
                    signedPayload: row["signed_payload"],
                    receivedAt: row["received_at"]
                )
            }
        }
    }
}

extension MemoryJournal: NotificationStore {
    /// Every later store fails with `failure` (nil: stores again): what the receiver answers when
    /// its journal stops taking writes.
    public func failNotifications(with failure: JournalError?) {
        state.withLock { $0.notificationFailure = failure }
    }

    /// Every later store first waits `delay` (nil: none), ending early with an error when its task
    /// is cancelled: a journal that keeps a write waiting, as PostgreSQL's client does while the
    /// server is down.
    public func delayNotifications(by delay: Duration?) {
        state.withLock { $0.notificationDelay = delay }
    }

    /// How many notifications are stored.
    public var notificationCount: Int { state.withLock { $0.notifications.count } }

    /// Every trigger firing recorded with the notifications, in order.
    public var recordedFirings: [TriggerFiring] {
        state.withLock { state in state.firingOrder.compactMap { state.firings[$0] } }
    }

    public func storeNotification(
        _ record: AppStoreNotificationRecord,
        subscription: SubscriptionState?,
        firings: [TriggerFiring]
    ) async throws(JournalError) -> Bool {
        if let delay = state.withLock({ $0.notificationDelay }) {
            do {
                try await clock.sleep(for: delay.inSeconds)
            } catch {
                throw JournalError(.failed, "the store was cancelled")
            }
        }
        let result: Result<Bool, JournalError> = state.withLock { state in
            if let failure = state.notificationFailure { return .failure(failure) }
            guard state.notifications[record.uuid] == nil else { return .success(false) }
            state.notifications[record.uuid] = record
            if let subscription { Self.apply(subscription, to: &state.subscriptions) }
            Self.insert(firings, into: &state)
            return .success(true)
        }
        return try result.get()
    }

    public func forEachSubscription(app: String, _ body: (SubscriptionState) throws -> Void) async throws {
        for subscription in state.withLock({ Array($0.subscriptions.values) }) where subscription.app == app {
            try body(subscription)
        }
    }

    private static func apply(_ new: SubscriptionState, to subscriptions: inout [String: SubscriptionState]) {
        guard let old = subscriptions[new.originalTransactionID] else {
            subscriptions[new.originalTransactionID] = new
            return
        }
        guard new.signedDate > old.signedDate else { return }
        var merged = new
        merged.app = new.app ?? old.app
        merged.productID = new.productID ?? old.productID
        merged.status = new.status ?? old.status
        merged.autoRenew = new.autoRenew ?? old.autoRenew
        merged.expiresAt = new.expiresAt ?? old.expiresAt
        merged.gracePeriodExpiresAt = new.gracePeriodExpiresAt ?? old.gracePeriodExpiresAt
        merged.appAccountToken = new.appAccountToken ?? old.appAccountToken
        subscriptions[new.originalTransactionID] = merged
    }

    public func subscriptions(status: String?, limit: Int) async throws(JournalError) -> [SubscriptionState] {
        state.withLock { state in
            Array(
                state.subscriptions.values.filter { status == nil || $0.status == status }
                    .sorted { $0.signedDate > $1.signedDate }.prefix(limit)
            )
        }
    }

    public func release(_ uuid: String, app: String, subscription: SubscriptionState?) async throws(JournalError) {
        state.withLock { state in
            guard var record = state.notifications[uuid], record.disposition == .quarantined else { return }
            record.disposition = .stored
            record.app = app
            record.reason = nil
            state.notifications[uuid] = record
            if let subscription { Self.apply(subscription, to: &state.subscriptions) }
        }
    }

    public func notifications(limit: Int, quarantined: Bool) async throws(JournalError) -> [AppStoreNotificationRecord]
    {
        state.withLock { state in
            Array(
                state.notifications.values.filter { !quarantined || $0.disposition == .quarantined }
                    .sorted { $0.receivedAt > $1.receivedAt }.prefix(limit)
            )
        }
    }

    public func countNotifications(
        app: String,
        type: String,
        subtypes: [String],
        since: Double
    ) async throws(JournalError) -> (events: Int, subscriptions: Int) {
        state.withLock { state in
            let matching = state.notifications.values.filter { record in
                record.disposition == .stored && record.app == app && record.type == type
                    && (subtypes.isEmpty || record.subtype.map(subtypes.contains) == true)
                    && (record.signedDate ?? -.infinity) >= since
            }
            return (matching.count, Set(matching.compactMap(\.originalTransactionID)).count)
        }
    }
}
