import Foundation
import PushcampJournal
import PushcampModel

/// `pushcamp diff`: a campaign's plan of now against what its last run planned (kept with the run's
/// statistics) or against a plan file: where it sends, the audience funnel, the split by variant,
/// and the sample pushes, matched by device token, header by header and payload against payload.
/// The identity headers (`:path`, `apns-id`) and `apns-expiration`, absolute once sent, are left
/// out: they differ on every send.
public struct PlanDiff: Sendable {
    /// One side: a run, a plan file, or the plan of now.
    public struct Side: Sendable {
        public var label: String
        public var revision: String
        /// `production https://api.push.apple.com`; nil when unknown.
        public var destination: String?
        public var topic: String?
        /// The funnel's rows, in `plan`'s order; nil when unknown.
        public var counts: [(name: String, value: Int)]?
        public var variants: [String: Int]
        /// Nil when this side kept none (runs and plan files made before they were kept).
        public var samples: [PlanSample]?
    }

    public var campaign: String
    public var before: Side
    public var now: Side
    /// Files of the campaign changed since a plan file was made, one phrase each.
    public var changedFiles: [String]

    static let ignoredHeaders: Set<String> = [":path", "apns-id", "apns-expiration"]

    public init(campaign: String, before: Side, now: Side, changedFiles: [String] = []) {
        self.campaign = campaign
        self.before = before
        self.now = now
        self.changedFiles = changedFiles
    }

    // MARK: the sides

    /// The plan of now.
    public static func side(_ summary: PlanSummary) -> Side {
        Side(
            label: "now",
            revision: summary.revision,
            destination: summary.destination.map { "\($0.environment.rawValue) \($0.endpoint)" }
                ?? summary.destinationLines.joined(separator: "; "),
            topic: summary.topic,
            counts: PlanFile.Counts(summary).rows,
            variants: Dictionary(summary.variants.map { ($0.name, $0.planned) }) { $0 + $1 },
            samples: summary.samples.map { summary.sample($0) }
        )
    }

    /// A run, from its statistics (`plan` is nil when its plan never finished in one pass).
    public static func side(_ run: RunRecord, plan: PlanFunnel?, sent: SentFacts?) -> Side {
        Side(
            label: "run \(run.id)",
            revision: run.revision,
            destination: sent.map { "\($0.environment) \($0.endpoint)" },
            topic: sent?.topic,
            counts: plan.map {
                PlanFile.Counts(
                    read: $0.read,
                    invalidTokens: $0.invalid,
                    duplicates: $0.duplicates,
                    filteredOut: $0.filteredOut,
                    excluded: $0.excluded,
                    suppressed: $0.suppressed,
                    capped: $0.capped,
                    heldOut: $0.heldOut,
                    planned: $0.planned,
                    refused: $0.refused
                ).rows
            },
            variants: plan?.variants ?? [:],
            samples: plan?.samples
        )
    }

    /// A plan file made by `plan --out`.
    public static func side(_ file: PlanFile, path: String) -> Side {
        let destination = Destination(
            environment: APNsEnvironment(rawValue: file.environment) ?? .sandbox,
            customEndpoint: file.endpoint
        )
        return Side(
            label: "plan file \(path)",
            revision: file.revision,
            destination: "\(file.environment) \(destination.endpoint)",
            topic: file.topic,
            counts: file.counts.rows,
            variants: file.variants ?? [:],
            samples: file.samples
        )
    }

    // MARK: what differs

    /// A sample pushed to one token on both sides, or on one only.
    public struct SampleChange: Sendable {
        public var token: String
        public var before: PlanSample?
        public var now: PlanSample?
        /// Headers that differ: name, before, now (nil where a side has none).
        public var headers: [(name: String, before: String?, now: String?)]
        public var payloadChanged: Bool
    }

    public var facts: [(name: String, before: String, now: String)] {
        var facts: [(String, String, String)] = []
        if let before = before.destination, let now = now.destination, before != now {
            facts.append(("destination", before, now))
        }
        if let before = before.topic, let now = now.topic, before != now { facts.append(("topic", before, now)) }
        return facts
    }

    public var countChanges: [(name: String, before: Int, now: Int)] {
        guard let before = before.counts, let now = now.counts else { return [] }
        return zip(before, now).filter { $0.value != $1.value }.map { ($0.name, $0.value, $1.value) }
    }

    public var variantChanges: [(name: String, before: Int, now: Int)] {
        Set(before.variants.keys).union(now.variants.keys).sorted().compactMap { name in
            let (old, new) = (before.variants[name] ?? 0, now.variants[name] ?? 0)
            return old == new ? nil : (name, old, new)
        }
    }

