import PushcampAPNs
import PushcampAPNsCore
import PushcampFCMCore
import PushcampSimulator
import Testing

@Suite("Simulator request rules")
struct RequestRulesTests {
    static let token = String(repeating: "ab", count: 32)

    func check(_ changes: [String: String?], body: Int = 20) -> APNsReason? {
        var fields: [String: String] = [
            ":method": "POST", ":path": "/3/device/\(Self.token)", "apns-topic": "com.example.shop",
            "apns-push-type": "alert", "apns-priority": "10", "apns-id": "00000000-0000-5000-8000-000000000001",
        ]
        for (name, value) in changes { fields[name] = value }
        let headers = fields.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        return RequestRules(bundleID: "com.example.shop").check(
            .init(headers: headers, body: Array(repeating: 0x20, count: body))
        )
    }

    @Test(
        arguments: [
            ([":method": "GET"], APNsReason.methodNotAllowed),
            ([":path": "/2/device/ab"], .badPath),
            ([":path": "/3/device/"], .missingDeviceToken),
            ([":path": "/3/device/xyz"], .badDeviceToken),
            (["apns-id": "not-a-uuid"], .badMessageID),
            (["apns-id": "00000000-0000-5000-8000-00000000000A"], .badMessageID),
            (["apns-expiration": "soon"], .badExpirationDate),
            (["apns-priority": "7"], .badPriority),
            (["apns-push-type": "banner"], .invalidPushType),
            (["apns-topic": nil], .missingTopic),
            (["apns-topic": "com.other.app"], .badTopic),
            (["apns-push-type": "voip"], .badTopic),
            (["apns-collapse-id": String(repeating: "x", count: 65)], .badCollapseID),
        ] as [([String: String?], APNsReason)]
    )
    func refused(changes: [String: String?], reason: APNsReason) {
        #expect(check(changes) == reason)
    }

    @Test func payloadLimitsAsAPNs() {
        #expect(check([:], body: 0) == .payloadEmpty)
        #expect(check([:], body: 4096) == nil)
        #expect(check([:], body: 4097) == .payloadTooLarge)
        #expect(check(["apns-push-type": "voip", "apns-topic": "com.example.shop.voip"], body: 5120) == nil)
        #expect(
            check(["apns-push-type": "voip", "apns-topic": "com.example.shop.voip"], body: 5121) == .payloadTooLarge
        )
    }

    @Test func tokensFile() throws {
        let rules = try TokenBehaviour.parseFile(
            "# rules\nAA ok\nbb unregistered 1700000000000\ncc flaky 2  # then ok\ndd reason Shutdown\nee reason SENDER_ID_MISMATCH\n\n",
            path: "t.txt"
        )
        #expect(
            rules == [
                "aa": .ok, "bb": .unregistered(timestamp: 1_700_000_000_000), "cc": .flaky(failures: 2),
                "dd": .reason(.shutdown), "ee": .fcm(.senderIDMismatch),
            ]
        )
        #expect(throws: SimulatorError.self) { try TokenBehaviour.parseFile("aa sometimes", path: "t.txt") }
        do {
            _ = try TokenBehaviour.parseFile("aa ok\nbb reason Nope", path: "t.txt")
        } catch {
            #expect(error.description == "t.txt:2: error: 'Nope' is not a reason APNs documents nor an FCM error code")
        }
    }
}
