/// An Android app, reached through Firebase Cloud Messaging's HTTP v1 API: `apps.NAME` with a
/// `service_account` in `pushcamp.yaml`.
///
///     apps:
///       shop-android:
///         service_account: ${env:SHOP_FCM_SERVICE_ACCOUNT}  # the key file's path, or its JSON itself
///         project_id: shop-prod                              # default: the key file's project_id
///         endpoint: https://127.0.0.1:8443                   # instead of https://fcm.googleapis.com
///         ca_file: .pushcamp/sim/ca.pem                      # a CA to trust for that endpoint
public struct FCMAppConfig: Hashable, Sendable {
    public var name: String
    /// The service account's key file: a path (relative to the project), or, when the setting's value
    /// is a JSON object (a CI secret holding the file's text), the key itself.
    public var serviceAccount: ConfigString
    /// The Firebase project messages are sent in, when not the key file's own `project_id`.
    public var projectID: String?
    /// A custom endpoint (`https://127.0.0.1:8443`) replacing Google's host, for simulators and tests.
    public var endpoint: String?
    /// A CA file to trust for a custom endpoint (and for the token endpoint the key file names).
    public var caFile: ConfigString?
    /// The Firebase project's sending quota (`quota: 600000/min`, FCM's default): the most a run
    /// sends to this app, whatever the campaign's rate.
    public var quota = FCMAppConfig.defaultQuota

    /// pushcamp.yaml's `proxy:`: an HTTP proxy its connections tunnel through.
    public var proxy: ConfigString? = nil

    /// FCM's default project quota: 600,000 messages a minute.
    public static let defaultQuota = Rate(perSecond: 10_000, text: "600000/min")

    public init(
        name: String,
        serviceAccount: ConfigString,
        projectID: String? = nil,
        endpoint: String? = nil,
        caFile: ConfigString? = nil
    ) {
        self.name = name
        self.serviceAccount = serviceAccount
        self.projectID = projectID
        self.endpoint = endpoint
        self.caFile = caFile
    }

    /// Google's host for FCM HTTP v1.
    public static let googleEndpoint = "https://fcm.googleapis.com"

    /// Where sends go.
    public var sendEndpoint: String { endpoint ?? Self.googleEndpoint }

    /// `→ FCM (fcm.googleapis.com)`, or `→ custom endpoint https://127.0.0.1:8443 (instead of FCM)`.
    public var destinationText: String {
        if let endpoint { return "→ custom endpoint \(endpoint) (instead of FCM)" }
        return "→ FCM (fcm.googleapis.com)"
    }

    /// Settings of APNs apps that mean nothing for an FCM app, with why.
    static let apnsOnlyKeys: [String: String] = [
        "topic": "FCM routes by the registration token; the package name is the token's own",
        "team_id": "an FCM app authenticates with its service_account",
        "key_id": "an FCM app authenticates with its service_account",
        "key_file": "an FCM app authenticates with its service_account",
        "certificate": "an FCM app authenticates with its service_account",
        "certificate_password": "an FCM app authenticates with its service_account",
        "environment": "FCM has one environment; a test project is another Firebase project",
        "app_store": "App Store notifications are Apple's",
        "broadcast_endpoint": "broadcast channels are APNs'",
        "channels_endpoint": "broadcast channels are APNs'",
    ]
}
