import Foundation
import PushcampAPNs
import PushcampJournal
import PushcampSend
import PushcampTestSupport
import Synchronization
import Testing

/// A send's lease on its campaign: claimed, taken over from a dead owner, lost, and a send that
/// stops itself before its lease could lapse.
@Suite("A send's lease")
struct SendLeaseTests {
    @Test func aSecondSendOfTheCampaignIsBusyEvenInTheSameProcess() async throws {
        let store = MemoryJournal()
        let first = try await SendLease.claim(campaign: "c", store: store, owner: .next(), duration: 15)
        do {
            _ = try await SendLease.claim(campaign: "c", store: store, owner: .next(), duration: 15)
            Issue.record("a second send claimed a campaign that was being sent")
        } catch {
            #expect(error.code == .busy && error.exitCode == 5)
            #expect(error.message.contains("campaign c is being sent by another pushcamp process"))
        }
        // Released, it is free at once.
        await first.release()
        _ = try await SendLease.claim(campaign: "c", store: store, owner: .next(), duration: 15)
    }

    @Test func aDeadProcessOfThisMachineIsTakenOverAtOnceAndItsFenceMoves() async throws {
        let store = MemoryJournal()
        // pid 2^22 + 1 is above Linux's largest pid: no such process.
        let dead = "\(ProcessInfo.processInfo.hostName)/4194305/7"
        let held = try #require(try await store.acquire(LeaseResource.campaign("c"), owner: dead, duration: 600))
        #expect(LeaseOwner.isGone(dead))
        let lease = try await SendLease.claim(campaign: "c", store: store, owner: .next(), duration: 15)
        #expect(lease.lease.fence == held.fence + 1)
        // A live process's lease, or another machine's, is never taken before it expires.
        #expect(!LeaseOwner.isGone("\(ProcessInfo.processInfo.hostName)/\(getpid())/1"))
        #expect(!LeaseOwner.isGone("another-host/4194305/7"))
    }

    @Test func aLeaseTakenOverStopsTheSendAtTheNextRenewal() async throws {
        let store = MemoryJournal()
        let lease = try await SendLease.claim(campaign: "c", store: store, owner: .next(), duration: 15)
        await lease.renewOnce()
        #expect(lease.problem() == nil)
        let holder = try #require(try await store.lease(of: LeaseResource.campaign("c")))
        _ = try await store.takeOver(holder, owner: "node-b/1/1", duration: 15)
        await lease.renewOnce()
        let problem = try #require(lease.problem())
        #expect(problem.contains("was taken over (now held by node-b/1/1)"), "\(problem)")
    }

    @Test func aSendThatCannotRenewStopsAThirdOfALeaseBeforeItCouldExpire() async throws {
        let store = MemoryJournal()
        let claimed = ContinuousClock.now
        let lease = try await SendLease.claim(campaign: "c", store: store, owner: .next(), duration: 15)
        #expect(lease.heartbeat == 3 && lease.margin == 5)
        #expect(lease.problem(at: claimed + .seconds(9.9)) == nil)
        let problem = try #require(lease.problem(at: ContinuousClock.now + .seconds(10)))
        #expect(problem.contains("could not be renewed in time"), "\(problem)")
        // A renewal counts from when it was asked, not answered.
        let asked = ContinuousClock.now
        await lease.renewOnce()
        #expect(lease.problem(at: asked + .seconds(9.9)) == nil)
    }
}
