import Foundation
import PushcampJournal
import PushcampModel
import PushcampTestSupport
import Testing

@Suite("Slices: a run's plan snapshotted once and sent by several workers, on every journal")
struct SliceStoreTests {
    static func push(_ seq: Int) -> SnapshotPush {
        SnapshotPush(
            seq: seq,
            token: TemporaryProject.token(seq),
            payload: Array("{\"aps\":{\"alert\":\"tab\\there \\\\ \(seq)\"}}".utf8) + [0, 255, 9, 10],
            variant: seq % 2 == 0 ? "control" : "urgency",
            locale: seq % 3 == 0 ? nil : "fr\tFR",
            collapseID: seq % 5 == 0 ? "line\nbreak" : nil,
            expiration: seq % 7 == 0 ? nil : 1_900_000_000 + Int64(seq),
            platform: seq % 4 == 1 ? .android : .ios,
            due: seq % 6 == 4 ? 1_900_000_100 + Int64(seq) : nil
        )
    }

    /// A run of `count` pushes (every third seq left out, as the holdout would), snapshotted in
    /// pages and sealed in slices of `size`.
    static func slicedRun(
        _ journal: any Journal,
        count: Int,
        size: Int
    ) async throws -> (RunRecord, [SnapshotPush], [ClosedRange<Int>]) {
        let run = try await journal.createRun(campaign: "sale", revision: "r1", now: 1_000)
        let creator = try #require(try await journal.acquire("campaign:sale", owner: "creator", duration: 60))
        var cutter = SliceCutter(size: size)
        var pushes: [SnapshotPush] = []
        for seq in 0..<(count * 3 / 2) where seq % 3 != 2 && pushes.count < count {
            pushes.append(push(seq))
            cutter.add(seq: seq)
        }
        for page in stride(from: 0, to: pushes.count, by: 7) {
            try await journal.appendSnapshot(
                Array(pushes[page..<min(page + 7, pushes.count)]),
                run: run.id,
                lease: creator
            )
        }
        #expect(try await journal.slices(of: run.id).isEmpty)
        let slices = cutter.finished()
        try await journal.sealSnapshot(run: run.id, slices: slices, planned: cutter.planned, lease: creator)
        return (run, pushes, slices)
    }

    @Test
    func theCutterCoversEverySeqInContiguousSlicesOfTheGivenSize() {
        var cutter = SliceCutter(size: 3)
        for seq in [0, 2, 3, 7, 8, 9, 12] { cutter.add(seq: seq) }
        #expect(cutter.finished() == [0...3, 4...9, 10...12])
        #expect(cutter.planned == 7)
        var exact = SliceCutter(size: 2)
        for seq in [1, 4, 5, 6] { exact.add(seq: seq) }
        #expect(exact.finished() == [0...4, 5...6])
        #expect(SliceCutter(size: 5).finished().isEmpty)
    }

    @Test
    func aRampingCutterStartsSmallAndDoublesUpToTheSizeFromWhereItIsTold() {
        var cutter = SliceCutter(size: 10, from: 100, rampFrom: 2)
        let starts = (100..<130).map { cutter.add(seq: $0) }
        #expect(cutter.finished() == [100...101, 102...105, 106...113, 114...123, 124...129])
        #expect(cutter.planned == 30)
        // `add` says which seqs start a slice: where the creator cuts its pages.
        #expect(starts.indices.filter { starts[$0] }.map { 100 + $0 } == [100, 102, 106, 114, 124])
    }

    @Test(arguments: Store.allCases)
    func aSnapshotIsReadBackAsWrittenSliceBySlice(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let (run, pushes, slices) = try await Self.slicedRun(journal, count: 40, size: 10)
        #expect(slices.count == 4)
        #expect(try await journal.run(run.id)?.planned == 40)
        var read: [SnapshotPush] = []
        for slice in slices {
            var after = -1
            while true {
                let page = try await journal.snapshot(of: run.id, in: slice, after: after, limit: 4)
                #expect(page.allSatisfy { slice.contains($0.seq) })
                read += page
                guard let last = page.last else { break }
                after = last.seq
            }
        }
        #expect(read == pushes)
        let statuses = try await journal.slices(of: run.id)
        #expect(statuses.map(\.slice.seqs) == slices && statuses.allSatisfy { !$0.done && $0.lease == nil })
        #expect(try await journal.runsWithFreeSlices().map(\.id) == [run.id])
    }

