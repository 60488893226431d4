import PushcampFCMCore
import PushcampModel

/// One Android message as decided for its recipients: the platform-neutral part of a campaign's message
/// (title, body, image, data, priority, expiration, collapse id) and Android's own settings, in the
/// shape FCM HTTP v1 takes them (`reference/FCM.md`, section 5).
///
/// Rendered by `body(token:validateOnly:sendTime:)` into a `messages:send` request body: valid JSON by
/// construction (every string escaped, `data` values strings whatever they were in the audience), in a
/// fixed field order, so the same message for the same token is the same bytes.
public struct FCMMessage: Sendable, Hashable {
    public enum Priority: String, Sendable, Hashable {
        case high = "HIGH"
        case normal = "NORMAL"

        /// From APNs' `apns-priority`: 10 is immediate; 5 and 1 are FCM's normal.
        public init(apnsPriority: Int) { self = apnsPriority >= 10 ? .high : .normal }
    }

    /// `android.notification`: what Android shows, beyond the common title and body.
    public struct AndroidNotification: Sendable, Hashable {
        /// Override the common title and body on Android.
        public var title: String?
        public var body: String?
        public var channelID: String?
        /// Replaces a shown notification with the same tag (APNs' collapse id, as shown).
        public var tag: String?
        public var clickAction: String?
        public var sound: String?
        public var icon: String?
        /// `#rrggbb`.
        public var color: String?
        /// The badge (launcher-dependent).
        public var notificationCount: Int?

        public init() {}

        var isEmpty: Bool { self == AndroidNotification() }
    }

    public var title: String?
    public var body: String?
    /// An image URL Android downloads (JPEG, PNG or BMP; at most 1 MB).
    public var image: String?
    /// `message.data`, in order: strings only.
    public var data: [Pair]
    /// `android.data`, replacing `data` on Android when present.
    public var androidData: [Pair]?
    public var priority: Priority?
    /// When the message stops being worth delivering; nil leaves FCM's default (4 weeks).
    public var expiration: PlannedExpiration?
    /// `android.collapse_key`: undelivered messages with the same key are replaced.
    public var collapseKey: String?
    public var restrictedPackageName: String?
    public var notification = AndroidNotification()

    public struct Pair: Sendable, Hashable {
        public var key: String
        public var value: String

        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    public init(
        title: String? = nil,
        body: String? = nil,
        image: String? = nil,
        data: [Pair] = [],
        priority: Priority? = nil,
        expiration: PlannedExpiration? = nil,
        collapseKey: String? = nil
    ) {
        self.title = title
        self.body = body
        self.image = image
        self.data = data
        self.priority = priority
        self.expiration = expiration
        self.collapseKey = collapseKey
    }

    /// `android.ttl` in seconds at `sendTime`: the time left to the expiration, 0 when it passed or
    /// for "now or never", at most 28 days; nil when no expiration is set.
    public func ttl(sendTime: Timestamp) -> Int? { Self.ttl(expiration, sendTime: sendTime) }

    /// `android.ttl` for `expiration` at `sendTime`.
    public static func ttl(_ expiration: PlannedExpiration?, sendTime: Timestamp) -> Int? {
        switch expiration {
        case nil: return nil
        case .immediately: return 0
        case .at(let timestamp):
            return Int(
                min(max(0, timestamp.secondsSince1970 - sendTime.secondsSince1970), Int64(FCMMessageRules.maximumTTL))
            )
        case .afterSend(let span): return Int(min(max(0, span.seconds), Int64(FCMMessageRules.maximumTTL)))
        }
    }

    /// The `messages:send` body for `token`, its `android.ttl` as at `sendTime`.
    public func body(token: String, validateOnly: Bool = false, sendTime: Timestamp) -> [UInt8] {
        Self.settingTTL(ttl(sendTime: sendTime), validateOnly: validateOnly, in: body(token: token))
    }

