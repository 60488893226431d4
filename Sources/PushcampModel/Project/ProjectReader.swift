import Yams

/// Reads `pushcamp.yaml`, reporting every problem of the file at once.
public enum ProjectReader {
    static let topKeys = ["apps", "journal", "defaults", "files", "serve", "channels", "proxy"]
    static let appKeys = [
        "topic", "team_id", "key_id", "key_file", "certificate", "certificate_password", "environment", "endpoint",
        "ca_file", "app_store", "broadcast_endpoint", "channels_endpoint", "service_account", "project_id", "quota",
    ]

    public static func read(_ document: YAMLDocument) -> (Project?, [Diagnostic]) {
        let reader = YAMLReader(path: document.path)
        guard let root = document.root else {
            reader.error(
                "pushcamp.yaml is empty; it needs 'apps'",
                at: SourceLocation(path: document.path, line: 1, column: 1)
            )
            return (nil, reader.diagnostics)
        }
        guard let top = reader.mapping(root, in: "pushcamp.yaml", allowed: topKeys, required: ["apps"]) else {
            return (nil, reader.diagnostics)
        }
        var apps: [String: AppConfig] = [:]
        var appNames: [String] = []
        var fcmApps: [String: FCMAppConfig] = [:]
        var fcmAppNames: [String] = []
        if let appsNode = top["apps"], let entries = reader.freeMapping(appsNode, in: "apps") {
            if entries.isEmpty { reader.error("'apps' lists no app", at: appsNode) }
            for entry in entries {
                if isFCMApp(entry.value) {
                    if let app = readFCMApp(entry.key, entry.value, reader) {
                        fcmApps[entry.key] = app
                        fcmAppNames.append(entry.key)
                    }
                } else if let app = readApp(entry.key, entry.value, reader) {
                    apps[entry.key] = app
                    appNames.append(entry.key)
                }
            }
        }
        var journalPath = Project.defaultJournalPath
        var journalURL: String?
        var journalPasswordVariable: String?
        var journalLease: TimeSpan?
        var journalSlice: TimeSpan?
        var journalRetention: TimeSpan?
        if let journalNode = top["journal"],
            let map = reader.mapping(
                journalNode,
                in: "journal",
                allowed: ["path", "url", "password_env", "lease", "slice", "retention"]
            )
        {
            if let path = map["path"].flatMap({ reader.string($0, "journal.path") }) { journalPath = path }
            if let node = map["url"], let url = reader.string(node, "journal.url") {
                if !Project.namesPostgres(url) {
                    reader.error(
                        "'journal.url' names a PostgreSQL journal, like postgres://pushcamp@db.internal:5432/pushcamp; "
                            + "a SQLite file is 'journal.path'",
                        at: node
                    )
                } else if Self.holdsPassword(url) {
                    reader.error(
                        "'journal.url' must not hold a password (it would be in git): put it in PGPASSWORD, or in "
                            + "the variable 'journal.password_env' names",
                        at: node
                    )
                } else {
                    journalURL = url
                }
            }
            if let node = map["password_env"], let name = reader.string(node, "journal.password_env") {
                journalPasswordVariable = name
                if map["url"] == nil {
                    reader.error("'journal.password_env' is for a PostgreSQL journal ('journal.url')", at: node)
                }
            }
            if let node = map["lease"], let lease = reader.parsed(node, "journal.lease", TimeSpan.parse) {
                if lease.seconds < 2 || lease.seconds > 600 {
                    reader.error("'journal.lease' is between 2s and 10m (default 15s)", at: node)
                } else {
                    journalLease = lease
                }
            }
            if let node = map["slice"], let slice = reader.parsed(node, "journal.slice", TimeSpan.parse) {
                if slice.seconds < 1 || slice.seconds > 600 {
                    reader.error("'journal.slice' is between 1s and 10m (20s is a good start)", at: node)
                } else if map["url"] == nil {
                    reader.error("'journal.slice' is for a PostgreSQL journal ('journal.url')", at: node)
                } else {
                    journalSlice = slice
                }
            }
            if let node = map["retention"], let retention = reader.parsed(node, "journal.retention", TimeSpan.parse) {
                if retention.seconds < 86_400 {
                    reader.error(
                        "'journal.retention' is at least 1d (how long each recipient's rows are kept after a run ends)",
                        at: node
                    )
                } else {
                    journalRetention = retention
                }
            }
        }
        var allowedFolders: [String] = []
        if let filesNode = top["files"], let map = reader.mapping(filesNode, in: "files", allowed: ["allow"]),
            let allow = map["allow"]
        {
            if case .sequence(let items) = allow {
                allowedFolders = items.compactMap { reader.string($0, "files.allow") }
            } else {
                reader.error(
                    "'files.allow' lists folders outside the project campaigns may read, like [/srv/exports]",
                    at: allow
                )
            }
        }
        var defaults = Project.Defaults(throttle: ThrottleSpec(), expiration: nil)
        if let defaultsNode = top["defaults"],
            let map = reader.mapping(
                defaultsNode,
                in: "defaults",
                allowed: ["throttle", "expiration", "frequency_cap"]
            )
        {
            if let throttle = map["throttle"] { defaults.throttle = CampaignReader.readThrottle(throttle, reader) }
            if let expiration = map["expiration"] {
                defaults.expiration = CampaignReader.readExpiration(expiration, reader)
            }
            if let cap = map["frequency_cap"],
                case .cap(let spec)? = CampaignReader.readFrequencyCap(cap, reader, allowOff: false)
            {
                defaults.frequencyCap = spec
            }
        }
        let serve = top["serve"].map { readServe($0, reader) } ?? ServeSpec()
        let channels = top["channels"].map { readChannels($0, apps: apps, appNames: appNames, reader) } ?? []
        guard !reader.diagnostics.hasErrors else { return (nil, reader.diagnostics) }
        var project =
            Project(
                apps: apps,
                appNames: appNames,
                journalPath: journalPath,
                defaults: defaults,
                path: document.path,
                allowedFolders: allowedFolders
            )
        // `proxy:`: every app's connections (APNs, FCM, Google's token endpoint) go through it.
        let proxy = readConfigString(top, "proxy", context: "pushcamp.yaml", reader)
        if let proxy {
            for name in project.apps.keys { project.apps[name]?.proxy = proxy }
            for name in fcmApps.keys { fcmApps[name]?.proxy = proxy }
        }
        project.fcmApps = fcmApps
        project.fcmAppNames = fcmAppNames
        project.serve = serve
        project.channels = channels
        project.journalURL = journalURL
        project.journalPasswordVariable = journalPasswordVariable
        project.journalLease = journalLease
        project.journalSlice = journalSlice
        project.journalRetention = journalRetention
        return (project, reader.diagnostics)
    }

