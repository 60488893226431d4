#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One sender per campaign: an exclusive `flock` on a file beside the journal, held while a send
/// runs. The kernel releases it when the process ends, however it ends, so a killed send never
/// leaves a stale lock behind, and `pushcamp cancel` can tell a run being sent from one that is not.
public final class RunLock: Sendable {
    public let path: String
    private let descriptor: Int32

    /// The lock file for `campaign` in the journal at `journalPath`.
    public static func path(journalPath: String, campaign: String) -> String {
        journalPath + ".\(campaign).lock"
    }

    /// Takes the lock, or returns nil when another process holds it.
    public init?(journalPath: String, campaign: String) throws(JournalError) {
        path = Self.path(journalPath: journalPath, campaign: campaign)
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw JournalError(.cannotOpen, "cannot create the lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            return nil
        }
    }

    /// Lets the lock go before this object does.
    public func unlock() {
        flock(descriptor, LOCK_UN)
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

extension RunRecord {
    /// This run as the next send will treat it: a run recorded as running whose campaign lock is
    /// free has no process sending it (it was killed, or its machine went down), so it is interrupted.
    public func livenessChecked(journalPath: String) -> RunRecord {
        guard status == .running, let lock = try? RunLock(journalPath: journalPath, campaign: campaign) else {
            return self
        }
        lock.unlock()
        var shown = self
        shown.status = .interrupted
        return shown
    }
}
