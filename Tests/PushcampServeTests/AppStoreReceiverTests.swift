import Foundation
import Logging
import PushcampAppStore
import PushcampJournal
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
        let store = MemoryNotificationStore()
        let receiver = receiver(chain, store: store)
        let body = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        #expect(await receiver.handle(body) == .init(status: 200, body: "stored\n"))
        #expect(await receiver.handle(body) == .init(status: 200, body: "duplicate\n"))
        #expect(store.count == 1)
        let other = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification(bundle: "com.example.kids")))
        #expect(await receiver.handle(other) == .init(status: 200, body: "quarantined\n"))
        #expect(
            try store.notifications(limit: 10, quarantined: true).first?.reason?.contains("com.example.kids") == true
        )
        #expect(await receiver.handle(Array("{}".utf8)).status == 400)
        // Our own failure is never a 4xx: Apple retries a 503.
        store.fail(with: JournalError(.failed, "the disk is full"))
        let next = AppStoreTestChain.body(try chain.sign(AppStoreTestChain.notification()))
        #expect(
            await receiver.handle(next) == .init(status: 503, body: "cannot store the notification now; try again\n")
        )
        store.fail(with: nil)
        #expect(await receiver.handle(next).status == 200)
        #expect(store.count == 3)
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
        #expect(try SQLiteJournal(path: path).notifications(limit: 10, quarantined: false).count == 1)
    }
}
