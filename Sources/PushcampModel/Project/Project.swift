/// `pushcamp.yaml` at a repository's root: what the campaigns of the repository share.
public struct Project {
    public var apps: [String: AppConfig]
    /// The apps in file order, for listing them in messages.
    public var appNames: [String]
    /// Where the run journal lives, relative to the project root.
    public var journalPath: String
    public var defaults: Defaults
    /// The file this project was read from, as printed in diagnostics.
    public var path: String
    /// Folders outside the project that campaigns may read files from (`files.allow`), as written.
    public var allowedFolders: [String] = []

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
}
