import Foundation
import PushcampAPNs
import PushcampAPNsCore
import PushcampJournal
import PushcampModel
import PushcampPlanner
import PushcampSend
import PushcampTestSupport
import Synchronization
import Testing

/// A run cut into slices and sent by several workers at once, above the connections: the real
/// snapshot writer, `SliceWorker`s and executors, one journal, and in-memory APNs per slice sent.
@Suite("Slice workers, in memory")
struct SliceWorkerTests {
    /// Every transport the workers made, so what APNs got is counted over all of them.
    final class Transports: Sendable {
        let made = Mutex<[InMemoryTransport]>([])
        let rules: InMemoryTransport.Rules

        init(rules: InMemoryTransport.Rules = InMemoryTransport.Rules()) { self.rules = rules }

        func make() -> any PushTransport {
            let transport = InMemoryTransport(rules: rules, clock: SystemWallClock(), keepsRequests: true)
            made.withLock { $0.append(transport) }
            return transport
        }

        func total(_ counts: KeyPath<InMemoryTransport, [String: Int]>) -> [String: Int] {
            made.withLock { made in
                made.reduce(into: [:]) { total, transport in
                    total.merge(transport[keyPath: counts], uniquingKeysWith: +)
                }
            }
        }
    }

    /// A run of `campaign` snapshotted into `journal` in slices of `size`.
    static func snapshot(
        _ campaign: LoadedCampaign,
        into journal: any Journal,
        size: Int
    ) async throws -> (RunRecord, PlanSummary) {
        let run = try await journal.createRun(campaign: campaign.id, revision: campaign.revision, now: 1_800_000_000)
        let sendTime = Timestamp(secondsSince1970: Int64(run.startedAt))
        let planner = Planner(campaign: campaign, sendTime: sendTime, sendTimeSource: "now", sampleLimit: 0)
        let summary = try await RunSnapshot.write(
            planner,
            sendTime: sendTime,
            into: journal,
            run: run.id,
            lease: nil,
            size: size,
            opening: true,
            pageSize: 300
        )
        return (run, summary)
    }

    /// The pushes `campaign` plans, as its snapshot keeps them.
    static func planned(_ campaign: LoadedCampaign, sendTime: Timestamp) throws -> [SnapshotPush] {
        var pushes: [SnapshotPush] = []
        _ = try Planner(campaign: campaign, sendTime: sendTime).run {
            pushes.append(SnapshotPush($0, sendTime: sendTime))
        }
        return pushes
    }

    static func worker(
        _ campaign: LoadedCampaign,
        run: RunRecord,
        journal: any Journal,
        transports: Transports,
        lease: Double = 600,
        untilRunEnds: Bool = false,
        snapshot: (@Sendable () async throws -> Void)? = nil
    ) -> SliceWorker {
        var options = SliceWorker.Options()
        options.leaseDuration = lease
        options.stallTimeout = 600
        options.untilRunEnds = untilRunEnds
        return SliceWorker(
            campaign: campaign,
            run: run,
            store: journal,
            endpoint: "https://memory.test",
            options: options,
            snapshot: snapshot,
            makeTransport: { transports.make() }
        )
    }

    @Test func threeWorkersSendOneRunBetweenThemEachRecipientOnce() async throws {
        let (project, campaign) = try LoopbackTests.campaign(
            rows: 3_000,
            message: "holdout: 10%\n  variants: [{ name: a, weight: 50 }, { name: b, weight: 50 }]"
        )
        defer { project.remove() }
        let journal = MemoryJournal()
        let (run, summary) = try await Self.snapshot(campaign, into: journal, size: 250)
        #expect(summary.planned > 2_500 && summary.planned < 2_900)
        #expect(try await journal.run(run.id)?.planned == summary.planned)
        let slices = try await journal.slices(of: run.id)
        #expect(slices.count == (summary.planned + 249) / 250)

        let transports = Transports()
        let workers = (0..<3).map { _ in Self.worker(campaign, run: run, journal: journal, transports: transports) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in workers { group.addTask { try await worker.run() } }
            try await group.waitForAll()
        }
        // Each recipient the plan has went to APNs once, whichever worker sent it.
        let written = transports.total(\.written)
        #expect(written.count == summary.planned && written.values.allSatisfy { $0 == 1 })
        #expect(transports.total(\.delivered).count == summary.planned)
        #expect(try await journal.run(run.id)?.status == .finished)
        #expect(try await journal.counts(of: run.id).delivered == summary.planned)
        #expect(try await journal.slices(of: run.id).allSatisfy(\.done))
        // Every slice was sent by some worker, and the run's readout adds up the slices'.
        #expect(workers.map { $0.reports.count }.reduce(0, +) == slices.count)
        let stats = try #require(try await journal.stats(of: run.id))
        #expect(stats.variants.values.map(\.delivered).reduce(0, +) == summary.planned)
        #expect(Set(stats.variants.keys) == ["a", "b"])
        #expect(try await journal.possibleDuplicates(of: run.id).isEmpty)
        // Each worker kept its connections from slice to slice.
        #expect(transports.made.withLock { $0.count } == 3)
    }

