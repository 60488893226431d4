import PushcampAPNsCore
import PushcampFCMCore
import PushcampJournal
import PushcampModel

/// What `pushcamp replay RUN --reason R…` sends again: the recipients of `original` whose final
/// outcome had one of `reasons`, planned from the campaign file the run was sent from.
public struct ReplaySelection: Sendable, Equatable {
    public var original: RunRecord
    public var reasons: [String]
    public var recipients: SeqSet
    /// The campaign file `original` was sent from.
    public var file: String

    /// Reads run `id`'s failures from `journal` (at `path`, for messages). Reasons match whatever
    /// their case (`baddevicetoken` is BadDeviceToken). Refuses (exit 1) a run that does not exist,
    /// that has no failure with those reasons (listing the ones it has, with a did-you-mean), or
    /// that does not record its campaign file; and, unless `force`, a reason APNs or FCM never
    /// retries (dead tokens above all: sending to them again reaches nobody).
    public static func select(
        run id: RunID,
        reasons: [String],
        force: Bool = false,
        in journal: any Journal,
        path: String
    ) async throws(RunRefusal) -> ReplaySelection {
        if !force, let refusal = neverRetried(reasons, run: id) { throw refusal }
        do {
            guard let original = try await journal.run(id) else {
                throw RunRefusal(.refused, "no run \(id) in \(path); `pushcamp runs` lists them")
            }
            if let pruned = try await journal.stats(of: id)?.pruned {
                throw RunRefusal(
                    .refused,
                    "run \(id)'s recipients were pruned from the journal (\(Timestamps.text(pruned.at))): its report "
                        + "keeps their figures, not who they were, so it cannot be replayed"
                )
            }
            let wanted = Set(reasons.map { $0.lowercased() })
            var recipients = SeqSet()
            var failures: [String: Int] = [:]
            try await journal.forEachRecipient(of: id) { row in
                guard case .failed(_, let reason, _) = row.state else { return }
                failures[reason, default: 0] += 1
                if wanted.contains(reason.lowercased()) { recipients.insert(row.seq) }
            }
            // Apple's spelling (or Pushcamp's own, connection-lost…) of each reason asked for.
            let spelled = reasons.map { reason in
                failures.keys.first { $0.lowercased() == reason.lowercased() }
                    ?? APNsReason.documented.map(\.description).first { $0.lowercased() == reason.lowercased() }
                    ?? reason
            }
            guard recipients.count > 0 else {
                let found = failures.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map {
                    "\($0.key) (\($0.value))"
                }
                let names = Set(failures.keys).union(APNsReason.documented.map(\.description))
                let hint =
                    spelled.count == 1 && !names.contains(spelled[0])
                    ? Suggestion.didYouMean(spelled[0], in: names) : ""
                throw RunRefusal(
                    .refused,
                    "no recipient of run \(id) failed with \(spelled.joined(separator: " or "))\(hint); "
                        + (found.isEmpty ? "it has no failures" : "its failures: \(found.joined(separator: ", "))")
                )
            }
            guard let file = original.file else {
                throw RunRefusal(
                    .refused,
                    "run \(id) does not record its campaign file (an older Pushcamp sent it); it cannot be replayed"
                )
            }
            return ReplaySelection(original: original, reasons: spelled, recipients: recipients, file: file)
        } catch let refusal as RunRefusal {
            throw refusal
        } catch let error as JournalError {
            throw RunRefusal(.journal, error.message)
        } catch {
            throw RunRefusal(.journal, "the journal \(path) cannot be read: \(error)")
        }
    }

    /// The refusal of a replay for reasons APNs or FCM never retries, when one is asked for.
    static func neverRetried(_ reasons: [String], run: RunID) -> RunRefusal? {
        if let refusal = fcmNeverRetried(reasons, run: run) { return refusal }
        let named = reasons.compactMap { reason in
            APNsReason.documented.first { $0.description.lowercased() == reason.lowercased() }
        }
        let dead = named.filter { APNsReason.deadToken.contains($0) }
        if !dead.isEmpty {
            return RunRefusal(
                .refused,
                "APNs called those tokens dead (\(dead.map(\.description).joined(separator: ", "))): sending to them again "
                    + "reaches nobody, and Apple asks senders to stop; they are remembered and skipped by later "
                    + "campaigns. Nothing was sent; --force replays them anyway"
            )
        }
        let final = named.filter { $0.disposition == .neverRetry }
        guard !final.isEmpty else { return nil }
        return RunRefusal(
            .refused,
            "APNs never retries \(final.map(\.description).joined(separator: ", ")): the same push would fail the "
                + "same way. Replay run \(run) only after fixing the cause (the app's topic or key in pushcamp.yaml, "
                + "the payload's size) and pass --force to say so; nothing was sent"
        )
    }

    /// The same for FCM's reasons (`fcm/CODE`, as the journal names them).
    static func fcmNeverRetried(_ reasons: [String], run: RunID) -> RunRefusal? {
        let asked = reasons.filter { $0.lowercased().hasPrefix(FCMReason.prefix) }.map { $0.uppercased() }
        let deadNames = FCMReason.deadTokenReasons.map { $0.uppercased() }
        let dead = asked.filter { deadNames.contains($0) }
        if !dead.isEmpty {
            return RunRefusal(
                .refused,
                "FCM called those tokens dead (\(dead.map(Self.fcmSpelling).joined(separator: ", "))): sending to "
                    + "them again reaches nobody; they are remembered and skipped by later campaigns. Nothing was "
                    + "sent; --force replays them anyway"
            )
        }
        let final = asked.filter { name in
            let code = FCMReason(String(name.dropFirst(FCMReason.prefix.count)))
            return code.reaction == .neverRetry || code.reaction == .requestBug
        }
        guard !final.isEmpty else { return nil }
        return RunRefusal(
            .refused,
            "FCM never retries \(final.map(Self.fcmSpelling).joined(separator: ", ")): the same message would fail the "
                + "same way. Replay run \(run) only after fixing the cause (the app's service account or project in "
                + "pushcamp.yaml, the message) and pass --force to say so; nothing was sent"
        )
    }

    /// `fcm/UNREGISTERED` as the journal spells it, from any case.
    private static func fcmSpelling(_ upper: String) -> String {
        let code = upper.dropFirst(FCMReason.prefix.count)
        return FCMReason.prefix + (code.hasSuffix(":TOKEN") ? code.dropLast(6) + ":token" : code)
    }
}

extension ReplaySelection {
    /// What a replay of `campaign` would send, for the question before a production send.
    public func preview(of campaign: String) -> String {
        "  a replay of run \(original.id) of \(campaign): \(recipients.count) recipient(s) that failed with "
            + reasons.joined(separator: ", ") + "\n"
    }

    /// The line said when the replay starts as run `replay`.
    public func announcement(of campaign: String, as replay: RunID) -> String {
        "replaying run \(original.id) of \(campaign) as run \(replay): \(recipients.count) recipient(s) "
            + "that failed with \(reasons.joined(separator: ", "))"
    }
}