    @Test(arguments: Store.allCases)
    func workersClaimingAtOnceGetDifferentSlicesAndTheLastToFinishFinishesTheRun(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let (run, _, slices) = try await Self.slicedRun(journal, count: 30, size: 5)
        let handles = try (0..<4).map { _ in try store.another(of: journal, in: project) }
        let claimed = try await withThrowingTaskGroup(of: [(RunSlice, Lease)].self) { group in
            for (index, handle) in handles.enumerated() {
                group.addTask {
                    var mine: [(RunSlice, Lease)] = []
                    while let claim = try await handle.claimSlice(of: run.id, owner: "worker-\(index)", duration: 60) {
                        mine.append(claim)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: [(RunSlice, Lease)]()) { $0 += $1 }
        }
        #expect(claimed.map(\.0.seqs).sorted { $0.lowerBound < $1.lowerBound } == slices)
        #expect(claimed.allSatisfy { $0.1.resource == $0.0.resource })
        #expect(try await journal.liveSlices(of: run.id) == slices.count)
        #expect(try await journal.claimSlice(of: run.id, owner: "late", duration: 60) == nil)
        // Every slice held: none free, so no node joins the run.
        #expect(try await journal.runsWithFreeSlices().isEmpty)

        let stats = {
            var stats = RunStats()
            stats.retries["TooManyRequests"] = 1
            stats.seconds = 2
            return stats
        }()
        // All but the last slice end at once, from different handles; then the last.
        let ends = claimed.sorted { $0.0.seqs.lowerBound < $1.0.seqs.lowerBound }
        try await withThrowingTaskGroup(of: RunStatus.self) { group in
            for (index, (slice, lease)) in ends.dropLast().enumerated() {
                let handle = handles[index % handles.count]
                group.addTask { try await handle.closeSlice(slice, status: .finished, stats: stats, lease: lease) }
            }
            for try await status in group { #expect(status == .running) }
        }
        let (last, lease) = try #require(ends.last)
        #expect(try await journal.closeSlice(last, status: .finished, stats: stats, lease: lease) == .finished)
        #expect(try await journal.run(run.id)?.status == .finished)
        #expect(try await journal.slices(of: run.id).allSatisfy(\.done))
        #expect(try await journal.runsWithFreeSlices().isEmpty)
        // Every slice's statistics, added up, are the run's.
        let total = try #require(try await journal.stats(of: run.id))
        #expect(total.retries["TooManyRequests"] == slices.count && total.seconds == Double(2 * slices.count))
    }

    @Test(arguments: Store.allCases)
    func anExpiredSliceIsClaimedAgainWithAHigherFenceAndItsFormerHolderIsRefused(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let (run, _, _) = try await Self.slicedRun(journal, count: 10, size: 10)
        let (slice, paused) = try #require(try await journal.claimSlice(of: run.id, owner: "paused", duration: 0.3))
        var stats = RunStats()
        stats.seconds = 1
        // An interrupted holder keeps nothing but its statistics: the slice stays open.
        #expect(try await journal.closeSlice(slice, status: .interrupted, stats: stats, lease: paused) == .running)
        // Free again once its lease expired: the run is listed for nodes to join, and claimed.
        var takeover: (RunSlice, Lease)?
        let deadline = Date().addingTimeInterval(60)
        while true {
            if try await journal.runsWithFreeSlices().map(\.id) == [run.id] {
                takeover = try await journal.claimSlice(of: run.id, owner: "survivor", duration: 60)
            }
            if takeover != nil || Date() >= deadline { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let (again, lease) = try #require(takeover)
        #expect(try await journal.runsWithFreeSlices().isEmpty)
        #expect(again == slice && lease.fence == paused.fence + 1 && lease.owner == "survivor")
        #expect(try await journal.stats(of: slice)?.seconds == 1)
        await #expect(throws: JournalError.self) {
            _ = try await journal.closeSlice(slice, status: .finished, stats: nil, lease: paused)
        }
        await #expect(throws: JournalError.self) {
            try await journal.record(JournalBatch(dispatched: [0...3], lease: paused), run: run.id, now: 1_001)
        }
        #expect(try await journal.dispatched(of: run.id).isEmpty)
        #expect(try await journal.slices(of: run.id).allSatisfy { !$0.done })
        // A cancel from the holder cancels the run; nobody finishes it after, or claims it.
        #expect(try await journal.closeSlice(slice, status: .cancelled, stats: nil, lease: lease) == .cancelled)
        #expect(try await journal.runsWithFreeSlices().isEmpty)
        try await journal.release(lease)
        #expect(try await journal.claimSlice(of: run.id, owner: "late", duration: 60) == nil)
    }

    @Test(arguments: Store.allCases)
    func aCreatorThatLostItsLeaseCannotSnapshotAndAnUnsealedSnapshotStartsOver(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "sale", revision: "r1", now: 1_000)
        let creator = try #require(try await journal.acquire("campaign:sale", owner: "creator", duration: 60))
        try await journal.appendSnapshot((0..<5).map(Self.push), run: run.id, lease: creator)
        let next = try #require(try await journal.takeOver(creator, owner: "next", duration: 60))
        await #expect(throws: JournalError.self) {
            try await journal.appendSnapshot([Self.push(5)], run: run.id, lease: creator)
        }
        await #expect(throws: JournalError.self) {
            try await journal.sealSnapshot(run: run.id, slices: [0...5], planned: 6, lease: creator)
        }
        // No slice was opened: the next creator starts over.
        #expect(try await journal.resumeSnapshot(run: run.id, lease: next) == -1)
        #expect(try await journal.snapshot(of: run.id, in: 0...100, after: -1, limit: 100).isEmpty)
        try await journal.appendSnapshot((0..<3).map(Self.push), run: run.id, lease: next)
        try await journal.sealSnapshot(run: run.id, slices: [0...2], planned: 3, lease: next)
        // Sealed: nothing is dropped any more.
        #expect(try await journal.resumeSnapshot(run: run.id, lease: next) == 2)
        #expect(try await journal.snapshot(of: run.id, in: 0...100, after: -1, limit: 100).count == 3)
        // A plan with nobody in it is finished as it is sealed.
        let empty = try await journal.createRun(campaign: "empty", revision: "r1", now: 1_000)
        try await journal.sealSnapshot(run: empty.id, slices: [], planned: 0, lease: nil)
        #expect(try await journal.run(empty.id)?.status == .finished)
    }

