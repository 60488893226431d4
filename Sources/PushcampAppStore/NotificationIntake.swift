import Foundation
import X509

/// An app of pushcamp.yaml as App Store notifications name it.
public struct AppStoreApp: Sendable, Hashable {
    public var name: String
    public var bundleID: String
    /// Required to accept production notifications (Apple's app id, a number).
    public var appAppleID: Int64?
    /// Lowercased: `production`, `sandbox` (and, on purpose only, `xcode`, `localtesting`).
    public var environments: Set<String>
    /// Roots besides Apple's that this app's notifications may lead to (`trusted_roots`, for
    /// tests): trusted for this app only, never for another.
    public var trustedRoots: [Certificate]

    public init(
        name: String,
        bundleID: String,
        appAppleID: Int64?,
        environments: Set<String>,
        trustedRoots: [Certificate] = []
    ) {
        self.name = name
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environments = environments
        self.trustedRoots = trustedRoots
    }
}

/// Decides what becomes of a POSTed notification body: refused (400, not stored), or kept —
/// accepted for a configured app, or quarantined (correctly signed, but for an app, app id or
/// environment the configuration does not name, or undated). The receiver stores what this
/// returns before it answers.
///
/// A root some app lists in `trusted_roots` vouches for that app's notifications only: a payload
/// (or its transaction or renewal) whose chain leads to it is refused unless its bundle id is that
/// of an app that lists it. The verifier's other roots (Apple's) vouch for every app.
public struct NotificationIntake: Sendable {
    public enum Outcome: Sendable, Hashable {
        case accepted(AppStoreNotification, app: String)
        case quarantined(AppStoreNotification, reason: String)

        public var notification: AppStoreNotification {
            switch self {
            case .accepted(let notification, _), .quarantined(let notification, _): return notification
            }
        }
    }

    /// The largest body accepted: Apple's notifications are a few kilobytes.
    public static let bodyLimit = 64 * 1024

    public let apps: [AppStoreApp]
    public let verifier: SignedPayloadVerifier

    public init(apps: [AppStoreApp], verifier: SignedPayloadVerifier) {
        self.apps = apps
        self.verifier = verifier
    }

    /// The signed payload of a body `{"signedPayload": "…"}`.
    public static func signedPayload(of body: [UInt8]) throws(AppStoreRefusal) -> String {
        guard body.count <= bodyLimit else {
            throw AppStoreRefusal(.tooLarge, "the body is \(body.count) bytes; at most \(bodyLimit)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let payload = object["signedPayload"] as? String
        else { throw AppStoreRefusal(.malformed, "the body is not JSON with a signedPayload") }
        return payload
    }

    public func receive(_ body: [UInt8], now: Date) async throws(AppStoreRefusal) -> Outcome {
        try await receive(signedPayload: Self.signedPayload(of: body), now: now)
    }

    /// `checkAge` false when reprocessing a quarantined notification: it was fresh when received.
    public func receive(
        signedPayload: String,
        now: Date,
        checkAge: Bool = true
    ) async throws(AppStoreRefusal) -> Outcome {
        let (object, signedDate, root) = try await verifier.verify(signedPayload, now: now, checkAge: checkAge)
        var roots = [root]
        var notification = try AppStoreNotification(object, signedDate: signedDate)
        if let data = object["data"] as? [String: Any] {
            if let jws = data["signedTransactionInfo"] as? String {
                let verified = try await verifier.verify(jws, now: now, checkAge: false)
                notification.transaction = .init(verified.object)
                roots.append(verified.root)
            }
            if let jws = data["signedRenewalInfo"] as? String {
                let verified = try await verifier.verify(jws, now: now, checkAge: false)
                notification.renewal = .init(verified.object)
                roots.append(verified.root)
            }
        }
        // The app the notification names by its bundle id, accepted or quarantined for it.
        let named = apps.first { $0.bundleID == notification.bundleID }?.name
        for root in roots {
            let holders = apps.filter { $0.trustedRoots.contains(root) }
            guard !holders.isEmpty else { continue }  // a root for every app (Apple's)
            guard let named, holders.contains(where: { $0.name == named }) else {
                throw AppStoreRefusal(
                    .chain,
                    "the certificate chain leads to a root trusted only for app \(holders.map(\.name).joined(separator: ", ")) (trusted_roots), not for the app this notification names"
                )
            }
        }
        return decide(notification)
    }

    /// Accepted for the configured app it names, else quarantined with the reason.
    public func decide(_ notification: AppStoreNotification) -> Outcome {
        guard notification.signedDate != nil else {
            return .quarantined(notification, reason: "the payload has no signedDate, so its age cannot be checked")
        }
        guard let bundle = notification.bundleID else {
            return .quarantined(notification, reason: "the payload names no bundle id")
        }
        guard let app = apps.first(where: { $0.bundleID == bundle }) else {
            return .quarantined(
                notification,
                reason: "bundle id \(bundle.prefix(100)) is not configured in pushcamp.yaml"
            )
        }
        let environment = (notification.environment ?? "").lowercased()
        guard app.environments.contains(environment) else {
            return .quarantined(
                notification,
                reason: "environment \(environment.prefix(20)) is not among app \(app.name)'s app_store.environments"
            )
        }
        if environment == "production", notification.appAppleID != app.appAppleID || app.appAppleID == nil {
            return .quarantined(
                notification,
                reason:
                    "app id \(notification.appAppleID.map(String.init) ?? "none") is not app \(app.name)'s app_apple_id"
            )
        }
        return .accepted(notification, app: app.name)
    }
}