    /// The creator sends the slices it opens while it plans the rest, and so does another worker:
    /// every recipient once, the run finished once its snapshot is sealed and its slices done.
    @Test func theCreatorAndAnotherWorkerSendSlicesAsTheyOpen() async throws {
        let (project, campaign) = try LoopbackTests.campaign(rows: 2_000)
        defer { project.remove() }
        let journal = MemoryJournal()
        let run = try await journal.createRun(campaign: campaign.id, revision: campaign.revision, now: 1_800_000_000)
        let sendTime = Timestamp(secondsSince1970: Int64(run.startedAt))
        let transports = Transports()
        // The creator waits a fifth of its lease (6 s) between looks once its snapshot is sealed and
        // the helper holds the last slices.
        let creator = Self.worker(
            campaign,
            run: run,
            journal: journal,
            transports: transports,
            lease: 30,
            untilRunEnds: true
        ) {
            _ = try await RunSnapshot.write(
                Planner(campaign: campaign, sendTime: sendTime, sendTimeSource: "now", sampleLimit: 0),
                sendTime: sendTime,
                into: journal,
                run: run.id,
                lease: nil,
                size: 200,
                opening: true,
                pageSize: 50
            )
        }
        // The helper joins once the first slice is open, as a node does, and takes what is free.
        let helper = Self.worker(campaign, run: run, journal: journal, transports: transports)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await creator.run() }
            group.addTask {
                while try await journal.slices(of: run.id).isEmpty { try await Task.sleep(for: .milliseconds(5)) }
                try await helper.run()
            }
            try await group.waitForAll()
        }
        #expect(creator.report?.stop == nil)
        #expect(try await journal.run(run.id)?.status == .finished)
        #expect(try await journal.run(run.id)?.planned == 2_000)
        let written = transports.total(\.written)
        #expect(written.count == 2_000 && written.values.allSatisfy { $0 == 1 })
        // Slices of 200 after a ramp from a page (50, then 100): sending began after 50 pushes.
        let sizes = try await journal.slices(of: run.id).map(\.slice.seqs.count)
        #expect(sizes.prefix(3) == [50, 100, 200] && sizes.reduce(0, +) == 2_000 && sizes.count == 12)
        #expect(try await journal.slices(of: run.id).allSatisfy(\.done))
    }

    /// A creator that died after opening some slices left pages past them: the next creator drops
    /// those, plans on after the last slice opened, and the run's snapshot is the plan, once.
    @Test func aCreatorTakingOverAnUnsealedSnapshotGoesOnAfterTheLastSliceOpened() async throws {
        let (project, campaign) = try LoopbackTests.campaign(rows: 500)
        defer { project.remove() }
        let journal = MemoryJournal()
        let run = try await journal.createRun(campaign: campaign.id, revision: campaign.revision, now: 1_800_000_000)
        let sendTime = Timestamp(secondsSince1970: Int64(run.startedAt))
        let plan = try Self.planned(campaign, sendTime: sendTime)
        #expect(plan.count == 500)
        // The dead creator: slices of 100, two opened, and a page of the third written.
        try await journal.appendSnapshot(Array(plan[0..<100]), opening: [0...99], run: run.id, lease: nil)
        try await journal.appendSnapshot(Array(plan[100..<200]), opening: [100...199], run: run.id, lease: nil)
        try await journal.appendSnapshot(Array(plan[200..<250]), run: run.id, lease: nil)
        // Its first slice was sent already.
        let (first, held) = try #require(try await journal.claimSlice(of: run.id, owner: "dead", duration: 60))
        _ = try await journal.closeSlice(first, status: .finished, stats: nil, lease: held)

        _ = try await RunSnapshot.write(
            Planner(campaign: campaign, sendTime: sendTime, sendTimeSource: "now", sampleLimit: 0),
            sendTime: sendTime,
            into: journal,
            run: run.id,
            lease: nil,
            size: 100,
            opening: true,
            pageSize: 30
        )
        #expect(try await journal.run(run.id)?.planned == 500)
        // After the slices opened, ramping again from a page (30, 60, then 100).
        #expect(
            try await journal.slices(of: run.id).map(\.slice.seqs) == [
                0...99, 100...199, 200...229, 230...289, 290...389, 390...489, 490...499,
            ]
        )
        #expect(try await journal.snapshot(of: run.id, in: 0...1_000, after: -1, limit: 1_000) == plan)
        let transports = Transports()
        try await Self.worker(campaign, run: run, journal: journal, transports: transports).run()
        let written = transports.total(\.written)
        #expect(written.count == 400 && written.values.allSatisfy { $0 == 1 })
        #expect(try await journal.run(run.id)?.status == .finished)
    }

    @Test func theApnsIdsAndPayloadsAreThoseOfTheCreatorsPlan() async throws {
        let (project, campaign) = try LoopbackTests.campaign(rows: 40)
        defer { project.remove() }
        let journal = MemoryJournal()
        let (run, _) = try await Self.snapshot(campaign, into: journal, size: 15)
        var planned: [String: PlannedPush] = [:]
        _ = try Planner(campaign: campaign, sendTime: Timestamp(secondsSince1970: Int64(run.startedAt))).run {
            planned[$0.token] = $0
        }
        let transports = Transports()
        try await Self.worker(campaign, run: run, journal: journal, transports: transports).run()
        let sent = transports.made.withLock { $0.flatMap(\.requests) }
        #expect(sent.count == 40)
        // Three slices, one pool: the connections outlive each slice.
        #expect(try await journal.slices(of: run.id).count == 3 && transports.made.withLock { $0.count } == 1)
        for request in sent {
            let push = try #require(planned[request.deviceToken])
            #expect(request.apnsID == push.apnsID.description && request.payload == push.payload)
            #expect(request.topic == push.topic && request.tag == push.seq)
        }
    }

    /// The run's creator shows the whole run on its progress line, read from the journal.
    @Test func theCreatorsProgressCarriesTheWholeRun() async throws {
        // 1,500 pushes at 1,000/s: a second and a half, so the run is read again while it goes.
        let (project, campaign) = try LoopbackTests.campaign(rows: 1_500, throttle: "{ rate: 1000/s, connections: 1 }")
        defer { project.remove() }
        let journal = MemoryJournal()
        let (run, summary) = try await Self.snapshot(campaign, into: journal, size: 250)
        var options = SliceWorker.Options()
        options.showsRun = true
        options.executor.progressInterval = 0.05
        let moments = Mutex<[SendProgress]>([])
        let worker = SliceWorker(
            campaign: campaign,
            run: run,
            store: journal,
            endpoint: "https://memory.test",
            options: options,
            progress: { moment in moments.withLock { $0.append(moment) } },
            makeTransport: { Transports().make() }
        )
        try await worker.run()
        let wide = moments.withLock { $0.compactMap(\.run) }
        #expect(!wide.isEmpty)
        #expect(wide.allSatisfy { $0.planned == summary.planned && $0.slices == 6 && $0.answered <= summary.planned })
        #expect(wide.last.map { $0.answered > 0 && $0.slicesDone > 0 } == true, "\(wide)")
    }

    @Test func aSliceAnEarlierHolderPartlySentIsFinishedWithoutSendingWhatItSettled() async throws {
        let (project, campaign) = try LoopbackTests.campaign(rows: 500)
        defer { project.remove() }
        let journal = MemoryJournal()
        let (run, _) = try await Self.snapshot(campaign, into: journal, size: 250)
        // An earlier holder delivered the first 100 and had 20 more in flight when it died.
        let pushes = try await journal.snapshot(of: run.id, in: 0...249, after: -1, limit: 250)
        let settled = pushes.prefix(100)
        try await journal.record(
            JournalBatch(
                dispatched: [0...119],
                delivered: [DeliveredRange(first: 0, tokens: settled.map(\.token))]
            ),
            run: run.id,
            now: run.startedAt
        )
        let transports = Transports()
        let worker = Self.worker(campaign, run: run, journal: journal, transports: transports)
        try await worker.run()
        #expect(try await journal.run(run.id)?.status == .finished)
        let written = transports.total(\.written)
        #expect(written.count == 400 && Set(settled.map(\.token)).isDisjoint(with: written.keys))
        #expect(worker.reports.count == 2 && worker.reports.allSatisfy { $0.stop == nil && $0.unsent == 0 })
        // The 20 in flight went again, listed by name.
        #expect(try await journal.possibleDuplicates(of: run.id).map(\.seq) == Array(100..<120))
    }

    /// A worker whose APNs never answers is stopped mid-slice; a second worker then sends the run.
    /// Answers the transports of both, the recipients planned, and the journal.
    static func stoppedMidSlice(
        extra: String = ""
    ) async throws -> (stalled: Transports, next: Transports, planned: Int, run: RunRecord, journal: MemoryJournal) {
        let (project, campaign) = try LoopbackTests.campaign(
            rows: 600,
            extra: extra,
            throttle: "{ rate: 100000/s, connections: 1 }"
        )
        defer { project.remove() }
        let journal = MemoryJournal()
        let (run, summary) = try await Self.snapshot(campaign, into: journal, size: 200)
        // The first worker's APNs takes requests and never answers: stopped, its slice is left with
        // requests whose fate is unknown.
        var silent = InMemoryTransport.Rules()
        silent.answers = false
        silent.requestTimeout = 1
        let stalled = Transports(rules: silent)
        let first = Self.worker(campaign, run: run, journal: journal, transports: stalled)
        let sending = Task { try await first.run() }
        let deadline = Date().addingTimeInterval(60)
        while stalled.total(\.written).isEmpty && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        sending.cancel()
        _ = try? await sending.value
        #expect(!stalled.total(\.written).isEmpty)
        #expect(first.reports.map(\.stop) == [.interrupted])
        #expect(try await journal.slices(of: run.id).allSatisfy { !$0.done })

        let transports = Transports()
        try await Self.worker(campaign, run: run, journal: journal, transports: transports).run()
        #expect(try await journal.run(run.id)?.status == .finished)
        return (stalled, transports, summary.planned, run, journal)
    }

    @Test func aWorkerStoppedMidSliceLeavesItsUnansweredRecipientsListedAndTheNextSendsThemAgain() async throws {
        let (stalled, transports, planned, run, journal) = try await Self.stoppedMidSlice()
        let unanswered = Set(stalled.total(\.written).keys)
        #expect(transports.total(\.delivered).count == planned)
        // The recipients the journal had in flight on the stopped worker's wire are listed by
        // token (the one APNs got among them), counted once each; everyone sent twice is listed.
        let listed = Set(try await journal.possibleDuplicates(of: run.id).map(\.token))
        #expect(unanswered.isSubset(of: listed))
        #expect(try await journal.run(run.id)?.possibleDuplicates == listed.count)
        let twice = transports.total(\.written).merging(stalled.total(\.written), uniquingKeysWith: +).filter {
            $0.value > 1
        }
        #expect(!twice.isEmpty && Set(twice.keys).isSubset(of: listed))
    }

    /// `retry.resend_unknown: false`: what was on the stopped worker's wire is not sent again but
    /// settled as failed, `unknown-not-resent`; nobody gets anything twice.
    @Test func withResendUnknownOffTheNextWorkerSettlesWhatWasInFlightInsteadOfSendingItAgain() async throws {
        let (stalled, transports, planned, run, journal) = try await Self.stoppedMidSlice(
            extra: "retry: { resend_unknown: false }"
        )
        let unanswered = Set(stalled.total(\.written).keys)
        var notResent = Set<String>()
        try await journal.forEachRecipient(of: run.id) { row in
            if case .failed(nil, ExecutorStateMachine.notResent, _) = row.state { notResent.insert(row.token) }
        }
        // Everything the journal had in flight (what reached the wire, and what was on its way).
        #expect(unanswered.isSubset(of: notResent))
        let both = transports.total(\.written).merging(stalled.total(\.written), uniquingKeysWith: +)
        #expect(both.values.allSatisfy { $0 == 1 })
        #expect(both.count + notResent.subtracting(unanswered).count == planned)
        #expect(transports.total(\.delivered).count == planned - notResent.count)
        #expect(try await journal.possibleDuplicates(of: run.id).isEmpty)
        #expect(try await journal.counts(of: run.id).failed == notResent.count)
    }
}
