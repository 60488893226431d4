import Foundation
import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("Trigger firings in the SQLite journal")
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

    @Test func aFiringIsRecordedWithItsNotificationOnceAndClaimedByOneRun() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let path = project.path("journal.sqlite")
        let journal = try SQLiteJournal(path: path)
        #expect(try journal.storeNotification(Self.record("n1"), subscription: nil, firings: [Self.firing("n1")]))
        // Apple's retry of the same notification records no second firing.
        #expect(
            try !journal.storeNotification(
                Self.record("n1"),
                subscription: nil,
                firings: [Self.firing("n1", due: 999)]
            )
        )
        #expect(try journal.dueFirings(now: 109).isEmpty)
        #expect(try journal.dueFirings(now: 110).map(\.notification) == ["n1"])

        // Eight claims at once (as eight processes on one journal would): one run.
        let runs = try await withThrowingTaskGroup(of: RunRecord?.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try SQLiteJournal(path: path, lockWait: 10).claimFirings(
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
        #expect(try journal.dueFirings(now: 200).isEmpty)
        #expect(try journal.firings(run: run.id).map(\.status) == [.fired])
        #expect(try journal.unfinishedTriggerRuns().map(\.id) == [run.id])
        try journal.setStatus(.finished, of: run.id, now: 120)
        #expect(try journal.unfinishedTriggerRuns().isEmpty)
    }

    @Test func firingsNoAudienceRowWasJoinedToAreSettledAsNoRecipientAndSkippedOnesStaySkipped() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let journal = try SQLiteJournal(path: project.path("journal.sqlite"))
        for (uuid, key) in [("n1", "ACC-1"), ("n2", "acc-2"), ("n3", "acc-3")] {
            _ = try journal.storeNotification(
                Self.record(uuid),
                subscription: nil,
                firings: [Self.firing(uuid, key: key)]
            )
        }
        let run = try #require(
            try journal.claimFirings(
                campaign: "payment-failed",
                notifications: ["n1", "n2"],
                revision: "r1",
                file: nil,
                now: 111
            )
        )
        // The keys are compared as the campaign joins them: app account tokens in lowercase.
        #expect(try journal.settleFirings(run: run.id, joined: ["acc-1"], normalize: { $0.lowercased() }) == 1)
        let statuses = Dictionary(
            uniqueKeysWithValues: try journal.firings(campaign: nil, limit: 10).map { ($0.notification, $0.status) }
        )
        #expect(statuses == ["n1": .fired, "n2": .noRecipient, "n3": .pending])
        try journal.skipFirings(campaign: "payment-failed", notifications: ["n3"], detail: "the campaign was removed")
        #expect(try journal.firing(campaign: "payment-failed", notification: "n3")?.status == .skipped)
        #expect(
            try journal.claimFirings(
                campaign: "payment-failed",
                notifications: ["n3"],
                revision: "r1",
                file: nil,
                now: 1
            )
                == nil
        )
    }

    @Test func theTriggerHistoryCountsStoredNotificationsByTypeSubtypeAndSignedDate() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let journal = try SQLiteJournal(path: project.path("journal.sqlite"))
        var grace = Self.record("n1")
        grace.subtype = "GRACE_PERIOD"
        var old = Self.record("n2")
        old.signedDate = 10
        var other = Self.record("n3")
        other.originalTransactionID = "2000000002"
        var quarantined = Self.record("n4")
        quarantined.disposition = .quarantined
        for record in [grace, old, other, quarantined] { _ = try journal.storeNotification(record) }
        let all = try journal.countNotifications(app: "shop", type: "DID_FAIL_TO_RENEW", subtypes: [], since: 50)
        #expect(all.events == 2 && all.subscriptions == 2)
        let graceOnly = try journal.countNotifications(
            app: "shop",
            type: "DID_FAIL_TO_RENEW",
            subtypes: ["GRACE_PERIOD"],
            since: 0
        )
        #expect(graceOnly.events == 1 && graceOnly.subscriptions == 1)
    }
}
