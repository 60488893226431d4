import PostgresNIO
import PushcampJournal

/// App Store notifications and subscriptions on PostgreSQL. Any node stores any notification:
/// once per UUID (`ON CONFLICT DO NOTHING`), with the subscription's state (ordered by
/// `signedDate`) and its trigger firings in the same transaction, committed before the answer.
extension PostgresJournal: NotificationStore {
    public func storeNotification(
        _ record: AppStoreNotificationRecord,
        subscription: SubscriptionState?,
        firings: [TriggerFiring]
    ) async throws(JournalError) -> Bool {
        let logger = self.logger
        return try await transaction { connection in
            let stored = try await Self.rows(
                """
                INSERT INTO appstore_notification (
                    uuid, type, subtype, signed_date, environment, bundle_id, app, disposition, reason,
                    original_transaction_id, product_id, app_account_token, signed_payload, received_at)
                VALUES (\(record.uuid), \(record.type), \(record.subtype), \(record.signedDate), \(record.environment),
                    \(record.bundleID), \(record.app), \(record.disposition.rawValue), \(record.reason),
                    \(record.originalTransactionID), \(record.productID), \(record.appAccountToken),
                    \(record.signedPayload), \(record.receivedAt))
                ON CONFLICT (uuid) DO NOTHING RETURNING uuid
                """,
                on: connection,
                logger: logger
            )
            guard !stored.isEmpty else { return false }
            if let subscription { try await Self.apply(subscription, on: connection, logger: logger) }
            try await Self.insert(firings, on: connection, logger: logger)
            return true
        }
    }

    private static func apply(
        _ state: SubscriptionState,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        _ = try await rows(
            """
            INSERT INTO subscription AS old (
                original_transaction_id, app, product_id, status, auto_renew, expires_at,
                grace_period_expires_at, app_account_token, last_type, last_subtype, signed_date, notification)
            VALUES (\(state.originalTransactionID), \(state.app), \(state.productID), \(state.status), \(state.autoRenew),
                \(state.expiresAt), \(state.gracePeriodExpiresAt), \(state.appAccountToken), \(state.lastType),
                \(state.lastSubtype), \(state.signedDate), \(state.notification))
            ON CONFLICT (original_transaction_id) DO UPDATE SET
                app = coalesce(excluded.app, old.app),
                product_id = coalesce(excluded.product_id, old.product_id),
                status = coalesce(excluded.status, old.status),
                auto_renew = coalesce(excluded.auto_renew, old.auto_renew),
                expires_at = coalesce(excluded.expires_at, old.expires_at),
                grace_period_expires_at = coalesce(excluded.grace_period_expires_at, old.grace_period_expires_at),
                app_account_token = coalesce(excluded.app_account_token, old.app_account_token),
                last_type = excluded.last_type, last_subtype = excluded.last_subtype,
                signed_date = excluded.signed_date, notification = excluded.notification
            WHERE excluded.signed_date > old.signed_date
            """,
            on: connection,
            logger: logger
        )
    }

    public func forEachSubscription(app: String, _ body: (SubscriptionState) throws -> Void) async throws {
        var after = ""
        while true {
            let page = try await subscriptions(
                """
                SELECT * FROM subscription WHERE app = \(app) AND original_transaction_id > \(after)
                ORDER BY original_transaction_id LIMIT 10000
                """
            )
            for subscription in page { try body(subscription) }
            guard page.count == 10_000, let last = page.last else { return }
            after = last.originalTransactionID
        }
    }

    public func subscriptions(status: String?, limit: Int) async throws(JournalError) -> [SubscriptionState] {
        try await subscriptions(
            """
            SELECT * FROM subscription WHERE \(status)::text IS NULL OR status = \(status)
            ORDER BY signed_date DESC LIMIT \(limit)
            """
        )
    }

    private func subscriptions(_ query: PostgresQuery) async throws(JournalError) -> [SubscriptionState] {
        try await rows(query) { row in
            SubscriptionState(
                status: try row["status"].decode(String?.self),
                originalTransactionID: try row["original_transaction_id"].decode(String.self),
                app: try row["app"].decode(String?.self),
                productID: try row["product_id"].decode(String?.self),
                autoRenew: try row["auto_renew"].decode(Bool?.self),
                expiresAt: try row["expires_at"].decode(Double?.self),
                gracePeriodExpiresAt: try row["grace_period_expires_at"].decode(Double?.self),
                appAccountToken: try row["app_account_token"].decode(String?.self),
                lastType: try row["last_type"].decode(String.self),
                lastSubtype: try row["last_subtype"].decode(String?.self),
                signedDate: try row["signed_date"].decode(Double.self),
                notification: try row["notification"].decode(String.self)
            )
        }
    }

    public func release(_ uuid: String, app: String, subscription: SubscriptionState?) async throws(JournalError) {
        let logger = self.logger
        try await transaction { connection in
            let released = try await Self.rows(
                """
                UPDATE appstore_notification SET disposition = 'stored', app = \(app), reason = NULL
                WHERE uuid = \(uuid) AND disposition = 'quarantined' RETURNING uuid
                """,
                on: connection,
                logger: logger
            )
            if !released.isEmpty, let subscription {
                try await Self.apply(subscription, on: connection, logger: logger)
            }
        }
    }

    public func notifications(limit: Int, quarantined: Bool) async throws(JournalError) -> [AppStoreNotificationRecord]
    {
        try await rows(
            """
            SELECT * FROM appstore_notification WHERE NOT \(quarantined) OR disposition = 'quarantined'
            ORDER BY received_at DESC LIMIT \(limit)
            """
        ) { row in
            AppStoreNotificationRecord(
                uuid: try row["uuid"].decode(String.self),
                type: try row["type"].decode(String.self),
                subtype: try row["subtype"].decode(String?.self),
                signedDate: try row["signed_date"].decode(Double?.self),
                environment: try row["environment"].decode(String?.self),
                bundleID: try row["bundle_id"].decode(String?.self),
                app: try row["app"].decode(String?.self),
                disposition: AppStoreNotificationRecord.Disposition(
                    rawValue: try row["disposition"].decode(String.self)
                ) ?? .quarantined,
                reason: try row["reason"].decode(String?.self),
                originalTransactionID: try row["original_transaction_id"].decode(String?.self),
                productID: try row["product_id"].decode(String?.self),
                appAccountToken: try row["app_account_token"].decode(String?.self),
                signedPayload: try row["signed_payload"].decode(String.self),
                receivedAt: try row["received_at"].decode(Double.self)
            )
        }
    }

    public func countNotifications(
        app: String,
        type: String,
        subtypes: [String],
        since: Double
    ) async throws(JournalError) -> (events: Int, subscriptions: Int) {
        let rows = try await rows(
            """
            SELECT count(*) AS events, count(DISTINCT original_transaction_id) AS subscriptions
            FROM appstore_notification
            WHERE disposition = 'stored' AND app = \(app) AND type = \(type) AND signed_date >= \(since)
                AND (cardinality(\(subtypes)::text[]) = 0 OR subtype = ANY(\(subtypes)::text[]))
            """
        )
        return (try decode(rows.first, "events", Int.self), try decode(rows.first, "subscriptions", Int.self))
    }
}
