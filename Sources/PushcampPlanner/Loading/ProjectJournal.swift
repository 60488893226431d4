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
        project(workingDirectory: workingDirectory).map { $0.paths.url($0.project.journalPath).path }
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
