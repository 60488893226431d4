import Foundation

/// The facts of a verified App Store Server Notification (V2) that Pushcamp keeps and acts on;
/// the raw signed payload is kept beside them, so fields Apple adds later are never lost.
public struct AppStoreNotification: Sendable, Hashable {
    public var uuid: String
    /// `notificationType` and `subtype` as Apple writes them (`DID_FAIL_TO_RENEW`, `GRACE_PERIOD`);
    /// unknown ones are kept as they are.
    public var type: String
    public var subtype: String?
    /// Nil only for a payload without one (quarantined, never accepted).
    public var signedDate: Date?
    /// `Production`, `Sandbox`, `Xcode`, `LocalTesting`…
    public var environment: String?
    public var bundleID: String?
    public var appAppleID: Int64?
    /// `data.status`: 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
    public var status: Int?
    public var transaction: Transaction?
    public var renewal: Renewal?

    /// From `signedTransactionInfo`, verified like the notification.
    public struct Transaction: Sendable, Hashable {
        public var originalTransactionID: String?
        public var transactionID: String?
        public var productID: String?
        public var expiresDate: Date?
        public var appAccountToken: String?
        public var revocationDate: Date?
    }

    /// From `signedRenewalInfo`, verified like the notification.
    public struct Renewal: Sendable, Hashable {
        public var originalTransactionID: String?
        public var autoRenewStatus: Int?
        public var isInBillingRetryPeriod: Bool?
        public var gracePeriodExpiresDate: Date?
        public var appAccountToken: String?
    }

    /// The facts of a decoded payload object (`notificationUUID` and `notificationType` required).
    init(_ object: [String: Any], signedDate: Date?) throws(AppStoreRefusal) {
        guard let uuid = object["notificationUUID"] as? String, !uuid.isEmpty, uuid.count <= 64 else {
            throw AppStoreRefusal(.missingField, "the payload has no notificationUUID")
        }
        guard let type = object["notificationType"] as? String, !type.isEmpty, type.count <= 64 else {
            throw AppStoreRefusal(.missingField, "the payload has no notificationType")
        }
        self.uuid = uuid
        self.type = type
        subtype = (object["subtype"] as? String).map { String($0.prefix(64)) }
        self.signedDate = signedDate
        // Whichever of data, summary, externalPurchaseToken or appData the type carries.
        let body =
            (object["data"] ?? object["summary"] ?? object["externalPurchaseToken"] ?? object["appData"])
            as? [String: Any] ?? [:]
        environment = body["environment"] as? String
        bundleID = body["bundleId"] as? String
        appAppleID = (body["appAppleId"] as? NSNumber)?.int64Value
        status = (body["status"] as? NSNumber)?.intValue
    }

    /// The subscription status the notification reports: `data.status` when present (1 active,
    /// 2 expired, 3 billing retry, 4 grace period, 5 revoked), else what its type means; nil when
    /// it says nothing about it (a price increase, a consumption request…).
    public var subscriptionStatus: String? {
        switch status {
        case 1?: return "active"
        case 2?: return "expired"
        case 3?: return "billing-retry"
        case 4?: return "grace-period"
        case 5?: return "revoked"
        default: break
        }
        switch type {
        case "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED", "REFUND_REVERSED": return "active"
        case "EXPIRED", "GRACE_PERIOD_EXPIRED": return "expired"
        case "DID_FAIL_TO_RENEW": return subtype == "GRACE_PERIOD" ? "grace-period" : "billing-retry"
        case "REVOKE", "REFUND": return "revoked"
        default: return nil
        }
    }

    /// The original transaction the notification is about, from its transaction or renewal info.
    public var originalTransactionID: String? {
        transaction?.originalTransactionID ?? renewal?.originalTransactionID
    }

    static func date(_ value: Any?) -> Date? {
        (value as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue / 1000) }
    }
}

extension AppStoreNotification.Transaction {
    init(_ object: [String: Any]) {
        originalTransactionID = object["originalTransactionId"] as? String
        transactionID = object["transactionId"] as? String
        productID = object["productId"] as? String
        expiresDate = AppStoreNotification.date(object["expiresDate"])
        appAccountToken = object["appAccountToken"] as? String
        revocationDate = AppStoreNotification.date(object["revocationDate"])
    }
}

extension AppStoreNotification.Renewal {
    init(_ object: [String: Any]) {
        originalTransactionID = object["originalTransactionId"] as? String
        autoRenewStatus = (object["autoRenewStatus"] as? NSNumber)?.intValue
        isInBillingRetryPeriod = object["isInBillingRetryPeriod"] as? Bool
        gracePeriodExpiresDate = AppStoreNotification.date(object["gracePeriodExpiresDate"])
        appAccountToken = object["appAccountToken"] as? String
    }
}
