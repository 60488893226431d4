import Foundation
import PushcampModel

/// Where a campaign's project is, and how to print paths inside it: paths in campaign files are
/// relative to the directory of `pushcamp.yaml`; diagnostics print them relative to the working
/// directory when they are under it, so they can be clicked in a terminal or an editor.
public struct ProjectPaths: Sendable {
    /// The directory holding `pushcamp.yaml`.
    public let root: URL
    /// The root as printed (`.` when it is the working directory).
    public let displayRoot: String

    public static let projectFileName = "pushcamp.yaml"

    /// Finds the nearest `pushcamp.yaml` at or above the campaign file's directory.
    public static func locate(campaign: URL, workingDirectory: URL) -> ProjectPaths? {
        var directory = campaign.deletingLastPathComponent().standardizedFileURL
        while true {
            let candidate = directory.appendingPathComponent(projectFileName)
            if FileManager.default.fileExists(atPath: candidate.path) {
                return ProjectPaths(
                    root: directory,
                    displayRoot: display(directory, workingDirectory: workingDirectory)
                )
            }
            let parent = directory.deletingLastPathComponent()
            if parent.path == directory.path { return nil }
            directory = parent
        }
    }

    public init(root: URL, displayRoot: String) {
        self.root = root.standardizedFileURL
        self.displayRoot = displayRoot
    }

    /// The absolute file for a path written in a project file.
    public func url(_ path: String) -> URL {
        path.hasPrefix("/") ? URL(fileURLWithPath: path) : root.appendingPathComponent(path).standardizedFileURL
    }

    /// An absolute path inside the project, as printed: relative to the project's display root.
    public func displayRelative(_ path: String) -> String {
        let prefix = root.path.hasSuffix("/") ? root.path : root.path + "/"
        guard path.hasPrefix(prefix) else { return path }
        return display(String(path.dropFirst(prefix.count)))
    }

    /// A path written in a project file, as printed in diagnostics and reports.
    public func display(_ path: String) -> String {
        if path.hasPrefix("/") || displayRoot == "." { return path }
        return displayRoot.hasSuffix("/") ? displayRoot + path : displayRoot + "/" + path
    }

    public var projectFile: URL { root.appendingPathComponent(Self.projectFileName) }

    /// Whether `url` (symbolic links resolved) lies inside the project or one of `allowed` folders
    /// (paths as written in pushcamp.yaml): a campaign from a pull request must not read, and so
    /// echo in messages, files such as /proc/self/environ or a key elsewhere on the machine.
    public func permits(_ url: URL, allowed: [String]) -> Bool {
        let target = url.standardizedFileURL.resolvingSymlinksInPath().path
        let folders = [root] + allowed.map { self.url($0) }
        return folders.contains { folder in
            let base = folder.standardizedFileURL.resolvingSymlinksInPath().path
            return target == base || target.hasPrefix(base.hasSuffix("/") ? base : base + "/")
        }
    }
    public var projectFileDisplay: String { display(Self.projectFileName) }

    /// The campaign files of `folders` (paths as written in `serve.campaigns`): every `*.yaml` and
    /// `*.yml` directly inside them, by name; what `serve` watches and `validate` checks.
    public func campaignFiles(in folders: [String]) -> [URL] {
        folders.flatMap { folder -> [URL] in
            let directory = url(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.sorted().filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.map {
                directory.appendingPathComponent($0)
            }
        }
    }

    /// `url` relative to the working directory when it is inside it, else absolute.
    public static func display(_ url: URL, workingDirectory: URL) -> String {
        let path = url.standardizedFileURL.path
        let base = workingDirectory.standardizedFileURL.path
        if path == base { return "." }
        let prefix = base.hasSuffix("/") ? base : base + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }
}
