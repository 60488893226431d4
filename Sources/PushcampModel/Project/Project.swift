/// `pushcamp.yaml` at a repository's root: what the campaigns of the repository share.
public struct Project {
    public var apps: [String: AppConfig]
    /// The APNs apps in file order, for listing them in messages.
    public var appNames: [String]
    /// Android apps, sent to through FCM (`apps.NAME.service_account`).
    public var fcmApps: [String: FCMAppConfig] = [:]
    /// The FCM apps in file order.
    public var fcmAppNames: [String] = []
    /// Where the run journal lives, relative to the project root: the SQLite file (and, for a
    /// PostgreSQL journal, where rehearsals and the provider token cache are kept).
    public var journalPath: String
    /// A PostgreSQL journal (`journal.url`), shared by every machine that names it.
    public var journalURL: String?
    /// The environment variable holding the PostgreSQL password (`journal.password_env`).
    public var journalPasswordVariable: String?
    /// How long a campaign's lease lasts unless renewed (`journal.lease`): how soon another node
    /// takes over the run of one that died.
    public var journalLease: TimeSpan?
    /// About how long one slice of a run lasts at one worker's share of the rate
    /// (`journal.slice`), on a PostgreSQL journal.
    public var journalSlice: TimeSpan?
    /// How long the rows of each recipient of a run that ended are kept (`journal.retention`):
    /// `serve` prunes older ones on its own. Nil: kept forever.
    public var journalRetention: TimeSpan?
    public var defaults: Defaults
    /// The file this project was read from, as printed in diagnostics.
    public var path: String
    /// Folders outside the project that campaigns may read files from (`files.allow`), as written.
    public var allowedFolders: [String] = []
    /// `pushcamp serve`'s settings.
    public var serve = ServeSpec()
    /// Live Activity broadcast channels (`channels:`), in file order.
    public var channels: [ChannelSpec] = []

    public struct Defaults: Hashable, Sendable {
        public var throttle: ThrottleSpec
        public var expiration: ExpirationSpec?
        /// The cap every campaign of the project has unless it names its own (or `off`).
        public var frequencyCap: FrequencyCapSpec?
    }

    /// The throttle when neither campaign nor project names one.
    public static let defaultRate = Rate(perSecond: 1000, text: "1000/s")
    public static let defaultConnections = 1
    public static let defaultJournalPath = ".pushcamp/journal.sqlite"
}

public enum APNsEnvironment: String, Hashable, Sendable, CaseIterable {
    case production
    case sandbox

    /// Apple's host for this environment.
    public var host: String {
        self == .production ? "api.push.apple.com" : "api.sandbox.push.apple.com"
    }
}

/// Where an app's pushes go: Apple's production or sandbox host, or a custom endpoint (a simulator)
/// standing in for one. Every plan names it first, so a reviewer reading one cannot mistake
/// production for sandbox.
public struct Destination: Hashable, Sendable {
    public var environment: APNsEnvironment
    /// The custom endpoint replacing Apple's host, if any.
    public var customEndpoint: String?

    public init(environment: APNsEnvironment, customEndpoint: String? = nil) {
        self.environment = environment
        self.customEndpoint = customEndpoint
    }

    /// The URL pushes are sent to: `https://api.push.apple.com` or the custom endpoint.
    public var endpoint: String { customEndpoint ?? "https://\(environment.host)" }

    /// Sends reach Apple's production devices.
    public var isProduction: Bool { environment == .production && customEndpoint == nil }

    /// `→ APNs production (api.push.apple.com)`, `→ APNs sandbox (api.sandbox.push.apple.com)`, or
    /// `→ custom endpoint https://127.0.0.1:8443 (instead of APNs sandbox)`.
    public var text: String {
        if let customEndpoint {
            return "→ custom endpoint \(customEndpoint) (instead of APNs \(environment.rawValue))"
        }
        return "→ APNs \(environment.rawValue) (\(environment.host))"
    }
}

/// One app: its topic and how Pushcamp authenticates to APNs for it.
public struct AppConfig: Hashable, Sendable {
    public enum Credentials: Hashable, Sendable {
        /// A provider token signed with an Apple `.p8` key.
        case token(teamID: String, keyID: String, keyFile: ConfigString)
        /// A TLS client certificate, PKCS#12 or PEM.
        case certificate(file: ConfigString, password: ConfigString?)
    }

