import Foundation
import Logging
import NIOPosix
import PushcampAPNsCore
import PushcampAppStore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import SwiftASN1
import X509

/// `POST /app-store/notifications`: Apple's App Store Server Notifications, verified
/// (`NotificationIntake`), committed durably, and only then answered 200. A duplicate UUID (Apple's
/// retry after a lost answer, or a concurrent POST) answers 200 and changes nothing; a payload that
/// fails verification answers 400 and is not kept (counted by reason); our own storage failure
/// answers 503, so Apple retries — never a 4xx for our failure — and makes `serve` not ready
/// until a notification is stored again (`ServeStatus`).
///
/// The commit (fsynced, and waiting for the journal's lock when another process holds it) is
/// awaited, never run on a thread of Swift's cooperative pool (SQLite's runs on the journal's own
/// queue): a slow journal slows the receiver down, not `/healthz`, `/readyz` or the scheduler. A
/// commit that has not ended within `storeDeadline` is answered 503 (Apple wants an answer within
/// seconds, and a PostgreSQL that is down would otherwise be waited for as long as the journal's
/// own timeout); should it commit after all, Apple's retry is a duplicate.
public final class AppStoreReceiver: Sendable {
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var body: String

        public init(status: Int, body: String) {
            self.status = status
            self.body = body
        }
    }

    let intake: NotificationIntake
    let store: any NotificationStore
    let metrics: ServeMetrics
    let logger: Logger
    let clock: any WallClock
    let triggers: TriggerTable
    let status: ServeStatus?
    let storeDeadline: Duration

    public init(
        intake: NotificationIntake,
        store: any NotificationStore,
        metrics: ServeMetrics,
        logger: Logger,
        triggers: TriggerTable = TriggerTable(),
        status: ServeStatus? = nil,
        storeDeadline: Duration = .seconds(2),
        clock: any WallClock = SystemWallClock()
    ) {
        self.intake = intake
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.triggers = triggers
        self.status = status
        self.storeDeadline = storeDeadline
        self.clock = clock
    }

    public func handle(_ body: [UInt8]) async -> Answer {
        let signedPayload: String
        do {
            signedPayload = try NotificationIntake.signedPayload(of: body)
        } catch {
            return refused(error)
        }
        switch await ingest(signedPayload: signedPayload) {
        case .refused(let refusal): return refused(refusal)
        case .storeFailed:
            return Answer(status: 503, body: "cannot store the notification now; try again\n")
        case .kept(let record, let new):
            return Answer(status: 200, body: (new ? record.disposition.rawValue : "duplicate") + "\n")
        }
    }

    private func refused(_ refusal: AppStoreRefusal) -> Answer {
        metrics.appStoreRefused(refusal.code.rawValue)
        logger.notice(
            "App Store notification refused (400): \(refusal.description.escapingControlCharacters)",
            metadata: ["event": "appstore-refused"]
        )
        return Answer(status: 400, body: "refused: \(refusal.code.rawValue)\n")
    }

    /// What became of a signed payload.
    public enum Ingested: Sendable {
        /// Not verified: not kept.
        case refused(AppStoreRefusal)
        /// Kept (`new`), or kept already (a duplicate).
        case kept(AppStoreNotificationRecord, new: Bool)
        /// Verified, but the store failed.
        case storeFailed(JournalError)
    }

    /// Verifies `signedPayload` and keeps it once, with the subscription state it carries and the
    /// trigger firings it records: what a POST does, and what the history back-fill does with each
    /// payload Apple lists (`checkAge` false: the chain is still checked at its signedDate).
    public func ingest(signedPayload: String, checkAge: Bool = true) async -> Ingested {
        let now = clock.now()
        let outcome: NotificationIntake.Outcome
        do {
            outcome = try await intake.receive(
                signedPayload: signedPayload,
                now: Date(timeIntervalSince1970: now),
                checkAge: checkAge
            )
        } catch {
            return .refused(error)
        }
        let record = Self.record(outcome, signedPayload: signedPayload, receivedAt: now)
        var firings: [TriggerFiring] = []
        if case .accepted(let notification, let app) = outcome {
            firings = triggers.firings(for: notification, app: app, now: now)
        }
        let new: Bool
        do {
            new = try await commit(record, subscription: Self.subscription(outcome), firings: firings)
        } catch {
            metrics.appStoreStoreFailed()
            status?.storeFailed(error.message, at: clock.now())
            logger.error(
                "App Store notification \(record.uuid.escapingControlCharacters) not stored (503, Apple retries): \(error)",
                metadata: ["event": "appstore-store-failed"]
            )
            return .storeFailed(error)
        }
        status?.stored()
        let disposition = new ? record.disposition.rawValue : "duplicate"
        metrics.appStoreReceived(type: record.type, outcome: disposition)
        let what = "\(record.type)\(record.subtype.map { "/\($0)" } ?? "") \(record.uuid)".escapingControlCharacters
        switch (new, outcome) {
        case (false, _):
            logger.info(
                "App Store notification \(what): a duplicate, already kept",
                metadata: ["event": "appstore-duplicate"]
            )
        case (true, .accepted(_, let app)):
            let fires = firings.map(\.campaign).joined(separator: ", ")
            logger.info(
                "App Store notification \(what) for \(app): stored\(fires.isEmpty ? "" : "; fires \(fires)")",
                metadata: ["event": "appstore-stored"]
            )
            for firing in firings where firing.status == .noRecipient {
                metrics.triggerFired(firing.campaign, outcome: "no_recipient")
            }
        case (true, .quarantined(_, let reason)):
            logger.warning(
                "App Store notification \(what) quarantined: \(reason.escapingControlCharacters); fix pushcamp.yaml, then `pushcamp appstore reprocess`",
                metadata: ["event": "appstore-quarantined"]
            )
        }
        return .kept(record, new: new)
    }

    /// `storeNotification` within `storeDeadline`: the store does its blocking work off the
    /// cooperative pool (SQLite on its own queue, PostgreSQL over the network).
    private func commit(
        _ record: AppStoreNotificationRecord,
        subscription: SubscriptionState?,
        firings: [TriggerFiring]
    ) async throws(JournalError) -> Bool {
        let store = self.store
        return try await withDeadline(
            storeDeadline,
            late: "the journal did not store it within \(storeDeadline.components.seconds) s"
        ) { () async throws(JournalError) in
            try await store.storeNotification(record, subscription: subscription, firings: firings)
        }
    }

    /// What reprocessing the quarantined notifications did.
    public struct Reprocessed: Sendable {
        public var released: [(uuid: String, app: String)] = []
        public var stillQuarantined: [(uuid: String, reason: String)] = []
    }

    /// Verifies each quarantined notification again (without the age limit: it was fresh when it
    /// came) against the current configuration, and releases those it now accepts.
    public static func reprocess(
        _ store: any NotificationStore,
        intake: NotificationIntake,
        now: Date
    ) async throws -> Reprocessed {
        var result = Reprocessed()
        for record in try await store.notifications(limit: .max, quarantined: true) {
            do {
                let outcome = try await intake.receive(signedPayload: record.signedPayload, now: now, checkAge: false)
                switch outcome {
                case .accepted(_, let app):
                    try await store.release(record.uuid, app: app, subscription: subscription(outcome))
                    result.released.append((record.uuid, app))
                case .quarantined(_, let reason):
                    result.stillQuarantined.append((record.uuid, reason))
                }
            } catch let refusal as AppStoreRefusal {
                result.stillQuarantined.append((record.uuid, "\(refusal)"))
            }
        }
        return result
    }

    /// The subscription state an accepted notification carries (quarantined ones change none).
    static func subscription(_ outcome: NotificationIntake.Outcome) -> SubscriptionState? {
        guard case .accepted(let notification, let app) = outcome, let original = notification.originalTransactionID,
            let signedDate = notification.signedDate
        else { return nil }
        return SubscriptionState(
            status: notification.subscriptionStatus,
            originalTransactionID: original,
            app: app,
            productID: notification.transaction?.productID,
            autoRenew: notification.renewal?.autoRenewStatus.map { $0 == 1 },
            expiresAt: notification.transaction?.expiresDate?.timeIntervalSince1970,
            gracePeriodExpiresAt: notification.renewal?.gracePeriodExpiresDate?.timeIntervalSince1970,
            appAccountToken: notification.transaction?.appAccountToken ?? notification.renewal?.appAccountToken,
            lastType: notification.type,
            lastSubtype: notification.subtype,
            signedDate: signedDate.timeIntervalSince1970,
            notification: notification.uuid
        )
    }

    static func record(
        _ outcome: NotificationIntake.Outcome,
        signedPayload: String,
        receivedAt: Double
    ) -> AppStoreNotificationRecord {
        let notification = outcome.notification
        var app: String?
        var reason: String?
        switch outcome {
        case .accepted(_, let name): app = name
        case .quarantined(_, let why): reason = why
        }
        return AppStoreNotificationRecord(
            uuid: notification.uuid,
            type: notification.type,
            subtype: notification.subtype,
            signedDate: notification.signedDate?.timeIntervalSince1970,
            environment: notification.environment,
            bundleID: notification.bundleID,
            app: app,
            disposition: app != nil ? .stored : .quarantined,
            reason: reason,
            originalTransactionID: notification.transaction?.originalTransactionID
                ?? notification.renewal?.originalTransactionID,
            productID: notification.transaction?.productID,
            appAccountToken: notification.transaction?.appAccountToken ?? notification.renewal?.appAccountToken,
            signedPayload: signedPayload,
            receivedAt: receivedAt
        )
    }

    /// The intake for `project` (see `intake(for:paths:environment:logger:)`), throwing when no app
    /// has an `app_store:` key.
    public static func requiredIntake(
        for project: Project,
        paths: ProjectPaths,
        environment: [String: String],
        logger: Logger
    ) throws -> NotificationIntake {
        guard let intake = try intake(for: project, paths: paths, environment: environment, logger: logger) else {
            throw AppStoreSetupError(
                "no app in pushcamp.yaml has an app_store: key (bundle_id, app_apple_id, environments); see docs/app-store.md"
            )
        }
        return intake
    }

    /// The intake for the apps of `project` with `app_store:` (nil when none has): Apple Root CA - G3,
    /// plus the `trusted_roots` of tests, with a warning for each.
    public static func intake(
        for project: Project,
        paths: ProjectPaths,
        environment: [String: String],
        logger: Logger
    ) throws -> NotificationIntake? {
        var apps: [AppStoreApp] = []
        var roots = [AppleRoot.certificate]
        for name in project.appNames {
            guard let app = project.apps[name], let config = app.appStore else { continue }
            var trusted: [Certificate] = []
            for root in config.trustedRoots {
                let path: String
                switch root.resolve(environment) {
                case .success(let resolved): path = paths.url(resolved).path
                case .failure(let error):
                    throw AppStoreSetupError("apps.\(name).app_store.trusted_roots: \(error.message)")
                }
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                let certificate: Certificate
                if let text = String(data: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                    certificate = try Certificate(pemEncoded: text)
                } else {
                    certificate = try Certificate(derEncoded: Array(bytes))
                }
                // Apple's root vouches for every app, listed or not.
                guard certificate != AppleRoot.certificate else { continue }
                trusted.append(certificate)
                if !roots.contains(certificate) { roots.append(certificate) }
                logger.warning(
                    "app \(name) trusts an App Store root besides Apple's (\(paths.display(root.raw))), for its own notifications only: trusted_roots is for tests only"
                )
            }
            apps.append(
                AppStoreApp(
                    name: name,
                    bundleID: config.bundleID,
                    appAppleID: config.appAppleID,
                    environments: Set(config.environments),
                    trustedRoots: trusted
                )
            )
        }
        guard !apps.isEmpty else { return nil }
        return NotificationIntake(apps: apps, verifier: SignedPayloadVerifier(roots: roots))
    }
}

public struct AppStoreSetupError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
