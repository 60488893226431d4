import PushcampAPNsCore
import PushcampModel
import Synchronization

/// One push of a run's plan as the run's creator planned it, kept in the journal so every worker
/// sends exactly that plan: rendered once, from the audience read once, with exclusions,
/// suppression, caps and the holdout decided once.
public struct SnapshotPush: Sendable, Hashable {
    /// Its place in the plan: its ordinal in the filtered audience.
    public var seq: Int
    public var token: String
    public var payload: [UInt8]
    public var variant: String
    public var locale: String?
    public var collapseID: String?
    /// The `apns-expiration` header's value, when it has one (absolute, from the send's start); for
    /// an Android push, when its message stops being worth delivering (its `ttl` counts to it).
    public var expiration: Int64?
    /// Which provider it goes to: an Android push's payload is its `messages:send` body.
    public var platform: Platform
    /// When it is due (seconds since 1970), for a recipient-local schedule or quiet hours; nil: at
    /// once.
    public var due: Int64?

    public init(
        seq: Int,
        token: String,
        payload: [UInt8],
        variant: String,
        locale: String? = nil,
        collapseID: String? = nil,
        expiration: Int64? = nil,
        platform: Platform = .ios,
        due: Int64? = nil
    ) {
        self.seq = seq
        self.token = token
        self.payload = payload
        self.variant = variant
        self.locale = locale
        self.collapseID = collapseID
        self.expiration = expiration
        self.platform = platform
        self.due = due
    }
}

/// A contiguous range of a run's plan (by seq), sent by one worker at a time under a lease of its
/// own.
public struct RunSlice: Sendable, Hashable, CustomStringConvertible {
    public var run: RunID
    public var seqs: ClosedRange<Int>

    public init(run: RunID, seqs: ClosedRange<Int>) {
        self.run = run
        self.seqs = seqs
    }

    /// The name of its lease.
    public var resource: String { LeaseResource.slice(run: run, first: seqs.lowerBound) }

    public var description: String { "slice \(seqs.lowerBound)–\(seqs.upperBound) of run \(run)" }
}

/// Where a slice stands: done, or who holds it (a lease, running or expired) or nobody.
public struct SliceStatus: Sendable, Hashable {
    public var slice: RunSlice
    public var done: Bool
    /// Its lease as the store has it, expired or not; nil when never claimed.
    public var lease: Lease?

    public init(slice: RunSlice, done: Bool, lease: Lease?) {
        self.slice = slice
        self.done = done
        self.lease = lease
    }
}

/// A recipient sent again while an earlier request of it may have reached APNs (its connection
/// died with it in flight, or the process sending it did): the one who may get it twice.
public struct PossibleDuplicate: Sendable, Hashable {
    public var seq: Int
    public var token: String

    public init(seq: Int, token: String) {
        self.seq = seq
        self.token = token
    }
}

/// A run's plan cut into slices that several workers send at once.
///
/// The worker that creates the run snapshots the plan into the journal (`appendSnapshot`, a
/// transaction per call, so memory stays bounded), opening each slice to the workers in the
/// transaction that writes its last push, so sending starts while the rest is planned; then seals
/// it (`sealSnapshot`): the run's planned count and its last slices. Any worker claims an open
/// slice (`claimSlice`, each claim raising the slice lease's fence), sends it from the snapshot
/// under its lease, and ends it (`closeSlice`); the last slice to finish a sealed run finishes it.
public protocol SliceStore: Sendable {
    /// Adds `pushes` (in seq order, after any added before) to the snapshot of `run`, and opens
    /// `slices` to the workers (slices whose every push is written by now, these included), in one
    /// transaction, while the creator still holds `lease` (refused with `.fenced` otherwise).
    func appendSnapshot(
        _ pushes: [SnapshotPush],
        opening slices: [ClosedRange<Int>],
        run: RunID,
        lease: Lease?
    ) async throws(JournalError)
    /// Where a creator taking over an unsealed snapshot goes on from: drops what an earlier
    /// creator wrote past the last slice it opened (no worker can have read it) and answers that
    /// slice's last seq, or -1 when it opened none (the snapshot starts over). Once the snapshot is
    /// sealed, drops nothing.
    func resumeSnapshot(run: RunID, lease: Lease?) async throws(JournalError) -> Int
    /// Ends the snapshot: the run's planned count, and the slices not opened yet (contiguous, in
    /// order, after those opened, covering every seq snapshotted), in one transaction under
    /// `lease`. A run with no slice left to send (none at all, or every one opened done already)
    /// is finished.
    func sealSnapshot(
        run: RunID,
        slices: [ClosedRange<Int>],
        planned: Int,
        lease: Lease?
    ) async throws(JournalError)
    /// Up to `limit` pushes of the snapshot of `run` in `seqs` with a seq above `after`, in order.
    func snapshot(
        of run: RunID,
        in seqs: ClosedRange<Int>,
        after: Int,
        limit: Int
    ) async throws(JournalError)
        -> [SnapshotPush]
    /// The slices of `run` in order; empty while it is not sealed (or not sliced).
    func slices(of run: RunID) async throws(JournalError) -> [SliceStatus]
    /// Claims the first slice of `run` that is not done and that nobody holds (never claimed, or
    /// its lease expired on the store's clock) for `owner`; nil when there is none, or the run is
    /// no longer running (finished, cancelled). Two workers
    /// claiming at once get different slices (`FOR UPDATE SKIP LOCKED` on PostgreSQL).
    func claimSlice(of run: RunID, owner: String, duration: Double) async throws(JournalError) -> (RunSlice, Lease)?
    /// Ends this holder's work on `slice` under `lease` (refused with `.fenced` when it moved),
    /// adding `stats` to the slice's: `.finished` marks it done, and finishes the run when it is
    /// sealed and no slice is left; `.cancelled` cancels the run; anything else leaves the slice to the next claim.
    /// Answers the run's status afterwards.
    func closeSlice(
        _ slice: RunSlice,
        status: RunStatus,
        stats: RunStats?,
        lease: Lease
    ) async throws(JournalError)
        -> RunStatus
    /// What the sends of `slice` measured so far, added up; nil when none saved any.
    func stats(of slice: RunSlice) async throws(JournalError) -> RunStats?
    /// Running runs with a slice a worker could claim now (not done, and nobody holds it: never
    /// claimed, or its lease expired on the store's clock), oldest first.
    func runsWithFreeSlices() async throws(JournalError) -> [RunRecord]
    /// How many slices of `run` are held under a lease that has not expired.
    func liveSlices(of run: RunID) async throws(JournalError) -> Int
    /// The recipients of `run` that may have been sent twice, in seq order.
    func possibleDuplicates(of run: RunID) async throws(JournalError) -> [PossibleDuplicate]
}

