import PushcampAudience
import PushcampModel

extension PlanSummary {
    /// The plan for a terminal.
    public func text() -> String {
        // Every value from the campaign's files is escaped: a CR or NUL in a topic or collapse id
        // (refused by pre-flight) must not forge the lines around it.
        var out = destinationLines.map { "\($0.escapingControlCharacters)\n" }.joined()
        out += "Plan for \(campaign.escapingControlCharacters) (revision \(revision))\n"
        if let journal { out += "  journal: \(journal.text.escapingControlCharacters)\n" }
        if let description { out += "  \(description.escapingControlCharacters)\n" }
        let appLine =
            destination == nil
            ? "  app \(app.escapingControlCharacters) · priority \(priority)\n"
            : "  app \(app.escapingControlCharacters) · push type \(pushType.rawValue) · priority \(priority) · topic \(topic.escapingControlCharacters)\n"
        out += appLine
        out += "  expiration \(expirationText)"
        if let collapseID { out += " · collapse id \(collapseID.escapingControlCharacters)" }
        out += "\n  send time \(sendTimeText)\n"
        for line in scheduleLines { out += "  \(line.escapingControlCharacters)\n" }
        out += "\n"

        out += "Audience (\(source.escapingControlCharacters))\n"
        for line in reviewLines { out += "  note: \(line.escapingControlCharacters)\n" }
        var rows: [(String, Int, String)] = [("read", audience.read, "")]
        rows.append(("invalid tokens", audience.invalidTotal, invalidText))
        rows.append(("duplicates", audience.duplicates, "first row of a token wins"))
        rows.append(
            ("filtered out", audience.filteredOut, filter.map { "where: \($0.escapingControlCharacters)" } ?? "")
        )
        rows.append(("excluded", audience.excluded, ""))
        if !audience.otherPlatform.isEmpty {
            let count = audience.otherPlatform.values.reduce(0, +)
            rows.append(("other platform", count, "\(otherPlatformText): the campaign names no app of theirs"))
        }
        if let row = subscriptionRow { rows.append((row.label, row.count, row.note.escapingControlCharacters)) }
        rows.append(
            (
                "suppressed", suppressed,
                suppressed > 0 ? "dead tokens for \(topic.escapingControlCharacters), from the journal" : ""
            )
        )
        rows.append(
            ("capped", capped, frequencyCap.map { "frequency cap: \($0), from the journal" } ?? "no frequency cap")
        )
        rows.append(("held out", heldOut, "holdout \(holdout)"))
        rows.append(("planned", planned, ""))
        rows.append(("refused", failed, failed > 0 ? "by pre-flight checks, see below" : ""))
        for (label, count, note) in rows {
            out +=
                "  " + pad(label, 16) + pad(String(count), 10, right: true) + (note.isEmpty ? "" : "   \(note)") + "\n"
        }

        if android != nil {
            out += "\nPlatforms\n"
            for platform in Platform.allCases where platform == .android || destination != nil {
                let count = String(platforms[platform] ?? 0)
                out += "  " + pad(platform.title, 16) + pad(count, 10, right: true) + "   via \(platform.provider)\n"
            }
        }
        if !variants.isEmpty {
            out += "\nVariants\(assignmentUnit == "device" ? "" : " (assigned per \(assignmentUnit))")\n"
            for variant in variants {
                out +=
                    "  " + pad(variant.name.escapingControlCharacters, 16)
                    + pad(String(variant.planned), 10, right: true)
                    + "   weight \(variant.weight)\n"
            }
        }
        if !locales.isEmpty {
            out += "\nLocales\n"
            for locale in locales {
                out +=
                    "  " + pad(locale.locale.escapingControlCharacters, 16)
                    + pad(String(locale.planned), 10, right: true) + "\n"
            }
        }
        if let timing {
            out += "\nTimeline (pushes due per UTC hour)\n"
            for (hour, count) in timing.hours {
                out += "  " + pad(Self.hourText(hour), 20) + pad(String(count), 10, right: true) + "\n"
            }
            for line in timingNotes(timing) { out += "  \(line)\n" }
        }
        if payloadSizes.total > 0 {
            out +=
                "\nPayload size: min \(payloadSizes.minimum) · median \(payloadSizes.median) · max \(payloadSizes.maximum) bytes (limit \(pushType.payloadLimit))\n"
        }
        if androidPayloadSizes.total > 0 {
            let sizes = androidPayloadSizes
            out +=
                "\(payloadSizes.total > 0 ? "" : "\n")Android message size: min \(sizes.minimum) · median \(sizes.median) · max \(sizes.maximum) bytes of body (FCM's limit: 4096 bytes of data)\n"
        }
        if !failures.isEmpty {
            out += "\nPre-flight failures\n"
            for (reason, stat) in sortedFailures {
                out += "  \(reason.rawValue): \(stat.count) — \(reason.summary)\n"
                for example in stat.examples {
                    out += "    \(example.location): token \(Self.shortToken(example.token)): \(example.detail)\n"
                }
            }
        }
        if !audience.invalidExamples.isEmpty {
            out += "\nInvalid tokens (first \(audience.invalidExamples.count))\n"
            for example in audience.invalidExamples {
                out += "  \(example.location): token \(example.token): \(example.problem.explanation)\n"
            }
        }
        if !samples.isEmpty {
            out += "\nSamples\n"
            for (index, push) in samples.enumerated() {
                var title = "  #\(index + 1) \(push.token)"
                if android != nil { title += " · \(push.platform.title)" }
                if !variants.isEmpty { title += " · variant \(push.variant)" }
                if let locale = push.locale { title += " · locale \(locale)" }
                if let due = push.due { title += " · due \(Timestamp(secondsSince1970: due))" }
                out += title + " · \(sampleOrigin(push))\n"
                for (name, value) in headers(of: push) { out += "     \(name): \(value.escapingControlCharacters)\n" }
                let body = sampleBody(of: push)
                out += "     body (\(body.count) bytes): \(String(decoding: body, as: UTF8.self))\n"
            }
        }
        out += "\nEstimate: \(planned) push\(planned == 1 ? "" : "es") at \(rateText) ≈ \(durationText)"
        if let sendTime {
            out +=
                " (\(sendTime) to \(Timestamp(secondsSince1970: sendTime.secondsSince1970 + Int64(estimatedSeconds.rounded(.up)))))"
        }
        return out + "\n"
    }

    /// A few lines for a confirmation prompt: what goes where, what the journal says, how long.
    public func brief() -> String {
        var out =
            "  campaign \(campaign.escapingControlCharacters) (revision \(revision)) · app \(app.escapingControlCharacters)"
            + (destination == nil ? "" : " · topic \(topic.escapingControlCharacters)") + "\n"
        if let journal { out += "  journal: \(journal.text.escapingControlCharacters)\n" }
        var held: [String] = []
        for (count, label) in [
            (failed, "refused by pre-flight checks"), (unsubscribed, "with no subscription"),
            (suppressed, "suppressed"),
            (capped, "capped"),
        ]
        where count > 0 {
            held.append("\(count) \(label)")
        }
        out += "  \(planned) push\(planned == 1 ? "" : "es") planned"
        if !platformText.isEmpty { out += " (\(platformText))" }
        out += held.isEmpty ? "" : " (\(held.joined(separator: ", ")))"
        return out + " · about \(durationText) at \(rateText)\n"
    }

    func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return right ? padding + text : text + padding
    }
}
