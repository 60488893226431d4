import Foundation
import Logging
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampServe
import PushcampTestSupport
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// `serve`'s scheduler service itself — the driver, its launches, the real `SendRun` and executor —
/// on a memory journal and a manual clock, its pushes to in-memory APNs: virtual time jumps to the
/// next deadline whenever the tasks have settled, so days of slots and a lease's expiry take no
/// real time, and each test waits for an outcome in the journal.
@Suite("Scheduler service, in memory")
struct SchedulerServiceTests {
    static let t0 = 1_800_000_000.0  // 2027-01-15T08:00:00Z, a multiple of a minute

    /// A project with campaigns in `campaigns/`, the service over it, and what it sent.
    final class Harness: Sendable {
        let project: TemporaryProject
        let clock = ManualClock(SchedulerServiceTests.t0)
        let journal: MemoryJournal
        let service: SchedulerService
        let transports = Shared<[InMemoryTransport]>([])
        let lines = Shared<[String]>([])

        init(
            rows: Int = 5,
            schedule: String? = "schedule: { every: 1m }",
            projectFile: String = TemporaryProject.defaultProjectFile,
            latency: Double = 0.010,
            configure: (inout SchedulerService.Configuration) -> Void = { _ in }
        ) throws {
            project = try TemporaryProject(projectFile: projectFile)
            try project.write(
                "audiences/a.csv",
                TemporaryProject.csv(count: rows, columns: ["name"]) { ["Name\($0)"] }
            )
            if let schedule { try Self.writeCampaign(project, schedule) }
            journal = MemoryJournal(clock: clock)
            var configuration = SchedulerService.Configuration(
                paths: ProjectPaths(root: project.root, displayRoot: "."),
                campaignFolders: ["campaigns"],
                journal: journal,
                environment: [:]
            )
            // Virtual time runs ahead of a busy machine: these tests are not about stalls.
            configuration.stallTimeout = 3600
            let clock = self.clock
            let transports = self.transports
            var rules = InMemoryTransport.Rules()
            rules.latency = latency
            configuration.makeTransport = { [rules] in
                let transport = InMemoryTransport(rules: rules, clock: clock)
                transports.withLock { $0.append(transport) }
                return .given(transport, endpoint: "https://memory.test")
            }
            configure(&configuration)
            let lines = self.lines
            let logger = Logger(label: "pushcamp.serve") { label in
                ServeLogHandler(label: label, format: .text, level: .debug) { line in
                    lines.withLock { $0.append(line) }
                }
            }
            service = SchedulerService(
                configuration: configuration,
                metrics: ServeMetrics(),
                status: ServeStatus(),
                logger: logger,
                clock: clock
            )
        }

        static func writeCampaign(_ project: TemporaryProject, _ extra: String, id: String = "news") throws {
            try project.write(
                "campaigns/\(id).yaml",
                """
                campaign: \(id)
                app: shop
                audience: { source: { csv: audiences/a.csv } }
                message:
                  payload: { aps: { alert: { title: "Hi {{name}}" } } }
                throttle: { rate: 100000/s, connections: 1 }
                \(extra)
                """
            )
        }

        /// Deliveries per device token, over every run's transport.
        var delivered: [String: Int] {
            transports.withLock { made in
                made.reduce(into: [:]) { total, transport in total.merge(transport.delivered, uniquingKeysWith: +) }
            }
        }

        var log: String { lines.withLock { $0.joined() } }

