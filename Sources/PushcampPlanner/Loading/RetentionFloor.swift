import Foundation
import PushcampModel

/// The shortest time a journal may keep runs' recipients: the longest frequency-cap window of the
/// project. A cap counts the deliveries of every run within its window, from their rows; pruning
/// a run younger than that would let a capped recipient through.
public struct RetentionFloor: Sendable, Equatable {
    public var window: TimeSpan
    /// Where the cap is written (`pushcamp.yaml`, or a campaign file), for the refusal.
    public var source: String

    /// The project's default cap and each campaign's own under `serve.campaigns` (read, not
    /// loaded: no template nor audience is opened); nil when none caps.
    public static func of(_ project: Project, paths: ProjectPaths) -> RetentionFloor? {
        var longest = project.defaults.frequencyCap.map {
            RetentionFloor(window: $0.per, source: ProjectPaths.projectFileName)
        }
        for url in paths.campaignFiles(in: project.serve.campaignFolders) {
            let display = paths.displayRelative(url.path)
            guard let document = YAMLDocument.load(url, displayPath: display).0,
                case .cap(let cap)? = CampaignReader.read(document).0?.frequencyCap
            else { continue }
            if cap.per.seconds > longest?.window.seconds ?? 0 {
                longest = RetentionFloor(window: cap.per, source: display)
            }
        }
        return longest
    }
}
