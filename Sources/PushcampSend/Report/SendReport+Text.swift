import Foundation
import PushcampJournal
import PushcampModel

extension SendReport {
    /// The end-of-run report for people.
    public func text() -> String {
        var lines: [String] = []
        lines.append(
            "campaign \(campaign) (revision \(revision)) → \(endpoint)" + (run.map { ", run \($0)" } ?? "")
        )
        if let resumed {
            lines.append(
                "resumed run \(resumed.run): \(resumed.delivered) delivered and \(resumed.failed) failed before; "
                    + "the counts below are this send's"
            )
        }
        switch stop {
        case .interrupted?: lines.append("stopped: interrupted; in-flight requests were drained")
        case .credentials(let message)?: lines.append("stopped: \(message)")
        case .cannotConnect(let message)?, .planFailed(let message)?, .stalled(let message)?:
            lines.append("stopped: \(message)")
        case .cancelled?: lines.append("stopped: cancelled by `pushcamp cancel`; in-flight requests were drained")
        case .journal(let message)?: lines.append("stopped: the journal cannot be written: \(message)")
        case .leaseLost(let message)?:
            lines.append("stopped: \(message); the run is left to the process that holds it now")
        case nil: break
        }
        let planNote = planFinished ? "" : " so far (the run stopped before the end of the plan)"
        lines.append(
            "planned \(planned)\(planNote); held out \(heldOut); "
                + (suppressed > 0 ? "suppressed \(suppressed) (dead tokens); " : "")
                + (capped > 0 ? "capped \(capped) (frequency cap); " : "")
                + (unsubscribed > 0 ? "no subscription \(unsubscribed); " : "")
                + dropped.sorted { $0.key < $1.key }.map { "dropped \($0.value) (\($0.key)); " }.joined()
                + "refused by pre-flight \(preflightFailed)"
        )
        lines.append(
            "delivered \(delivered), failed \(failed)" + (unsent > 0 ? ", not sent \(unsent)" : "")
        )
        if let unrecorded, unrecorded.delivered + unrecorded.failed > 0 {
            lines.append(
                "not recorded: \(unrecorded.delivered) delivered and \(unrecorded.failed) failed answers came after the "
                    + "journal failed; the counts above are what it holds, and a resume sends those recipients again "
                    + "(counted as possible duplicates)"
            )
        }
        // A send that reached Android phones says each platform's part.
        let platforms = platforms(latency: false)
        let named = statuses.keys.contains { $0.platform == .android } || platforms[.android] != nil
        if named {
            lines.append("by platform:")
            for (platform, readout) in platforms.sorted(by: { $0.key < $1.key }) {
                lines.append(
                    "  \(platform.title.padding(toLength: 8, withPad: " ", startingAt: 0)) \(readout.delivered) delivered, "
                        + "\(readout.failedTotal) failed"
                )
            }
        }
        if !statuses.isEmpty {
            lines.append("by status:")
            for (answer, count) in statuses.sorted(by: { $0.key < $1.key }) {
                lines.append("  " + (named ? "\(answer.platform.title) " : "") + "\(answer.status)  \(count)")
            }
        }
        if !failures.isEmpty {
            lines.append("failures by reason:")
            for (reason, count) in failures.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) {
                lines.append(
                    "  \(reason.escapingControlCharacters.padding(toLength: 28, withPad: " ", startingAt: 0)) \(count)"
                )
            }
        }
        if possibleDuplicates > 0 {
            lines.append(
                "possible duplicates \(possibleDuplicates) (sent again after their first request's answer was lost; "
                    + "a collapse id makes the second replace the first on the device)"
            )
        }
        lines.append(
            "retries \(totalRetries)"
                + (retries.isEmpty
                    ? ""
                    : " (" + retries.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                        + ")")
        )
        if let p50 = latency.percentile(0.5), let p90 = latency.percentile(0.9), let p99 = latency.percentile(0.99) {
            lines.append(
                "latency p50 \(Durations.milliseconds(p50)), p90 \(Durations.milliseconds(p90)), p99 \(Durations.milliseconds(p99))"
            )
        }
        lines.append(
            String(
                format: "%.2f s, %.0f answers/s, %d connection(s) opened, stream limit up to %d",
                seconds,
                throughput,
                connectionsOpened,
                highestStreamLimit
            )
        )
        if providerTokensRenewed > 0 {
            lines.append("provider token renewed after ExpiredProviderToken: \(providerTokensRenewed)")
        }
        if !disconnects.isEmpty {
            lines.append("connections ended:")
            for (reason, count) in disconnects.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(count) × \(reason.escapingControlCharacters)")
            }
        }
        if !deadTokens.isEmpty {
            lines.append(
                "dead tokens (Unregistered, ExpiredToken, BadDeviceToken): \(deadTokens.count + deadTokensOmitted)"
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
