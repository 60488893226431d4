import Foundation
import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("App Store notifications and subscriptions, on every journal")
struct NotificationStoreTests {
    static func state(
        _ transaction: String,
        notification: String,
        signed: Double,
        status: String?,
        app: String? = "shop",
        token: String? = nil,
        autoRenew: Bool? = nil
    ) -> SubscriptionState {
        SubscriptionState(
            status: status,
            originalTransactionID: transaction,
            app: app,
            productID: "premium",
            autoRenew: autoRenew,
            expiresAt: signed + 30 * 86_400,
            gracePeriodExpiresAt: nil,
            appAccountToken: token,
            lastType: status == "expired" ? "EXPIRED" : "DID_RENEW",
            lastSubtype: nil,
            signedDate: signed,
            notification: notification
        )
    }

    @Test(arguments: Store.allCases)
    func aNotificationIsStoredOnceAndItsSubscriptionFollowsTheNewestSignedDate(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        var first = TriggerFiringTests.record("n1")
        first.signedDate = 100
        first.receivedAt = 101
        let renewed = Self.state(
            "2000000001",
            notification: "n1",
            signed: 100,
            status: "active",
            token: "acc-1",
            autoRenew: true
        )
        #expect(try await journal.storeNotification(first, subscription: renewed))
        // Apple's retry: the same UUID changes nothing.
        #expect(try await !journal.storeNotification(first, subscription: renewed))
        // An older notification arriving late does not undo a newer state.
        var late = TriggerFiringTests.record("n0")
        late.signedDate = 50
        late.receivedAt = 102
        #expect(
            try await journal.storeNotification(
                late,
                subscription: Self.state("2000000001", notification: "n0", signed: 50, status: "expired")
            )
        )
        var subscriptions = try await journal.subscriptions(status: nil, limit: 10)
        #expect(subscriptions.map(\.status) == ["active"])
        #expect(subscriptions.first?.notification == "n1")
        // A newer one without the token or renewal keeps what was known.
        var expired = TriggerFiringTests.record("n2")
        expired.signedDate = 200
        expired.receivedAt = 103
        #expect(
            try await journal.storeNotification(
                expired,
                subscription: Self.state("2000000001", notification: "n2", signed: 200, status: "expired")
            )
        )
        subscriptions = try await journal.subscriptions(status: "expired", limit: 10)
        let kept = try #require(subscriptions.first)
        #expect(kept.appAccountToken == "acc-1" && kept.autoRenew == true && kept.signedDate == 200)
        #expect(kept.lastType == "EXPIRED" && kept.notification == "n2")
        #expect(try await journal.subscriptions(status: "active", limit: 10).isEmpty)
        // Newest received first.
        #expect(try await journal.notifications(limit: 10, quarantined: false).map(\.uuid) == ["n2", "n0", "n1"])
        #expect(try await journal.notifications(limit: 2, quarantined: false).map(\.uuid) == ["n2", "n0"])
    }

    @Test(arguments: Store.allCases)
    func aQuarantinedNotificationIsReleasedOnceWithItsSubscription(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        var record = TriggerFiringTests.record("q1")
        record.disposition = .quarantined
        record.app = nil
        record.reason = "no app has bundle id com.example.other"
        record.receivedAt = 300
        _ = try await journal.storeNotification(TriggerFiringTests.record("s1"))
        #expect(try await journal.storeNotification(record))
        #expect(try await journal.notifications(limit: 10, quarantined: true).map(\.uuid) == ["q1"])
        let quarantined = try #require(try await journal.notifications(limit: 10, quarantined: true).first)
        #expect(quarantined.reason == record.reason && quarantined.app == nil && quarantined.signedPayload == "x.y.z")
        let state = Self.state("2000000009", notification: "q1", signed: 100, status: "active")
        try await journal.release("q1", app: "shop", subscription: state)
        #expect(try await journal.notifications(limit: 10, quarantined: true).isEmpty)
        let released = try #require(
            try await journal.notifications(limit: 10, quarantined: false).first { $0.uuid == "q1" }
        )
        #expect(released.disposition == .stored && released.app == "shop" && released.reason == nil)
        #expect(try await journal.subscriptions(status: nil, limit: 10).map(\.originalTransactionID) == ["2000000009"])
        // Released already: a second release changes nothing.
        try await journal.release(
            "q1",
            app: "other",
            subscription: Self.state("2000000010", notification: "q1", signed: 100, status: "active")
        )
        #expect(try await journal.subscriptions(status: nil, limit: 10).count == 1)
    }

    @Test(arguments: Store.allCases)
    func subscriptionsAreReadPerAppWhateverTheirNumber(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        for index in 0..<25 {
            var record = TriggerFiringTests.record("n\(index)")
            record.signedDate = Double(100 + index)
            let app = index % 5 == 0 ? "other" : "shop"
            _ = try await journal.storeNotification(
                record,
                subscription: Self.state(
                    String(2_000_000_000 + index),
                    notification: "n\(index)",
                    signed: Double(100 + index),
                    status: "active",
                    app: app
                )
            )
        }
        var seen: [String] = []
        try await journal.forEachSubscription(app: "shop") { seen.append($0.originalTransactionID) }
        #expect(seen.count == 20 && Set(seen).count == 20)
        #expect(try await journal.subscriptions(status: "active", limit: 3).map(\.signedDate) == [124, 123, 122])
    }
}

@Suite("Recipients read a page at a time, on every journal")
struct RecipientPagesTests {
    @Test(arguments: Store.allCases)
    func everyRowIsReadOnceInPlanOrderAcrossPages(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
        let updates = (0..<7).map { RecipientUpdate(seq: $0 * 3, token: TemporaryProject.token($0), state: .planned) }
        try await journal.record(JournalBatch(updates: updates.reversed()), run: run.id, now: 2)
        var seen: [Int] = []
        try await journal.forEachRecipient(of: run.id, pageSize: 2) { seen.append($0.seq) }
        #expect(seen == [0, 3, 6, 9, 12, 15, 18])
        #expect(try await journal.recipients(of: run.id, after: 6, limit: 2).map(\.seq) == [9, 12])
        #expect(try await journal.recipients(of: run.id, after: 18, limit: 2).isEmpty)
    }
}
