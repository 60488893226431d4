import Crypto
import Foundation
import PushcampAudience
import PushcampModel
import PushcampTemplates
import Yams

/// Resolves a parsed campaign against its project: the app, the templates of each variant, the audience
/// sources; then checks names used by filters and templates against what the audience provides.
struct CampaignAssembler {
    let campaign: Campaign
    let project: Project
    let paths: ProjectPaths
    let document: YAMLDocument
    var diagnostics: [Diagnostic] = []
    /// Files whose bytes make up the revision, in a fixed order, with their role and their path as
    /// written (relative to the project root).
    var revisionFiles: [(role: CampaignInput.Role, path: String, url: URL)] = []
    /// What `${env:…}` in an audience's path reads.
    let environment: [String: String]
    /// Whether the campaign is loaded for a review (`CampaignLoader.reviewing`).
    let reviewing: Bool
    /// What opens audiences on a database server (`CampaignLoader.servers`).
    let servers: (any AudienceServers)?
    /// What a review read of the audience.
    var review: AudienceReview?

    init(
        campaign: Campaign,
        project: Project,
        paths: ProjectPaths,
        document: YAMLDocument,
        environment: [String: String] = [:],
        reviewing: Bool = false,
        servers: (any AudienceServers)? = nil
    ) {
        self.servers = servers
        self.campaign = campaign
        self.project = project
        self.paths = paths
        self.document = document
        self.environment = environment
        self.reviewing = reviewing
    }

    mutating func assemble() -> LoadedCampaign? {
        let apps = resolveApps()
        let app = apps?.apns
        let broadcast = resolveBroadcast(app: app)
        let message = campaign.message
        let pushType = campaign.channel != nil ? PushType.liveactivity : message.pushType
        let priority = message.priority ?? pushType.defaultPriority
        let source = reviewing ? reviewedAudience() : makeSource(campaign.audience.source)
        let exclusions = reviewing ? reviewedExclusions() : campaign.audience.exclude.compactMap { makeSource($0) }
        checkNeutralKeys()
        let variants = compileVariants(iosApp: app != nil)
        let collapseID = compileCollapseID()
        let android = apps?.fcm.flatMap { compileAndroid($0, collapseID: collapseID) }

        // A broadcast has no recipient: its templates know the campaign's variables and `now`.
        let columns = campaign.channel != nil ? ["now"] : source.flatMap { knownColumns($0) }
        review?.columns = columns
        for exclusion in exclusions { _ = knownColumns(exclusion) }
        if let columns, review?.wasRead ?? true {
            checkNames(columns: columns, variants: variants, android: android)
        }

        guard let apps, let source, let variants, !diagnostics.hasErrors else { return nil }
        var expiration = message.expiration ?? project.defaults.expiration
        if let broadcast, expiration == nil {
            expiration = broadcast.channel.storage == .none ? .immediately : .after(Self.broadcastStorage)
        }
        let throttle = campaign.throttle
        let rate = throttle.rate ?? project.defaults.throttle.rate
        let (revision, inputs) = revision()
        let loaded = LoadedCampaign(
            id: campaign.id,
            description: campaign.description,
            path: campaign.path,
            app: app,
            pushType: pushType,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            collapseIDLocation: message.collapseIDLocation,
            topic: app.map { broadcast != nil ? $0.topic : message.topic ?? pushType.topic(forBundleTopic: $0.topic) }
                ?? "",
            topicLocation: message.topicLocation,
            variants: variants,
            hasVariants: !message.variants.isEmpty,
            holdout: message.holdout,
            locale: message.locale,
            audience: AudienceStream(
                source: source,
                filter: campaign.audience.filter,
                exclusions: exclusions,
                platforms: platformRule(apns: apps.apns, fcm: apps.fcm)
            ),
            filterText: campaign.audience.filterText,
            rate: rate ?? Project.defaultRate,
            rateIsDefault: rate == nil,
            connections: throttle.connections ?? project.defaults.throttle.connections ?? Project.defaultConnections,
            retry: campaign.retry,
            schedule: campaign.schedule,
            quietHours: campaign.quietHours,
            revision: revision,
            inputs: inputs,
            messageLocation: message.location,
            journal: JournalSetting(project, paths: paths),
            registeredAtAttribute: campaign.audience.registeredAt ?? "registered_at",
            frequencyCap: frequencyCap(),
            subscriptions: campaign.audience.subscriptions,
            userKey: campaign.audience.userKey,
            trigger: campaign.trigger,
            broadcast: broadcast
        )
        var result = loaded
        result.android = android
        result.maxInvalid = campaign.audience.maxInvalid
        result.readout = campaign.readout
        result.review = review
        if let problem = unplannable(result) {
            diagnostics.append(problem)
            return nil
        }
        return result
    }

