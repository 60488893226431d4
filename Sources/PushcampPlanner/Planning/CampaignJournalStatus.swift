/// What the project's journal says of a campaign before it is sent — never sent, sent by a run that
/// finished or was cancelled, or a run a send would pick up — shown first by `plan` and kept in plan
/// files, so a reviewer sees whether approving the plan sends, resumes or is refused.
public struct CampaignJournalStatus: Sendable, Hashable {
    public enum State: String, Sendable, Hashable {
        case neverSent = "never-sent"
        case finished
        case cancelled
        /// Stopped or killed: `send` resumes it (when the campaign is unchanged).
        case interrupted
        /// Being sent by another process now.
        case running
    }

    public var state: State
    public var run: Int64?
    /// When the run finished, was cancelled, or started (unfinished runs), as journal text.
    public var at: String?
    /// The revision the run sent.
    public var revision: String?
    public var delivered = 0
    public var failed = 0
    /// For an unfinished run: recipients a resume picks up, when its planning had finished.
    public var left: Int?
    /// For an unfinished run: whether the campaign changed since it started (a resume is refused).
    public var changedSince = false

    public init(state: State) {
        self.state = state
    }

    public static let neverSent = CampaignJournalStatus(state: .neverSent)

    /// One line for a terminal, a pull request or a confirmation prompt.
    public var text: String {
        guard let run else { return "never sent from this project's journal" }
        let counts = "\(delivered) delivered, \(failed) failed"
        switch state {
        case .neverSent:
            return "never sent from this project's journal"
        case .finished, .cancelled:
            return
                "run \(run) \(state.rawValue) at \(at ?? "?"): \(counts); `pushcamp send` refuses to send it again (--new-run does, on purpose)"
        case .interrupted where changedSince:
            return
                "run \(run) interrupted (started \(at ?? "?"), revision \(revision ?? "?")): \(counts); the campaign changed since, so `pushcamp send` refuses to resume it (--new-run gives it up)"
        case .interrupted:
            let rest = left.map { "picks up the \($0) left" } ?? "picks up the rest"
            return "run \(run) interrupted (started \(at ?? "?")): \(counts); `pushcamp send` resumes it and \(rest)"
        case .running:
            return "run \(run) is being sent by another process now (started \(at ?? "?")): \(counts) so far"
        }
    }
}
