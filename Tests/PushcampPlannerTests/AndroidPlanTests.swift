import Foundation
import PushcampAudience
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

/// A campaign to both platforms, planned without sockets: each row to its provider, one person's
/// devices in one arm, Android messages checked by FCM's rules with their row.
@Suite("Planning for Android and iOS")
struct AndroidPlanTests {
    static let projectFile =
        TemporaryProject.defaultProjectFile + "\n  shop-android:\n    service_account: ${env:SHOP_FCM}\n"

    static func fcmToken(_ index: Int) -> String { TemporaryProject.fcmToken(index) }

    static func project(campaign: String, people: Int = 400) throws -> TemporaryProject {
        let project = try TemporaryProject(projectFile: projectFile)
        var lines = ["user_id,token,platform,name,color"]
        for index in 0..<people {
            lines.append("u\(index),\(TemporaryProject.token(index)),ios,Name\(index),#ff6600")
            lines.append("u\(index),\(fcmToken(index)),android,Name\(index),\(index % 50 == 7 ? "orange" : "#ff6600")")
        }
        try project.write("audiences/a.csv", lines.joined(separator: "\n") + "\n")
        try project.write("campaigns/c.yaml", campaign)
        return project
    }

    static let campaign = """
        campaign: both
        app: [shop, shop-android]
        audience:
          source: { csv: audiences/a.csv }
          user_key: user_id
        message:
          title: "Hi {{name}}"
          body: Sale
          data: { n: 3, ok: true }
          expiration: 2h
          android: { color: "{{color}}", ttl: 30m }
          holdout: 10%
          variants:
            - { name: a, weight: 1 }
            - { name: b, weight: 1 }
        """

    @Test func eachPlatformGetsItsRequestAndAPersonOneArm() throws {
        let project = try Self.project(campaign: Self.campaign)
        defer { project.remove() }
        let sendTime = Timestamp(secondsSince1970: 1_800_000_000)
        var pushes: [PlannedPush] = []
        let summary = try Planner(campaign: try load(project), sendTime: sendTime).run { pushes.append($0) }

        // Eight people's Android colour is not a colour: refused with their row (those not held
        // out), their iPhones still planned.
        let refused = summary.failures[.fcmInvalidMessage]?.count ?? 0
        #expect((1...8).contains(refused))
        #expect(
            summary.failures[.fcmInvalidMessage]?.examples.allSatisfy { ($0.location.line! - 3) % 100 == 14 } == true
        )
        #expect(summary.heldOut > 0 && summary.heldOut % 2 == 0, "a person's two devices are held out together")
        #expect(summary.platforms[.ios]! + summary.platforms[.android]! == summary.planned)
        #expect(summary.platforms[.ios] == summary.platforms[.android]! + refused)
        #expect(summary.assignmentUnit == "person (user_id)")

        var arms: [String: Set<String>] = [:]
        for push in pushes {
            let person = (push.row - 2) / 2  // lines 2k+2 and 2k+3 are person k's iPhone and Android phone
            arms["\(person)", default: []].insert(push.variant)
        }
        #expect(arms.values.allSatisfy { $0.count == 1 }, "one person, one arm")

        let ios = try #require(pushes.first { $0.platform == .ios })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(ios.payload)) as? [String: Any])
        #expect(json["n"] as? Int == 3, "APNs keeps the YAML type")
        #expect(ios.expirationHeader(sendTime: sendTime) == 1_800_007_200)

        let android = try #require(pushes.first { $0.platform == .android })
        #expect(android.topic.isEmpty && android.collapseID == nil)
        let body = android.fcmBody(sendTime: sendTime + TimeSpan(seconds: 600))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let message = try #require(object["message"] as? [String: Any])
        #expect((message["data"] as? [String: Any])?["n"] as? String == "3", "FCM data are strings")
        #expect((message["data"] as? [String: Any])?["ok"] as? String == "true")
        let settings = try #require(message["android"] as? [String: Any])
        #expect(settings["ttl"] as? String == "1200s", "android.ttl, counted from when the message leaves")
        #expect((settings["notification"] as? [String: Any])?["tag"] as? String == "both")
    }

    /// An iOS campaign passes Android rows over; an Android one, iOS rows; neither counts them invalid.
    @Test func rowsOfAnotherPlatformArePassedOver() throws {
        for (app, planned) in [("shop", Platform.ios), ("shop-android", .android)] {
            let campaign = """
                campaign: one
                app: \(app)
                audience: { source: { csv: audiences/a.csv } }
                message: { title: Hi, body: There }
                """
            let project = try Self.project(campaign: campaign, people: 20)
            defer { project.remove() }
            var platforms: Set<Platform> = []
            let summary = try Planner(campaign: try load(project)).run { platforms.insert($0.platform) }
            #expect(platforms == [planned])
            #expect(summary.audience.otherPlatform.values.reduce(0, +) == 20)
            #expect(summary.audience.invalidTotal == 0)
        }
    }
}
