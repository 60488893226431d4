import Foundation
import Logging
import PushcampAppStore
import PushcampJournal
import PushcampModel
import PushcampServe
import PushcampTestSupport
import Testing

@Suite("App Store receiver: durable before 200, once per UUID")
struct AppStoreReceiverTests {
    static let shop = AppStoreApp(
        name: "shop-ios",
        bundleID: "com.example.shop",
        appAppleID: 1_234_567_890,
        environments: ["production"]
    )

    func receiver(_ chain: AppStoreTestChain, store: any NotificationStore) -> AppStoreReceiver {
        AppStoreReceiver(
            intake: NotificationIntake(apps: [Self.shop], verifier: SignedPayloadVerifier(roots: [chain.root])),
            store: store,
            metrics: ServeMetrics(),
            logger: Logger(label: "test")
        )
    }

    @Test func storedThenDuplicateThenRefusedAndAStorageFailureAnswers503() async throws {
        let chain = try AppStoreTestChain()
        let store = MemoryJournal()
        let receiver = receiver(chain, store: store)
        let body = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        #expect(await receiver.handle(body) == .init(status: 200, body: "stored\n"))
        #expect(await receiver.handle(body) == .init(status: 200, body: "duplicate\n"))
        #expect(store.notificationCount == 1)
        let other = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification(bundle: "com.example.kids")))
        #expect(await receiver.handle(other) == .init(status: 200, body: "quarantined\n"))
        await #expect(
            try store.notifications(limit: 10, quarantined: true).first?.reason?.contains("com.example.kids") == true
        )
        #expect(await receiver.handle(Array("{}".utf8)).status == 400)
        // Our own failure is never a 4xx: Apple retries a 503.
        store.failNotifications(with: JournalError(.failed, "the disk is full"))
        let next = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        #expect(
            await receiver.handle(next) == .init(status: 503, body: "cannot store the notification now; try again\n")
        )
        store.failNotifications(with: nil)
        #expect(await receiver.handle(next).status == 200)
        #expect(store.notificationCount == 3)
    }

    /// A journal that keeps the write waiting (PostgreSQL down: its client waits for a connection)
    /// is answered 503 at the receiver's deadline, not when the journal gives up, and keeps nothing.
    @Test func aStoreThatDoesNotAnswerWithinTheDeadlineIsAnswered503() async throws {
        let chain = try AppStoreTestChain()
        let store = MemoryJournal()
        let receiver = AppStoreReceiver(
            intake: NotificationIntake(apps: [Self.shop], verifier: SignedPayloadVerifier(roots: [chain.root])),
            store: store,
            metrics: ServeMetrics(),
            logger: Logger(label: "test"),
            storeDeadline: .milliseconds(200)
        )
        // Without the deadline, the store would end after 30 s and answer 200.
        store.delayNotifications(by: .seconds(30))
        let body = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        #expect(await receiver.handle(body).status == 503)
        #expect(store.notificationCount == 0)
        store.delayNotifications(by: nil)
        #expect(await receiver.handle(body) == .init(status: 200, body: "stored\n"))
    }

    @Test func sixConcurrentPostsOfOneNotificationLeaveOneRow() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let chain = try AppStoreTestChain()
        let path = project.path("journal.sqlite")
        let body = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        // Six receivers on six connections to one journal, as six concurrent requests would be.
        let answers = try await withThrowingTaskGroup(of: AppStoreReceiver.Answer.self) { group in
            for _ in 0..<6 {
                let store = try SQLiteJournal(path: path, lockWait: 10)
                let receiver = receiver(chain, store: store)
                group.addTask { await receiver.handle(body) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.status == 200 })
        #expect(answers.filter { $0.body == "stored\n" }.count == 1)
        await #expect(try SQLiteJournal(path: path).notifications(limit: 10, quarantined: false).count == 1)
    }

    @Test func subscriptionStateFollowsTheNewestSignedDateWhateverTheArrivalOrder() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let chain = try AppStoreTestChain()
        let store = try SQLiteJournal(path: project.path("journal.sqlite"))
        let receiver = receiver(chain, store: store)
        let now = Date()
        let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        func post(_ type: String, _ subtype: String? = nil, minutesAgo: Double) async throws -> String {
            let payload = try chain.subscriptionNotification(
                type: type,
                subtype: subtype,
                original: "2000000123",
                appAccountToken: token,
                signedDate: now.addingTimeInterval(-minutesAgo * 60)
            )
            return await receiver.handle(AppStoreTestChain.body(try chain.sign(payload))).body
        }
        #expect(try await post("DID_FAIL_TO_RENEW", "GRACE_PERIOD", minutesAgo: 30) == "stored\n")
        var state = try await #require(try store.subscriptions(status: nil, limit: 10).first)
        #expect(state.status == "grace-period" && state.lastType == "DID_FAIL_TO_RENEW")
        #expect(state.appAccountToken == token && state.productID == "com.example.shop.premium")
        #expect(state.autoRenew == true && state.app == "shop-ios")
        // A renewal signed later, then an older failure arriving late: kept, but not the state.
        #expect(try await post("DID_RENEW", minutesAgo: 10) == "stored\n")
        #expect(try await post("DID_FAIL_TO_RENEW", minutesAgo: 20) == "stored\n")
        state = try await #require(try store.subscriptions(status: nil, limit: 10).first)
        #expect(state.status == "active" && state.lastType == "DID_RENEW")
        await #expect(try store.subscriptions(status: "billing-retry", limit: 10).isEmpty)
        #expect(try await post("EXPIRED", "VOLUNTARY", minutesAgo: 1) == "stored\n")
        state = try await #require(try store.subscriptions(status: "expired", limit: 10).first)
        #expect(state.autoRenew == false && state.lastSubtype == "VOLUNTARY")
        await #expect(try store.notifications(limit: 10, quarantined: false).count == 4)
    }

    @Test func aMatchingNotificationRecordsItsTriggerFiringsWithItOnce() async throws {
        let chain = try AppStoreTestChain()
        let store = MemoryJournal()
        let table = TriggerTable([
            TriggerRule(
                campaign: "card-failed",
                app: "shop-ios",
                spec: TriggerSpec(
                    appStoreType: "DID_FAIL_TO_RENEW",
                    delay: TimeSpan(seconds: 600),
                    location: SourceLocation(path: "c.yaml")
                ),
                key: .appAccountToken
            ),
            TriggerRule(
                campaign: "grace-only",
                app: "shop-ios",
                spec: TriggerSpec(
                    appStoreType: "DID_FAIL_TO_RENEW",
                    subtypes: ["GRACE_PERIOD"],
                    location: SourceLocation(path: "g.yaml")
                ),
                key: .originalTransactionID
            ),
            TriggerRule(
                campaign: "other-app",
                app: "kids-ios",
                spec: TriggerSpec(appStoreType: "DID_FAIL_TO_RENEW", location: SourceLocation(path: "k.yaml")),
                key: .appAccountToken
            ),
        ])
        let now = Date().timeIntervalSince1970.rounded(.down)
        let clock = ManualClock(now)
        let receiver = AppStoreReceiver(
            intake: NotificationIntake(apps: [Self.shop], verifier: SignedPayloadVerifier(roots: [chain.root])),
            store: store,
            metrics: ServeMetrics(),
            logger: Logger(label: "test"),
            triggers: table,
            clock: clock
        )
        let failed = AppStoreTestChain.body(
            try chain.sign(
                try chain.subscriptionNotification(
                    type: "DID_FAIL_TO_RENEW",
                    original: "2000000001",
                    appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                    signedDate: Date(timeIntervalSince1970: now - 10)
                )
            )
        )
        #expect(await receiver.handle(failed).body == "stored\n")
        #expect(await receiver.handle(failed).body == "duplicate\n")
        // One firing: the grace-period campaign wants another subtype, the other app's is not this app.
        #expect(store.recordedFirings.map(\.campaign) == ["card-failed"])
        #expect(store.recordedFirings.first?.subscriptionKey == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(store.recordedFirings.first?.dueAt == now + 600 && store.recordedFirings.first?.status == .pending)

        // No app account token: recorded as reaching nobody, never pending.
        let anonymous = AppStoreTestChain.body(
            try chain.sign(
                try chain.subscriptionNotification(
                    type: "DID_FAIL_TO_RENEW",
                    subtype: "GRACE_PERIOD",
                    original: "2000000002",
                    signedDate: Date(timeIntervalSince1970: now - 5)
                )
            )
        )
        #expect(await receiver.handle(anonymous).body == "stored\n")
        let second = store.recordedFirings.dropFirst()
        #expect(second.map(\.campaign) == ["card-failed", "grace-only"])
        #expect(second.map(\.status) == [.noRecipient, .pending])
        #expect(second.last?.subscriptionKey == "2000000002")
    }
}