    /// Why a campaign reading a live audience (a PostgreSQL query, as source or exclusion) cannot be
    /// sent yet. Such a run is planned once into the journal's snapshot, so that a resume or another
    /// worker sends the audience it was planned with; a trigger's run is planned from the audience
    /// joined to the notifications it fires for, as it is sent.
    func unplannable(_ loaded: LoadedCampaign) -> Diagnostic? {
        let specs = [campaign.audience.source] + campaign.audience.exclude
        guard let live = specs.first(where: { if case .postgres = $0.kind { true } else { false } }) else {
            return nil
        }
        guard loaded.trigger != nil else { return nil }
        return .error(
            "a PostgreSQL audience is planned once into the journal, and this campaign cannot be yet: "
                + "it is sent by a trigger; export the audience to a file for it (docs/campaign-format.md#postgresql)",
            at: live.location
        )
    }

    func frequencyCap() -> FrequencyCapSpec? {
        switch campaign.frequencyCap {
        case .cap(let spec)?: return spec
        case .off?: return nil
        case nil: return project.defaults.frequencyCap
        }
    }

    // MARK: App

    // MARK: Audience

    /// Whether the campaign may read `path`: inside the project, or a folder pushcamp.yaml allows.
    mutating func permitted(_ path: String, _ what: String, at location: SourceLocation) -> Bool {
        guard paths.permits(paths.url(path), allowed: project.allowedFolders) else {
            diagnostics.append(
                .error(
                    "\(what) '\(path)' is outside the project (the folder of pushcamp.yaml); campaigns read files "
                        + "inside it, or in a folder pushcamp.yaml lists under files.allow",
                    at: location
                )
            )
            return false
        }
        return true
    }

    mutating func makeSource(_ spec: SourceSpec) -> (any AudienceSource)? {
        let written = Self.writtenPath(spec)
        var path = ""
        if let written {
            guard let resolved = resolvedPath(written, at: spec.location),
                permitted(resolved, "audience file", at: spec.location)
            else { return nil }
            path = resolved
        }
        switch spec.kind {
        case .csv(_, let delimiter):
            revisionFiles.append((.audience, path, paths.url(path)))
            return CSVSource(
                path: paths.url(path).path,
                name: paths.display(path),
                tokenColumn: spec.tokenColumn,
                delimiter: delimiter,
                location: spec.location
            )
        case .jsonLines:
            revisionFiles.append((.audience, path, paths.url(path)))
            return JSONLinesSource(
                path: paths.url(path).path,
                name: paths.display(path),
                tokenColumn: spec.tokenColumn,
                location: spec.location
            )
        case .sqlite(_, let query):
            revisionFiles.append((.audience, path, paths.url(path)))
            return SQLiteSource(
                path: paths.url(path).path,
                name: paths.display(path),
                query: query,
                tokenColumn: spec.tokenColumn,
                location: spec.location
            )
        case .postgres(let written, let query):
            return postgresSource(written, query: query, spec: spec)
        case .inline(let rows):
            // A broadcast campaign's audience is empty on purpose: its channel is the audience.
            if rows.isEmpty && campaign.channel == nil {
                diagnostics.append(.error("the inline audience lists no recipient", at: spec.location))
                return nil
            }
            return InlineSource(rows: rows, name: "\(campaign.path) (inline)", tokenColumn: spec.tokenColumn)
        }
    }

