import PushcampAPNsCore

/// APNs' request checks, in the order APNs reports them, without sockets.
public struct RequestRules: Sendable {
    /// The bundle id; topics are it plus a push type's suffix. nil accepts any topic.
    public var bundleID: String?

    public init(bundleID: String?) {
        self.bundleID = bundleID
    }

    static let pushTypes: [String: String] = [
        "alert": "", "background": "", "location": ".location-query", "voip": ".voip",
        "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "mdm": "",
        "liveactivity": ".push-type.liveactivity", "pushtotalk": ".voip-ptt", "widgets": ".push-type.widgets",
        "controls": ".push-type.controls",
    ]

    /// A request as it arrived: header fields in order (pseudo-headers included) and the body.
    public struct Request: Sendable {
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(headers: [(name: String, value: String)], body: [UInt8]) {
            self.headers = headers
            self.body = body
        }

        public func value(_ name: String) -> String? {
            headers.first { $0.name == name }?.value
        }

        /// The device token from `:path`, when the path has APNs' form.
        public var deviceToken: String? {
            guard let path = value(":path"), path.hasPrefix("/3/device/") else { return nil }
            return String(path.dropFirst("/3/device/".count))
        }
    }

    /// The reason APNs would refuse the request for, before looking at the device; nil when it is well formed.
    /// `authorization` is checked separately (see `ProviderTokenVerifier`).
    public func check(_ request: Request) -> APNsReason? {
        var seen: Set<String> = []
        for field in request.headers where !seen.insert(field.name).inserted {
            return .duplicateHeaders
        }
        if request.value(":method") != "POST" { return .methodNotAllowed }
        guard let token = request.deviceToken else { return .badPath }
        if token.isEmpty { return .missingDeviceToken }
        if token.utf8.count % 2 != 0 || token.utf8.count < 64 || token.utf8.count > 200
            || !token.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46)
            })
        {
            return .badDeviceToken
        }
        if let id = request.value("apns-id"), !Self.isCanonicalUUID(id) { return .badMessageID }
        if let expiration = request.value("apns-expiration"), Int64(expiration).map({ $0 >= 0 }) != true {
            return .badExpirationDate
        }
        if let priority = request.value("apns-priority"), !["1", "5", "10"].contains(priority) { return .badPriority }
        let pushType = request.value("apns-push-type") ?? "alert"
        guard let suffix = Self.pushTypes[pushType] else { return .invalidPushType }
        guard let topic = request.value("apns-topic") else { return .missingTopic }
        if let bundleID, topic != bundleID + suffix { return .badTopic }
        if let collapse = request.value("apns-collapse-id"), collapse.utf8.count > 64 { return .badCollapseID }
        if request.body.isEmpty { return .payloadEmpty }
        if request.body.count > (pushType == "voip" ? 5120 : 4096) { return .payloadTooLarge }
        return nil
    }

    /// 8-4-4-4-12 lowercase hexadecimal.
    static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if byte != 0x2D { return false }
            } else if !((byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)) {
                return false
            }
        }
        return true
    }
}
