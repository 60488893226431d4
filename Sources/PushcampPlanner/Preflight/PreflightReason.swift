/// Why a push would be refused, found before anything is sent. Raw values are stable identifiers for
/// JSON output and scripts.
public enum PreflightReason: String, Sendable, Hashable, CaseIterable, Comparable {
    case payloadTooLarge = "payload-too-large"
    case collapseIDTooLong = "collapse-id-too-long"
    case contentAvailableAtPriority10 = "content-available-at-priority-10"
    case backgroundNeedsPriority5 = "background-needs-priority-5"
    case backgroundNeedsContentAvailable = "background-needs-content-available"
    case backgroundWithAlert = "background-with-alert"
    case alertNeedsAlertSoundOrBadge = "alert-needs-alert-sound-or-badge"
    case liveActivityFields = "liveactivity-needs-event-and-timestamp"
    case liveActivityEvent = "liveactivity-event-rules"
    case topicMismatch = "topic-mismatch"
    case missingVariable = "missing-variable"
    case missingString = "missing-string"
    case renderBudget = "render-budget"
    case badTopic = "bad-topic"
    case headerControlCharacters = "header-control-characters"
    case expirationPassed = "expiration-passed"
    case registrationTimeUnreadable = "registered-at-unreadable"
    case invalidTimeZone = "invalid-time-zone"
    /// FCM's own checks (`FCMMessageRules`), run on each Android message.
    case fcmPayloadTooLarge = "fcm-payload-too-large"
    case fcmReservedKey = "fcm-reserved-data-key"
    case fcmInvalidMessage = "fcm-invalid-message"

    /// What the reason means and what to do about it.
    public var summary: String {
        switch self {
        case .payloadTooLarge: return "payload larger than APNs accepts (4096 bytes, 5120 for VoIP)"
        case .collapseIDTooLong: return "apns-collapse-id longer than 64 bytes"
        case .contentAvailableAtPriority10:
            return "priority 10 with a content-available-only payload (APNs: an error; use priority 5)"
        case .backgroundNeedsPriority5: return "background pushes must be sent at priority 5"
        case .backgroundNeedsContentAvailable: return "background pushes need aps.content-available: 1"
        case .backgroundWithAlert:
            return "background push with alert, sound or badge (send it as push_type alert instead)"
        case .alertNeedsAlertSoundOrBadge: return "alert pushes need aps.alert, aps.sound or aps.badge"
        case .liveActivityFields: return "Live Activity pushes need aps.event and aps.timestamp"
        case .liveActivityEvent:
            return "a Live Activity payload breaks its event's rules (start, update or end; the keys each takes)"
        case .topicMismatch: return "apns-topic does not fit the push type"
        case .missingVariable: return "a template names a variable the recipient does not have"
        case .missingString: return "no localized string for the recipient's locale or the default"
        case .renderBudget: return "rendering the payload goes beyond its budget (64 KB or 100,000 steps)"
        case .badTopic:
            return "apns-topic is not the app's bundle id (with its push type's suffix): APNs answers BadTopic"
        case .headerControlCharacters:
            return "a header value (topic, collapse id) holds control characters: APNs resets the request"
        case .expirationPassed: return "apns-expiration is before the send (or before 1970): APNs would not deliver"
        case .registrationTimeUnreadable:
            return "the token is known dead and its registration time cannot be read: fix the audience's cell"
        case .invalidTimeZone:
            return "the recipient's zone attribute is not a time zone (or set invalid_zone: fallback)"
        case .fcmPayloadTooLarge: return "an Android message larger than FCM accepts (4096 bytes of data)"
        case .fcmReservedKey: return "a data key FCM reserves (from, notification, message_type, google., gcm.…)"
        case .fcmInvalidMessage:
            return "an Android message FCM would refuse (INVALID_ARGUMENT: a field's value, such as a colour or a ttl)"
        }
    }

    public static func < (lhs: PreflightReason, rhs: PreflightReason) -> Bool { lhs.rawValue < rhs.rawValue }
}