    /// A PostgreSQL audience, its URL's `${env:…}` filled in. Its rows are not part of the revision
    /// (the query is, as written in the campaign): a run of it is planned once into the journal.
    mutating func postgresSource(_ written: String, query: String, spec: SourceSpec) -> (any AudienceSource)? {
        guard case .success(let reference) = ConfigString.parse(written) else { return nil }
        let url: String
        switch reference.resolve(environment) {
        case .success(let resolved): url = resolved
        case .failure(let error):
            diagnostics.append(.error("audience.source.postgres: \(error.message)", at: spec.location))
            return nil
        }
        guard let servers else {
            diagnostics.append(.error("this build of pushcamp reads no PostgreSQL audience", at: spec.location))
            return nil
        }
        do {
            return try servers.postgres(url: url, query: query, tokenColumn: spec.tokenColumn, location: spec.location)
        } catch {
            diagnostics.append(error.diagnostic)
            return nil
        }
    }

    /// An audience file's path with its `${env:…}` filled in (syntax was checked when the campaign
    /// was read); a variable not set is an error naming it, never its value.
    mutating func resolvedPath(_ written: String, at location: SourceLocation) -> String? {
        guard case .success(let reference) = ConfigString.parse(written) else { return written }
        switch reference.resolvePath(environment) {
        case .success(let path): return path
        case .failure(let error):
            diagnostics.append(.error("audience file '\(written)': \(error.message)", at: location))
            return nil
        }
    }

    /// The source's columns, or nil when rows may differ; a source that cannot be opened is an error.
    mutating func knownColumns(_ source: any AudienceSource) -> [String]? {
        do {
            return try source.columns()
        } catch {
            diagnostics.append(error.diagnostic)
            return nil
        }
    }

    // MARK: Templates

    /// The variants, each with its APNs payload: its own, else the message's, else the one the
    /// message's neutral part makes (or, for a campaign without an iOS app, an empty one it never sends).
    mutating func compileVariants(iosApp: Bool) -> [LoadedCampaign.Variant]? {
        let message = campaign.message
        let defaultLocale = message.locale?.defaultLocale ?? "en"
        var basePayload = message.payload.flatMap { compilePayload($0) }
        if message.payload == nil {
            if let node = neutralPayload() {
                basePayload = compilePayload(.inline(node, path: campaign.path))
            } else if !iosApp {
                basePayload = compilePayload(.inline(.mapping(Node.Mapping([])), path: campaign.path))
            } else if message.android != nil, message.variants.contains(where: { $0.payload == nil }) {
                diagnostics.append(
                    .error(
                        "the message has an 'android' part only: the iOS app needs a 'title' and 'body' (for both platforms) or a 'payload'",
                        at: message.location
                    )
                )
            }
        }
        let baseStrings = message.strings.flatMap { compileStrings($0, defaultLocale: defaultLocale) }
        let baseVariables = campaign.variables
        var variants: [LoadedCampaign.Variant] = []
        if message.variants.isEmpty {
            guard let basePayload else { return nil }
            variants.append(
                LoadedCampaign.Variant(
                    name: "default",
                    weight: 1,
                    payload: basePayload,
                    strings: baseStrings,
                    variables: attributes(baseVariables),
                    location: message.location
                )
            )
            return variants
        }
        if message.variants.allSatisfy({ $0.weight == 0 }) {
            diagnostics.append(
                .error("every variant has weight 0, so nobody would be sent anything", at: message.location)
            )
        }
        var failed = false
        for spec in message.variants {
            let payload = spec.payload.flatMap { compilePayload($0) } ?? basePayload
            let strings = spec.strings.flatMap { compileStrings($0, defaultLocale: defaultLocale) } ?? baseStrings
            guard let payload else {
                failed = true
                continue
            }
            var variables = baseVariables.filter { base in !spec.variables.contains { $0.name == base.name } }
            variables += spec.variables
            variants.append(
                LoadedCampaign.Variant(
                    name: spec.name,
                    weight: spec.weight,
                    payload: payload,
                    strings: strings,
                    variables: attributes(variables),
                    location: spec.location
                )
            )
        }
        return failed ? nil : variants
    }