    @Test(arguments: Store.allCases)
    func slicesOpenAsTheyAreWrittenAndASealedRunFinishesWithItsLastSlice(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "sale", revision: "r1", now: 1_000)
        let creator = try #require(try await journal.acquire("campaign:sale", owner: "creator", duration: 60))
        // Slices of 4: the page that writes a slice's last push opens it.
        try await journal.appendSnapshot((0..<4).map(Self.push), opening: [0...3], run: run.id, lease: creator)
        try await journal.appendSnapshot((4..<6).map(Self.push), run: run.id, lease: creator)
        // A worker sends the open slice before the snapshot is sealed; its end finishes nothing.
        let (first, held) = try #require(try await journal.claimSlice(of: run.id, owner: "w", duration: 60))
        #expect(first.seqs == 0...3)
        #expect(try await journal.claimSlice(of: run.id, owner: "w2", duration: 60) == nil)
        #expect(try await journal.closeSlice(first, status: .finished, stats: nil, lease: held) == .running)

        // The creator dies; the next one drops what was written past the last slice opened and
        // goes on after it.
        let next = try #require(try await journal.takeOver(creator, owner: "next", duration: 60))
        #expect(try await journal.resumeSnapshot(run: run.id, lease: next) == 3)
        #expect(try await journal.snapshot(of: run.id, in: 0...100, after: -1, limit: 100) == (0..<4).map(Self.push))
        try await journal.appendSnapshot((4..<8).map(Self.push), opening: [4...7], run: run.id, lease: next)
        try await journal.appendSnapshot((8..<9).map(Self.push), run: run.id, lease: next)
        try await journal.sealSnapshot(run: run.id, slices: [8...8], planned: 9, lease: next)
        #expect(try await journal.run(run.id)?.planned == 9)
        #expect(try await journal.slices(of: run.id).map(\.slice.seqs) == [0...3, 4...7, 8...8])
        #expect(try await journal.snapshot(of: run.id, in: 0...100, after: -1, limit: 100) == (0..<9).map(Self.push))
        for _ in 0..<2 {
            let (slice, lease) = try #require(try await journal.claimSlice(of: run.id, owner: "w", duration: 60))
            _ = try await journal.closeSlice(slice, status: .finished, stats: nil, lease: lease)
        }
        #expect(try await journal.run(run.id)?.status == .finished)

        // Every slice opened is done by the time the snapshot is sealed with none left: sealing
        // finishes the run.
        let quick = try await journal.createRun(campaign: "quick", revision: "r1", now: 1_000)
        try await journal.appendSnapshot((0..<2).map(Self.push), opening: [0...1], run: quick.id, lease: nil)
        let (only, lease) = try #require(try await journal.claimSlice(of: quick.id, owner: "w", duration: 60))
        #expect(try await journal.closeSlice(only, status: .finished, stats: nil, lease: lease) == .running)
        try await journal.sealSnapshot(run: quick.id, slices: [], planned: 2, lease: nil)
        #expect(try await journal.run(quick.id)?.status == .finished)
    }

    @Test(arguments: Store.allCases)
    func possibleDuplicatesAreListedByNameOnceEach(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "sale", revision: "r1", now: 1_000)
        let named = [PossibleDuplicate(seq: 9, token: "bb"), PossibleDuplicate(seq: 4, token: "aa")]
        try await journal.record(JournalBatch(possibleDuplicates: 2, duplicates: named), run: run.id, now: 1_001)
        try await journal.record(
            JournalBatch(possibleDuplicates: 1, duplicates: [named[0]]),
            run: run.id,
            now: 1_002
        )
        #expect(try await journal.possibleDuplicates(of: run.id) == named.reversed())
        #expect(try await journal.run(run.id)?.possibleDuplicates == 3)
    }
}
