import Foundation
import PushcampAudience
import PushcampModel

/// What a review read of a campaign's audience (`plan --review`, `pushcamp review`): a pull
/// request's CI has the campaign's files but rarely its audience, which holds device tokens and
/// personal attributes and stays out of git.
public struct AudienceReview: Sendable, Hashable {
    public enum Read: Sendable, Hashable {
        /// The audience itself: committed, or reachable through its `${env:…}` path.
        case audience
        /// `audience.sample` (made-up recipients with the real columns), planned in its stead.
        case sample(String)
        /// Nothing could be read: why, said of the audience's path as written.
        case notRead(String)
    }

    public var read: Read
    /// Exclusions not read here, each with why: the counts include whom they would exclude.
    public var exclusionsNotRead: [String] = []
    /// Audience files the campaign names that the review did not read (a pull request changing
    /// one still plans the campaign), as written relative to the project.
    public var unreadPaths: [String] = []
    /// The columns of what was read, when the source declares them: a masked recipient has them.
    public var columns: [String]? = nil

    /// Whether an audience was read (the real one or the sample): counts mean something.
    public var wasRead: Bool {
        if case .notRead = read { return false }
        return true
    }

    /// Whether recipients read are made up (the sample), so their rendered copy may be shown.
    public var isSynthetic: Bool {
        if case .sample = read { return true }
        return false
    }
}

extension CampaignAssembler {
    /// The audience a review plans: `audience.sample` when the campaign has one, else the audience
    /// when it can be read here, else none — noted in `review` instead of failing the load. A path
    /// outside the project, or a file that is there but broken, stays an error.
    mutating func reviewedAudience() -> (any AudienceSource)? {
        let spec = campaign.audience
        var review = AudienceReview(read: .audience)
        defer { self.review = review }
        if let sample = spec.sample {
            review.read = .sample(paths.display(Self.writtenPath(sample) ?? "(inline)"))
            if let real = Self.writtenPath(spec.source) { review.unreadPaths.append(real) }
            return makeSource(sample)
        }
        if let why = unreadable(spec.source) {
            review.read = .notRead(why)
            diagnostics.append(
                .warning(
                    "audience not read in a review: \(why); give the campaign an audience.sample (made-up rows with the real columns) to plan it",
                    at: spec.source.location
                )
            )
            if let real = Self.writtenPath(spec.source) { review.unreadPaths.append(real) }
            return InlineSource(rows: [], name: paths.display(Self.writtenPath(spec.source) ?? campaign.path))
        }
        return makeSource(spec.source)
    }

    /// The exclusions a review reads: those that can be read here; the others are noted in
    /// `review` (after `reviewedAudience`), each looked at once.
    mutating func reviewedExclusions() -> [any AudienceSource] {
        var sources: [any AudienceSource] = []
        for exclusion in campaign.audience.exclude {
            if let why = unreadable(exclusion) {
                review?.exclusionsNotRead.append(why)
                diagnostics.append(.warning("exclusion not read in a review: \(why)", at: exclusion.location))
            } else if let source = makeSource(exclusion) {
                sources.append(source)
            }
        }
        return sources
    }

    /// Why a file source cannot be read on this machine (a variable of its path not set, or no file
    /// there: not committed), or nil when it can.
    func unreadable(_ spec: SourceSpec) -> String? {
        if case .postgres(let url, _) = spec.kind, case .success(let reference) = ConfigString.parse(url),
            case .failure(let error) = reference.resolve(environment)
        {
            return "audience.source.postgres: \(error.message)"
        }
        guard let written = Self.writtenPath(spec), case .success(let reference) = ConfigString.parse(written) else {
            return nil
        }
        switch reference.resolvePath(environment) {
        case .failure(let error): return "\(paths.display(written)): \(error.message)"
        case .success(let path):
            guard !FileManager.default.fileExists(atPath: paths.url(path).path) else { return nil }
            return "\(paths.display(written)): no such file here (audiences stay out of git)"
        }
    }

    /// A file source's path as written in the campaign; nil for inline rows.
    static func writtenPath(_ spec: SourceSpec) -> String? {
        switch spec.kind {
        case .csv(let path, _), .jsonLines(let path), .sqlite(let path, _): return path
        case .inline, .postgres: return nil
        }
    }
}