    public var sampleChanges: [SampleChange] {
        guard let beforeSamples = before.samples, let nowSamples = now.samples else { return [] }
        let old = Dictionary(beforeSamples.map { ($0.token, $0) }) { first, _ in first }
        let new = Dictionary(nowSamples.map { ($0.token, $0) }) { first, _ in first }
        var tokens: [String] = []
        for sample in beforeSamples + nowSamples where !tokens.contains(sample.token) { tokens.append(sample.token) }
        return tokens.compactMap { token in
            let (was, is_) = (old[token], new[token])
            guard let was, let is_ else {
                return SampleChange(token: token, before: was, now: is_, headers: [], payloadChanged: false)
            }
            let kept = { (sample: PlanSample) in sample.headers.filter { !Self.ignoredHeaders.contains($0.name) } }
            let wasHeaders = kept(was)
            let isHeaders = kept(is_)
            var names: [String] = []
            for header in wasHeaders + isHeaders where !names.contains(header.name) { names.append(header.name) }
            let headers = names.compactMap { name -> (String, String?, String?)? in
                let old = wasHeaders.first { $0.name == name }?.value
                let new = isHeaders.first { $0.name == name }?.value
                return old == new ? nil : (name, old, new)
            }
            let payloadChanged = was.payload != is_.payload || was.variant != is_.variant || was.locale != is_.locale
            guard !headers.isEmpty || payloadChanged else { return nil }
            return SampleChange(token: token, before: was, now: is_, headers: headers, payloadChanged: payloadChanged)
        }
    }

    public var hasDifferences: Bool {
        !facts.isEmpty || !countChanges.isEmpty || !variantChanges.isEmpty || !sampleChanges.isEmpty
            || !changedFiles.isEmpty
    }

    // MARK: output

    public func text() -> String {
        var out = "\(campaign): \(before.label) (revision \(before.revision)) → now (revision \(now.revision))\n"
        guard hasDifferences else {
            return out + "no differences: the campaign plans as \(before.label) did\n"
        }
        for change in changedFiles { out += "  \(change)\n" }
        for fact in facts { out += "  \(fact.name): \(fact.before) → \(fact.now)\n" }
        let pad = { (text: String, width: Int) in
            text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
        }
        let number = { (value: Int) in
            let text = String(value)
            return String(repeating: " ", count: max(0, 10 - text.count)) + text
        }
        let delta = { (old: Int, new: Int) in new > old ? "+\(new - old)" : "\(new - old)" }
        if !countChanges.isEmpty {
            out += "\nAudience\n"
            for change in countChanges {
                out +=
                    "  \(pad(change.name, 16))\(number(change.before)) →\(number(change.now))   \(delta(change.before, change.now))\n"
            }
        }
        if !variantChanges.isEmpty {
            out += "\nVariants\n"
            for change in variantChanges {
                out +=
                    "  \(pad(change.name.escapingControlCharacters, 16))\(number(change.before)) →\(number(change.now))   \(delta(change.before, change.now))\n"
            }
        }
        if !sampleChanges.isEmpty {
            out += "\nSamples (by device token)\n"
            for change in sampleChanges {
                let sample = change.now ?? change.before
                let placed = sample.map { " · variant \($0.variant)\($0.locale.map { " · locale \($0)" } ?? "")" } ?? ""
                out += "  \(DeviceToken.masked(change.token))\(placed.escapingControlCharacters)"
                guard let was = change.before, let now = change.now else {
                    out += change.before == nil ? ": only now\n" : ": only in \(before.label)\n"
                    continue
                }
                out += "\n"
                if was.variant != now.variant || was.locale != now.locale {
                    out +=
                        "    variant and locale: \(was.variant) \(was.locale ?? "-") → \(now.variant) \(now.locale ?? "-")\n"
                }
                for header in change.headers {
                    let (old, new) = (header.before ?? "(none)", header.now ?? "(none)")
                    out += "    \(header.name): \(old.escapingControlCharacters) → \(new.escapingControlCharacters)\n"
                }
                if was.payload != now.payload {
                    out +=
                        "    - \(was.payload.escapingControlCharacters)\n    + \(now.payload.escapingControlCharacters)\n"
                }
            }
        }
        if before.samples == nil {
            out += "\n(\(before.label) kept no sample pushes to compare)\n"
        }
        return out
    }
}

extension PlanDiff {
    /// What `diff` compares the plan of now with: a plan file, a run of the campaign, or (nil)
    /// its latest run.
    public enum Baseline: Sendable {
        case planFile(String)
        case run(RunID?)
    }

    /// A run to compare with that is not the campaign's.
    public struct Refusal: Error, Sendable {
        public var message: String
    }

    /// The side `baseline` names for `campaign`, with the campaign's files changed since (a plan
    /// file's); nil when the campaign was never sent. Throws `PlanFileError` for a plan file that
    /// cannot be read, `Refusal` for a run that is not the campaign's, `JournalError` when the
    /// journal cannot be read.
    public static func before(
        _ campaign: LoadedCampaign,
        baseline: Baseline,
        journal: (any Journal)?
    ) async throws -> (side: Side, changedFiles: [String])? {
        switch baseline {
        case .planFile(let path):
            let file = try PlanFile.read(from: path)
            return (side(file, path: path), file.differences(from: campaign))
        case .run(let number?):
            guard let record = try await journal?.run(number), record.campaign == campaign.id else {
                throw Refusal(message: "campaign \(campaign.id) has no run \(number); `pushcamp runs` lists them")
            }
            return (try await side(of: record, in: journal), [])
        case .run(nil):
            guard let record = try await journal?.latestRun(campaign: campaign.id) else { return nil }
            return (try await side(of: record, in: journal), [])
        }
    }

    static func side(of record: RunRecord, in journal: (any Journal)?) async throws -> Side {
        let stats = try await journal?.stats(of: record.id)
        return side(record, plan: stats?.plan, sent: stats?.sent)
    }
}