    /// The `messages:send` body for `token` without a ttl, with `validate_only` false: what a plan
    /// keeps. The `android` object comes first after the token (and is there whenever an expiration
    /// is set), so `settingTTL` adds the ttl as the request goes out, from the time left then.
    public func body(token: String) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.raw(#"{"validate_only":false,"message":{"token":"#)
        json.string(token)
        // The android object is written in place, and taken back when it stays empty (and no
        // expiration needs it for the ttl).
        json.bytes += Self.androidOpening
        let androidStart = json.bytes.count
        var first = true
        field(&json, "priority", priority?.rawValue, first: &first)
        field(&json, "collapse_key", collapseKey, first: &first)
        field(&json, "restricted_package_name", restrictedPackageName, first: &first)
        if let androidData {
            json.raw(first ? #""data":"# : #","data":"#)
            first = false
            Self.map(&json, androidData)
        }
        if !notification.isEmpty {
            json.raw(first ? #""notification":{"# : #","notification":{"#)
            var inner = true
            field(&json, "title", notification.title, first: &inner)
            field(&json, "body", notification.body, first: &inner)
            field(&json, "channel_id", notification.channelID, first: &inner)
            field(&json, "tag", notification.tag, first: &inner)
            field(&json, "click_action", notification.clickAction, first: &inner)
            field(&json, "sound", notification.sound, first: &inner)
            field(&json, "icon", notification.icon, first: &inner)
            field(&json, "color", notification.color, first: &inner)
            if let count = notification.notificationCount {
                json.raw(inner ? #""notification_count":"# : #","notification_count":"#)
                json.integer(count)
            }
            json.raw("}")
        }
        if json.bytes.count > androidStart || expiration != nil {
            json.raw("}")
        } else {
            json.bytes.removeLast(Self.androidOpening.count)
        }
        if title != nil || body != nil || image != nil {
            json.raw(#","notification":{"#)
            var first = true
            field(&json, "title", title, first: &first)
            field(&json, "body", body, first: &first)
            field(&json, "image", image, first: &first)
            json.raw("}")
        }
        if !data.isEmpty {
            json.raw(#","data":"#)
            Self.map(&json, data)
        }
        json.raw("}}")
        return json.bytes
    }

    static let validateOnlyPrefix = Array(#"{"validate_only":false,"#.utf8)
    static let androidOpening = Array(#","android":{"#.utf8)

    /// `body` (made by `body(token:)`) with `"ttl":"<ttl>s"` first in its `android` object and
    /// `validate_only` as given. The token before the `android` object holds no quote, so the first
    /// `,"android":{` is the message's own; a body without one (no expiration) gets one.
    public static func settingTTL(_ ttl: Int?, validateOnly: Bool = false, in body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + 32)
        var rest = body[...]
        if validateOnly, body.starts(with: validateOnlyPrefix) {
            out += Array(#"{"validate_only":true,"#.utf8)
            rest = body[validateOnlyPrefix.count...]
        }
        guard let ttl else {
            out += rest
            return out
        }
        let field = Array(#""ttl":"\#(ttl)s""#.utf8)
        if let opening = firstRange(of: androidOpening, in: rest) {
            out += rest[..<opening.upperBound]
            out += field
            if rest[opening.upperBound] != 0x7D { out.append(0x2C) }
            out += rest[opening.upperBound...]
        } else if let tokenEnd = tokenEnd(in: rest) {
            out += rest[..<tokenEnd]
            out += androidOpening + field + [0x7D]
            out += rest[tokenEnd...]
        } else {
            out += rest
        }
        return out
    }

    private static func firstRange(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Range<Int>? {
        guard let head = needle.first, haystack.count >= needle.count else { return nil }
        // Over the bytes themselves: this runs for every message as it goes out.
        return haystack.withUnsafeBufferPointer { bytes -> Range<Int>? in
            var index = 0
            while index <= bytes.count - needle.count {
                if bytes[index] == head, needle.indices.allSatisfy({ bytes[index + $0] == needle[$0] }) {
                    return (haystack.startIndex + index)..<(haystack.startIndex + index + needle.count)
                }
                index += 1
            }
            return nil
        }
    }

    /// Where the token's string ends (after its closing quote).
    private static func tokenEnd(in body: ArraySlice<UInt8>) -> Int? {
        let key = Array(#""token":""#.utf8)
        guard let start = firstRange(of: key, in: body) else { return nil }
        var index = start.upperBound
        while index < body.endIndex, body[index] != 0x22 { index += 1 }
        return index < body.endIndex ? index + 1 : nil
    }

    private func field(_ json: inout JSONWriter, _ name: StaticString, _ value: String?, first: inout Bool) {
        guard let value else { return }
        if !first { json.raw(",") }
        first = false
        json.raw("\"")
        json.raw(name)
        json.raw("\":")
        json.string(value)
    }

    private static func map(_ json: inout JSONWriter, _ pairs: [Pair]) {
        json.raw("{")
        for (index, pair) in pairs.enumerated() {
            if index > 0 { json.raw(",") }
            json.string(pair.key)
            json.raw(":")
            json.string(pair.value)
        }
        json.raw("}")
    }

    /// What FCM would refuse in `body` (this message's `body(token:)` for `token`) among what can
    /// change from one recipient to the next when every field name is fixed by construction: its size
    /// and its colour. The planner checks each recipient's message so, after checking the first of
    /// each variant with `problem(token:sendTime:)`, which parses the body as the simulator does.
    public func recipientProblem(body: [UInt8], token: String) -> FCMError? {
        if let problem = FCMMessageRules.colorProblem(notification.color) { return problem }
        // The message without its target, as Google measures it: the body less the envelope and
        // the token's field (a registration token holds nothing JSON escapes).
        let envelope = #"{"validate_only":false,"message":"#.utf8.count + #""token":"","#.utf8.count + 1
        return FCMMessageRules.sizeProblem(body.count - envelope - token.utf8.count)
    }

    /// What FCM would refuse in this message for `token`, checked offline by the rules the simulator
    /// answers with (`FCMMessageRules`): the field at fault and why, for a located diagnostic.
    public func problem(token: String, sendTime: Timestamp) -> FCMError? {
        if let reason = FCMMessageRules.tokenProblem(token) {
            return FCMError(
                .invalidArgument,
                message: "the registration token \(reason)",
                fieldViolations: [.init(field: "message.token", description: "the registration token \(reason)")]
            )
        }
        for (pairs, path) in [(data, "message.data"), (androidData ?? [], "message.android.data")] {
            var seen: Set<String> = []
            for (index, pair) in pairs.enumerated() {
                if let reason = FCMMessageRules.reservedKeyProblem(pair.key) {
                    return FCMError(
                        .invalidArgument,
                        message: reason,
                        fieldViolations: [.init(field: "\(path)[\(index)].key", description: reason)]
                    )
                }
                if !seen.insert(pair.key).inserted {
                    let reason = "'\(pair.key)' is written twice (FCM keeps the last)"
                    return FCMError(
                        .invalidArgument,
                        message: reason,
                        fieldViolations: [.init(field: "\(path)[\(index)].key", description: reason)]
                    )
                }
            }
        }
        return FCMMessageRules.check(body(token: token, sendTime: sendTime))
    }
}
