import Foundation
import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("Trigger firings, on every journal")
struct TriggerFiringTests {
    static func record(_ uuid: String) -> AppStoreNotificationRecord {
        AppStoreNotificationRecord(
            uuid: uuid,
            type: "DID_FAIL_TO_RENEW",
            subtype: nil,
            signedDate: 100,
            environment: "Production",
            bundleID: "com.example.shop",
            app: "shop",
            disposition: .stored,
            reason: nil,
            originalTransactionID: "2000000001",
            productID: "premium",
            appAccountToken: nil,
            signedPayload: "x.y.z",
            receivedAt: 100
        )
    }

    static func firing(
        _ uuid: String,
        campaign: String = "payment-failed",
        key: String? = "acc-1",
        due: Double = 110
    )
        -> TriggerFiring
    {
        TriggerFiring(campaign: campaign, notification: uuid, subscriptionKey: key, dueAt: due, recordedAt: 100)
    }

    @Test(arguments: Store.allCases)
    func aFiringIsRecordedWithItsNotificationOnceAndClaimedByOneRun(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        await #expect(try journal.storeNotification(Self.record("n1"), subscription: nil, firings: [Self.firing("n1")]))
        // Apple's retry of the same notification records no second firing.
        await #expect(
            try !journal.storeNotification(
                Self.record("n1"),
                subscription: nil,
                firings: [Self.firing("n1", due: 999)]
            )
        )
        #expect(try await journal.dueFirings(now: 109).isEmpty)
        #expect(try await journal.dueFirings(now: 110).map(\.notification) == ["n1"])

        // Eight claims at once (as eight processes on one journal would): one run.
        let handles = try (0..<8).map { _ in try store.another(of: journal, in: project) }
        let runs = try await withThrowingTaskGroup(of: RunRecord?.self) { group in
            for own in handles {
                group.addTask {
                    try await own.claimFirings(
                        campaign: "payment-failed",
                        notifications: ["n1"],
                        revision: "r1",
                        file: nil,
                        now: 111
                    )
                }
            }
            return try await group.reduce(into: [RunRecord]()) { if let run = $1 { $0.append(run) } }
        }
        let run = try #require(runs.count == 1 ? runs.first : nil)
        #expect(run.slot == nil && run.status == .running)
        #expect(try await journal.dueFirings(now: 200).isEmpty)
        #expect(try await journal.firings(run: run.id).map(\.status) == [.fired])
        #expect(try await journal.firing(campaign: "payment-failed", notification: "n1")?.run == run.id)
        #expect(try await journal.unfinishedTriggerRuns().map(\.id) == [run.id])
        try await journal.setStatus(.finished, of: run.id, now: 120)
        #expect(try await journal.unfinishedTriggerRuns().isEmpty)
    }

    @Test(arguments: Store.allCases)
    func dueFiringsComeOldestFirstUpToTheLimit(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        for (uuid, due) in [("late", 130.0), ("early", 105.0), ("middle", 120.0)] {
            _ = try await journal.storeNotification(
                Self.record(uuid),
                subscription: nil,
                firings: [Self.firing(uuid, due: due)]
            )
        }
        #expect(try await journal.dueFirings(now: 125).map(\.notification) == ["early", "middle"])
        #expect(try await journal.dueFirings(now: 200, limit: 2).map(\.notification) == ["early", "middle"])
        #expect(try await journal.firings(campaign: "other", limit: 10).isEmpty)
        #expect(try await journal.firings(campaign: "payment-failed", limit: 2).count == 2)
    }

    @Test(arguments: Store.allCases)
    func firingsNoAudienceRowWasJoinedToAreSettledAsNoRecipientAndSkippedOnesStaySkipped(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        for (uuid, key) in [("n1", "ACC-1"), ("n2", "acc-2"), ("n3", "acc-3")] {
            _ = try await journal.storeNotification(
                Self.record(uuid),
                subscription: nil,
                firings: [Self.firing(uuid, key: key)]
            )
        }
        let run = try #require(
            try await journal.claimFirings(
                campaign: "payment-failed",
                notifications: ["n1", "n2"],
                revision: "r1",
                file: nil,
                now: 111
            )
        )
        // The keys are compared as the campaign joins them: app account tokens in lowercase.
        #expect(try await journal.settleFirings(run: run.id, joined: ["acc-1"], normalize: { $0.lowercased() }) == 1)
        let statuses = Dictionary(
            uniqueKeysWithValues: try await journal.firings(campaign: nil, limit: 10).map {
                ($0.notification, $0.status)
            }
        )
        #expect(statuses == ["n1": .fired, "n2": .noRecipient, "n3": .pending])
        #expect(
            try await journal.firing(campaign: "payment-failed", notification: "n2")?.detail
                == "no audience row is joined to the subscription"
        )
        try await journal.skipFirings(
            campaign: "payment-failed",
            notifications: ["n3"],
            detail: "the campaign was removed"
        )
        let skipped = try await journal.firing(campaign: "payment-failed", notification: "n3")
        #expect(skipped?.status == .skipped && skipped?.detail == "the campaign was removed")
        #expect(
            try await journal.claimFirings(
                campaign: "payment-failed",
                notifications: ["n3"],
                revision: "r1",
                file: nil,
                now: 1
            )
                == nil
        )
    }

    @Test(arguments: Store.allCases)
    func theTriggerHistoryCountsStoredNotificationsByTypeSubtypeAndSignedDate(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        var grace = Self.record("n1")
        grace.subtype = "GRACE_PERIOD"
        var old = Self.record("n2")
        old.signedDate = 10
        var other = Self.record("n3")
        other.originalTransactionID = "2000000002"
        var quarantined = Self.record("n4")
        quarantined.disposition = .quarantined
        for record in [grace, old, other, quarantined] { _ = try await journal.storeNotification(record) }
        let all = try await journal.countNotifications(app: "shop", type: "DID_FAIL_TO_RENEW", subtypes: [], since: 50)
        #expect(all.events == 2 && all.subscriptions == 2)
        let graceOnly = try await journal.countNotifications(
            app: "shop",
            type: "DID_FAIL_TO_RENEW",
            subtypes: ["GRACE_PERIOD"],
            since: 0
        )
        #expect(graceOnly.events == 1 && graceOnly.subscriptions == 1)
    }
}