extension SliceStore {
    /// `pushes` added to the snapshot of `run`, opening no slice.
    public func appendSnapshot(_ pushes: [SnapshotPush], run: RunID, lease: Lease?) async throws(JournalError) {
        try await appendSnapshot(pushes, opening: [], run: run, lease: lease)
    }
}

extension LeaseResource {
    /// One worker per slice of a run at a time.
    public static func slice(run: RunID, first: Int) -> String { "run:\(run)/slice:\(first)" }
}

/// Cuts a snapshot into slices as its seqs stream by: a slice every `size` pushes, contiguous
/// from seq 0 to the last seq, so seqs the plan left out (held out, suppressed) belong to a slice
/// too.
public struct SliceCutter: Sendable {
    public let size: Int
    private var count = 0
    /// Pushes in the slice being cut, and how many it takes.
    private var held = 0
    private var current: Int
    private var start = 0
    private var last = -1
    public private(set) var slices: [ClosedRange<Int>] = []

    /// A cutter whose first slice starts at `start` (after the slices a creator that stopped had
    /// opened). With `rampFrom`, the first slice holds that many pushes and each next one twice as
    /// many, up to `size`: a worker starts on a slice opened moments after planning begins, and
    /// the next opens before it is done (planning is several times faster than sending).
    public init(size: Int, from start: Int = 0, rampFrom first: Int? = nil) {
        precondition(size > 0, "a slice holds at least one push")
        self.size = size
        self.current = max(1, min(size, first ?? size))
        self.start = start
        self.last = start - 1
    }

    /// Pushes seen so far.
    public var planned: Int { count }

    /// Counts `seq` in; answers whether it starts a slice (the first seq, and each after a slice
    /// closed).
    @discardableResult
    public mutating func add(seq: Int) -> Bool {
        precondition(seq > last, "snapshot seqs rise")
        let starts = held == 0
        last = seq
        count += 1
        held += 1
        if held == current {
            slices.append(start...seq)
            start = seq + 1
            held = 0
            current = current > size / 2 ? size : current * 2
        }
        return starts
    }

    /// The slices, the last one closed at the last seq seen.
    public func finished() -> [ClosedRange<Int>] {
        start <= last ? slices + [start...last] : slices
    }
}

extension MemoryJournal: SliceStore {
    public func appendSnapshot(
        _ pushes: [SnapshotPush],
        opening slices: [ClosedRange<Int>],
        run: RunID,
        lease: Lease?
    ) async throws(JournalError) {
        try checkFence(lease)
        state.withLock { state in
            for push in pushes { state.snapshots[run, default: [:]][push.seq] = push }
            state.slices[run, default: []] += slices.map { MemorySlice(seqs: $0) }
        }
    }

    public func resumeSnapshot(run: RunID, lease: Lease?) async throws(JournalError) -> Int {
        try checkFence(lease)
        let sealed = try await self.run(run)?.planned != nil
        return state.withLock { state in
            let opened = state.slices[run]?.last?.seqs.upperBound ?? -1
            if !sealed { state.snapshots[run] = state.snapshots[run]?.filter { $0.key <= opened } }
            return opened
        }
    }

