import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampTestSupport
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// The whole send path above the connections — `SendRun.prepare`, the `Executor` driver and its
/// child tasks, the planner, a real SQLite journal — against the in-memory transport on a manual
/// clock: virtual time jumps to the next deadline whenever the tasks have had a moment to run.
@Suite("Executor driver, in memory")
struct ExecutorDriverTests {
    struct Setup {
        var project: TemporaryProject
        var campaign: LoadedCampaign
        var clock = ManualClock(1_800_000_000)
        var journalPath: String { project.path(".pushcamp/journal.sqlite") }
    }

    static func setup(rows: Int, throttle: String = "{ rate: 100000/s, connections: 2 }") throws -> Setup {
        let (project, campaign) = try LoopbackTests.campaign(rows: rows, throttle: throttle)
        return Setup(project: project, campaign: campaign)
    }

    static func prepare(
        _ setup: Setup,
        transport: InMemoryTransport,
        configure: (inout SendRun.Options) -> Void = { _ in }
    ) async throws -> SendRun {
        var options = SendRun.Options(journal: try SQLiteJournal(path: setup.journalPath))
        // Virtual time runs ahead of a busy machine in these tests: only the stall test (which sets
        // its own) is about stalls, so the others allow ten minutes without an answer.
        options.stallTimeout = 600
        // The lease is timed on the real clock: a send starved of the machine for longer than a
        // lease stops itself, as it must. These tests share two cores with the whole suite and are
        // not about leases (SendLeaseTests are), so they hold theirs for ten minutes.
        options.leaseDuration = 600
        configure(&options)
        return try await SendRun.prepare(
            setup.campaign,
            options: options,
            transport: .given(transport, endpoint: "https://memory.test"),
            clock: setup.clock
        )
    }

    /// Runs `send` to its end, moving `clock` towards the next deadline, at most a second at a time,
    /// once things have settled: the transport's loop is waiting and the next deadline has not
    /// changed for two polls a millisecond apart. (On a loaded machine, a timer that is being re-armed
    /// leaves a later deadline, the stall timeout, as the next one: jumping to it would fake a stall.)
    /// `during` is called at each step (to trigger a shutdown, say).
    static func drive(
        _ send: SendRun,
        on clock: ManualClock,
        transport: InMemoryTransport,
        during: @escaping @Sendable () -> Void = {}
    ) async throws -> SendReport {
        let finished = Mutex(false)
        async let sending: Void = {
            try await send.run()
            finished.withLock { $0 = true }
        }()
        var seen: Double?
        var settledPolls = 0
        while !finished.withLock({ $0 }) {
            try await Task.sleep(for: .milliseconds(1))
            during()
            let next = clock.nextDeadline
            settledPolls = transport.isParked && next != nil && next == seen ? settledPolls + 1 : 0
            seen = next
            if settledPolls >= 2, let next {
                clock.advance(to: min(next, clock.now() + 1))
                settledPolls = 0
            }
        }
        try await sending
        return try #require(send.report)
    }

    /// Prepares a send of `setup` over `transport` and drives it to its end.
    static func send(_ setup: Setup, over transport: InMemoryTransport) async throws -> SendReport {
        try await drive(try await prepare(setup, transport: transport), on: setup.clock, transport: transport)
    }

    @Test func frequentDropsStillDeliverEveryoneExactlyOnce() async throws {
        let setup = try Self.setup(rows: 3000, throttle: "{ rate: 100000/s, connections: 4 }")
        defer { setup.project.remove() }
        var rules = InMemoryTransport.Rules()
        rules.connections = 4
        rules.dropAfter = 300
        let transport = InMemoryTransport(rules: rules, clock: setup.clock)
        let report = try await Self.send(setup, over: transport)
        #expect(report.exitCode == 0, "\(report.text())")
        #expect(report.delivered == 3000)
        #expect(transport.delivered.count == 3000)
        #expect(transport.delivered.values.allSatisfy { $0 == 1 })
        // 3,000 answers over four connections, each dropped every 300th: at least 3000/300 - 4 drops.
        #expect((report.disconnects.values.reduce(0, +)) >= 6)
        let journal = try SQLiteJournal(path: setup.journalPath)
        let run = try #require(try await journal.latestRun(campaign: setup.campaign.id))
        #expect(run.status == .finished)
        #expect(try await journal.counts(of: run.id).delivered == 3000)
    }

