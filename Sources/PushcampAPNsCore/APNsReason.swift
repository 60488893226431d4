/// The `reason` of an APNs error response (Apple's "Handling notification responses from APNs", table 4).
///
/// Unknown strings are kept as `.unknown`, so a reason Apple adds later is reported, not lost.
public enum APNsReason: Hashable, Sendable, CustomStringConvertible {
    case badCollapseID, badDeviceToken, badExpirationDate, badMessageID, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden
    case invalidProviderToken, missingProviderToken, unrelatedKeyIDInToken, badEnvironmentKeyInToken
    case badPath, methodNotAllowed
    case expiredToken, unregistered
    case payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests
    case internalServerError, serviceUnavailable, shutdown
    // Broadcast sends and channel management (Apple's error table for broadcast requests).
    case missingChannelID, badChannelID, channelNotRegistered, missingPushType, cannotCreateChannelConfig
    case featureNotEnabled, topicMismatch, badRequestParams, badRequestPayload
    case unknown(String)

    static let known: [(String, APNsReason)] = [
        ("BadCollapseId", .badCollapseID), ("BadDeviceToken", .badDeviceToken),
        ("BadExpirationDate", .badExpirationDate), ("BadMessageId", .badMessageID), ("BadPriority", .badPriority),
        ("BadTopic", .badTopic), ("DeviceTokenNotForTopic", .deviceTokenNotForTopic),
        ("DuplicateHeaders", .duplicateHeaders), ("IdleTimeout", .idleTimeout), ("InvalidPushType", .invalidPushType),
        ("MissingDeviceToken", .missingDeviceToken), ("MissingTopic", .missingTopic), ("PayloadEmpty", .payloadEmpty),
        ("TopicDisallowed", .topicDisallowed), ("BadCertificate", .badCertificate),
        ("BadCertificateEnvironment", .badCertificateEnvironment), ("ExpiredProviderToken", .expiredProviderToken),
        ("Forbidden", .forbidden), ("InvalidProviderToken", .invalidProviderToken),
        ("MissingProviderToken", .missingProviderToken), ("UnrelatedKeyIdInToken", .unrelatedKeyIDInToken),
        ("BadEnvironmentKeyInToken", .badEnvironmentKeyInToken), ("BadPath", .badPath),
        ("MethodNotAllowed", .methodNotAllowed), ("ExpiredToken", .expiredToken), ("Unregistered", .unregistered),
        ("PayloadTooLarge", .payloadTooLarge), ("TooManyProviderTokenUpdates", .tooManyProviderTokenUpdates),
        ("TooManyRequests", .tooManyRequests), ("InternalServerError", .internalServerError),
        ("ServiceUnavailable", .serviceUnavailable), ("Shutdown", .shutdown),
        ("MissingChannelId", .missingChannelID), ("BadChannelId", .badChannelID),
        ("ChannelNotRegistered", .channelNotRegistered), ("MissingPushType", .missingPushType),
        ("CannotCreateChannelConfig", .cannotCreateChannelConfig), ("FeatureNotEnabled", .featureNotEnabled),
        ("TopicMismatch", .topicMismatch), ("BadRequestParams", .badRequestParams),
        ("BadRequestPayload", .badRequestPayload),
    ]
    private static let byName: [String: APNsReason] = Dictionary(uniqueKeysWithValues: known)

    public init(_ text: String) {
        self = Self.byName[text] ?? .unknown(text)
    }

    /// Apple's spelling.
    public var description: String {
        if case .unknown(let text) = self { return text }
        return Self.known.first { $0.1 == self }!.0
    }

    /// The status APNs answers this reason with.
    public var status: Int {
        switch self {
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIDInToken, .badEnvironmentKeyInToken, .topicMismatch:
            return 403
        case .badPath: return 404
        case .methodNotAllowed: return 405
        case .expiredToken, .unregistered: return 410
        case .payloadTooLarge: return 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: return 429
        case .internalServerError: return 500
        case .serviceUnavailable, .shutdown: return 503
        case .unknown: return 400
        default: return 400
        }
    }

    /// What a sender does about it (the digest's table and Apple's retry advice).
    public var disposition: Disposition {
        switch self {
        case .badDeviceToken, .deviceTokenNotForTopic, .forbidden, .expiredToken, .unregistered, .payloadTooLarge,
            .channelNotRegistered, .featureNotEnabled, .topicMismatch:
            return .neverRetry
        case .invalidProviderToken, .missingProviderToken, .badCertificate, .badCertificateEnvironment,
            .unrelatedKeyIDInToken, .badEnvironmentKeyInToken:
            return .credentials
        case .expiredProviderToken: return .refreshProviderToken
        case .tooManyRequests: return .deviceBusy
        case .tooManyProviderTokenUpdates: return .slowTokenRefresh
        case .internalServerError, .serviceUnavailable, .shutdown: return .serverError
        default: return .requestBug
        }
    }

    /// Every reason Apple documents.
    public static var documented: [APNsReason] { known.map(\.1) }

    /// Reasons that say the device token is dead for the topic (remembered, skipped by later campaigns).
    public static let deadToken: Set<APNsReason> = [.unregistered, .expiredToken, .badDeviceToken]

    /// Reasons that are never retried, whatever a campaign's `retry:` says.
    public static var neverRetried: [APNsReason] { documented.filter { $0.disposition == .neverRetry } }

    /// Reasons that mean the credentials are wrong.
    public static var credentialReasons: [APNsReason] { documented.filter { $0.disposition == .credentials } }

    public enum Disposition: String, Hashable, Sendable {
        /// Apple: do not retry (dead or foreign token, forbidden, too large).
        case neverRetry
        /// The credentials are wrong: stop the run.
        case credentials
        /// Mint a new provider token and send again.
        case refreshProviderToken
        /// Too many requests for this device: send again after a delay.
        case deviceBusy
        /// The provider token was refreshed too often.
        case slowTokenRefresh
        /// 5xx: send again with back-off.
        case serverError
        /// A 4xx that names a bug in the request: not retried as is.
        case requestBug
    }
}
