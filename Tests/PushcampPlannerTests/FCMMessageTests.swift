import Foundation
import PushcampFCMCore
import PushcampModel
import PushcampPlanner
import Testing

/// An Android message rendered for FCM HTTP v1: valid JSON whatever the text, strings for `data`,
/// the expiration as a TTL, and checked offline by the simulator's own rules.
@Suite("FCM messages")
struct FCMMessageTests {
    static let token = "cYx0Sd8pQ0mB1kz7Jf3aPq:APA91bHk2J4x5Qw8e9r0t1y2u3i4o5p6a7s8d9f0g1h2j3k4l5z6x7c8v9b0n1m2"
    static let now = Timestamp(secondsSince1970: 1_800_000_000)

    @Test func theBodyHasFCMsShapeInAFixedOrder() {
        var message = FCMMessage(
            title: "Spring sale",
            body: "20% off",
            data: [.init("deep_link", "shop://sale"), .init("count", "3")],
            priority: .high,
            expiration: .afterSend(TimeSpan(seconds: 3600)),
            collapseKey: "spring"
        )
        message.notification.channelID = "sales"
        message.notification.tag = "spring"
        message.notification.notificationCount = 2
        let body = String(decoding: message.body(token: Self.token, sendTime: Self.now), as: UTF8.self)
        #expect(
            body
                == #"{"validate_only":false,"message":{"token":"\#(Self.token)","android":{"ttl":"3600s","priority":"HIGH","collapse_key":"spring","notification":{"channel_id":"sales","tag":"spring","notification_count":2}},"notification":{"title":"Spring sale","body":"20% off"},"data":{"deep_link":"shop://sale","count":"3"}}}"#
        )
        #expect(message.problem(token: Self.token, sendTime: Self.now) == nil)
    }

    /// A plan keeps the body without a ttl; the ttl goes in as the request leaves, from the time left
    /// then, whether or not the message has other Android settings, and `validate_only` with it.
    @Test func theTTLIsSetAsTheRequestLeaves() throws {
        let bare = FCMMessage(title: "t", expiration: .at(Timestamp(secondsSince1970: 1_800_000_600)))
        let kept = bare.body(token: Self.token)
        #expect(String(decoding: kept, as: UTF8.self).contains(#""android":{}"#))
        let sent = FCMMessage.settingTTL(bare.ttl(sendTime: Self.now), validateOnly: true, in: kept)
        #expect(
            String(decoding: sent, as: UTF8.self)
                == #"{"validate_only":true,"message":{"token":"\#(Self.token)","android":{"ttl":"600s"},"notification":{"title":"t"}}}"#
        )
        #expect(FCMMessageRules.check(sent) == nil)
        // A body made without an android object (older plans, other makers) gets one.
        let plain = FCMMessage(title: "t").body(token: Self.token)
        let added = String(decoding: FCMMessage.settingTTL(0, in: plain), as: UTF8.self)
        #expect(
            added
                == #"{"validate_only":false,"message":{"token":"\#(Self.token)","android":{"ttl":"0s"},"notification":{"title":"t"}}}"#
        )
        #expect(FCMMessage.settingTTL(nil, in: plain) == plain)
    }

    /// Whatever a recipient's name holds, the body parses and says exactly it.
    @Test(arguments: ["Zoë \"the\" \\ best", "line\nbreak\ttab\u{0}nul", "😀 emoji", "</script>"])
    func hostileTextStaysInsideItsString(text: String) throws {
        let message = FCMMessage(title: text, data: [.init("name", text)])
        let body = message.body(token: Self.token, validateOnly: true, sendTime: Self.now)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let inner = try #require(object["message"] as? [String: Any])
        #expect((inner["notification"] as? [String: Any])?["title"] as? String == text)
        #expect((inner["data"] as? [String: Any])?["name"] as? String == text)
        #expect(object["validate_only"] as? Bool == true)
        #expect(inner["android"] == nil, "no Android settings, no android object")
        #expect(FCMMessageRules.check(body) == nil)
    }

    /// APNs' absolute expiration becomes the time left; "now or never" is 0s; at most 28 days.
    @Test func theExpirationBecomesATTLAtSendTime() {
        func ttl(_ expiration: PlannedExpiration?) -> Int? {
            FCMMessage(expiration: expiration).ttl(sendTime: Self.now)
        }
        #expect(ttl(nil) == nil)
        #expect(ttl(.immediately) == 0)
        #expect(ttl(.at(Timestamp(secondsSince1970: 1_800_000_600))) == 600)
        #expect(ttl(.at(Timestamp(secondsSince1970: 1_700_000_000))) == 0)
        #expect(ttl(.afterSend(TimeSpan(seconds: 90 * 86_400))) == 2_419_200)
        #expect(FCMMessage.Priority(apnsPriority: 10) == .high)
        #expect(FCMMessage.Priority(apnsPriority: 5) == .normal)
    }

    /// The offline checks name the field, as the simulator (and Google) would.
    @Test func offlineChecksNameTheField() throws {
        var message = FCMMessage(data: [.init("ok", "1"), .init("google.analytics", "x")])
        var problem = try #require(message.problem(token: Self.token, sendTime: Self.now))
        #expect(problem.fieldViolations.map(\.field) == ["message.data[1].key"])
        #expect(problem.message == "keys starting with 'google' are reserved by FCM")
        message.data = [.init("a", "1"), .init("a", "2")]
        problem = try #require(message.problem(token: Self.token, sendTime: Self.now))
        #expect(problem.message == "'a' is written twice (FCM keeps the last)")
        message.data = [.init("big", String(repeating: "x", count: 4100))]
        problem = try #require(message.problem(token: Self.token, sendTime: Self.now))
        #expect(problem.message.hasPrefix("Message is too big"))
        message.data = []
        message.notification.color = "red"
        problem = try #require(message.problem(token: Self.token, sendTime: Self.now))
        #expect(problem.fieldViolations.map(\.field) == ["message.android.notification.color"])
        problem = try #require(
            FCMMessage(title: "t").problem(token: String(repeating: "ab", count: 32), sendTime: Self.now)
        )
        #expect(problem.concernsToken)
        #expect(
            problem.message
                == "the registration token is hexadecimal only: an APNs device token, not an FCM registration token"
        )
    }
}