    func attributes(_ pairs: [(name: String, value: AttributeValue)]) -> Attributes {
        Attributes(schema: AttributeSchema(names: pairs.map(\.name)), values: pairs.map(\.value))
    }

    mutating func loadNode(_ source: TemplateSource, what: String) -> (Node, String)? {
        switch source {
        case .inline(let node, let path):
            return (node, path)
        case .file(let path, let location):
            let url = paths.url(path)
            guard permitted(path, "\(what) file", at: location) else { return nil }
            guard FileManager.default.fileExists(atPath: url.path) else {
                diagnostics.append(.error("\(what) file '\(paths.display(path))' does not exist", at: location))
                return nil
            }
            revisionFiles.append((.template, path, url))
            let (document, problems) = YAMLDocument.load(url, displayPath: paths.display(path))
            diagnostics += problems
            guard let document else { return nil }
            guard let root = document.root else {
                diagnostics.append(
                    .error("\(what) file is empty", at: SourceLocation(path: paths.display(path), line: 1, column: 1))
                )
                return nil
            }
            return (root, paths.display(path))
        }
    }

    mutating func compilePayload(_ source: TemplateSource) -> PayloadTemplate? {
        guard let (written, path) = loadNode(source, what: "payload") else { return nil }
        let node = campaign.channel != nil ? Self.stampingNow(written) : written
        let (payload, problems) = PayloadTemplate.compile(node, path: path)
        diagnostics += problems
        return payload
    }

    mutating func compileStrings(_ source: TemplateSource, defaultLocale: String) -> LocalizedStrings? {
        guard let (node, path) = loadNode(source, what: "strings") else { return nil }
        let (strings, problems) = LocalizedStrings.compile(node, path: path, defaultLocale: defaultLocale)
        diagnostics += problems
        return strings
    }

    /// The campaign's `collapse_id`; by default the campaign id, so that a push sent twice (in flight
    /// when a run was killed, sent again on resume) replaces the first on the device. `none` opts out.
    mutating func compileCollapseID() -> MustacheTemplate? {
        // Campaign ids are at most 64 plain characters: a valid, constant collapse id.
        guard let text = campaign.message.collapseID else { return try? MustacheTemplate(campaign.id) }
        if text == "none" { return nil }
        let at = campaign.message.collapseIDLocation
        do throws(MustacheTemplate.ParseError) {
            let template = try MustacheTemplate(text)
            if template.isConstant, text.utf8.count > 64 {
                diagnostics.append(.error("collapse_id is \(text.utf8.count) bytes; APNs takes at most 64", at: at))
            }
            return template
        } catch {
            diagnostics.append(.error("collapse_id: \(error.message)", at: at))
            return nil
        }
    }

    // MARK: Names

