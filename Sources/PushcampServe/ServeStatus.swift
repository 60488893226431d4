import Foundation
import Synchronization

/// What `/readyz` reports, shared by the scheduler and the receiver (which write it) and the HTTP
/// server (which reads it): the journal, the scheduler's last tick, credentials that cannot be
/// used, the receiver's last failure to store, campaigns that do not validate, the last error.
public final class ServeStatus: Sendable {
    public struct Snapshot: Sendable {
        public var journalOpen = false
        /// Why the journal did not answer the scheduler's last look; nil while it answers.
        public var journalProblem: String?
        public var lastTick: Double?
        public var scheduled: [String] = []
        /// Campaign files that do not validate, with their first error.
        public var invalid: [(file: String, error: String)] = []
        public var running: [String] = []
        public var lastError: String?
        /// Apps of scheduled or triggered campaigns whose credentials cannot be used, one line each.
        public var credentials: [String] = []
        /// When the receiver last failed to store a notification, and why; nil once one is stored.
        public var storeFailure: (at: Double, message: String)?
    }

    /// How long a failure to store an App Store notification keeps `serve` not ready when nothing
    /// is stored after it: a node a load balancer took out of rotation gets no notification to
    /// prove it recovered, so it offers itself again after this long.
    public static let storeFailureAge: Double = 60

    private let state = Mutex(Snapshot())

    public init() {}

    public var snapshot: Snapshot { state.withLock { $0 } }

    public func update(_ body: (inout Snapshot) -> Void) {
        state.withLock { body(&$0) }
    }

    /// The receiver could not store a notification (it answered 503).
    public func storeFailed(_ message: String, at now: Double) {
        update { $0.storeFailure = (now, message) }
    }

    /// The receiver stored a notification: storage works again.
    public func stored() {
        update { $0.storeFailure = nil }
    }

    /// Ready while the journal is open and the scheduler ticked within `tickAge` seconds of `now`.
    public func readiness(now: Double, tickAge: Double = 10) -> (ready: Bool, body: String) {
        let snapshot = self.snapshot
        var problems: [String] = []
        if !snapshot.journalOpen { problems.append("the journal is not open") }
        if let problem = snapshot.journalProblem { problems.append("the journal cannot be reached: \(problem)") }
        if let tick = snapshot.lastTick {
            if now - tick > tickAge { problems.append("the scheduler last ticked \(Int(now - tick)) s ago") }
        } else {
            problems.append("the scheduler has not ticked yet")
        }
        if !snapshot.credentials.isEmpty {
            problems.append("credentials cannot be used (\(snapshot.credentials.count) app(s))")
        }
        if let failure = snapshot.storeFailure, now - failure.at < Self.storeFailureAge {
            problems.append("App Store notifications cannot be stored (answered 503): \(failure.message)")
        }
        var lines = [problems.isEmpty ? "ready" : "not ready: " + problems.joined(separator: "; ")]
        lines.append(
            "journal: \(!snapshot.journalOpen ? "closed" : snapshot.journalProblem == nil ? "open" : "unreachable")"
        )
        if let tick = snapshot.lastTick {
            lines.append("scheduler: last tick \(String(format: "%.1f", now - tick)) s ago")
        }
        lines.append("campaigns scheduled: \(snapshot.scheduled.count)")
        for problem in snapshot.credentials { lines.append("credentials: \(problem)") }
        if !snapshot.running.isEmpty { lines.append("sending: \(snapshot.running.joined(separator: ", "))") }
        for (file, error) in snapshot.invalid { lines.append("invalid: \(file): \(error)") }
        if let error = snapshot.lastError { lines.append("last error: \(error)") }
        return (problems.isEmpty, lines.joined(separator: "\n") + "\n")
    }
}