    @Test func aScheduledCampaignSentNowExpiresFromTheRealSendTime() async throws {
        let (project, campaign) = try LoopbackTests.campaign(
            rows: 10,
            extra: "schedule: { at: \"2031-01-01T09:00:00Z\" }",
            projectFile: TemporaryProject.defaultProjectFile + "\ndefaults:\n  expiration: 24h\n"
        )
        defer { project.remove() }
        let setup = Setup(project: project, campaign: campaign)
        let transport = InMemoryTransport(clock: setup.clock)
        // Refused without --now, before anything is recorded.
        await #expect(throws: RunRefusal.self) { try await Self.prepare(setup, transport: transport) }
        #expect(try await SQLiteJournal(path: setup.journalPath).runs(limit: 1).isEmpty)
        let send = try await Self.prepare(setup, transport: transport) { $0.ignoreSchedule = true }
        let report = try await Self.drive(send, on: setup.clock, transport: transport)
        #expect(report.delivered == 10)
        // 24h after the real send (the clock's start), not after schedule.at in 2031.
        let expiration = try #require(transport.firstWritten?.expiration)
        #expect(expiration == Int64(1_800_000_000 + 86_400))
    }

    @Test func aRecurringCampaignIsLeftToServeUnlessSentNow() async throws {
        let (project, campaign) = try LoopbackTests.campaign(rows: 5, extra: "schedule: { every: 6h }")
        defer { project.remove() }
        let setup = Setup(project: project, campaign: campaign)
        let transport = InMemoryTransport(clock: setup.clock)
        do {
            _ = try await Self.prepare(setup, transport: transport)
            Issue.record("a recurring campaign was sent without --now")
        } catch let refusal as RunRefusal {
            // The clock starts at 2027-01-15T08:00:00Z: the next 6-hour slot is 12:00.
            #expect(refusal.message.contains("every 6h, next slot 2027-01-15 12:00:00Z"), "\(refusal.message)")
            #expect(refusal.message.contains("`pushcamp serve` sends each slot"))
        }
        #expect(try await SQLiteJournal(path: setup.journalPath).runs(limit: 1).isEmpty)
        let send = try await Self.prepare(setup, transport: transport) { $0.ignoreSchedule = true }
        #expect(try await Self.drive(send, on: setup.clock, transport: transport).delivered == 5)
    }