    /// Checks filter attributes and template variables against the audience's columns and the
    /// campaign's variables; only possible when the source knows its columns (CSV, SQLite).
    mutating func checkNames(columns: [String], variants: [LoadedCampaign.Variant]?, android: AndroidTarget?) {
        if let filter = campaign.audience.filter, let location = campaign.audience.filterLocation {
            for name in filter.attributeNames where !columns.contains(String(name.split(separator: ".").first ?? "")) {
                diagnostics.append(
                    .error(
                        "the filter uses '\(name)', which is not a column of the audience\(Suggestion.didYouMean(name, in: columns)) (columns: \(columns.joined(separator: ", ")))",
                        at: location
                    )
                )
            }
        }
        guard let variants else { return }
        var reported: Set<String> = []
        for variant in variants {
            var known = Set(columns).union(variant.variables.schema.names)
            // `{{channels.NAME}}`: a declared channel's id, from the journal at plan and send time.
            if !project.channels.isEmpty { known.insert(LoadedCampaign.channelsVariable) }
            known.insert(LoadedCampaign.nowVariable)
            var templates: [(MustacheTemplate, (Int) -> SourceLocation)] = variant.payload.leaves.map { leaf in
                (leaf.template, { leaf.location(offset: $0) })
            }
            if let strings = variant.strings {
                templates += strings.entries.map { entry in (entry.template, { entry.location.location(offset: $0) }) }
            }
            if let android {
                templates += android.texts.map { text in (text.template, { _ in text.location }) }
            }
            for (template, locate) in templates {
                for reference in template.references where !reference.isNested && !known.contains(reference.name) {
                    let location = locate(reference.offset)
                    guard reported.insert("\(location)\(reference.name)").inserted else { continue }
                    let hint = Suggestion.didYouMean(reference.name, in: known)
                    if reference.isSection {
                        diagnostics.append(
                            .warning(
                                "section '\(reference.name)' is not an audience column or a variable, so it is always false\(hint)",
                                at: location
                            )
                        )
                    } else {
                        diagnostics.append(
                            .error(
                                "'\(reference.name)' is not an audience column or a campaign variable\(hint)",
                                at: location
                            )
                        )
                    }
                }
                for (key, offset) in template.localizedKeys {
                    let location = locate(offset)
                    guard reported.insert("\(location)>\(key)").inserted else { continue }
                    if let strings = variant.strings {
                        if !strings.hasKey(key) {
                            diagnostics.append(
                                .error(
                                    "no localized string '\(key)'\(Suggestion.didYouMean(key, in: strings.keyLocations.keys.sorted()))",
                                    at: location
                                )
                            )
                        }
                    } else if campaign.message.strings == nil
                        && campaign.message.variants.allSatisfy({ $0.strings == nil })
                    {
                        // (Strings that failed to compile were reported already.)
                        diagnostics.append(
                            .error(
                                "'{{> \(key)}}' includes a localized string, but the campaign has no 'strings'",
                                at: location
                            )
                        )
                    }
                }
            }
        }
    }

    // MARK: Revision

    /// SHA-256 over the campaign file, then each template and audience file, in order; the first 16
    /// hex digits name the revision. Each file's own SHA-256 comes with it, and the project file's
    /// (not part of the revision), for plan files to say what changed.
    func revision() -> (String, [CampaignInput]) {
        var hasher = SHA256()
        hasher.update(data: Array("pushcamp-revision-1\n".utf8))
        hasher.update(data: document.bytes)
        let campaignPath = ProjectPaths.display(URL(fileURLWithPath: campaign.path), workingDirectory: paths.root)
        var inputs = [
            CampaignInput(role: .campaign, path: campaignPath, sha256: Self.hex(SHA256.hash(data: document.bytes)))
        ]
        for (role, path, url) in revisionFiles {
            hasher.update(data: Array("\n\(url.lastPathComponent)\n".utf8))
            var own = SHA256()
            if let handle = try? FileHandle(forReadingFrom: url) {
                defer { try? handle.close() }
                while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                    hasher.update(data: chunk)
                    own.update(data: chunk)
                }
            }
            inputs.append(CampaignInput(role: role, path: path, sha256: Self.hex(own.finalize())))
        }
        let projectBytes = (try? Data(contentsOf: paths.projectFile)) ?? Data()
        inputs.append(
            CampaignInput(
                role: .project,
                path: ProjectPaths.projectFileName,
                sha256: Self.hex(SHA256.hash(data: projectBytes))
            )
        )
        return (Self.hex(hasher.finalize()).prefix(16).description, inputs)
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
