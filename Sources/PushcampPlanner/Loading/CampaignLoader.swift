import Foundation
import PushcampAudience
import PushcampModel
import PushcampTemplates
import Yams

/// Stage one of the pipeline: `campaign file → LoadedCampaign`. Reads the campaign and its project,
/// compiles templates and opens audience sources, and checks what can be checked without reading the
/// audience's rows; every problem is a located diagnostic.
public struct CampaignLoader: Sendable {
    public var workingDirectory: URL
    /// What `${env:…}` in an audience's path reads.
    public var environment: [String: String]
    /// Loads for a review (`plan --review`, `pushcamp review`): `audience.sample` is planned
    /// instead of the audience, and an audience or exclusion that cannot be read here (a variable
    /// not set, a file not committed) is noted in `LoadedCampaign.review` instead of failing.
    public var reviewing: Bool
    /// What opens audiences kept on a database server (`source: { postgres: … }`); without it,
    /// such a campaign fails to load.
    public var servers: (any AudienceServers)?

    public init(
        workingDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        environment: [String: String] = ProcessInfo.processInfo.environment,
        reviewing: Bool = false,
        servers: (any AudienceServers)? = nil
    ) {
        self.workingDirectory = workingDirectory
        self.environment = environment
        self.reviewing = reviewing
        self.servers = servers
    }

    public struct Result: Sendable {
        public var campaign: LoadedCampaign?
        public var diagnostics: [Diagnostic]
    }

    public func load(_ path: String) -> Result {
        let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : workingDirectory.appendingPathComponent(path)
        let display = ProjectPaths.display(url, workingDirectory: workingDirectory)
        let (document, parseDiagnostics) = YAMLDocument.load(url, displayPath: display)
        guard let document else { return Result(campaign: nil, diagnostics: parseDiagnostics) }
        let (campaign, campaignDiagnostics) = CampaignReader.read(document)

        guard let paths = ProjectPaths.locate(campaign: url, workingDirectory: workingDirectory) else {
            let missing = Diagnostic.error(
                "no \(ProjectPaths.projectFileName) found in \(ProjectPaths.display(url.deletingLastPathComponent(), workingDirectory: workingDirectory)) or any directory above it; campaigns need one to name their apps (see docs/campaign-format.md)",
                at: SourceLocation(path: display)
            )
            return Result(campaign: nil, diagnostics: campaignDiagnostics + [missing])
        }
        let (projectDocument, projectParse) = YAMLDocument.load(
            paths.projectFile,
            displayPath: paths.projectFileDisplay
        )
        var diagnostics = campaignDiagnostics + projectParse
        let (project, projectDiagnostics) = projectDocument.map(ProjectReader.read) ?? (nil, [])
        diagnostics += projectDiagnostics
        guard let campaign, let project else { return Result(campaign: nil, diagnostics: diagnostics) }

        var assembler = CampaignAssembler(
            campaign: campaign,
            project: project,
            paths: paths,
            document: document,
            environment: environment,
            reviewing: reviewing,
            servers: servers
        )
        let loaded = assembler.assemble()
        return Result(campaign: loaded, diagnostics: (diagnostics + assembler.diagnostics).sortedByLocation())
    }
}
