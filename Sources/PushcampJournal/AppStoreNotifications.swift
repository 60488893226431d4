import Foundation
import GRDB
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

/// Where received notifications are kept: once per `notificationUUID`, durably before the
/// receiver answers. `SQLiteJournal` and `MemoryNotificationStore` (tests, with failures on demand).
public protocol NotificationStore: Sendable {
    /// Commits `record` with a synchronous (fsynced) commit; false when a notification with its
    /// UUID is kept already (Apple's retry, or a concurrent duplicate), which changes nothing.
    func storeNotification(_ record: AppStoreNotificationRecord) throws(JournalError) -> Bool
    /// Notifications, newest received first; only quarantined ones when `quarantined`.
    func notifications(limit: Int, quarantined: Bool) throws(JournalError) -> [AppStoreNotificationRecord]
    /// A quarantined notification accepted for `app` after the configuration was fixed.
    func release(_ uuid: String, app: String) throws(JournalError)
}

extension SQLiteJournal: NotificationStore {
    public func storeNotification(_ record: AppStoreNotificationRecord) throws(JournalError) -> Bool {
        try writeDurably { db in
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
            return db.changesCount == 1
        }
    }

    public func release(_ uuid: String, app: String) throws(JournalError) {
        try writeDurably { db in
            try db.execute(
                sql: """
                    UPDATE appstore_notification SET disposition = 'stored', app = ?, reason = NULL
                    WHERE uuid = ? AND disposition = 'quarantined'
                    """,
                arguments: [app, uuid]
            )
        }
    }

    public func notifications(limit: Int, quarantined: Bool) throws(JournalError) -> [AppStoreNotificationRecord] {
        try read { db in
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

/// The in-memory twin, for tests of the receiver: `failure` makes every store fail, as a full or
/// broken disk would.
public final class MemoryNotificationStore: NotificationStore {
    private let state = Mutex<(records: [String: AppStoreNotificationRecord], failure: JournalError?)>(([:], nil))

    public init() {}

    public func fail(with failure: JournalError?) {
        state.withLock { $0.failure = failure }
    }

    public var count: Int { state.withLock { $0.records.count } }

    public func storeNotification(_ record: AppStoreNotificationRecord) throws(JournalError) -> Bool {
        let result: Result<Bool, JournalError> = state.withLock { state in
            if let failure = state.failure { return .failure(failure) }
            guard state.records[record.uuid] == nil else { return .success(false) }
            state.records[record.uuid] = record
            return .success(true)
        }
        return try result.get()
    }

    public func release(_ uuid: String, app: String) throws(JournalError) {
        state.withLock { state in
            guard var record = state.records[uuid], record.disposition == .quarantined else { return }
            record.disposition = .stored
            record.app = app
            record.reason = nil
            state.records[uuid] = record
        }
    }

    public func notifications(limit: Int, quarantined: Bool) throws(JournalError) -> [AppStoreNotificationRecord] {
        state.withLock { state in
            Array(
                state.records.values.filter { !quarantined || $0.disposition == .quarantined }
                    .sorted { $0.receivedAt > $1.receivedAt }.prefix(limit)
            )
        }
    }
}
