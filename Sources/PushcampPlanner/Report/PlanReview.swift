import Foundation
import PushcampAPNsCore
import PushcampAudience
import PushcampJournal
import PushcampModel

extension PlanSummary {
    /// What a review concludes of a plan: invalid when the audience was read and nobody would be
    /// sent anything; refused when more tokens than allowed are invalid (`maxInvalid`, else the
    /// campaign's `audience.max_invalid`) or pre-flight refuses pushes.
    public func verdict(
        of campaign: LoadedCampaign,
        file: String,
        maxInvalid: InvalidLimit?
    ) -> PlanReview.Entry.Verdict {
        let read = review?.wasRead ?? true
        // Subscriptions are in the journal, which a review has not: every row is without one.
        if read, campaign.subscriptions == nil, let emptiness = emptiness(of: campaign) { return .invalid(emptiness) }
        if let limit = maxInvalid ?? campaign.maxInvalid, let beyond = invalidBeyond(limit) { return .refused(beyond) }
        if failed > 0 { return .refused("\(file): APNs or FCM would refuse \(failed) of these pushes") }
        return .passes
    }
}

/// A pull request's review of a project (`pushcamp review`): every campaign `serve` watches is
/// loaded for review, so a broken one fails the check whatever the change; the campaigns the change
/// touches (their file, or a template, strings file or audience they read, or pushcamp.yaml) are
/// planned as a review plans them — the sample instead of real audiences, tokens masked, copy of
/// made-up recipients only. What it writes fits a pull request's comment: a table of every
/// campaign planned, then as many whole plans as fit under the limit; the rest is in the full plan.
public struct PlanReview: Sendable {
    public struct Entry: Sendable {
        public enum Verdict: Sendable, Hashable {
            case passes
            /// Pushes APNs or FCM would refuse, or more invalid tokens than allowed: exit 3.
            case refused(String)
            /// Not loaded or not planned: exit 1.
            case invalid(String)
        }

        /// The campaign file, relative to the working directory.
        public var file: String
        public var verdict: Verdict
        /// The plan (or the errors) as Markdown.
        public var section: String
        /// Table cells: the apps, whether it reaches real devices, planned, invalid tokens, refused.
        public var cells: [String]

        /// The cells of a campaign that was not planned.
        static let noCells = ["", "", "", "", ""]

        public init(file: String, verdict: Verdict, section: String, cells: [String]) {
            self.file = file
            self.verdict = verdict
            self.section = section
            self.cells = cells
        }
    }

    public var entries: [Entry] = []
    /// Campaigns of the watched folders that loaded and that the change does not touch.
    public var untouched: [String] = []
    /// Campaign files the change names that are gone: nothing to plan.
    public var removed: [String] = []

    /// 1 when a campaign is invalid, else 3 when one would be refused, else 0: `plan`'s codes.
    public var exitCode: Int32 {
        if entries.contains(where: { if case .invalid = $0.verdict { true } else { false } }) { return 1 }
        if entries.contains(where: { if case .refused = $0.verdict { true } else { false } }) { return 3 }
        return 0
    }

    /// Whether there is nothing to say: no campaign planned or invalid, none removed.
    public var touchesNothing: Bool { entries.isEmpty && removed.isEmpty }

    /// GitHub's limit on a comment's body, in characters.
    public static let commentLimit = 65_536

    public init() {}

