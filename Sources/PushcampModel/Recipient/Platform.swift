import PushcampAPNsCore

/// Which provider reaches a device: Apple's APNs or Google's FCM.
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    case ios
    case android

    /// `iOS` or `Android`, for reports.
    public var title: String { self == .ios ? "iOS" : "Android" }

    /// The provider's name: `APNs` or `FCM`.
    public var provider: String { self == .ios ? "APNs" : "FCM" }

    public static func < (lhs: Platform, rhs: Platform) -> Bool { lhs == .ios && rhs == .android }

    /// A platform column's value as a users table holds it, in any case: `ios`, `iPhone`, `iPadOS`,
    /// `apple`, `apns` are iOS; `android`, `fcm`, `google` are Android. Nil for anything else.
    public init?(columnValue raw: String) {
        let value = raw.trimmingWhitespace().lowercased()
        switch value {
        case "ios", "iphone", "ipad", "ipados", "apple", "apns", "watchos", "tvos", "macos", "visionos":
            self = .ios
        case "android", "fcm", "google", "gcm":
            self = .android
        default:
            return nil
        }
    }

    /// The platform a token's shape says when nothing else does: hexadecimal alone is an APNs device
    /// token; anything else an FCM registration token.
    public init(tokenShape token: String) {
        self = RegistrationToken.isHexadecimal(token.trimmingWhitespace()) ? .ios : .android
    }

    /// The token in the form its provider takes (APNs device tokens in lowercase; FCM registration
    /// tokens as written, they are case-sensitive), or why it is not one.
    public func normalize(_ raw: String) -> Result<String, DeviceToken.Problem> {
        switch self {
        case .ios:
            return DeviceToken.normalize(raw)
        case .android:
            let token = raw.trimmingWhitespace()
            if token.isEmpty { return .failure(.empty) }
            return RegistrationToken.problem(token) == nil ? .success(token) : .failure(.notRegistrationToken)
        }
    }
}

/// How the platform of each audience row is decided (`audience.platform`, the campaign's apps).
///
/// A row's platform is its `platform` column (or the column `audience.platform` names) when the row has
/// a value there: a platform's name (`ios`, `Android`…) or the name of one of the campaign's apps. A row
/// without one belongs to the campaign's one platform, or, when the campaign names an app of each, to
/// the platform its token's shape says. Rows of a platform the campaign does not send to are passed over
/// and counted; a value that names no platform makes the row invalid.
public struct PlatformRule: Sendable, Hashable {
    /// The column holding each row's platform.
    public var column: String
    /// The platforms the campaign sends to.
    public var targets: Set<Platform>
    /// The campaign's apps by name, for rows naming their app.
    public var appNames: [String: Platform]

    public init(column: String = PlatformRule.defaultColumn, targets: Set<Platform>, appNames: [String: Platform] = [:])
    {
        self.column = column
        self.targets = targets
        self.appNames = appNames
    }

    public static let defaultColumn = "platform"

    /// Every campaign before Android: iOS alone.
    public static let iosOnly = PlatformRule(targets: [.ios])

    public enum Verdict: Equatable {
        case platform(Platform)
        /// The row's column names no platform and no app of the campaign.
        case unknown
    }

    /// The platform of a row whose token is `token` and whose platform column holds `value`.
    public func platform(value: String?, token: String) -> Verdict {
        if let value, !value.trimmingWhitespace().isEmpty {
            if let platform = Platform(columnValue: value) { return .platform(platform) }
            if let platform = appNames[value.trimmingWhitespace()] { return .platform(platform) }
            return .unknown
        }
        if targets.count == 1, let only = targets.first { return .platform(only) }
        return .platform(Platform(tokenShape: token))
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line ends.
    func trimmingWhitespace() -> String {
        func isSpace(_ byte: UInt8?) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        // Most values have nothing to trim: no copy for them.
        if !isSpace(utf8.first), !isSpace(utf8.last) { return self }
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return start == 0 && end == bytes.count ? self : String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