    public var name: String
    /// The bundle id (the topic of alert pushes); other push types add their suffix to it.
    public var topic: String
    public var credentials: Credentials
    public var environment: APNsEnvironment
    /// A custom endpoint (`https://127.0.0.1:8443`) for simulators and tests, replacing Apple's host.
    public var endpoint: String?
    /// A CA file to trust for a custom endpoint.
    public var caFile: ConfigString?
    /// How App Store Server Notifications name this app (`app_store:`), for `serve`'s receiver.
    public var appStore: AppStoreConfig? = nil
    /// `broadcast_endpoint`: where broadcast sends go instead of the default (see
    /// `broadcastEndpoint(_:)`).
    public var broadcastEndpointOverride: String? = nil
    /// `channels_endpoint`: where channel-management requests go instead of the default.
    public var channelsEndpointOverride: String? = nil
    /// pushcamp.yaml's `proxy:`: an HTTP proxy its connections tunnel through.
    public var proxy: ConfigString? = nil

    /// Where this app's pushes go.
    public var destination: Destination { Destination(environment: environment, customEndpoint: endpoint) }
}

/// `apps.NAME.app_store: { bundle_id, app_apple_id, environments, trusted_roots }`.
public struct AppStoreConfig: Hashable, Sendable {
    public var bundleID: String
    /// Apple's numeric app id: required to accept production notifications.
    public var appAppleID: Int64?
    /// Lowercased environment names whose notifications are accepted (default: production).
    public var environments: [String]
    /// Certificates (PEM or DER files) trusted besides Apple Root CA - G3: for tests only.
    public var trustedRoots: [ConfigString]
    /// The App Store Server API key, for `pushcamp appstore history`.
    public var api: AppStoreAPIConfig? = nil

    public static let environmentNames = ["production", "sandbox", "xcode", "localtesting"]
}

/// `apps.NAME.app_store.api: { issuer_id, key_id, key_file, endpoint }`: an In-App Purchase key of
/// App Store Connect, for the App Store Server API (Get Notification History).
public struct AppStoreAPIConfig: Hashable, Sendable {
    /// App Store Connect › Users and Access › Integrations › In-App Purchase: the issuer id (a UUID).
    public var issuerID: String
    public var keyID: String
    public var keyFile: ConfigString
    /// Replaces Apple's host (`https://api.storekit.itunes.apple.com`, or its sandbox): for tests.
    public var endpoint: String?

    public init(issuerID: String, keyID: String, keyFile: ConfigString, endpoint: String? = nil) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.keyFile = keyFile
        self.endpoint = endpoint
    }
}

/// `serve: { listen: "127.0.0.1:8080", campaigns: [campaigns] }` in pushcamp.yaml.
public struct ServeSpec: Hashable, Sendable {
    /// The HTTP server's address (`/healthz`, `/readyz`, `/metrics`).
    public var listen: ListenAddress
    /// Folders, relative to the project, whose campaign files (`*.yaml`, `*.yml`) are scheduled.
    public var campaignFolders: [String]
    /// Where App Store Server Notifications are POSTed.
    public var appStorePath = "/app-store/notifications"
    /// `console: true`: the read-only console at `/` and its JSON under `/api/` (docs/console.md).
    public var console = false

    public init(listen: ListenAddress = .defaultServe, campaignFolders: [String] = ["campaigns"]) {
        self.listen = listen
        self.campaignFolders = campaignFolders
    }
}

/// `host:port`, as `serve` listens: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`.
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public static let defaultServe = ListenAddress(host: "127.0.0.1", port: 8080)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public static func parse(_ text: String) -> Result<ListenAddress, ValueError> {
        let usage = "write host:port, like 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080 (port 0 picks a free one)"
        let trimmed = text.trimmingSpaces
        var host: Substring
        var port: Substring
        if trimmed.hasPrefix("["), let close = trimmed.firstIndex(of: "]") {
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            let rest = trimmed[trimmed.index(after: close)...]
            guard rest.hasPrefix(":") else { return .failure(ValueError("'\(text)' has no port; \(usage)")) }
            port = rest.dropFirst()
        } else {
            guard let colon = trimmed.lastIndex(of: ":"), !trimmed[..<colon].contains(":") else {
                return .failure(ValueError("'\(text)' is not an address; \(usage)"))
            }
            host = trimmed[..<colon]
            port = trimmed[trimmed.index(after: colon)...]
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:".contains($0)) })
        else {
            return .failure(ValueError("'\(text)' has no host; \(usage)"))
        }
        guard let number = Int(port), (0...65_535).contains(number) else {
            return .failure(ValueError("'\(text)': the port must be 0 to 65535; \(usage)"))
        }
        return .success(ListenAddress(host: String(host), port: number))
    }
}

extension Project {
    /// Whether a journal address (`journal.url`, `--journal`) names a PostgreSQL server, by its
    /// scheme (`postgres://` or `postgresql://`), rather than a SQLite file or `:memory:`.
    public static func namesPostgres(_ address: String) -> Bool {
        address.hasPrefix("postgres://") || address.hasPrefix("postgresql://")
    }
}
