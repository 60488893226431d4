import Foundation
import Synchronization

/// What `/readyz` reports, shared by the scheduler (which writes it) and the HTTP server (which
/// reads it): the journal, the scheduler's last tick, campaigns that do not validate, the last error.
public final class ServeStatus: Sendable {
    public struct Snapshot: Sendable {
        public var journalOpen = false
        public var lastTick: Double?
        public var scheduled: [String] = []
        /// Campaign files that do not validate, with their first error.
        public var invalid: [(file: String, error: String)] = []
        public var running: [String] = []
        public var lastError: String?
    }

    private let state = Mutex(Snapshot())

    public init() {}

    public var snapshot: Snapshot { state.withLock { $0 } }

    func update(_ body: (inout Snapshot) -> Void) {
        state.withLock { body(&$0) }
    }

    /// Ready while the journal is open and the scheduler ticked within `tickAge` seconds of `now`.
    public func readiness(now: Double, tickAge: Double = 10) -> (ready: Bool, body: String) {
        let snapshot = self.snapshot
        var problems: [String] = []
        if !snapshot.journalOpen { problems.append("the journal is not open") }
        if let tick = snapshot.lastTick {
            if now - tick > tickAge { problems.append("the scheduler last ticked \(Int(now - tick)) s ago") }
        } else {
            problems.append("the scheduler has not ticked yet")
        }
        var lines = [problems.isEmpty ? "ready" : "not ready: " + problems.joined(separator: "; ")]
        lines.append("journal: \(snapshot.journalOpen ? "open" : "closed")")
        if let tick = snapshot.lastTick {
            lines.append("scheduler: last tick \(String(format: "%.1f", now - tick)) s ago")
        }
        lines.append("campaigns scheduled: \(snapshot.scheduled.count)")
        if !snapshot.running.isEmpty { lines.append("sending: \(snapshot.running.joined(separator: ", "))") }
        for (file, error) in snapshot.invalid { lines.append("invalid: \(file): \(error)") }
        if let error = snapshot.lastError { lines.append("last error: \(error)") }
        return (problems.isEmpty, lines.joined(separator: "\n") + "\n")
    }
}