    /// Reviews the campaigns of `folders` (as `serve.campaigns` writes them) of the project at
    /// `paths`. `changed` lists the files the change touches (absolute, standardized); nil plans
    /// every campaign. `maxInvalid` overrides each campaign's `audience.max_invalid`.
    public static func make(
        paths: ProjectPaths,
        folders: [String],
        changed: Set<String>?,
        loader: CampaignLoader,
        samples: Int,
        maxInvalid: InvalidLimit? = nil,
        clock: any WallClock = SystemWallClock()
    ) async -> PlanReview {
        var review = PlanReview()
        let files = paths.campaignFiles(in: folders)
        let present = Set(files.map(\.standardizedFileURL.path))
        for path in changed?.sorted() ?? [] where !present.contains(path) {
            let url = URL(fileURLWithPath: path)
            let watched = folders.map { paths.url($0).standardizedFileURL.path }
            let isCampaign =
                ["yaml", "yml"].contains(url.pathExtension)
                && watched.contains(url.deletingLastPathComponent().standardizedFileURL.path)
            if isCampaign {
                review.removed.append(ProjectPaths.display(url, workingDirectory: loader.workingDirectory))
            }
        }
        for url in files {
            let file = ProjectPaths.display(url, workingDirectory: loader.workingDirectory)
            let loaded = loader.load(url.path)
            guard let campaign = loaded.campaign else {
                let errors = loaded.diagnostics.filter { $0.severity == .error }.map {
                    "- \(Markdown.text($0.description))"
                }
                review.entries.append(
                    Entry(
                        file: file,
                        verdict: .invalid("invalid"),
                        section: "### \(Markdown.code(file)): invalid\n\n\(errors.joined(separator: "\n"))\n",
                        cells: Entry.noCells
                    )
                )
                continue
            }
            guard changed.map({ touches(campaign, file: url, paths: paths, changed: $0) }) ?? true else {
                review.untouched.append(file)
                continue
            }
            review.entries.append(
                await plan(campaign, file: file, samples: samples, maxInvalid: maxInvalid, clock: clock)
            )
        }
        return review
    }

    /// Whether the change touches `campaign`: its file, a file it reads, or one it would read
    /// elsewhere (the audience a review did not read).
    static func touches(_ campaign: LoadedCampaign, file: URL, paths: ProjectPaths, changed: Set<String>) -> Bool {
        let read = campaign.inputs.map(\.path) + (campaign.review?.unreadPaths ?? []).filter { !$0.contains("${") }
        let urls = [file] + read.map { paths.url($0) }
        return urls.contains { changed.contains($0.standardizedFileURL.path) }
    }

    static func plan(
        _ campaign: LoadedCampaign,
        file: String,
        samples: Int,
        maxInvalid: InvalidLimit?,
        clock: any WallClock
    ) async -> Entry {
        if campaign.broadcast != nil {
            do {
                let (message, diagnostics) = try await BroadcastMessage.planned(
                    campaign,
                    journal: MemoryJournal(),
                    now: clock.now()
                )
                let errors = diagnostics.filter { $0.severity == .error }
                let section =
                    (message?.markdown() ?? "") + errors.map { "- \(Markdown.text($0.description))\n" }.joined()
                let verdict: Entry.Verdict = message == nil || !errors.isEmpty ? .invalid("invalid") : .passes
                return Entry(
                    file: file,
                    verdict: verdict,
                    section: section,
                    cells: [campaign.appLabel, "", "1", "", ""]
                )
            } catch {
                return Entry(file: file, verdict: .invalid("\(error)"), section: "", cells: Entry.noCells)
            }
        }
        let summary: PlanSummary
        do {
            summary = try await PlanSummary.reviewed(campaign, sendTime: nil, samples: samples, clock: clock)
        } catch let error as AudienceError {
            let text = error.diagnostic.description
            return Entry(
                file: file,
                verdict: .invalid(text),
                section: "### \(Markdown.code(file)): not planned\n\n- \(Markdown.text(text))\n",
                cells: [campaign.appLabel, "", "", "", ""]
            )
        } catch {
            return Entry(file: file, verdict: .invalid("\(error)"), section: "", cells: Entry.noCells)
        }
        let verdict = summary.verdict(of: campaign, file: file, maxInvalid: maxInvalid)
        let read = summary.review?.wasRead ?? true
        var section = summary.markdown()
        switch verdict {
        case .passes: break
        case .refused(let why), .invalid(let why): section += "\n**\(Markdown.text(why))**\n"
        }
        let cells = [
            Markdown.code(summary.app), summary.reachesProduction ? "**yes**" : "no",
            read ? "\(summary.planned)" : "not read", "\(summary.audience.invalidTotal)", "\(summary.failed)",
        ]
        return Entry(file: file, verdict: verdict, section: section, cells: cells)
    }

