import Foundation
import PushcampModel

/// Finds the project's run journal for commands that take no campaign file (`runs`, `cancel`,
/// `report`, `tokens`): the nearest `pushcamp.yaml` at or above the working directory names it.
public enum ProjectJournal {
    /// The rehearsal journal kept beside the journal at `path`: rehearsals never write the real one.
    public static func rehearsalPath(beside path: String) -> String {
        (path as NSString).deletingLastPathComponent + "/rehearsal.sqlite"
    }

    public static func path(
        workingDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    ) -> Result<String, DiagnosticsError> {
        setting(workingDirectory: workingDirectory).map(\.path)
    }

    /// The nearest project's `journal` setting.
    public static func setting(
        workingDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    ) -> Result<JournalSetting, DiagnosticsError> {
        project(workingDirectory: workingDirectory).map { JournalSetting($0.project, paths: $0.paths) }
    }

    /// The nearest `pushcamp.yaml` at or above `workingDirectory`, read, with where it is.
    public static func project(
        workingDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    ) -> Result<(project: Project, paths: ProjectPaths), DiagnosticsError> {
        let probe = workingDirectory.appendingPathComponent(ProjectPaths.projectFileName)
        guard let paths = ProjectPaths.locate(campaign: probe, workingDirectory: workingDirectory) else {
            return .failure(
                DiagnosticsError(
                    Diagnostic(
                        .error,
                        "no \(ProjectPaths.projectFileName) here or in any directory above; run this inside a "
                            + "Pushcamp project, or name the journal with --journal",
                        at: nil
                    )
                )
            )
        }
        let (document, parse) = YAMLDocument.load(paths.projectFile, displayPath: paths.projectFileDisplay)
        let (project, problems) = document.map(ProjectReader.read) ?? (nil, [])
        guard let project, !(parse + problems).contains(where: { $0.severity == .error }) else {
            return .failure(DiagnosticsError(parse + problems))
        }
        return .success((project, paths))
    }
}

/// A project's `journal:` setting: a SQLite file (`path`, the default) or a PostgreSQL database
/// (`url`, the password from the environment), and how long a campaign's lease lasts.
public struct JournalSetting: Sendable, Hashable {
    /// The SQLite file, resolved; beside it live the rehearsal journal and the provider token
    /// cache, whatever the journal is.
    public var path: String
    /// The PostgreSQL journal's URL, when there is one: it is then the journal.
    public var url: String?
    /// The environment variable holding the PostgreSQL password (PGPASSWORD when nil).
    public var passwordVariable: String?
    /// Seconds a campaign's lease lasts unless renewed.
    public var lease: Double?
    /// Seconds one slice of a run lasts at one worker's share of the rate (PostgreSQL).
    public var slice: Double?

    public init(
        path: String,
        url: String? = nil,
        passwordVariable: String? = nil,
        lease: Double? = nil,
        slice: Double? = nil
    ) {
        self.path = path
        self.url = url
        self.passwordVariable = passwordVariable
        self.lease = lease
        self.slice = slice
    }

    public init(_ project: Project, paths: ProjectPaths) {
        self.init(
            path: paths.url(project.journalPath).path,
            url: project.journalURL,
            passwordVariable: project.journalPasswordVariable,
            lease: project.journalLease.map { Double($0.seconds) },
            slice: project.journalSlice.map { Double($0.seconds) }
        )
    }

    /// The journal: its URL, else its file.
    public var address: String { url ?? path }

    /// The same project with the journal `--journal` names instead (a file or a URL), when it does.
    public func overridden(by option: String?) -> JournalSetting {
        guard let option else { return self }
        var setting = self
        if Project.namesPostgres(option) {
            setting.url = option
        } else {
            setting.url = nil
            setting.path = option
        }
        return setting
    }
}