    /// Whether a `postgres://USER:PASSWORD@HOST/…` URL carries a password.
    static func holdsPassword(_ url: String) -> Bool {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return false }
        let authority = url[url.index(colon, offsetBy: 3)...].prefix { $0 != "/" && $0 != "?" }
        guard let at = authority.lastIndex(of: "@") else { return false }
        return authority[..<at].contains(":")
    }

    static func readAppStore(_ node: Node, context: String, _ reader: YAMLReader) -> AppStoreConfig? {
        guard
            let map = reader.mapping(
                node,
                in: context,
                allowed: ["bundle_id", "app_apple_id", "environments", "trusted_roots", "api"],
                required: ["bundle_id"]
            ), let bundle = map["bundle_id"].flatMap({ reader.string($0, "\(context).bundle_id") })
        else { return nil }
        var config = AppStoreConfig(bundleID: bundle, appAppleID: nil, environments: ["production"], trustedRoots: [])
        if let node = map["app_apple_id"] {
            config.appAppleID = reader.int(node, "\(context).app_apple_id", in: 1...Int(Int64.max)).map(Int64.init)
        }
        if let node = map["environments"], let items = reader.sequence(node, "\(context).environments") {
            config.environments = items.compactMap { item in
                guard let text = reader.string(item, "\(context).environments") else { return nil }
                guard AppStoreConfig.environmentNames.contains(text.lowercased()) else {
                    reader.error(
                        "'\(text.excerpt())' is not an App Store environment; write production or sandbox (xcode and localtesting only on purpose)",
                        at: item
                    )
                    return nil
                }
                return text.lowercased()
            }
        }
        if config.environments.contains("production"), config.appAppleID == nil {
            reader.error(
                "'\(context)' accepts production notifications, which name the app by its app_apple_id; add it (App Store Connect › App Information › Apple ID)",
                at: node
            )
        }
        if let node = map["trusted_roots"], let items = reader.sequence(node, "\(context).trusted_roots") {
            config.trustedRoots = items.compactMap { reader.parsed($0, "\(context).trusted_roots", ConfigString.parse) }
        }
        if let node = map["api"] { config.api = readAppStoreAPI(node, context: "\(context).api", reader) }
        return config
    }

    /// `api: { issuer_id, key_id, key_file, endpoint }`.
    static func readAppStoreAPI(_ node: Node, context: String, _ reader: YAMLReader) -> AppStoreAPIConfig? {
        guard
            let map = reader.mapping(
                node,
                in: context,
                allowed: ["issuer_id", "key_id", "key_file", "endpoint"],
                required: ["issuer_id", "key_id", "key_file"]
            )
        else { return nil }
        let issuer = map["issuer_id"].flatMap { reader.string($0, "\(context).issuer_id") }
        let keyID = map["key_id"].flatMap { reader.string($0, "\(context).key_id") }
        let keyFile = map["key_file"].flatMap { reader.parsed($0, "\(context).key_file", ConfigString.parse) }
        var endpoint: String?
        if let node = map["endpoint"], let text = reader.string(node, "\(context).endpoint") {
            guard
                text.hasPrefix("https://") || text.hasPrefix("http://127.0.0.1:") || text.hasPrefix("http://localhost:")
            else {
                reader.error(
                    "'\(context).endpoint' must be an https:// URL (plain http only on 127.0.0.1 or localhost, for a test stub), found '\(text.excerpt())'",
                    at: node
                )
                return nil
            }
            endpoint = text
        }
        guard let issuer, let keyID, let keyFile else { return nil }
        return AppStoreAPIConfig(issuerID: issuer, keyID: keyID, keyFile: keyFile, endpoint: endpoint)
    }

    static func readServe(_ node: Node, _ reader: YAMLReader) -> ServeSpec {
        var serve = ServeSpec()
        guard
            let map = reader.mapping(node, in: "serve", allowed: ["listen", "campaigns", "app_store_path", "console"])
        else {
            return serve
        }
        if let node = map["app_store_path"], let path = reader.string(node, "serve.app_store_path") {
            if path.hasPrefix("/"), !path.contains(" ") {
                serve.appStorePath = path
            } else {
                reader.error("'serve.app_store_path' is a URL path like /app-store/notifications", at: node)
            }
        }
        if let listen = map["listen"].flatMap({ reader.parsed($0, "serve.listen", ListenAddress.parse) }) {
            serve.listen = listen
        }
        if let console = map["console"].flatMap({ reader.bool($0, "serve.console") }) {
            serve.console = console
        }
        if let campaigns = map["campaigns"] {
            if case .sequence(let items) = campaigns {
                serve.campaignFolders = items.compactMap { reader.string($0, "serve.campaigns") }
            } else if let folder = reader.string(campaigns, "serve.campaigns") {
                serve.campaignFolders = [folder]
            }
        }
        return serve
    }

    static func readApp(_ name: String, _ node: Node, _ reader: YAMLReader) -> AppConfig? {
        let context = "apps.\(name)"
        guard let map = reader.mapping(node, in: context, allowed: appKeys, required: ["topic"]) else { return nil }
        let topic = map["topic"].flatMap { reader.string($0, "\(context).topic") }
        if let node = map["project_id"] {
            reader.error(
                "'\(context).project_id' is an FCM setting: an Android app names its service_account (and, if not "
                    + "the key file's, its project_id)",
                at: node
            )
        }
        if let node = map["quota"] {
            reader.error(
                "'\(context).quota' is an FCM setting (a Firebase project's quota); an iOS campaign's rate is its throttle",
                at: node
            )
        }
        func config(_ key: String) -> ConfigString? { readConfigString(map, key, context: context, reader) }
        func appleID(_ key: String) -> String? {
            guard let node = map[key], let text = reader.string(node, "\(context).\(key)") else { return nil }
            guard text.count == 10, text.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else {
                reader.error(
                    "'\(key)' must be Apple's 10-character id (uppercase letters and digits), found '\(text.excerpt())'",
                    at: node
                )
                return nil
            }
            return text
        }
        let credentials: AppConfig.Credentials?
        switch (map["key_file"], map["certificate"]) {
        case (.some, .some):
            reader.error("'\(context)' names both key_file and certificate; use one way to authenticate", at: node)
            credentials = nil
        case (.some, .none):
            let teamID = appleID("team_id")
            let keyID = appleID("key_id")
            if map["team_id"] == nil { reader.error("'\(context)' uses key_file and so needs team_id", at: node) }
            if map["key_id"] == nil { reader.error("'\(context)' uses key_file and so needs key_id", at: node) }
            if let teamID, let keyID, let keyFile = config("key_file") {
                credentials = .token(teamID: teamID, keyID: keyID, keyFile: keyFile)
            } else {
                credentials = nil
            }
        case (.none, .some):
            if let file = config("certificate") {
                credentials = .certificate(file: file, password: config("certificate_password"))
            } else {
                credentials = nil
            }
        case (.none, .none):
            reader.error(
                "'\(context)' needs key_file (with team_id and key_id) or certificate to authenticate to APNs",
                at: node
            )
            credentials = nil
        }
        var environment = APNsEnvironment.production
        if let environmentNode = map["environment"], let text = reader.string(environmentNode, "\(context).environment")
        {
            if let value = APNsEnvironment(rawValue: text) {
                environment = value
            } else {
                reader.error(
                    "environment must be production or sandbox, found '\(text.excerpt())'\(Suggestion.didYouMean(text, in: ["production", "sandbox"]))",
                    at: environmentNode
                )
            }
        }
        func endpoint(_ key: String) -> String? { readEndpoint(map, key, context: context, service: "APNs", reader) }
        let (apnsEndpoint, broadcastEndpoint, channelsEndpoint) = (
            endpoint("endpoint"), endpoint("broadcast_endpoint"), endpoint("channels_endpoint")
        )
        let appStore = map["app_store"].flatMap { readAppStore($0, context: "\(context).app_store", reader) }
        guard let topic, let credentials else { return nil }
        var app = AppConfig(
            name: name,
            topic: topic,
            credentials: credentials,
            environment: environment,
            endpoint: apnsEndpoint,
            caFile: config("ca_file")
        )
        app.appStore = appStore
        app.broadcastEndpointOverride = broadcastEndpoint
        app.channelsEndpointOverride = channelsEndpoint
        return app
    }

    /// An app whose settings name a `service_account` is an Android app, sent to through FCM.
    static func isFCMApp(_ node: Node) -> Bool {
        node.mapping?.contains { $0.key.string == "service_account" } ?? false
    }

    static func readFCMApp(_ name: String, _ node: Node, _ reader: YAMLReader) -> FCMAppConfig? {
        let context = "apps.\(name)"
        guard let map = reader.mapping(node, in: context, allowed: appKeys, required: ["service_account"]) else {
            return nil
        }
        for key in appKeys {
            if let why = FCMAppConfig.apnsOnlyKeys[key], let value = map[key] {
                reader.error(
                    "'\(context).\(key)' is an APNs setting, and this app is an FCM app (it has a service_account): \(why)",
                    at: value
                )
            }
        }
        let serviceAccount = readConfigString(map, "service_account", context: context, reader)
        var projectID: String?
        if let node = map["project_id"], let text = reader.string(node, "\(context).project_id") {
            if isFirebaseProjectID(text) {
                projectID = text
            } else {
                reader.error(
                    "'\(context).project_id' must be a Firebase project id (6 to 30 lowercase letters, digits and "
                        + "hyphens, starting with a letter) or a project number, found '\(text.excerpt())'",
                    at: node
                )
            }
        }
        let endpoint = readEndpoint(map, "endpoint", context: context, service: "FCM", reader)
        let quota = map["quota"].flatMap { reader.parsed($0, "\(context).quota", Rate.parse) }
        guard let serviceAccount else { return nil }
        var app = FCMAppConfig(
            name: name,
            serviceAccount: serviceAccount,
            projectID: projectID,
            endpoint: endpoint,
            caFile: readConfigString(map, "ca_file", context: context, reader)
        )
        if let quota { app.quota = quota }
        return app
    }

    /// Google's rule for project ids (6–30 characters: lowercase letters, digits, hyphens; a letter
    /// first, no hyphen last); a project number (digits) stands in for one.
    static func isFirebaseProjectID(_ text: String) -> Bool {
        if !text.isEmpty, text.count <= 20, text.allSatisfy({ $0.isASCII && $0.isNumber }) { return true }
        guard (6...30).contains(text.count), let first = text.first, first.isASCII, first.isLowercase,
            text.last != "-"
        else { return false }
        return text.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
    }

    static func readConfigString(
        _ map: YAMLReader.Mapping,
        _ key: String,
        context: String,
        _ reader: YAMLReader
    ) -> ConfigString? {
        map[key].flatMap { node in
            reader.parsed(node, "\(context).\(key)", ConfigString.parse)?.located(reader.location(node))
        }
    }

    static func readEndpoint(
        _ map: YAMLReader.Mapping,
        _ key: String,
        context: String,
        service: String,
        _ reader: YAMLReader
    ) -> String? {
        guard let node = map[key], let text = reader.string(node, "\(context).\(key)") else { return nil }
        guard text.hasPrefix("https://") else {
            reader.error(
                "\(key) must be an https:// URL (\(service) speaks HTTP/2 over TLS only), found '\(text.excerpt())'",
                at: node
            )
            return nil
        }
        return text
    }
}
