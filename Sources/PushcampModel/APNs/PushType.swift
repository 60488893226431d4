/// The `apns-push-type` header, with what APNs requires of each type.
public enum PushType: String, CaseIterable, Sendable, Hashable, Codable {
    case alert
    case background
    case location
    case voip
    case complication
    case fileprovider
    case mdm
    case liveactivity
    case pushtotalk
    case widgets

    /// What APNs expects after the bundle id in `apns-topic` for this push type.
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: return ""
        case .location: return ".location-query"
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        case .widgets: return ".push-type.widgets"
        }
    }

    /// The largest body APNs accepts: 4096 bytes, 5120 for VoIP.
    public var payloadLimit: Int {
        self == .voip ? 5120 : 4096
    }

    /// The priority used when a campaign names none: background pushes must be sent at 5.
    public var defaultPriority: Int {
        self == .background ? 5 : 10
    }

    /// The topic for an app's bundle id: the suffix is added unless the app's topic already has it.
    public func topic(forBundleTopic bundle: String) -> String {
        topicSuffix.isEmpty || bundle.hasSuffix(topicSuffix) ? bundle : bundle + topicSuffix
    }
}
