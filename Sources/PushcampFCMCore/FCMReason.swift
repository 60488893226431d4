/// Why FCM refused a message: the `errorCode` of the error's `FcmError` detail when it has one, else the
/// error's canonical `status` (`UNAUTHENTICATED`, `PERMISSION_DENIED`, `NOT_FOUND`…), as Google's Admin
/// SDKs read them (`reference/FCM.md`, section 3).
///
/// Unknown names are kept as `.unknown`, so a code Google adds later is reported by name, not lost.
public enum FCMReason: Hashable, Sendable, CustomStringConvertible {
    // FcmError codes (ERR).
    case unspecifiedError, invalidArgument, unregistered, senderIDMismatch, quotaExceeded, unavailable, internalError
    case thirdPartyAuthError
    // Canonical statuses that come without an FcmError detail.
    case unauthenticated, permissionDenied, notFound, resourceExhausted
    case unknown(String)

    static let known: [(String, FCMReason)] = [
        ("UNSPECIFIED_ERROR", .unspecifiedError), ("INVALID_ARGUMENT", .invalidArgument),
        ("UNREGISTERED", .unregistered), ("SENDER_ID_MISMATCH", .senderIDMismatch),
        ("QUOTA_EXCEEDED", .quotaExceeded), ("UNAVAILABLE", .unavailable), ("INTERNAL", .internalError),
        ("THIRD_PARTY_AUTH_ERROR", .thirdPartyAuthError), ("UNAUTHENTICATED", .unauthenticated),
        ("PERMISSION_DENIED", .permissionDenied), ("NOT_FOUND", .notFound),
        ("RESOURCE_EXHAUSTED", .resourceExhausted),
    ]
    private static let byName: [String: FCMReason] = Dictionary(uniqueKeysWithValues: known)

    public init(_ text: String) {
        self = Self.byName[text] ?? .unknown(text)
    }

    /// What an answer without an error body (a proxy's page) means, by its status alone.
    public init(httpStatus status: Int) {
        switch status {
        case 401: self = .unauthenticated
        case 403: self = .permissionDenied
        case 404: self = .notFound
        case 429: self = .quotaExceeded
        case 500: self = .internalError
        case 502...504: self = .unavailable
        case 400: self = .invalidArgument
        default: self = .unknown("HTTP \(status)")
        }
    }

    /// How the journal and reports name FCM's reasons: `fcm/UNREGISTERED`, beside APNs' own names.
    public static let prefix = "fcm/"

    /// Reasons that say the registration token is dead (suppressed, exported for clean-up).
    public static let deadTokenReasons: Set<String> = ["fcm/UNREGISTERED", "fcm/INVALID_ARGUMENT:token"]

    /// Google's spelling.
    public var description: String {
        if case .unknown(let text) = self { return text }
        return Self.known.first { $0.1 == self }!.0
    }

    /// The codes of ERR's table (`FcmError.errorCode`), in its order.
    public static let errorCodes: [FCMReason] = [
        .unspecifiedError, .invalidArgument, .unregistered, .senderIDMismatch, .quotaExceeded, .unavailable,
        .internalError, .thirdPartyAuthError,
    ]

    /// The HTTP status FCM answers the code with, and the canonical status beside it.
    public var status: (code: Int, status: String) {
        switch self {
        case .unspecifiedError: return (500, "UNKNOWN")
        case .invalidArgument: return (400, "INVALID_ARGUMENT")
        case .unregistered, .notFound: return (404, "NOT_FOUND")
        case .senderIDMismatch, .permissionDenied: return (403, "PERMISSION_DENIED")
        case .quotaExceeded, .resourceExhausted: return (429, "RESOURCE_EXHAUSTED")
        case .unavailable: return (503, "UNAVAILABLE")
        case .internalError: return (500, "INTERNAL")
        case .thirdPartyAuthError, .unauthenticated: return (401, "UNAUTHENTICATED")
        case .unknown: return (500, "UNKNOWN")
        }
    }

    /// What a sender does about it (the digest's table; `INVALID_ARGUMENT` is read with its details, see
    /// `FCMError.reaction`).
    public var reaction: Reaction {
        switch self {
        case .unregistered: return .dropToken
        case .invalidArgument: return .requestBug
        case .senderIDMismatch, .thirdPartyAuthError, .unspecifiedError: return .neverRetry
        case .quotaExceeded, .resourceExhausted: return .slowRun
        case .unavailable, .internalError: return .serverError
        case .unauthenticated: return .refreshAccessToken
        case .permissionDenied, .notFound: return .credentials
        case .unknown: return .neverRetry
        }
    }

    /// One set of reactions for FCM's answers.
    public enum Reaction: String, Hashable, Sendable {
        /// The token is dead: clean it up, suppress it, never send to it again.
        case dropToken
        /// Reported by name, not retried (the token belongs to another sender, the APNs key uploaded to
        /// Firebase is wrong, no information).
        case neverRetry
        /// The request is wrong: fixed in the campaign, never sent again as is.
        case requestBug
        /// Over quota: the whole run waits (`Retry-After`, else the quota's minute), then retries.
        case slowRun
        /// 5xx: send again with back-off and jitter, honouring `Retry-After`.
        case serverError
        /// The access token was refused: mint one fresh token and send again, once.
        case refreshAccessToken
        /// The service account may not send in this project, or the project does not exist: stop the run.
        case credentials
    }
}