        /// Runs the service until `done` holds, moving the clock to the next deadline (a second at
        /// most) whenever nothing has moved for two polls; then shuts it down gracefully (`stop`)
        /// and waits for it to drain. `during` is called at each step.
        func run(
            until done: @escaping @Sendable () async throws -> Bool,
            within virtualSeconds: Double = 600,
            during: @escaping @Sendable () async throws -> Void = {}
        ) async throws -> Bool {
            try await testGracefulShutdown { shutdown in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.service.run() }  // the service under test
                    let reached = try await self.drive(until: done, within: virtualSeconds, during: during)
                    shutdown.triggerGracefulShutdown()
                    // Drained: the clock moves on until the service returned.
                    let finished = Mutex(false)
                    group.addTask {  // the clock, for sends that drain after the shutdown
                        while !finished.withLock({ $0 }) {
                            try await Task.sleep(for: .milliseconds(2))
                            if let next = self.clock.nextDeadline {
                                self.clock.advance(to: min(next, self.clock.now() + 1))
                            }
                        }
                    }
                    try await group.next()
                    finished.withLock { $0 = true }
                    try await group.waitForAll()
                    return reached
                }
            }
        }

        func drive(
            until done: @Sendable () async throws -> Bool,
            within virtualSeconds: Double,
            during: @Sendable () async throws -> Void = {}
        ) async throws -> Bool {
            let end = clock.now() + virtualSeconds
            var seen: Double?
            var settled = 0
            while clock.now() < end {
                if try await done() { return true }
                try await during()
                try await Task.sleep(for: .milliseconds(1))
                let next = clock.nextDeadline
                settled = next != nil && next == seen ? settled + 1 : 0
                seen = next
                if settled >= 2, let next {
                    clock.advance(to: min(next, clock.now() + 1))
                    settled = 0
                }
            }
            return try await done()
        }

        func runs(_ campaign: String = "news") async throws -> [RunRecord] {
            try await journal.runs(limit: 100).filter { $0.campaign == campaign }
        }
    }

    /// A value the harness and the service's closures share.
    final class Shared<Value: Sendable>: Sendable {
        private let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func withLock<T>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
    }

    @Test func eachSlotFiresOnceAndSendsToEveryoneOnce() async throws {
        let harness = try Harness(rows: 5)
        defer { harness.project.remove() }
        // Two slots come due (t0 + 60 and t0 + 120); the third is not due when the test stops.
        let reached = try await harness.run(until: {
            let runs = try await harness.runs()
            return runs.count == 2 && runs.allSatisfy { $0.status == .finished }
        })
        #expect(reached, "\(harness.log)")
        let runs = try await harness.runs().sorted { $0.id.rawValue < $1.id.rawValue }
        #expect(runs.map(\.slot) == [Int64(Self.t0) + 60, Int64(Self.t0) + 120])
        #expect(harness.delivered.count == 5)
        #expect(harness.delivered.values.allSatisfy { $0 == 2 }, "\(harness.delivered)")
        #expect(harness.clock.now() < Self.t0 + 180)
        #expect(harness.log.contains("scheduled news (every 1m)"), "\(harness.log)")
    }

    @Test func aSlotAnotherProcessHoldsIsFiredAtTheNextTickAfterItLetsGo() async throws {
        let harness = try Harness(rows: 3)
        defer { harness.project.remove() }
        // Another process holds the campaign when its slot comes due, for 5 s past it.
        let other = try await harness.journal.claim(
            LeaseResource.campaign("news"),
            owner: LeaseOwner(id: "elsewhere:1"),
            duration: 65
        )
        guard case .held(let lease) = other else {
            Issue.record("the lease was not claimed: \(other)")
            return
        }
        let reached = try await harness.run(until: {
            try await harness.runs().first?.status == .finished
        })
        #expect(reached, "\(harness.log)")
        #expect(harness.log.contains("tried again at the next tick"), "\(harness.log)")
        let runs = try await harness.runs()
        #expect(runs.count == 1 && runs.first?.slot == Int64(Self.t0) + 60)
        // Fired once the lease expired on the journal's clock, at the first tick after.
        #expect((runs.first?.startedAt ?? 0) >= lease.expiresAt && (runs.first?.startedAt ?? 0) < lease.expiresAt + 1.1)
        #expect(harness.delivered.count == 3 && harness.delivered.values.allSatisfy { $0 == 1 })
        #expect(try await harness.journal.slots(campaign: "news", limit: 10).allSatisfy { $0.outcome == .fired })
    }

    @Test func anUnfinishedSlotRunIsTakenOverOnceItsLeaseExpires() async throws {
        let harness = try Harness(rows: 4, schedule: "schedule: { every: 1h }")
        defer { harness.project.remove() }
        // A node that died mid-send: it claimed the slot at t0 (its run is unfinished) and holds
        // the campaign's lease, which it no longer renews.
        let campaign = try #require(
            CampaignLoader(workingDirectory: harness.project.root).load("campaigns/news.yaml").campaign
        )
        var options = SendRun.Options(journal: harness.journal)
        options.kind = .slot(Int64(Self.t0))
        options.owner = LeaseOwner(id: "dead-node:1")
        options.leaseDuration = 15
        let dead = try await SendRun.prepare(
            campaign,
            options: options,
            transport: .given(InMemoryTransport(clock: harness.clock), endpoint: "https://memory.test"),
            clock: harness.clock
        )
        let lease = try #require(try await harness.journal.lease(of: LeaseResource.campaign("news")))
        let takenAt = Shared<Double?>(nil)
        let reached = try await harness.run(
            until: { try await harness.journal.run(dead.run.id)?.status == .finished },
            during: {
                guard harness.log.contains("taking over slot 2027-01-15 08:00:00Z of news") else { return }
                takenAt.withLock { $0 = $0 ?? harness.clock.now() }
            }
        )
        #expect(reached, "\(harness.log)")
        // Taken over once the lease expired on the journal's clock, at the next look for runs
        // nobody holds (every fifth of the service's lease: 3 s).
        let taken = try #require(takenAt.withLock { $0 }, "\(harness.log)")
        #expect(taken >= lease.expiresAt && taken <= lease.expiresAt + 3 + 1, "\(taken - lease.expiresAt)")
        let resumed = try #require(harness.lines.withLock { $0 }.first { $0.contains("resuming run") })
        #expect(resumed.contains("run \(dead.run.id)"), "\(resumed)")
        #expect(harness.delivered.count == 4 && harness.delivered.values.allSatisfy { $0 == 1 })
        #expect(try await harness.runs().count == 1)
    }

    @Test func aGracefulShutdownLetsTheSendDrainAndFiresNothingMore() async throws {
        // A slot's send of 400 pushes at 1 s each over one connection of 100 streams: four seconds.
        let harness = try Harness(rows: 400, latency: 1)
        defer { harness.project.remove() }
        let reached = try await harness.run(until: {
            try await harness.runs().first?.status == .running && !harness.delivered.isEmpty
        })
        #expect(reached, "\(harness.log)")
        let run = try #require(try await harness.runs().first)
        // Stopped, not finished: the next start resumes it. Nothing was sent twice, no later slot fired.
        let stopped = try #require(try await harness.journal.run(run.id))
        #expect(stopped.status == .running || stopped.status == .interrupted, "\(stopped.status)")
        #expect(harness.delivered.count < 400 && harness.delivered.values.allSatisfy { $0 == 1 })
        // Drained, not cut off: every push written was answered and recorded before the service ended.
        let written = harness.transports.withLock { $0.reduce(0) { $0 + $1.written.count } }
        #expect(written == harness.delivered.count)
        #expect(try await harness.journal.counts(of: run.id).delivered == harness.delivered.count)
        #expect(harness.log.contains("interrupted"), "\(harness.log)")
        #expect(try await harness.runs().count == 1)
    }

    @Test func aNodeWithSlicingJoinsARunAnotherNodeCutAndSendsItsSlices() async throws {
        var slicing = Slicing()
        slicing.maximum = 100
        let harness = try Harness(rows: 300, schedule: nil) { $0.slicing = slicing }
        defer { harness.project.remove() }
        try Harness.writeCampaign(harness.project, "", id: "big")
        // Loaded as `send` loads it, from the working directory: the run records where its file is.
        let campaign = try #require(CampaignLoader().load(harness.project.path("campaigns/big.yaml")).campaign)
        // `send --detach` on another node: planned into the journal in slices, sent by nobody yet.
        var options = SendRun.Options(journal: harness.journal)
        options.slicing = slicing
        options.detach = true
        options.owner = LeaseOwner(id: "other-node:1")
        let detached = try await SendRun.prepare(
            campaign,
            options: options,
            transport: .given(InMemoryTransport(clock: harness.clock), endpoint: "https://memory.test"),
            clock: harness.clock
        )
        let reached = try await harness.run(until: {
            try await harness.journal.run(detached.run.id)?.status == .finished
        })
        #expect(reached, "\(harness.log)")
        // Every slice sent here, each recipient once. A machine stalled for seconds may cost this
        // node a slice's lease: the slice is ended, claimed again, and this node's part of the run
        // may be summed up in more than one line; the lines still add up to the whole run.
        let summed = harness.log.split(separator: "\n").filter { $0.contains("of its slices: ") }
            .compactMap { line in
                line.split(separator: "of its slices: ").last?.split(separator: " ").first.flatMap { Int($0) }
            }
        #expect(summed.reduce(0, +) == 300, "\(harness.log)")
        #expect(harness.delivered.count == 300 && harness.delivered.values.allSatisfy { $0 == 1 })
    }

    @Test func aTriggerFiringIsSentInOneRunToTheSubscriptionsDevices() async throws {
        let harness = try Harness(schedule: nil, projectFile: TemporaryProject.appStoreProjectFile)
        defer { harness.project.remove() }
        try harness.project.write("test-root.pem", try AppStoreTestChain().rootPEM)
        let payer = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        let accounts = [payer, "0b7c9a55-2f7d-4a39-9d53-6c1c0b0e7f11", payer]
        try harness.project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: 3, columns: ["name", "account"]) { ["Name\($0)", accounts[$0]] }
        )
        try harness.project.write(
            "campaigns/card.yaml",
            """
            campaign: card
            app: shop
            audience:
              source: { csv: audiences/a.csv }
              subscriptions: { status: [billing-retry], attribute: account }
            message:
              payload: { aps: { alert: "{{name}}, your payment did not go through" } }
            trigger: { app_store: DID_FAIL_TO_RENEW }
            """
        )
        // The receiver stored a notification for the payer's subscription, and its firing.
        let uuid = "5A0E2F3C-0000-4000-8000-000000000001"
        let stored = try await harness.journal.storeNotification(
            AppStoreNotificationRecord(
                uuid: uuid,
                type: "DID_FAIL_TO_RENEW",
                subtype: nil,
                signedDate: Self.t0,
                environment: "Production",
                bundleID: "com.example.shop",
                app: "shop",
                disposition: .stored,
                reason: nil,
                originalTransactionID: "1000",
                productID: "monthly",
                appAccountToken: payer,
                signedPayload: "",
                receivedAt: Self.t0
            ),
            subscription: SubscriptionState(
                status: "billing-retry",
                originalTransactionID: "1000",
                app: "shop",
                productID: "monthly",
                autoRenew: true,
                expiresAt: nil,
                gracePeriodExpiresAt: nil,
                appAccountToken: payer,
                lastType: "DID_FAIL_TO_RENEW",
                lastSubtype: nil,
                signedDate: Self.t0,
                notification: uuid
            ),
            firings: [
                TriggerFiring(
                    campaign: "card",
                    notification: uuid,
                    subscriptionKey: payer,
                    dueAt: Self.t0,
                    recordedAt: Self.t0
                )
            ]
        )
        #expect(stored)
        // The run is closed after its last answer is recorded: wait for that too, not only the firing.
        let reached = try await harness.run(until: {
            let fired = try await harness.journal.firing(campaign: "card", notification: uuid)?.status == .fired
            let finished = try await harness.runs("card").first?.status == .finished
            return fired && finished && harness.log.contains("rows not joined")
        })
        #expect(reached, "\(harness.log)")
        // The payer's two devices, once each; the other row is not joined.
        #expect(harness.delivered == [TemporaryProject.token(0): 1, TemporaryProject.token(2): 1], "\(harness.log)")
        let runs = try await harness.runs("card")
        #expect(runs.count == 1 && runs.first?.status == .finished)
        #expect(harness.log.contains("trigger of card by notification \(uuid): run"), "\(harness.log)")
    }
}
