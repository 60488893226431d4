import Foundation
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

@Suite("Pre-flight rules")
struct PreflightTests {
    func plan(_ message: String, payload: String, rows: Int = 5) throws -> PlanSummary {
        let campaign = """
            campaign: rules
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: templates/p.yaml
            \(message.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            """
        let project = try makeProject(rows: rows, campaign: campaign, payload: payload)
        defer { project.remove() }
        return try Planner(campaign: try load(project)).run()
    }

    @Test(arguments: [
        ("push_type: alert", "aps: { alert: Hi }", [PreflightReason]()),
        ("push_type: alert", "aps: { sound: default }", []),
        ("push_type: alert", "aps: { thread-id: x }", [.alertNeedsAlertSoundOrBadge]),
        (
            "push_type: alert\npriority: 10", "aps: { content-available: 1 }",
            [.alertNeedsAlertSoundOrBadge, .contentAvailableAtPriority10]
        ),
        ("push_type: background", "aps: { content-available: 1 }", []),
        (
            "push_type: background\npriority: 10", "aps: { content-available: 1 }",
            [.backgroundNeedsPriority5, .contentAvailableAtPriority10]
        ),
        ("push_type: background", "aps: { content-available: 1, badge: 3 }", [.backgroundWithAlert]),
        ("push_type: background", "data: { x: 1 }", [.backgroundNeedsContentAvailable]),
        ("push_type: liveactivity", "aps: { event: update, timestamp: 1, content-state: {} }", []),
        ("push_type: liveactivity", "aps: { event: update, content-state: {} }", [.liveActivityFields]),
        ("push_type: voip", "id: 1", []),
        ("push_type: voip\ntopic: com.example.shop", "id: 1", [.topicMismatch]),
        ("push_type: alert\ntopic: com.example.shop.voip", "aps: { alert: Hi }", [.topicMismatch]),
    ])
    func staticRules(_ message: String, _ payload: String, _ reasons: [PreflightReason]) throws {
        let summary = try plan(message, payload: payload)
        #expect(summary.failures.keys.sorted() == reasons.sorted())
        for reason in reasons { #expect(summary.failures[reason]?.count == 5) }
        #expect(summary.failed == (reasons.isEmpty ? 0 : 5))
    }

    @Test func payloadSizeIsCheckedPerPushAgainstThePushTypesLimit() throws {
        let big = String(repeating: "x", count: 4071)
        // Rows 0..9 have names Name0..Name9: two sizes straddle the 4096-byte limit.
        let summary = try plan("push_type: alert", payload: "aps: { alert: \"\(big){{name}}\" }", rows: 12)
        #expect(summary.failures[.payloadTooLarge]?.count == 2)
        #expect(
            summary.failures[.payloadTooLarge]?.examples.first?.detail
                == "payload is 4097 bytes; APNs takes at most 4096 for alert"
        )
        #expect(summary.failures[.payloadTooLarge]?.examples.first?.location.description == "audiences/a.csv:12")
        #expect(summary.planned == 10)
        #expect(summary.payloadSizes.maximum == 4097)
        let voip = try plan("push_type: voip", payload: "aps: { alert: \"\(big){{name}}\" }", rows: 12)
        #expect(voip.failures.isEmpty)
    }

    @Test func collapseIDsOver64BytesAreRefused() throws {
        let summary = try plan(
            "collapse_id: \"offer-{{name}}-\(String(repeating: "z", count: 52))\"",
            payload: "aps: { alert: Hi }",
            rows: 11
        )
        #expect(summary.failures[.collapseIDTooLong]?.count == 1)
        #expect(summary.planned == 10)
    }

    @Test func missingVariablesAreCountedWithTheirRow() throws {
        let summary = try plan(
            "push_type: alert",
            payload: "aps: { alert: \"{{#tier}}{{name}}{{/tier}}\" }\nx: \"{{name}}\""
        )
        #expect(summary.failures.isEmpty)
        let project = try makeProject(rows: 3, campaign: basicCampaign)
        defer { project.remove() }
        try project.write(
            "audiences/a.csv",
            "token,name\n\(TemporaryProject.token(1)),Ann\n\(TemporaryProject.token(2)),\n"
        )
        let missing = try Planner(campaign: try load(project)).run()
        #expect(missing.failures[.missingVariable]?.count == 1)
        #expect(missing.failures[.missingVariable]?.examples.first?.detail == "missing variable 'name'")
        #expect(missing.failures[.missingVariable]?.examples.first?.location.description == "audiences/a.csv:3")
    }
}
