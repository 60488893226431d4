import Foundation
import PushcampAPNsCore
import PushcampSimulator
import Testing

@Suite("Simulator broadcast rules: channel management and broadcast sends")
struct BroadcastRulesTests {
    static let bundle = "com.example.shop"

    static func request(_ fields: [String: String?], body: [UInt8] = []) -> RequestRules.Request {
        let headers = fields.compactMap { name, value in value.map { (name: name, value: $0) } }
            .sorted { $0.name < $1.name }
        return RequestRules.Request(headers: headers, body: body)
    }

    static func answer(
        _ fields: [String: String?],
        body: [UInt8] = [],
        authentication: APNsReason? = nil,
        rules: BroadcastRules = BroadcastRules(bundleID: bundle),
        channels: inout ChannelRegistry
    ) -> BroadcastRules.Answer {
        let request = request(fields, body: body)
        return rules.answer(
            request,
            route: .init(path: request.value(":path") ?? ""),
            authentication: authentication,
            channels: &channels
        )
    }

    static func create(policy: Int, in channels: inout ChannelRegistry) -> String? {
        let created = answer(
            [":method": "POST", ":path": "/1/apps/\(bundle)/channels"],
            body: Array(#"{"message-storage-policy": \#(policy), "push-type": "LiveActivity"}"#.utf8),
            channels: &channels
        )
        #expect(created.status == 201 && created.reason == nil, "\(created)")
        return created.headers["apns-channel-id"]
    }

    @Test func pathsNameTheirAPI() {
        #expect(BroadcastRules.Route(path: "/4/broadcasts/apps/com.a") == .broadcast(bundleID: "com.a"))
        #expect(BroadcastRules.Route(path: "/1/apps/com.a/channels") == .channel(bundleID: "com.a"))
        #expect(BroadcastRules.Route(path: "/1/apps/com.a/all-channels") == .allChannels(bundleID: "com.a"))
        #expect(BroadcastRules.Route(path: "/3/device/ab") == .device)
        // APNSwift 6.4's old form, the id in the path, is not Apple's.
        #expect(BroadcastRules.Route(path: "/1/apps/com.a/channels/abc") == .unknown)
        #expect(BroadcastRules.Route(path: "/4/broadcasts/apps/") == .unknown)
    }

    @Test func aChannelIsCreatedReadListedAndDeleted() throws {
        var channels = ChannelRegistry()
        let id = try #require(Self.create(policy: 1, in: &channels))
        #expect(ChannelRegistry.isChannelID(id))
        let path = "/1/apps/\(Self.bundle)/channels"
        let read = Self.answer([":method": "GET", ":path": path, "apns-channel-id": id], channels: &channels)
        #expect(read.status == 200)
        #expect(read.body == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        let second = try #require(Self.create(policy: 0, in: &channels))
        let list = Self.answer([":method": "GET", ":path": "/1/apps/\(Self.bundle)/all-channels"], channels: &channels)
        #expect(list.status == 200 && list.body == #"{"channels":["\#(id)","\#(second)"]}"#)
        let deleted = Self.answer([":method": "DELETE", ":path": path, "apns-channel-id": id], channels: &channels)
        #expect(deleted.status == 204 && deleted.body == nil)
        let again = Self.answer([":method": "GET", ":path": path, "apns-channel-id": id], channels: &channels)
        #expect(again.status == 400 && again.reason == .channelNotRegistered)
        #expect(channels.ids(bundleID: Self.bundle) == [second])
    }

    @Test func theRequestIDIsEchoedOrMade() {
        var channels = ChannelRegistry()
        let path = "/1/apps/\(Self.bundle)/all-channels"
        let echoed = Self.answer(
            [":method": "GET", ":path": path, "apns-request-id": "3f2504e0-4f89-41d3-9a0c-0305e82c3301"],
            channels: &channels
        )
        #expect(echoed.headers["apns-request-id"] == "3f2504e0-4f89-41d3-9a0c-0305e82c3301")
        let made = Self.answer([":method": "GET", ":path": path], channels: &channels)
        #expect(made.headers["apns-request-id"]?.count == 36)
    }

    @Test func theTenThousandthChannelIsTheLast() {
        var channels = ChannelRegistry()
        for index in 0..<BroadcastRules.channelCap { channels.add("id\(index)", policy: 0, bundleID: Self.bundle) }
        let refused = Self.answer(
            [":method": "POST", ":path": "/1/apps/\(Self.bundle)/channels"],
            body: Array(#"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#.utf8),
            channels: &channels
        )
        #expect(refused.status == 400 && refused.reason == .cannotCreateChannelConfig)
        // The cap is per app.
        channels.add("other", policy: 0, bundleID: "com.example.other")
        #expect(channels.count(bundleID: "com.example.other") == 1)
    }

    @Test(
        arguments: [
            (#"{"message-storage-policy": 2, "push-type": "LiveActivity"}"#, APNsReason.badRequestPayload),
            (#"{"push-type": "LiveActivity"}"#, .badRequestPayload),
            (#"{"message-storage-policy": 0, "push-type": "Alert"}"#, .invalidPushType),
            ("not json", .badRequestPayload),
            ("", .payloadEmpty),
        ]
    )
    func aBadCreateIsRefused(body: String, reason: APNsReason) {
        var channels = ChannelRegistry()
        let answer = Self.answer(
            [":method": "POST", ":path": "/1/apps/\(Self.bundle)/channels"],
            body: Array(body.utf8),
            channels: &channels
        )
        #expect(answer.reason == reason)
        #expect(channels.count(bundleID: Self.bundle) == 0)
    }

    /// A broadcast with every problem at once, fixed one at a time: each answer names the next
    /// problem in APNs' order.
    @Test func aBroadcastIsCheckedInAPNsOrder() throws {
        var channels = ChannelRegistry()
        let stores = try #require(Self.create(policy: 1, in: &channels))
        let storesNothing = try #require(Self.create(policy: 0, in: &channels))
        var fields: [String: String?] = [
            ":method": "POST", ":path": "/4/broadcasts/apps/com.example.other", "apns-push-type": "alert",
            "apns-expiration": "soon", "apns-priority": "7",
        ]
        var body: [UInt8] = []
        var authentication: APNsReason? = .invalidProviderToken
        var rules = BroadcastRules(bundleID: Self.bundle, enabled: false)
        var seen: [APNsReason] = []
        func next() -> APNsReason? {
            let answer = Self.answer(
                fields,
                body: body,
                authentication: authentication,
                rules: rules,
                channels: &channels
            )
            if let reason = answer.reason { seen.append(reason) }
            return answer.reason
        }
        #expect(next() == .invalidProviderToken)
        authentication = nil
        #expect(next() == .topicMismatch)
        fields[":path"] = "/4/broadcasts/apps/\(Self.bundle)"
        #expect(next() == .featureNotEnabled)
        rules.enabled = true
        fields[":method"] = "PUT"
        #expect(next() == .methodNotAllowed)
        fields[":method"] = "POST"
        #expect(next() == .missingChannelID)
        fields["apns-channel-id"] = "not base64!"
        #expect(next() == .badChannelID)
        fields["apns-channel-id"] = "bm90LWEtY2hhbm5lbA=="  // base64, but no channel of ours
        fields["apns-push-type"] = nil
        #expect(next() == .missingPushType)
        fields["apns-push-type"] = "alert"
        #expect(next() == .invalidPushType)
        fields["apns-push-type"] = "LiveActivity"  // one of Apple's three spellings
        #expect(next() == .badExpirationDate)
        fields["apns-expiration"] = "1700000000"
        #expect(next() == .badPriority)
        fields["apns-priority"] = "5"
        #expect(next() == .channelNotRegistered)
        fields["apns-channel-id"] = storesNothing
        #expect(next() == .badExpirationDate)  // policy 0 takes only expiration 0
        fields["apns-expiration"] = "0"
        #expect(next() == .payloadEmpty)
        body = Array(repeating: 0x20, count: BroadcastRules.maxPayload + 1)
        let tooLarge = Self.answer(fields, body: body, rules: rules, channels: &channels)
        #expect(tooLarge.status == 413 && tooLarge.reason == .payloadTooLarge)
        body = Array(repeating: 0x20, count: BroadcastRules.maxPayload)
        #expect(next() == nil)
        // A stored channel takes a later expiration.
        fields["apns-channel-id"] = stores
        fields["apns-expiration"] = "1700000000"
        #expect(next() == nil)
        #expect(seen.count == 13)
    }

    @Test func aDuplicatedHeaderComesFirst() {
        var channels = ChannelRegistry()
        let request = RequestRules.Request(
            headers: [
                (":method", "POST"), (":path", "/4/broadcasts/apps/\(Self.bundle)"), ("apns-channel-id", "YQ=="),
                ("apns-channel-id", "Yg=="),
            ],
            body: []
        )
        let answer = BroadcastRules(bundleID: Self.bundle).answer(
            request,
            route: .broadcast(bundleID: Self.bundle),
            authentication: .missingProviderToken,
            channels: &channels
        )
        #expect(answer.reason == .duplicateHeaders)
    }

    @Test func channelsAreSavedAndReadBack() throws {
        var channels = ChannelRegistry()
        channels.add("YQ==", policy: 1, bundleID: Self.bundle)
        let path = NSTemporaryDirectory() + "pushcamp-channels-\(UInt32.random(in: 0...UInt32.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try channels.save(to: path)
        #expect(try ChannelRegistry.load(from: path) == channels)
        #expect(try ChannelRegistry.load(from: path + ".absent") == ChannelRegistry())
    }
}