    /// A campaign over `zones` (one recipient per entry, cycling) with the `timing` keys.
    static func timedSetup(rows: Int, zones: [String], timing: String, expiration: String = "") throws -> Setup {
        let (project, _) = try LoopbackTests.campaign(rows: 1)
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: rows, columns: ["name", "tz"]) { ["Name\($0)", zones[$0 % zones.count]] }
        )
        try project.write(
            "campaigns/c.yaml",
            """
            campaign: timed
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: { aps: { alert: "Hi {{name}}" } }
              \(expiration)
            throttle: { rate: 100000/s, connections: 1 }
            \(timing)
            """
        )
        let result = CampaignLoader(workingDirectory: project.root).load("campaigns/c.yaml")
        return Setup(project: project, campaign: try #require(result.campaign, "\(result.diagnostics)"))
    }

    /// Pushes due later are handed over at their moment on the run's clock, not before, and the
    /// planner holds none of them meanwhile.
    @Test func recipientsAreSentAtTheirLocalTimeNotBefore() async throws {
        // The clock starts at 2027-01-15T08:00:00Z. 08:01 on each recipient's clock: in UTC (no zone)
        // a minute from now; in Lagos (UTC+1) it has passed, so at once (on_passed: send_now).
        let setup = try Self.timedSetup(
            rows: 300,
            zones: ["", "Africa/Lagos", "Mars/Olympus"],
            timing:
                "schedule: { at: \"2027-01-15T08:01\", timezone: recipient, zone_attribute: tz, on_passed: send_now }"
        )
        defer { setup.project.remove() }
        let transport = InMemoryTransport(clock: setup.clock)
        let early = Mutex(0)
        let send = try await Self.prepare(setup, transport: transport) { $0.ignoreSchedule = true }
        let report = try await Self.drive(send, on: setup.clock, transport: transport) {
            if setup.clock.now() < 1_800_000_060 {
                early.withLock { $0 = max($0, transport.written.values.reduce(0, +)) }
            }
        }
        #expect(early.withLock { $0 } == 100, "only Lagos before 08:01")
        #expect(report.delivered == 200)
        #expect(report.preflightFailed == 100)  // Mars/Olympus is not a zone
        #expect(setup.clock.now() >= 1_800_000_060)
    }

    @Test func quietHoursHoldPushesUntilTheyEndOrDropThoseThatWouldExpire() async throws {
        let quiet = "quiet_hours: { from: \"07:00\", to: \"08:02\", timezone: UTC }"
        let setup = try Self.timedSetup(rows: 50, zones: [""], timing: quiet)
        defer { setup.project.remove() }
        let transport = InMemoryTransport(clock: setup.clock)
        let early = Mutex(0)
        let report = try await Self.drive(
            try await Self.prepare(setup, transport: transport),
            on: setup.clock,
            transport: transport
        ) {
            if setup.clock.now() < 1_800_000_120 {
                early.withLock { $0 = max($0, transport.written.values.reduce(0, +)) }
            }
        }
        #expect(early.withLock { $0 } == 0)
        #expect(report.delivered == 50)

        let expiring = try Self.timedSetup(rows: 50, zones: [""], timing: quiet, expiration: "expiration: 1m")
        defer { expiring.project.remove() }
        let idle = InMemoryTransport(clock: expiring.clock)
        let dropped = try await Self.send(expiring, over: idle)
        #expect(dropped.delivered == 0)
        #expect(dropped.dropped == ["quiet-hours-expired": 50])
        #expect(dropped.text().contains("dropped 50 (quiet-hours-expired)"), "\(dropped.text())")
        #expect(idle.written.isEmpty)
    }

    @Test func refusedCredentialsStopTheRunWithinAHandfulOfRequests() async throws {
        let setup = try Self.setup(rows: 2000)
        defer { setup.project.remove() }
        var rules = InMemoryTransport.Rules()
        rules.connections = 2
        rules.reason = { _ in .invalidProviderToken }
        let transport = InMemoryTransport(rules: rules, clock: setup.clock)
        let report = try await Self.send(setup, over: transport)
        guard case .credentials? = report.stop else {
            Issue.record("expected a credentials stop, got \(String(describing: report.stop))")
            return
        }
        #expect(report.exitCode == 2)
        #expect(transport.written.values.reduce(0, +) <= 12)
        // Nothing is lost: a resume finds every recipient still to send.
        let journal = try SQLiteJournal(path: setup.journalPath)
        let run = try #require(try await journal.latestRun(campaign: setup.campaign.id))
        #expect(run.status == .interrupted)
        #expect(try await journal.counts(of: run.id).delivered == 0)
    }

    @Test func anEndpointThatAllowsNoStreamsStopsAfterTheStallTimeout() async throws {
        let setup = try Self.setup(rows: 200)
        defer { setup.project.remove() }
        var rules = InMemoryTransport.Rules()
        rules.streamLimit = 0
        let transport = InMemoryTransport(rules: rules, clock: setup.clock)
        let send = try await Self.prepare(setup, transport: transport) { $0.stallTimeout = 20 }
        let report = try await Self.drive(send, on: setup.clock, transport: transport)
        guard case .stalled(let message)? = report.stop else {
            Issue.record("expected a stall, got \(String(describing: report.stop))")
            return
        }
        #expect(message.contains("https://memory.test"), "\(message)")
        #expect(message.contains("allows 0 concurrent streams"), "\(message)")
        #expect(report.exitCode == 2)
        #expect(transport.written.isEmpty)
        #expect(message.contains("answered nothing for 20 s"), "\(message)")
    }

    @Test func aGracefulShutdownDrainsWhatIsOnTheWireAndTheRunResumes() async throws {
        let setup = try Self.setup(rows: 1500, throttle: "{ rate: 500/s, connections: 2 }")
        defer { setup.project.remove() }
        var rules = InMemoryTransport.Rules()
        rules.connections = 2
        rules.latency = 0.2
        let transport = InMemoryTransport(rules: rules, clock: setup.clock)
        let report = try await testGracefulShutdown { trigger in
            let send = try await Self.prepare(setup, transport: transport)
            return try await Self.drive(send, on: setup.clock, transport: transport) {
                if transport.delivered.count >= 300 { trigger.triggerGracefulShutdown() }
            }
        }
        #expect(report.stop == .interrupted)
        #expect(report.exitCode == 130)
        #expect(report.delivered < 1500)
        // Everything written was answered before the run ended: nothing is left in flight, and the
        // journal's deliveries are exactly the transport's.
        #expect(report.delivered == transport.delivered.count)
        let journal = try SQLiteJournal(path: setup.journalPath)
        let run = try #require(try await journal.latestRun(campaign: setup.campaign.id))
        #expect(run.status == .interrupted)
        let counts = try await journal.counts(of: run.id)
        #expect(counts.inFlight == 0)
        #expect(counts.delivered == transport.delivered.count)

        // The next send resumes the run, sends only the rest, and nobody gets it twice.
        let again = InMemoryTransport(rules: rules, clock: setup.clock)
        let resumed = try await Self.send(setup, over: again)
        #expect(resumed.exitCode == 0, "\(resumed.text())")
        #expect(resumed.possibleDuplicates == 0)
        let deliveries = transport.delivered.merging(again.delivered, uniquingKeysWith: +)
        #expect(deliveries.count == 1500)
        #expect(deliveries.values.allSatisfy { $0 == 1 })
    }

    @Test func aJournalThatStopsTakingWritesStopsTheSendAndTheReportSaysWhatItHolds() async throws {
        let setup = try Self.setup(rows: 3000, throttle: "{ rate: 5000/s, connections: 2 }")
        defer { setup.project.remove() }
        var rules = InMemoryTransport.Rules()
        rules.connections = 2
        let transport = InMemoryTransport(rules: rules, clock: setup.clock)
        let store = MemoryJournal(failingAfter: 40)
        let send = try await Self.prepare(setup, transport: transport) { $0.journal = store }
        let report = try await Self.drive(send, on: setup.clock, transport: transport)
        guard case .journal(let message)? = report.stop else {
            Issue.record("expected a journal stop, got \(String(describing: report.stop))")
            return
        }
        #expect(message.contains("full"), "\(message)")
        #expect(report.exitCode == 1)
        // The report's delivered count is what the journal holds; what it could not hold is said.
        let counts = try await store.counts(of: send.run.id)
        #expect(report.delivered == counts.delivered, "\(report.text())")
        let unrecorded = try #require(report.unrecorded)
        #expect(report.delivered + unrecorded.delivered == transport.delivered.count, "\(report.text())")
        #expect(report.text().contains("not recorded: \(unrecorded.delivered) delivered"), "\(report.text())")
    }
}

