import Foundation
import PushcampAPNsCore
import PushcampModel
import PushcampTemplates

/// `validate`: everything that can be checked without reading the audience's rows. The campaign and
/// project files, templates and strings, the audience's files and columns, and the pre-flight rules
/// that depend only on the campaign.
public struct Validation: Sendable {
    public var loader: CampaignLoader
    /// What a broadcast's request is checked at (its `timestamp`).
    public var clock: any WallClock

    public init(loader: CampaignLoader = CampaignLoader(), clock: any WallClock = SystemWallClock()) {
        self.loader = loader
        self.clock = clock
    }

    public struct FileResult: Sendable {
        public enum Kind: String, Sendable {
            case campaign
            case project
        }

        public var path: String
        public var diagnostics: [Diagnostic]
        public var kind: Kind = .campaign
        public var isValid: Bool { !diagnostics.hasErrors }
    }

    /// `pushcamp validate` with no files: the nearest pushcamp.yaml, then every campaign file `serve`
    /// would watch (`serve.campaigns`), each checked as `check` does, and campaign ids that two
    /// files share (serve sends neither).
    public func checkProject() -> [FileResult] {
        let workingDirectory = loader.workingDirectory
        let probe = workingDirectory.appendingPathComponent(ProjectPaths.projectFileName)
        guard let paths = ProjectPaths.locate(campaign: probe, workingDirectory: workingDirectory) else {
            let missing = Diagnostic.error(
                "no \(ProjectPaths.projectFileName) here or in any folder above; run `pushcamp validate` inside a "
                    + "project (`pushcamp init` starts one), or name campaign files",
                at: nil
            )
            return [FileResult(path: ProjectPaths.projectFileName, diagnostics: [missing], kind: .project)]
        }
        let (project, projectResult) = checkProjectFile(paths.projectFile)
        guard let project else { return [projectResult] }
        var results = [projectResult]
        var firstFile: [String: String] = [:]
        for url in paths.campaignFiles(in: project.serve.campaignFolders) {
            var (result, id) = checked(ProjectPaths.display(url, workingDirectory: workingDirectory))
            if let id {
                if let first = firstFile[id] {
                    result.diagnostics.append(
                        .error(
                            "campaign \(id) is also defined in \(first); campaign ids must be unique (serve sends neither)",
                            at: SourceLocation(path: result.path)
                        )
                    )
                } else {
                    firstFile[id] = result.path
                }
            }
            results.append(result)
        }
        return results
    }

    /// `pushcamp validate pushcamp.yaml`: the project file alone.
    public func checkProjectFile(_ url: URL) -> (Project?, FileResult) {
        let display = ProjectPaths.display(url, workingDirectory: loader.workingDirectory)
        let (document, parse) = YAMLDocument.load(url, displayPath: display)
        let (project, problems) = document.map(ProjectReader.read) ?? (nil, [])
        let diagnostics = (parse + problems).sortedByLocation()
        let result = FileResult(path: display, diagnostics: diagnostics, kind: .project)
        return (result.isValid ? project : nil, result)
    }

    public func check(_ path: String) -> FileResult { checked(path).result }

    private func checked(_ path: String) -> (result: FileResult, id: String?) {
        let result = loader.load(path)
        var diagnostics = result.diagnostics
        if let campaign = result.campaign, campaign.broadcast != nil {
            // Its one request, as `plan` checks it (without the journal: whether the channel was
            // created is `plan`'s and `send`'s to say).
            let (_, problems) = BroadcastMessage.make(
                campaign,
                channelID: nil,
                now: clock.now(),
                requestID: "",
                checkCreated: false
            )
            diagnostics += problems
        } else if let campaign = result.campaign {
            var seen: Set<String> = []
            for variant in campaign.variants {
                for issue in StaticRules.check(campaign, variant: variant) where seen.insert(issue.message).inserted {
                    diagnostics.append(.error(issue.message, at: issue.location))
                }
            }
            for variant in campaign.variants {
                guard let strings = variant.strings else { continue }
                let keys = variant.payload.leaves.flatMap { $0.template.localizedKeys.map(\.0) }
                for warning in Self.mixedLanguages(strings, keys: keys) where seen.insert(warning.message).inserted {
                    diagnostics.append(warning)
                }
            }
            if let locale = campaign.locale, locale.attribute != nil,
                campaign.variants.allSatisfy({ $0.strings == nil })
            {
                diagnostics.append(
                    .warning(
                        "'locale' reads each recipient's locale but the campaign has no 'strings' to localize",
                        at: campaign.messageLocation
                    )
                )
            }
        }
        return (FileResult(path: path, diagnostics: diagnostics.sortedByLocation()), result.campaign?.id)
    }

