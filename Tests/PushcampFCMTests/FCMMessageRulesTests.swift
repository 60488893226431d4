import Foundation
import PushcampFCMCore
import Testing

/// The checks a `messages:send` body must pass (`reference/FCM.md`, sections 1 and 4): each answered
/// with Google's status, code and, where Google names one, the field at fault.
@Suite("FCM message rules")
struct FCMMessageRulesTests {
    static let token = "cYx0Sd8pQ0mB1kz7Jf3aPq:APA91bHk2J4x5Qw8e9r0t1y2u3i4o5p6a7s8d9f0g1h2j3k4l5z6x7c8v9b0n1m2"

    static func body(_ message: String, validateOnly: Bool = false) -> [UInt8] {
        Array(#"{"validate_only":\#(validateOnly),"message":{"token":"\#(token)",\#(message)}}"#.utf8)
    }

    @Test func aWellFormedMessagePasses() {
        let message = #"""
            "notification":{"title":"Hi","body":"Spring sale","image":"https://example.com/a.png"},
            "data":{"deep_link":"shop://sale","count":"3"},
            "android":{"priority":"HIGH","ttl":"3600s","collapse_key":"sale",
              "notification":{"channel_id":"sales","tag":"sale","click_action":"OPEN","color":"#ff8800"}}
            """#
        #expect(FCMMessageRules.check(Self.body(message)) == nil)
        // lowerCamelCase is accepted too.
        #expect(
            FCMMessageRules.check(Self.body(#""android":{"collapseKey":"a","notification":{"channelId":"c"}}"#)) == nil
        )
        #expect(FCMMessageRules.check(Array(#"{"validateOnly":true,"message":{"topic":"news"}}"#.utf8)) == nil)
    }

    /// Each rule, the answer it gets: the message text and the field at fault.
    @Test(arguments: [
        (
            #""data":{"count":12}"#, "Invalid value at 'message.data[0].value' (TYPE_STRING), 12",
            "message.data[0].value"
        ),
        (
            #""data":{"a":"1","from":"x"}"#, "Invalid data payload key: 'from' is a key FCM reserves.",
            "message.data[1].key"
        ),
        (
            #""data":{"message_type":"x"}"#, "Invalid data payload key: 'message_type' is a key FCM reserves.",
            "message.data[0].key"
        ),
        (#""data":{"gcm":"x"}"#, "Invalid data payload key: 'gcm' is a key FCM reserves.", "message.data[0].key"),
        (
            #""data":{"google.c.a":"x"}"#, "Invalid data payload key: keys starting with 'google' are reserved by FCM.",
            "message.data[0].key"
        ),
        (
            #""data":{"gcm.notification.x":"x"}"#,
            "Invalid data payload key: keys starting with 'gcm.notification.' are reserved by FCM.",
            "message.data[0].key"
        ),
        (
            #""android":{"data":{"ok":true}}"#, "Invalid value at 'message.android.data[0].value' (TYPE_STRING), 1",
            "message.android.data[0].value"
        ),
        (#""android":{"ttl":"2419201s"}"#, "The TTL must be at most 2419200s (28 days).", "message.android.ttl"),
        (
            #""android":{"ttl":"3600"}"#, "The TTL must be seconds with an 's' suffix, as \"3600s\".",
            "message.android.ttl"
        ),
        (
            #""android":{"priority":"URGENT"}"#,
            "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority)",
            "message.android.priority"
        ),
        (
            #""android":{"notification":{"color":"orange"}}"#, "The color must be in the form #RRGGBB.",
            "message.android.notification.color"
        ),
    ])
    func aRuleIsAnsweredWithItsField(message: String, expected: String, field: String) throws {
        let error = try #require(FCMMessageRules.check(Self.body(message)))
        #expect(error.code == 400)
        #expect(error.status == "INVALID_ARGUMENT")
        #expect(error.message == expected)
        #expect(error.fieldViolations.map(\.field) == [field])
    }

    @Test func durationsGoogleTakes() {
        for good in ["0s", "3600s", "3.5s", "2419200s", "1.000000001s"] {
            #expect(FCMMessageRules.ttlProblem(good) == nil, "\(good)")
        }
        for bad in ["", "s", "-1s", "1.s", "1.0000000001s", "1e3s", "3600", "2419201s", " 1s"] {
            #expect(FCMMessageRules.ttlProblem(bad) != nil, "\(bad)")
        }
    }

    @Test func unknownFieldsAreRefusedAsGoogleRefusesThem() throws {
        var error = try #require(FCMMessageRules.check(Self.body(#""android":{"channel":"x"}"#)))
        #expect(
            error.message
                == "Invalid JSON payload received. Unknown name \"channel\" at 'message.android': Cannot find field."
        )
        #expect(error.errorCode == nil)
        error = try #require(FCMMessageRules.check(Self.body(#""titel":"x""#)))
        #expect(
            error.message == "Invalid JSON payload received. Unknown name \"titel\" at 'message': Cannot find field."
        )
        error = try #require(
            FCMMessageRules.check(Array(#"{"message":{"token":"\#(Self.token)"},"dry_run":true}"#.utf8))
        )
        #expect(error.message == "Invalid JSON payload received. Unknown name \"dry_run\": Cannot find field.")
    }

    @Test func exactlyOneTarget() throws {
        var error = try #require(FCMMessageRules.check(Array(#"{"message":{"data":{"a":"b"}}}"#.utf8)))
        #expect(error.message == "Recipient of the message is not set.")
        #expect(error.reason == .invalidArgument)
        error = try #require(
            FCMMessageRules.check(Array(#"{"message":{"token":"\#(Self.token)","topic":"news"}}"#.utf8))
        )
        #expect(error.message.contains("Oneof field 'target' is already set"))
        error = try #require(FCMMessageRules.check(Array(#"{"validate_only":true}"#.utf8)))
        #expect(error.fieldViolations.map(\.field) == ["message"])
    }

    @Test func aTokenOfTheWrongShapeIsNamedAsTheToken() throws {
        for bad in ["short", String(repeating: "ab", count: 32), Self.token + " ", Self.token + "\n", "é" + Self.token]
        {
            let error = try #require(FCMMessageRules.check(Array(#"{"message":{"token":\#(jsonString(bad))}}"#.utf8)))
            #expect(error.concernsToken, "\(bad)")
            #expect(error.reason == .invalidArgument)
        }
        #expect(
            FCMMessageRules.tokenProblem(String(repeating: "ab", count: 32))
                == "is hexadecimal only: an APNs device token, not an FCM registration token"
        )
    }

    /// 4096 bytes for a token, 2048 for a topic, counted without the target.
    @Test func theSizeLimitCountsTheMessageWithoutItsTarget() throws {
        func message(dataBytes: Int, target: String) -> [UInt8] {
            let value = String(repeating: "x", count: dataBytes)
            return Array(#"{"message":{\#(target),"data":{"k":"\#(value)"}}}"#.utf8)
        }
        // {"data":{"k":"…"}} is 17 bytes around the value.
        #expect(FCMMessageRules.check(message(dataBytes: 4096 - 17, target: #""token":"\#(Self.token)""#)) == nil)
        let tooBig = try #require(
            FCMMessageRules.check(message(dataBytes: 4097 - 17, target: #""token":"\#(Self.token)""#))
        )
        #expect(tooBig.message == "Message is too big: 4097 bytes, over the limit of 4096.")
        #expect(FCMMessageRules.check(message(dataBytes: 2048 - 17, target: #""topic":"news""#)) == nil)
        let topic = try #require(FCMMessageRules.check(message(dataBytes: 2049 - 17, target: #""topic":"news""#)))
        #expect(topic.message == "Message is too big: 2049 bytes, over the limit of 2048 for topic messages.")
    }

    @Test func hostileBodiesAreRefusedNotCrashed() {
        for body in [
            "", "[]", "null", "{", #"{"message":[]}"#, #"{"message":{"token":7}}"#,
            #"{"validate_only":"yes","message":{}}"#,
        ] {
            #expect(FCMMessageRules.check(Array(body.utf8))?.code == 400, "\(body)")
        }
    }

    func jsonString(_ text: String) -> String {
        "\""
            + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
