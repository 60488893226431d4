import PushcampAPNsCore
import PushcampJournal
import Synchronization

/// The lease a send holds on its campaign while it sends: claimed before the run opens, renewed
/// by a heartbeat, carried by every batch the send records (a batch under a lease that was taken
/// over is refused whole), released when the send ends.
///
/// APNs cannot check a fence, so the send checks itself: it may go on sending only while its last
/// renewal is recent enough that the lease cannot have expired on the store's clock, with a safety
/// margin (a third of the lease) for clock drift and requests already leaving. A renewal answered
/// "lost" (taken over), or none succeeding for the lease's duration less the margin, stops the
/// send. Times here are this process's monotonic clock, measured from before the renewal was
/// asked, so a renewal that took long, or a process that was paused, errs toward stopping: a wall
/// clock that jumps must not extend it. The heartbeat waits on the injected clock.
public final class SendLease: Sendable {
    /// How long a lease lasts unless renewed, by default: long enough that a heartbeat or two may
    /// fail without stopping a send, short enough that a dead node's run is taken over soon.
    public static let defaultDuration = 15.0

    public let store: any LeaseStore
    public let duration: Double
    private let clock: any WallClock
    private let state: Mutex<State>

    private struct State {
        var lease: Lease
        /// Until when sending may go on without another renewal.
        var sendUntil: ContinuousClock.Instant
        /// Why sending must stop, once it must.
        var lost: String?
    }

    /// Seconds between renewals: five a lease, so two may fail before the margin is reached.
    public var heartbeat: Double { duration / 5 }
    /// How long before the lease could expire the send stops.
    public var margin: Double { duration / 3 }

    init(
        _ lease: Lease,
        store: any LeaseStore,
        duration: Double,
        claimedAt: ContinuousClock.Instant,
        clock: any WallClock = SystemWallClock()
    ) {
        self.store = store
        self.duration = duration
        self.clock = clock
        state = Mutex(State(lease: lease, sendUntil: claimedAt + .seconds(duration - duration / 3)))
    }

    /// Claims `campaign` for this process, or refuses (`.busy`) while another process's lease runs.
    package static func claim(
        campaign: String,
        store: any LeaseStore,
        owner: LeaseOwner,
        duration: Double,
        clock: any WallClock = SystemWallClock()
    ) async throws(RunRefusal) -> SendLease {
        let asked = ContinuousClock.now
        let claim: LeaseClaim
        do {
            claim = try await store.claim(LeaseResource.campaign(campaign), owner: owner, duration: duration)
        } catch {
            throw RunRefusal(.journal, "the journal cannot be used: \(error.message); nothing was sent")
        }
        switch claim {
        case .held(let lease):
            return SendLease(lease, store: store, duration: duration, claimedAt: asked, clock: clock)
        case .busy(let holder):
            throw RunRefusal(
                .busy,
                "campaign \(campaign) is being sent by another pushcamp process (\(holder.owner)); "
                    + "wait for it, or stop it with `pushcamp cancel`"
            )
        }
    }

    /// The lease as last claimed or renewed.
    public var lease: Lease { state.withLock { $0.lease } }

    /// Why the send must stop now, or nil while it may go on.
    public func problem(at now: ContinuousClock.Instant = .now) -> String? {
        state.withLock { state in
            if let lost = state.lost { return lost }
            guard now < state.sendUntil else {
                return "the lease on \(state.lease.resource) could not be renewed in time, so this process stopped "
                    + "sending before another could take the run over"
            }
            return nil
        }
    }

    /// Renews the lease every `heartbeat` seconds until cancelled or lost.
    package func keepRenewed() async {
        while !Task.isCancelled, problem() == nil {
            do {
                try await clock.sleep(for: heartbeat)
            } catch {
                return
            }
            await renewOnce()
        }
    }

    /// `body`, run with the lease renewed meanwhile: work done under the lease before the send's
    /// own heartbeat starts (keeping a large run's assignment takes longer than a lease). Throws
    /// `Lost` when the lease was lost by the time `body` ended, unless `fenced`: every write of
    /// `body` checks the lease's fence in its own transaction, so one made after a takeover failed
    /// already, and a renewal that was merely late (APNs' reason to stop) changes nothing.
    package func renewed<T: Sendable>(fenced: Bool = false, during body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The heartbeat is this group's child, on the injected clock: cancelled when `body`
            // returns or throws, and awaited before this returns.
            group.addTask { await self.keepRenewed() }
            defer { group.cancelAll() }
            let result = try await body()
            if !fenced, let problem = problem() { throw Lost(description: problem) }
            return result
        }
    }

    /// The lease was lost while work was done under it.
    package struct Lost: Error, CustomStringConvertible {
        package var description: String
    }

    /// One renewal: moves `sendUntil` on, or records the loss. A failed renewal (the store cannot
    /// be reached) changes nothing: the next one may succeed before the margin is reached.
    package func renewOnce() async {
        let asked = ContinuousClock.now
        let current = lease
        do {
            if let renewed = try await store.renew(current, duration: duration) {
                state.withLock { state in
                    state.lease = renewed
                    state.sendUntil = max(state.sendUntil, asked + .seconds(duration - margin))
                }
            } else {
                let holder = try? await store.lease(of: current.resource)
                let now = holder.map { " (now held by \($0.owner))" } ?? ""
                state.withLock { state in
                    state.lost =
                        "the lease on \(current.resource) was taken over\(now): this process is no longer its sender"
                }
            }
        } catch {
            // Unreachable for now: `problem` stops the send if this lasts.
        }
    }

    /// Ends the lease so the next sender need not wait for it to expire.
    public func release() async {
        guard state.withLock({ $0.lost == nil }) else { return }
        try? await store.release(lease)
    }
}