extension ExecutorDriverTests {
    @Test func aSendWhoseLeaseIsTakenOverStopsAndLeavesTheRunToItsNewHolder() async throws {
        let setup = try Self.setup(rows: 1500, throttle: "{ rate: 500/s, connections: 2 }")
        defer { setup.project.remove() }
        var rules = InMemoryTransport.Rules()
        rules.connections = 2
        rules.latency = 0.2
        let transport = InMemoryTransport(rules: rules, clock: setup.clock)
        let journal = try SQLiteJournal(path: setup.journalPath)
        let send = try await Self.prepare(setup, transport: transport)
        let takenOver = Mutex<Task<Void, any Error>?>(nil)
        let report = try await Self.drive(send, on: setup.clock, transport: transport) {
            guard transport.delivered.count >= 300 else { return }
            takenOver.withLock { task in
                guard task == nil else { return }
                // Another node takes the run over, as after this one's lease expired.
                task = Task {
                    let held = try #require(try await journal.lease(of: LeaseResource.campaign(setup.campaign.id)))
                    _ = try await journal.takeOver(held, owner: "node-b/1/1", duration: 600)
                }
            }
        }
        try await #require(takenOver.withLock { $0 }).value
        guard case .leaseLost(let message)? = report.stop else {
            Issue.record("expected a lease-lost stop, got \(String(describing: report.stop))")
            return
        }
        #expect(message.contains("node-b/1/1"), "\(message)")
        #expect(report.exitCode == 5)
        #expect(report.delivered < 1500)
        // Nothing went on the wire that the journal does not show as sent: every batch after the
        // fence moved was refused before it reached the transport, and what was in flight then is
        // the new holder's to count as possible duplicates.
        let recorded = try await journal.dispatched(of: send.run.id).reduce(0) { $0 + $1.count }
        #expect(transport.written.count <= recorded, "\(transport.written.count) written, \(recorded) recorded")
        #expect(transport.written.count < 1500)
        // The run is the new holder's: this send did not set its status.
        #expect(try await journal.run(send.run.id)?.status == .running)
    }
}

extension ExecutorDriverTests {
    /// With a store that waits on the network (PostgreSQL), the writer awaits each commit and puts
    /// everything queued in it: a dispatch and the answers before it share one commit.
    @Test func aStoreThatIsAwaitedGetsOneCommitPerWriterCycle() async throws {
        let setup = try Self.setup(rows: 3000, throttle: "{ rate: 100000/s, connections: 2 }")
        defer { setup.project.remove() }
        var rules = InMemoryTransport.Rules()
        rules.connections = 2
        let transport = InMemoryTransport(rules: rules, clock: setup.clock)
        let store = MemoryJournal(awaitsCommits: true)
        let send = try await Self.prepare(setup, transport: transport) { $0.journal = store }
        let report = try await Self.drive(send, on: setup.clock, transport: transport)
        #expect(report.exitCode == 0, "\(report.text())")
        #expect(report.delivered == 3000 && transport.delivered.values.allSatisfy { $0 == 1 })
        #expect(try await store.run(send.run.id)?.status == .finished)
        let counts = try await store.counts(of: send.run.id)
        #expect(counts.delivered == 3000 && counts.inFlight == 0)
        // Dispatches and the answers queued before them went in the same commits. Splitting them,
        // as for SQLite, shares none. A count of commits cannot tell the two apart once the test
        // is starved of threads (answers then commit alone more often): 26–27 commits measured for
        // 24 hand-over batches, 39 once in the full suite on CI, 40 split.
        let batches = (3000 + 127) / 128
        #expect(store.sharedRecordCount > 0, "\(store.recordCount) commits for \(batches) batches, none shared")
    }
}