    /// The heading and the table of every campaign planned (only those that fail, with
    /// `failingOnly`, and a count of the others).
    func overview(failingOnly: Bool = false) -> String {
        let planned = entries.count
        var out = "## pushcamp review: \(planned) campaign\(planned == 1 ? "" : "s")"
        out += untouched.isEmpty ? "\n\n" : " (\(untouched.count) more not touched by this change)\n\n"
        let status: String =
            switch exitCode {
            case 1: "**Failing: a campaign is invalid or would send nothing.**"
            case 3: "**Failing: APNs or FCM would refuse some pushes, or an audience has too many invalid tokens.**"
            default: entries.isEmpty ? "No campaign is touched by this change." : "Every campaign planned passes."
            }
        out += status + "\n\n"
        if !entries.isEmpty {
            out += "| campaign | app | real devices | planned | invalid tokens | refused | verdict |\n"
            out += "|---|---|---|---:|---:|---:|---|\n"
            for entry in entries where !failingOnly || entry.verdict != .passes {
                let verdict: String =
                    switch entry.verdict {
                    case .passes: "passes"
                    case .refused: "**refused**"
                    case .invalid: "**invalid**"
                    }
                out += "| \(Markdown.code(entry.file)) | \(entry.cells.joined(separator: " | ")) | \(verdict) |\n"
            }
            out += "\n"
            let passing = entries.filter { $0.verdict == .passes }.count
            if failingOnly && passing > 0 { out += "\(passing) campaigns that pass are listed in the full plan.\n\n" }
        }
        for file in removed { out += "\(Markdown.code(file)) is removed: nothing to plan.\n\n" }
        return out
    }

    /// One line for the log: how many campaigns were planned, and how many fail.
    public var line: String {
        let failing = entries.filter { $0.verdict != .passes }.count
        let untouchedText = untouched.isEmpty ? "" : ", \(untouched.count) not touched by the change"
        return "review: \(entries.count) campaign\(entries.count == 1 ? "" : "s") planned or checked\(untouchedText); "
            + (failing == 0 ? "all pass" : "\(failing) fail\(failing == 1 ? "s" : "")")
    }

    /// Every plan in full, masked as the comment is: the job's artifact.
    public func full() -> String {
        overview() + entries.map(\.section).joined(separator: "\n---\n\n")
    }

    /// The overview and as many whole plans as fit in `limit` characters (counted as UTF-8 bytes,
    /// which no count of characters exceeds), failing ones first; the rest are named, with where
    /// to read them.
    public func comment(limit: Int = PlanReview.commentLimit, artifact: String = "the job's artifact") -> String {
        var out = overview()
        // So many campaigns that their table alone passes the limit: only those that fail.
        if out.utf8.count > limit / 2 { out = overview(failingOnly: true) }
        let failingFirst = entries.filter { $0.verdict != .passes } + entries.filter { $0.verdict == .passes }
        var left: [String] = []
        for entry in failingFirst {
            let piece = "---\n\n" + entry.section + "\n"
            // Room kept for the closing line naming what did not fit.
            let closing = 200 + (left.count + 1) * (entry.file.utf8.count + 4)
            if out.utf8.count + piece.utf8.count + closing <= limit {
                out += piece
            } else {
                left.append(entry.file)
            }
        }
        if !left.isEmpty {
            var closing = "---\n\n\(left.count) more plan\(left.count == 1 ? " is" : "s are") in \(artifact): "
            closing += left.map { Markdown.code($0) }.joined(separator: ", ") + "\n"
            if out.utf8.count + closing.utf8.count > limit {
                closing = "---\n\n\(left.count) more plans are in \(artifact).\n"
            }
            out += closing
        }
        return out
    }
}
