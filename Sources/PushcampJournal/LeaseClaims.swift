import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who holds a lease: the host, the process id and a random part, as `host/pid/random`. The host and pid let a node restarted on the same machine see at once that
/// a lease's owner is gone (no such process) instead of waiting for the lease to expire; the
/// random part keeps a new process that reuses an old pid from passing for the old one.
public struct LeaseOwner: Sendable, Hashable, CustomStringConvertible {
    public let id: String

    public init(id: String) { self.id = id }

    /// A new owner in this process: each send holds its campaign as an owner of its own, so two
    /// sends of one process exclude each other as two processes do.
    public static func next() -> LeaseOwner {
        LeaseOwner(id: "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UInt32.random(in: 0...UInt32.max))")
    }

    public var description: String { id }

    /// Whether `owner` was a process of this machine that no longer exists: its lease can be taken
    /// over without waiting. A pid reused by another process only makes this wait for the expiry.
    public static func isGone(_ owner: String) -> Bool {
        let parts = owner.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == ProcessInfo.processInfo.hostName, let pid = Int32(parts[1]),
            pid > 0, pid != getpid()
        else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }
}

/// What a claim on a resource found.
public enum LeaseClaim: Sendable, Equatable {
    /// Claimed (or taken over from a dead owner): the lease to act under.
    case held(Lease)
    /// Another owner's lease runs.
    case busy(Lease)
}

/// The lease names the send path uses.
public enum LeaseResource {
    /// One sender per campaign at a time: its runs (sends, slots, trigger firings, replays).
    public static func campaign(_ id: String) -> String { "campaign:\(id)" }
}

extension LeaseStore {
    /// Claims `resource` for `owner`: acquired when free, taken over at once from an owner that is
    /// a dead process of this machine, else `.busy` with the running lease.
    public func claim(_ resource: String, owner: LeaseOwner, duration: Double) async throws(JournalError) -> LeaseClaim
    {
        for _ in 0..<3 {
            if let lease = try await acquire(resource, owner: owner.id, duration: duration) {
                return .held(lease)
            }
            guard let holder = try await lease(of: resource) else { continue }
            guard LeaseOwner.isGone(holder.owner) else { return .busy(holder) }
            if let lease = try await takeOver(holder, owner: owner.id, duration: duration) {
                return .held(lease)
            }
        }
        // The lease moved under us three times: someone else is claiming it right now.
        if let holder = try await lease(of: resource) { return .busy(holder) }
        throw JournalError(.failed, "the lease on \(resource) could not be claimed")
    }

    /// Whether nobody holds `resource`: never claimed, expired on the store's clock, or held by a
    /// dead process of this machine.
    public func isFree(_ resource: String) async throws(JournalError) -> Bool {
        guard let held = try await lease(of: resource) else { return true }
        if LeaseOwner.isGone(held.owner) { return true }
        return held.expiresAt <= (try await clockNow())
    }
}

extension RunRecord {
    /// This run as the next send will treat it: a run recorded as running whose campaign lease is
    /// free, and none of whose slices is held, has no process sending it (it was killed, or its
    /// machine went down or lost the journal), so it is interrupted.
    public func livenessChecked(_ journal: any LeaseStore & SliceStore) async -> RunRecord {
        guard status == .running, (try? await journal.isFree(LeaseResource.campaign(campaign))) == true,
            (try? await journal.liveSlices(of: id)) == 0
        else {
            return self
        }
        var shown = self
        shown.status = .interrupted
        return shown
    }
}