    /// Warnings for locales whose fallback puts two languages in one notification: a pt-BR title
    /// with an English body, when pt-BR (and pt) define only some of the keys a payload uses.
    static func mixedLanguages(_ strings: LocalizedStrings, keys: [String]) -> [Diagnostic] {
        let used = Array(Set(keys)).sorted()
        guard used.count > 1 else { return [] }
        let defaultLanguage = LocalizedStrings.language(strings.defaultLocale)
        var warnings: [Diagnostic] = []
        for locale in strings.locales where LocalizedStrings.language(locale) != defaultLanguage {
            let suppliers = used.map { (key: $0, from: strings.supplier(of: $0, for: locale)) }
            let languages = Set(suppliers.compactMap { $0.from.map(LocalizedStrings.language) })
            guard languages.count > 1 else { continue }
            let fallen = suppliers.filter { $0.from.map(LocalizedStrings.language) == defaultLanguage }
            let own = suppliers.filter { $0.from.map(LocalizedStrings.language) != defaultLanguage }
            let location = strings.entries.first {
                LocalizedStrings.normalize($0.locale) == LocalizedStrings.normalize(locale)
            }
            .map { $0.location.location(offset: 0) }
            warnings.append(
                .warning(
                    "locale '\(locale)' mixes languages in one notification: \(own.map { "'\($0.key)' from \($0.from ?? "?")" }.joined(separator: ", ")), but \(fallen.map { "'\($0.key)'" }.joined(separator: ", ")) from \(strings.defaultLocale) (the default); add \(fallen.count == 1 ? "it" : "them") to \(locale)",
                    at: location
                )
            )
        }
        return warnings
    }
}

/// How diagnostics are printed.
public enum DiagnosticFormat: String, CaseIterable, Sendable {
    case text
    case json
    case github

    public func render(_ results: [Validation.FileResult]) -> String {
        switch self {
        case .text:
            var out = results.flatMap(\.diagnostics).map(\.description).joined(separator: "\n")
            if !out.isEmpty { out += "\n" }
            let invalid = results.filter { !$0.isValid }.count
            let errors = results.flatMap(\.diagnostics).filter { $0.severity == .error }.count
            let warnings = results.flatMap(\.diagnostics).count - errors
            let projects = results.filter { $0.kind == .project }
            let campaigns = results.count - projects.count
            let campaignsText = "\(campaigns) \(campaigns == 1 ? "campaign" : "campaigns")"
            if invalid == 0 {
                let files = projects.map(\.path).joined(separator: ", ")
                out +=
                    projects.isEmpty
                    ? "\(campaignsText) valid"
                    : campaigns == 0 ? "\(files) valid" : "\(files) and \(campaignsText) valid"
            } else {
                let noun = projects.isEmpty ? (results.count == 1 ? "campaign" : "campaigns") : "files"
                out += "\(invalid) of \(results.count) \(noun) invalid: \(errors) error\(errors == 1 ? "" : "s")"
            }
            if warnings > 0 { out += ", \(warnings) warning\(warnings == 1 ? "" : "s")" }
            return out + "\n"
        case .json:
            let files = results.map { result -> JSONValue in
                .object([
                    ("path", .string(result.path)), ("kind", .string(result.kind.rawValue)),
                    ("valid", .bool(result.isValid)),
                    ("diagnostics", .array(result.diagnostics.map(Self.json))),
                ])
            }
            return JSONValue.object([("valid", .bool(results.allSatisfy(\.isValid))), ("files", .array(files))]).text
                + "\n"
        case .github:
            return results.flatMap(\.diagnostics).map(Self.annotation).map { $0 + "\n" }.joined()
        }
    }

    static func json(_ diagnostic: Diagnostic) -> JSONValue {
        .object([
            ("severity", .string(diagnostic.severity.rawValue)), ("path", .optional(diagnostic.location?.path)),
            ("line", diagnostic.location?.line.map { .integer($0) } ?? .null),
            ("column", diagnostic.location?.column.map { .integer($0) } ?? .null),
            ("message", .string(diagnostic.message)),
        ])
    }

    /// A GitHub Actions workflow command: `::error file=…,line=…,col=…::message`.
    static func annotation(_ diagnostic: Diagnostic) -> String {
        func escapeData(_ text: String) -> String {
            text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D")
                .replacingOccurrences(of: "\n", with: "%0A")
        }
        func escapeProperty(_ text: String) -> String {
            escapeData(text).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
        }
        var properties: [String] = []
        if let location = diagnostic.location {
            properties.append("file=\(escapeProperty(location.path))")
            if let line = location.line { properties.append("line=\(line)") }
            if let column = location.column { properties.append("col=\(column)") }
        }
        let head =
            "::\(diagnostic.severity.rawValue)" + (properties.isEmpty ? "" : " " + properties.joined(separator: ","))
        return head + "::" + escapeData(diagnostic.message)
    }
}
