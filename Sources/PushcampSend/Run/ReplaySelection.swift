import PushcampJournal

/// What `pushcamp replay RUN --reason R…` sends again: the recipients of `original` whose final
/// outcome had one of `reasons`, planned from the campaign file the run was sent from.
public struct ReplaySelection: Sendable, Equatable {
    public var original: RunRecord
    public var reasons: [String]
    public var recipients: SeqSet
    /// The campaign file `original` was sent from.
    public var file: String

    /// Reads run `id`'s failures from `journal` (at `path`, for messages). Refuses (exit 1) a run
    /// that does not exist, that has no failure with those reasons (listing the ones it has), or
    /// that does not record its campaign file.
    public static func select(
        run id: RunID,
        reasons: [String],
        in journal: any Journal,
        path: String
    ) async throws(RunRefusal) -> ReplaySelection {
        do {
            guard let original = try await journal.run(id) else {
                throw RunRefusal(.refused, "no run \(id) in \(path); `pushcamp runs` lists them")
            }
            var recipients = SeqSet()
            var failures: [String: Int] = [:]
            try await journal.forEachRecipient(of: id) { row in
                guard case .failed(_, let reason, _) = row.state else { return }
                failures[reason, default: 0] += 1
                if reasons.contains(reason) { recipients.insert(row.seq) }
            }
            guard recipients.count > 0 else {
                let found = failures.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map {
                    "\($0.key) (\($0.value))"
                }
                throw RunRefusal(
                    .refused,
                    "no recipient of run \(id) failed with \(reasons.joined(separator: " or ")); "
                        + (found.isEmpty ? "it has no failures" : "its failures: \(found.joined(separator: ", "))")
                )
            }
            guard let file = original.file else {
                throw RunRefusal(
                    .refused,
                    "run \(id) does not record its campaign file (an older Pushcamp sent it); it cannot be replayed"
                )
            }
            return ReplaySelection(original: original, reasons: reasons, recipients: recipients, file: file)
        } catch let refusal as RunRefusal {
            throw refusal
        } catch let error as JournalError {
            throw RunRefusal(.journal, error.message)
        } catch {
            throw RunRefusal(.journal, "the journal \(path) cannot be read: \(error)")
        }
    }
}
