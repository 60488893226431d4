import Foundation
import PushcampJournal
import PushcampTestSupport
import Testing

@Suite("Leases, on every journal")
struct LeaseTests {
    @Test(arguments: Store.allCases)
    func aLeaseIsHeldByOneOwnerAndEveryNewClaimRaisesTheFence(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        #expect(try await journal.lease(of: "run:1") == nil)
        // The expiry is the store's clock at the claim plus the duration: between the clock read
        // before and after it, however long a busy machine holds this task between the calls.
        let before = try await journal.clockNow()
        let first = try #require(try await journal.acquire("run:1", owner: "node-a", duration: 30))
        let after = try await journal.clockNow()
        #expect(first.owner == "node-a" && first.fence == 1)
        #expect(
            first.expiresAt >= before + 30 - 0.01 && first.expiresAt <= after + 30 + 0.01,
            "\(before) \(first) \(after)"
        )
        #expect(try await journal.acquire("run:1", owner: "node-b", duration: 30) == nil)
        // The holder claiming again renews: the same fence.
        let again = try #require(try await journal.acquire("run:1", owner: "node-a", duration: 60))
        #expect(again.fence == 1 && again.expiresAt > first.expiresAt)
        #expect(try await journal.renew(first, duration: 30)?.fence == 1)
        // Someone else's claim to it, or a fence that is not the lease's, renews nothing.
        #expect(
            try await journal.renew(Lease(resource: "run:1", owner: "node-b", fence: 1, expiresAt: 0), duration: 30)
                == nil
        )
        #expect(
            try await journal.renew(Lease(resource: "run:1", owner: "node-a", fence: 7, expiresAt: 0), duration: 30)
                == nil
        )

        try await journal.release(first)
        let taken = try #require(try await journal.acquire("run:1", owner: "node-b", duration: 30))
        #expect(taken.fence == 2 && taken.owner == "node-b")
        // The old holder has lost it: it can neither renew nor release the new one.
        #expect(try await journal.renew(first, duration: 30) == nil)
        try await journal.release(first)
        #expect(try await journal.lease(of: "run:1") == taken)
        #expect(try await journal.acquire("run:2", owner: "node-a", duration: 30)?.fence == 1)
    }

    @Test(arguments: Store.allCases)
    func anExpiredLeaseIsTakenOverWithAHigherFenceAndItsHolderCannotRenewIt(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        // A short lease (that a lease is refused while it runs is the test above's): the store's
        // clock ends it, and the test waits for that outcome, however busy the machine is.
        let paused = try #require(try await journal.acquire("run:9", owner: "paused", duration: 0.3))
        var takeover: Lease?
        let deadline = Date().addingTimeInterval(60)
        // Tried again after every wait, however late it wakes (a busy machine can hold this task
        // back longer than the deadline): only a store that never ends the lease fails this.
        while true {
            takeover = try await journal.acquire("run:9", owner: "survivor", duration: 30)
            if takeover != nil || Date() >= deadline { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let lease = try #require(takeover)
        #expect(lease.fence == paused.fence + 1 && lease.owner == "survivor")
        #expect(try await journal.renew(paused, duration: 30) == nil)
        // Coming back under the same name after expiry is a new claim too: the fence rises.
        try await journal.release(lease)
        #expect(try await journal.acquire("run:9", owner: "paused", duration: 30)?.fence == lease.fence + 1)
    }

    @Test(arguments: Store.allCases)
    func aDeadHoldersLeaseIsTakenOverAtOnceByOneNodeOnly(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let dead = try #require(try await journal.acquire("run:3", owner: "host-a/4242", duration: 30))
        let handles = try (0..<4).map { _ in try store.another(of: journal, in: project) }
        let winners = try await withThrowingTaskGroup(of: Lease?.self) { group in
            for (index, handle) in handles.enumerated() {
                group.addTask { try await handle.takeOver(dead, owner: "host-a/\(5000 + index)", duration: 30) }
            }
            return try await group.reduce(into: [Lease]()) { if let lease = $1 { $0.append(lease) } }
        }
        let winner = try #require(winners.count == 1 ? winners.first : nil)
        #expect(winner.fence == dead.fence + 1 && winner.owner != dead.owner)
        #expect(try await journal.lease(of: "run:3") == winner)
        // The dead owner's lease is gone for good, and taking over from it again finds it moved.
        #expect(try await journal.renew(dead, duration: 30) == nil)
        #expect(try await journal.takeOver(dead, owner: "host-b/1", duration: 30) == nil)
    }

    @Test(arguments: Store.allCases)
    func concurrentClaimsFromManyNodesLeaveOneHolder(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let handles = try (0..<8).map { _ in try store.another(of: journal, in: project) }
        let holders = try await withThrowingTaskGroup(of: Lease?.self) { group in
            for (index, handle) in handles.enumerated() {
                group.addTask { try await handle.acquire("run:5", owner: "node-\(index)", duration: 30) }
            }
            return try await group.reduce(into: [Lease]()) { if let lease = $1 { $0.append(lease) } }
        }
        #expect(holders.count == 1)
        #expect(holders.first?.fence == 1)
        #expect(try await journal.lease(of: "run:5") == holders.first)
    }
}

@Suite("Writes under a lease, on every journal")
struct FencedWriteTests {
    @Test(arguments: Store.allCases)
    func aBatchUnderALeaseThatWasTakenOverIsRefusedWhole(_ store: Store) async throws {
        let (journal, project) = try await store.open()
        defer { project.remove() }
        let run = try await journal.createRun(campaign: "c", revision: "r", now: 1)
        let mine = try #require(try await journal.acquire("run:\(run.id)", owner: "node-a", duration: 30))
        let first = JournalBatch(updates: [JournalStoreTests.update(0, .planned)], dispatched: [1...4], lease: mine)
        try await journal.record(first, run: run.id, now: 2)
        #expect(try await journal.counts(of: run.id).planned == 1)

        // node-a pauses; its lease is released (as an expiry would) and node-b takes the run over.
        try await journal.release(mine)
        let theirs = try #require(try await journal.acquire("run:\(run.id)", owner: "node-b", duration: 30))
        let late = JournalBatch(
            updates: [JournalStoreTests.update(0, .delivered(attempt: 1))],
            dispatched: [5...9],
            possibleDuplicates: 2,
            lease: mine
        )
        do {
            try await journal.record(late, run: run.id, now: 3)
            Issue.record("a batch under a lost lease was recorded")
        } catch {
            #expect(error.code == .fenced)
            #expect(
                error.message.contains("held as fence 1 was taken over (now node-b's, fence 2)"),
                "\(error.message)"
            )
        }
        // Nothing of it is in the journal.
        #expect(try await journal.counts(of: run.id).planned == 1)
        #expect(try await journal.dispatched(of: run.id) == [1...4])
        #expect(try await journal.run(run.id)?.possibleDuplicates == 0)
        // The new holder's batches go in.
        try await journal.record(JournalBatch(dispatched: [5...9], lease: theirs), run: run.id, now: 4)
        #expect(try await journal.dispatched(of: run.id) == [1...4, 5...9])
    }
}