    public func sealSnapshot(
        run: RunID,
        slices: [ClosedRange<Int>],
        planned: Int,
        lease: Lease?
    ) async throws(JournalError) {
        try checkFence(lease)
        let now = clock.now()
        // One lock for the slices and the run: a slice ending meanwhile sees both or neither.
        let found = state.withLock { state in
            guard let index = state.runs.firstIndex(where: { $0.id == run }) else { return false }
            state.slices[run, default: []] += slices.map { MemorySlice(seqs: $0) }
            state.runs[index].planned = planned
            if state.slices[run]!.allSatisfy(\.done), state.runs[index].status == .running {
                state.runs[index].status = .finished
                state.runs[index].updatedAt = now
            }
            return true
        }
        if !found { throw JournalError(.notFound, "no run \(run) in the journal") }
    }

    public func snapshot(
        of run: RunID,
        in seqs: ClosedRange<Int>,
        after: Int,
        limit: Int
    ) async throws(JournalError)
        -> [SnapshotPush]
    {
        state.withLock { state in
            guard let pushes = state.snapshots[run] else { return [] }
            return Array(
                pushes.values.filter { seqs.contains($0.seq) && $0.seq > after }.sorted { $0.seq < $1.seq }
                    .prefix(limit)
            )
        }
    }

    public func slices(of run: RunID) async throws(JournalError) -> [SliceStatus] {
        state.withLock { state in
            (state.slices[run] ?? []).map { slice in
                let cut = RunSlice(run: run, seqs: slice.seqs)
                return SliceStatus(slice: cut, done: slice.done, lease: state.leases[cut.resource])
            }
        }
    }

    public func claimSlice(
        of run: RunID,
        owner: String,
        duration: Double
    ) async throws(JournalError) -> (
        RunSlice, Lease
    )? {
        let now = clock.now()
        return state.withLock { state -> (RunSlice, Lease)? in
            guard state.runs.first(where: { $0.id == run })?.status == .running else { return nil }
            for slice in state.slices[run] ?? [] where !slice.done {
                let cut = RunSlice(run: run, seqs: slice.seqs)
                let held = state.leases[cut.resource]
                if let held, held.expiresAt > now { continue }
                let lease = Lease(
                    resource: cut.resource,
                    owner: owner,
                    fence: (held?.fence ?? 0) + 1,
                    expiresAt: now + duration
                )
                state.leases[cut.resource] = lease
                return (cut, lease)
            }
            return nil
        }
    }

    public func closeSlice(
        _ slice: RunSlice,
        status: RunStatus,
        stats: RunStats?,
        lease: Lease
    ) async throws(JournalError) -> RunStatus {
        try checkFence(lease)
        let now = clock.now()
        let found = state.withLock { state -> Bool in
            guard let index = state.slices[slice.run]?.firstIndex(where: { $0.seqs == slice.seqs }),
                let record = state.runs.firstIndex(where: { $0.id == slice.run })
            else { return false }
            if let stats {
                state.slices[slice.run]![index].stats = state.slices[slice.run]![index].stats?.adding(stats) ?? stats
            }
            if status == .finished { state.slices[slice.run]![index].done = true }
            let left = state.slices[slice.run]!.filter { !$0.done }.count
            state.runs[record].updatedAt = now
            if status == .cancelled, state.runs[record].status.isUnfinished { state.runs[record].status = .cancelled }
            if status == .finished, left == 0, state.runs[record].planned != nil, state.runs[record].status == .running
            {
                state.runs[record].status = .finished
            }
            return true
        }
        guard found else { throw JournalError(.notFound, "\(slice) is not in the journal") }
        return try await run(slice.run)?.status ?? .running
    }

    public func stats(of slice: RunSlice) async throws(JournalError) -> RunStats? {
        state.withLock { state in state.slices[slice.run]?.first { $0.seqs == slice.seqs }?.stats }
    }

    public func runsWithFreeSlices() async throws(JournalError) -> [RunRecord] {
        let now = clock.now()
        return state.withLock { state in
            state.runs.filter { run in
                run.status == .running
                    && (state.slices[run.id] ?? []).contains { slice in
                        !slice.done
                            && (state.leases[RunSlice(run: run.id, seqs: slice.seqs).resource]?.expiresAt ?? 0) <= now
                    }
            }
        }
    }

    public func liveSlices(of run: RunID) async throws(JournalError) -> Int {
        let now = clock.now()
        return state.withLock { state in
            (state.slices[run] ?? []).filter { slice in
                !slice.done && (state.leases[RunSlice(run: run, seqs: slice.seqs).resource]?.expiresAt ?? 0) > now
            }.count
        }
    }

    public func possibleDuplicates(of run: RunID) async throws(JournalError) -> [PossibleDuplicate] {
        state.withLock { state in (state.duplicates[run] ?? [:]).values.sorted { $0.seq < $1.seq } }
    }

    /// Refuses a write under `lease` once it is no longer the resource's.
    func checkFence(_ lease: Lease?) throws(JournalError) {
        guard let lease else { return }
        let current = state.withLock { $0.leases[lease.resource] }
        guard current?.owner == lease.owner, current?.fence == lease.fence else {
            throw JournalError.fenced(lease, current: current)
        }
    }
}

/// A slice as the memory twin keeps it.
struct MemorySlice {
    var seqs: ClosedRange<Int>
    var done = false
    var stats: RunStats?
}
