import Foundation
import PushcampAPNsCore

/// The checks a `messages:send` body must pass, in the order Pushcamp applies them, without sockets: the
/// simulator answers with them as Google does, and the planner runs the same rules on each rendered
/// message before anything is sent (`reference/FCM.md`, sections 1 and 4).
///
/// Field names are accepted in snake_case and lowerCamelCase, as Google's APIs accept both. Where
/// Google's pages disagree, the stricter reading is taken (reserved data keys: the union of both lists).
public enum FCMMessageRules {
    /// A message's size limit (4096 bytes; 2048 to a topic or condition), counted over the message's
    /// JSON without its target: Pushcamp's reading of "counting keys and values", as Google does not say
    /// how it sums a message with both notification and data.
    public static let payloadLimit = 4096
    public static let topicPayloadLimit = 2048
    /// `android.ttl`'s range: 0 to 28 days, in seconds.
    public static let maximumTTL = 2_419_200

    static let requestFields: Set<String> = ["message", "validate_only"]
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]
    static let notificationFields: Set<String> = ["title", "body", "image"]
    static let androidFields: Set<String> = [
        "collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification", "fcm_options",
        "direct_boot_ok", "restricted_satellite_ok", "bandwidth_constrained_ok",
    ]
    static let androidNotificationFields: Set<String> = [
        "title", "body", "icon", "color", "sound", "tag", "click_action", "body_loc_key", "body_loc_args",
        "title_loc_key", "title_loc_args", "channel_id", "ticker", "sticky", "event_time", "local_only",
        "notification_priority", "default_sound", "default_vibrate_timings", "default_light_settings",
        "vibrate_timings", "visibility", "notification_count", "light_settings", "image", "proxy",
    ]

    /// Keys `data` may not use, and prefixes no key may start with (MSG and ERR together).
    public static let reservedDataKeys: Set<String> = ["from", "message_type", "gcm"]
    public static let reservedDataPrefixes = ["google", "gcm.notification."]

    /// The problem with `body`, as FCM would answer it; nil when the request would be accepted.
    public static func check(_ body: [UInt8]) -> FCMError? {
        guard let request = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return invalidJSON("Invalid JSON payload received. The body is not a JSON object.")
        }
        if let unknown = unknownField(request, known: requestFields) {
            return invalidJSON("Invalid JSON payload received. Unknown name \"\(unknown)\": Cannot find field.")
        }
        if let flag = value(request, "validate_only"), !(flag is Bool) {
            return invalidJSON("Invalid value at 'validate_only' (TYPE_BOOL)")
        }
        guard let message = value(request, "message") as? [String: Any] else {
            return invalidArgument("The message is missing.", field: "message")
        }
        return check(message: message)
    }

    /// The problem with one `message` object.
    public static func check(message: [String: Any]) -> FCMError? {
        if let unknown = unknownField(message, known: messageFields) {
            return invalidJSON(
                "Invalid JSON payload received. Unknown name \"\(unknown)\" at 'message': Cannot find field."
            )
        }
        let targets = ["token", "topic", "condition"].filter { value(message, $0) != nil }
        guard !targets.isEmpty else {
            return invalidArgument("Recipient of the message is not set.", field: "message")
        }
        guard targets.count == 1 else {
            return invalidJSON(
                "Invalid JSON payload received. Oneof field 'target' is already set. Cannot set '\(targets[1])'"
            )
        }
        if let token = value(message, "token") {
            guard let text = token as? String, tokenProblem(text) == nil else { return FCMError.invalidToken }
        }
        if let problem = dataProblem(value(message, "data"), path: "message.data") { return problem }
        if let notification = value(message, "notification") {
            guard let object = notification as? [String: Any] else {
                return invalidJSON("Invalid value at 'message.notification': an object is expected.")
            }
            if let problem = objectProblem(object, known: notificationFields, path: "message.notification") {
                return problem
            }
        }
        if let android = value(message, "android") {
            guard let object = android as? [String: Any] else {
                return invalidJSON("Invalid value at 'message.android': an object is expected.")
            }
            if let problem = androidProblem(object) { return problem }
        }
        for field in ["apns", "webpush", "fcm_options"] {
            if let part = value(message, field), !(part is [String: Any]) {
                return invalidJSON("Invalid value at 'message.\(field)': an object is expected.")
            }
        }
        let toTopic = targets[0] != "token"
        let size = payloadSize(message)
        return sizeProblem(size, toTopic: toTopic)
    }

    /// Google's answer to a message of `size` bytes (the message without its target), or nil.
    public static func sizeProblem(_ size: Int, toTopic: Bool = false) -> FCMError? {
        let limit = toTopic ? topicPayloadLimit : payloadLimit
        guard size > limit else { return nil }
        return invalidArgument(
            "Message is too big: \(size) bytes, over the limit of \(limit)\(toTopic ? " for topic messages" : "").",
            field: "message"
        )
    }

    /// Google's answer to a notification colour that is not `#rrggbb`, or nil.
    public static func colorProblem(_ color: String?) -> FCMError? {
        guard let color, !isColor(color) else { return nil }
        return invalidArgument("The color must be in the form #RRGGBB.", field: "message.android.notification.color")
    }

    /// Why `token` cannot be an FCM registration token, or nil when it has the shape of one
    /// (`RegistrationToken`).
    public static func tokenProblem(_ token: String) -> String? { RegistrationToken.problem(token) }

    /// Why `key` cannot be a `data` key, or nil.
    public static func reservedKeyProblem(_ key: String) -> String? {
        if reservedDataKeys.contains(key) { return "'\(key)' is a key FCM reserves" }
        if let prefix = reservedDataPrefixes.first(where: { key.hasPrefix($0) }) {
            return "keys starting with '\(prefix)' are reserved by FCM"
        }
        return nil
    }

    /// Why `ttl` is not a duration FCM takes (`"<seconds>[.<fraction>]s"`, 0 to 28 days), or nil.
    public static func ttlProblem(_ ttl: String) -> String? {
        guard ttl.hasSuffix("s") else { return "must be seconds with an 's' suffix, as \"3600s\"" }
        let number = ttl.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }),
            parts.count == 1 || (1...9).contains(parts[1].count)
        else { return "must be seconds with an 's' suffix, as \"3600s\"" }
        guard let seconds = Int(parts[0]), seconds <= maximumTTL else {
            return "must be at most \(maximumTTL)s (28 days)"
        }
        return nil
    }

    /// The message's size as the limit counts it: its compact JSON without the target.
    public static func payloadSize(_ message: [String: Any]) -> Int {
        var rest = message
        for target in ["token", "topic", "condition"] { rest[target] = nil }
        guard let data = try? JSONSerialization.data(withJSONObject: rest, options: [.withoutEscapingSlashes])
        else { return 0 }
        return data.count
    }

    // MARK: parts

    private static func dataProblem(_ data: Any?, path: String) -> FCMError? {
        guard let data else { return nil }
        guard let map = data as? [String: Any] else {
            return invalidJSON("Invalid value at '\(path)': a map of strings is expected.")
        }
        // Google names the entry by its place in the request; JSON objects here keep no order, so the
        // place counts keys in sorted order.
        for (index, key) in map.keys.sorted().enumerated() {
            if !isString(map[key]!) {
                return invalidJSON(
                    "Invalid value at '\(path)[\(index)].value' (TYPE_STRING), \(describe(map[key]!))",
                    field: "\(path)[\(index)].value"
                )
            }
            if let problem = reservedKeyProblem(key) {
                return invalidArgument("Invalid data payload key: \(problem).", field: "\(path)[\(index)].key")
            }
        }
        return nil
    }

    private static func objectProblem(_ object: [String: Any], known: Set<String>, path: String) -> FCMError? {
        if let unknown = unknownField(object, known: known) {
            let at = path.hasPrefix("message.") ? String(path.dropFirst("message.".count)) : path
            return invalidJSON(
                "Invalid JSON payload received. Unknown name \"\(unknown)\" at 'message.\(at)': Cannot find field."
            )
        }
        return nil
    }

    private static func androidProblem(_ android: [String: Any]) -> FCMError? {
        if let problem = objectProblem(android, known: androidFields, path: "message.android") { return problem }
        if let priority = value(android, "priority") {
            guard let text = priority as? String, ["NORMAL", "HIGH"].contains(text.uppercased()) else {
                return invalidJSON(
                    "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority)",
                    field: "message.android.priority"
                )
            }
        }
        if let ttl = value(android, "ttl") {
            guard let text = ttl as? String else {
                return invalidJSON(
                    "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)"
                )
            }
            if let problem = ttlProblem(text) {
                return invalidArgument("The TTL \(problem).", field: "message.android.ttl")
            }
        }
        for field in ["collapse_key", "restricted_package_name"] {
            if let part = value(android, field), !isString(part) {
                return invalidJSON("Invalid value at 'message.android.\(field)' (TYPE_STRING)")
            }
        }
        if let problem = dataProblem(value(android, "data"), path: "message.android.data") { return problem }
        if let notification = value(android, "notification") {
            guard let object = notification as? [String: Any] else {
                return invalidJSON("Invalid value at 'message.android.notification': an object is expected.")
            }
            if let problem = objectProblem(
                object,
                known: androidNotificationFields,
                path: "message.android.notification"
            ) {
                return problem
            }
            if let color = value(object, "color") {
                guard let text = color as? String, isColor(text) else {
                    return invalidArgument(
                        "The color must be in the form #RRGGBB.",
                        field: "message.android.notification.color"
                    )
                }
            }
        }
        return nil
    }

    // MARK: helpers

    /// The value of `field` under its snake_case or lowerCamelCase name.
    static func value(_ object: [String: Any], _ field: String) -> Any? {
        if let value = object[field], !(value is NSNull) { return value }
        if let value = object[camelCase(field)], !(value is NSNull) { return value }
        return nil
    }

    private static func unknownField(_ object: [String: Any], known: Set<String>) -> String? {
        object.keys.sorted().first { !known.contains(snakeCase($0)) }
    }

    static func camelCase(_ field: String) -> String {
        let parts = field.split(separator: "_")
        return parts.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }

    static func snakeCase(_ field: String) -> String {
        var result = ""
        for character in field {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }

    private static func isColor(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 7 && bytes[0] == 0x23
            && bytes.dropFirst().allSatisfy { Character(UnicodeScalar($0)).isHexDigit }
    }

    /// A value written as a JSON string (JSONSerialization reads numbers and booleans as NSNumber).
    private static func isString(_ value: Any) -> Bool {
        value is String && !(value is NSNumber)
    }

    private static func describe(_ value: Any) -> String {
        if let number = value as? NSNumber { return number.stringValue }
        if value is [Any] { return "[...]" }
        if value is [String: Any] { return "{...}" }
        return "\(value)"
    }

    private static func invalidJSON(_ message: String, field: String? = nil) -> FCMError {
        FCMError(
            code: 400,
            message: message,
            status: "INVALID_ARGUMENT",
            errorCode: nil,
            fieldViolations: field.map { [.init(field: $0, description: message)] } ?? []
        )
    }

    private static func invalidArgument(_ message: String, field: String) -> FCMError {
        FCMError(.invalidArgument, message: message, fieldViolations: [.init(field: field, description: message)])
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
