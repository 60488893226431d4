import Foundation
import PushcampAudience
import PushcampModel

extension PlanSummary {
    /// The plan for a pull request description or comment.
    public func markdown() -> String {
        // Where it sends, first; production in bold.
        let destinationText = destinationLines.map(escape).joined(separator: "<br>")
        var out = reachesProduction ? "**\(destinationText)**\n\n" : "\(destinationText)\n\n"
        out += "### Plan: \(Markdown.code(campaign)) (revision \(Markdown.code(revision)))\n\n"
        if let description { out += "\(escape(description))\n\n" }
        out += "| | |\n|---|---|\n"
        if let journal { out += "| journal | \(escape(journal.text)) |\n" }
        out +=
            "| app | \(Markdown.code(app)) |\n| push type | \(Markdown.code(pushType.rawValue)) |\n| priority | \(priority) |\n| topic | \(Markdown.code(topic)) |\n"
        out += "| expiration | \(escape(expirationText)) |\n"
        if let collapseID { out += "| collapse id | \(Markdown.code(collapseID)) |\n" }
        out += "| send time | \(escape(sendTimeText)) |\n"
        for line in scheduleLines { out += "| schedule | \(escape(line)) |\n" }
        out += "| throttle | \(escape(rateText)) |\n| estimated duration | \(durationText) |\n\n"

        out += "#### Audience (\(Markdown.code(source)))\n\n"
        for line in reviewLines { out += "> \(escape(line))\n" }
        if !reviewLines.isEmpty { out += "\n" }
        out += "| step | recipients | note |\n|---|---:|---|\n"
        out += "| read | \(audience.read) | |\n"
        out += "| invalid tokens | \(audience.invalidTotal) | \(escape(invalidText)) |\n"
        out += "| duplicates | \(audience.duplicates) | first row of a token wins |\n"
        out += "| filtered out | \(audience.filteredOut) | \(filter.map { "\(Markdown.code($0))" } ?? "") |\n"
        out += "| excluded | \(audience.excluded) | |\n"
        if !audience.otherPlatform.isEmpty {
            let count = audience.otherPlatform.values.reduce(0, +)
            out += "| other platform | \(count) | \(escape(otherPlatformText)): the campaign names no app of theirs |\n"
        }
        if let row = subscriptionRow { out += "| \(row.label) | \(row.count) | \(escape(row.note)) |\n" }
        out += "| suppressed | \(suppressed) | \(suppressed > 0 ? "dead tokens for \(Markdown.code(topic))" : "") |\n"
        out += "| capped | \(capped) | \(frequencyCap.map { "frequency cap: \($0)" } ?? "no frequency cap") |\n"
        out += "| held out | \(heldOut) | holdout \(holdout) |\n"
        out += "| **planned** | **\(planned)** | |\n"
        out += "| refused | \(failed) | \(failed > 0 ? "pre-flight failures below" : "") |\n\n"

        if android != nil {
            out += "#### Platforms\n\n| platform | planned | via |\n|---|---:|---|\n"
            for platform in Platform.allCases where platform == .android || destination != nil {
                out += "| \(platform.title) | \(platforms[platform] ?? 0) | \(platform.provider) |\n"
            }
            out += "\n"
        }
        if !variants.isEmpty {
            let unit = assignmentUnit == "device" ? "" : " (assigned per \(escape(assignmentUnit)))"
            out += "#### Variants\(unit)\n\n| variant | weight | planned |\n|---|---:|---:|\n"
            for variant in variants {
                out += "| \(Markdown.code(variant.name)) | \(variant.weight) | \(variant.planned) |\n"
            }
            out += "\n"
        }
        if !locales.isEmpty {
            out += "#### Locales\n\n| locale | planned |\n|---|---:|\n"
            for locale in locales { out += "| \(Markdown.code(locale.locale)) | \(locale.planned) |\n" }
            out += "\n"
        }
        if let timing {
            out += "#### Timeline\n\n| UTC hour | pushes due |\n|---|---:|\n"
            for (hour, count) in timing.hours { out += "| \(Self.hourText(hour)) | \(count) |\n" }
            out += "\n" + timingNotes(timing).map { escape($0) }.joined(separator: "<br>\n") + "\n\n"
        }
        if payloadSizes.total > 0 {
            out +=
                "Payload size: min \(payloadSizes.minimum), median \(payloadSizes.median), max \(payloadSizes.maximum) bytes (limit \(pushType.payloadLimit)).\n\n"
        }
        if androidPayloadSizes.total > 0 {
            let sizes = androidPayloadSizes
            out +=
                "Android message size: min \(sizes.minimum), median \(sizes.median), max \(sizes.maximum) bytes of body (FCM's limit: 4096 bytes of data).\n\n"
        }
        if failures.isEmpty {
            out += "No pre-flight failures.\n\n"
        } else {
            out += "#### Pre-flight failures\n\n| reason | pushes | first examples |\n|---|---:|---|\n"
            for (reason, stat) in sortedFailures {
                let examples = stat.examples.map { "\(Markdown.code($0.location.description)): \(escape($0.detail))" }
                    .joined(separator: "<br>")
                out +=
                    "| \(Markdown.code(reason.rawValue)) — \(escape(reason.summary)) | \(stat.count) | \(examples) |\n"
            }
            out += "\n"
        }
        if !audience.invalidExamples.isEmpty {
            out += "#### Invalid tokens (first \(audience.invalidExamples.count))\n\n"
            for example in audience.invalidExamples {
                out += "- \(Markdown.code(example.location.description)): \(escape(example.problem.explanation))\n"
            }
            out += "\n"
        }
        if !samples.isEmpty {
            out += "<details><summary>\(samples.count) rendered sample\(samples.count == 1 ? "" : "s")</summary>\n\n"
            for (index, push) in samples.enumerated() {
                var title = "**#\(index + 1)** \(sampleOrigin(push))"
                if android != nil { title += ", \(push.platform.title)" }
                if !variants.isEmpty { title += ", variant \(Markdown.code(push.variant))" }
                if let locale = push.locale { title += ", locale \(Markdown.code(locale))" }
                out += title + "\n\n```http\n"
                for (name, value) in headers(of: push) { out += "\(name): \(value)\n" }
                out += "\n\(String(decoding: sampleBody(of: push), as: UTF8.self))\n```\n\n"
            }
            out += "</details>\n"
        }
        return out
    }

    func escape(_ text: String) -> String { Markdown.text(text) }
}
