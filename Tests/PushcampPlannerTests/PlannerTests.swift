import Foundation
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

/// Builds a small project: a CSV audience and a campaign around a payload.
func makeProject(
    rows: Int = 200,
    campaign: String,
    payload: String = "aps: { alert: { title: \"Hi {{name}}\" } }",
    strings: String? = nil
) throws -> TemporaryProject {
    let project = try TemporaryProject()
    let locales = ["fr-CA", "fr", "en-US", "de", "pt_BR"]
    try project.write(
        "audiences/a.csv",
        TemporaryProject.csv(count: rows, columns: ["name", "locale", "tier"]) { index in
            ["Name\(index)", locales[index % locales.count], index % 2 == 0 ? "gold" : "silver"]
        }
    )
    try project.write("templates/p.yaml", payload)
    if let strings { try project.write("templates/s.yaml", strings) }
    try project.write("campaigns/c.yaml", campaign)
    return project
}

func load(_ project: TemporaryProject) throws -> LoadedCampaign {
    let result = CampaignLoader(workingDirectory: project.root).load("campaigns/c.yaml")
    if result.campaign == nil { Issue.record("load failed: \(result.diagnostics)") }
    return try #require(result.campaign)
}

let basicCampaign = """
    campaign: test-campaign
    app: shop
    audience: { source: { csv: audiences/a.csv } }
    message:
      payload: templates/p.yaml
      holdout: 10%
      variants:
        - { name: a, weight: 70 }
        - { name: b, weight: 30 }
    """

@Suite("Planner")
struct PlannerTests {
    @Test func sameInputsSamePlanByteForByte() throws {
        let project = try makeProject(campaign: basicCampaign)
        defer { project.remove() }
        let first = try Planner(campaign: try load(project), sampleLimit: 5).run()
        let second = try Planner(campaign: try load(project), sampleLimit: 5).run()
        #expect(first.json() == second.json())
        #expect(first.text() == second.text())
        #expect(first.markdown() == second.markdown())
    }

    @Test func holdoutAndVariantsFollowTheirShares() throws {
        let project = try makeProject(rows: 20_000, campaign: basicCampaign)
        defer { project.remove() }
        var byVariant: [String: Int] = [:]
        var ids: Set<APNsID> = []
        let summary = try Planner(campaign: try load(project)).run { push in
            byVariant[push.variant, default: 0] += 1
            ids.insert(push.apnsID)
        }
        #expect(summary.heldOut + summary.planned == 20_000)
        #expect((1800...2200).contains(summary.heldOut))
        let planned = Double(summary.planned)
        #expect(abs(Double(byVariant["a"]!) / planned - 0.7) < 0.02)
        #expect(summary.variants.map(\.planned) == [byVariant["a"]!, byVariant["b"]!])
        #expect(ids.count == summary.planned)
    }

    @Test func bucketsDependOnCampaignAndTokenOnly() throws {
        let project = try makeProject(campaign: basicCampaign)
        defer { project.remove() }
        var before: [String: String] = [:]
        _ = try Planner(campaign: try load(project)).run { before[$0.token] = $0.variant }
        // A new revision (another payload) keeps every recipient in its bucket but changes apns-ids.
        try project.write("templates/p.yaml", "aps: { alert: { title: \"Hello {{name}}\" } }")
        var after: [String: String] = [:]
        _ = try Planner(campaign: try load(project)).run { after[$0.token] = $0.variant }
        #expect(before == after)
    }

    @Test func uuidVersion5MatchesTheRFC() {
        let dns: [UInt8] = [
            0x6B, 0xA7, 0xB8, 0x10, 0x9D, 0xAD, 0x11, 0xD1, 0x80, 0xB4, 0x00, 0xC0, 0x4F, 0xD4, 0x30, 0xC8,
        ]
        #expect(UUIDv5.make(namespace: dns, name: "python.org").description == "886313e1-3b8a-5372-9b90-0c9aee199e5d")
        #expect(
            APNsID(bytes: UUIDv5.make(namespace: dns, name: Array("python.org".utf8))).description
                == "886313e1-3b8a-5372-9b90-0c9aee199e5d"
        )
    }

    @Test func localesFallBackAndAreCounted() throws {
        let campaign = """
            campaign: loc
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: templates/p.yaml
              strings: templates/s.yaml
              locale: { from: locale, default: en }
            """
        let project = try makeProject(
            rows: 10,
            campaign: campaign,
            payload: "aps: { alert: { title: \"{{> title}}\", body: \"{{> body}}\" } }",
            strings:
                "en: { title: Hello, body: \"Hi {{name}}\" }\nfr: { title: Bonjour, body: \"Salut {{name}}\" }\nfr-CA: { title: Allô }"
        )
        defer { project.remove() }
        var bodies: [String: String] = [:]
        let summary = try Planner(campaign: try load(project)).run { push in
            bodies[push.locale ?? "?"] = String(decoding: push.payload, as: UTF8.self)
        }
        #expect(summary.locales.map(\.locale) == ["en", "fr", "fr-CA"])
        #expect(summary.locales.map(\.planned) == [6, 2, 2])
        #expect(bodies["fr-CA"] == #"{"aps":{"alert":{"title":"Allô","body":"Salut Name5"}}}"#)
    }

    /// The count a send makes ahead of the wire: the same totals, arms, locales and copies as the
    /// plan itself, rendering only the pushes the summary keeps; and it stops when asked.
    @Test func aPlanThatOnlyCountsAgreesWithThePlanAndRendersOnlyItsCopies() throws {
        let campaign = """
            campaign: counted
            app: shop
            audience: { source: { csv: audiences/a.csv } }
            message:
              payload: templates/p.yaml
              strings: templates/s.yaml
              locale: { from: locale, default: en }
              holdout: 10%
              variants:
                - { name: a, weight: 70 }
                - { name: b, weight: 30 }
            """
        let project = try makeProject(
            rows: 5_000,
            campaign: campaign,
            payload: "aps: { alert: { title: \"{{> title}}\", body: \"Hi {{name}}\" } }",
            strings: "en: { title: Hello }\nfr: { title: Bonjour }\nde: { title: Hallo }"
        )
        defer { project.remove() }
        var planner = Planner(campaign: try load(project))
        var planned = 0
        let full = try planner.run { _ in planned += 1 }
        try planner.findDuplicateCandidates()
        planner.countsOnly = true
        var rendered = 0
        let counted = try planner.run { _ in rendered += 1 }
        #expect(planned == full.planned && full.planned > 4_000)
        #expect(counted.planned == full.planned && counted.heldOut == full.heldOut)
        #expect(counted.variants.map(\.planned) == full.variants.map(\.planned))
        #expect(counted.locales.map(\.planned) == full.locales.map(\.planned))
        #expect(counted.copies.map(\.payload) == full.copies.map(\.payload) && counted.copies.count == 6)
        // Samples (3 per variant) and copies (one per variant and locale) only.
        #expect(rendered <= 12, "\(rendered)")

        planner.stops = { true }
        #expect(throws: CancellationError.self) { try planner.run { _ in } }
    }

    @Test func expirationsAreAbsoluteOnceTheSendTimeIsKnown() throws {
        let project = try makeProject(
            rows: 1,
            campaign: basicCampaign.replacingOccurrences(
                of: "  holdout: 10%",
                with: "  holdout: 0%\n  expiration: 1h30m"
            )
        )
        defer { project.remove() }
        let at = try Timestamp.parse("2027-01-01T00:00:00Z").get()
        var push: PlannedPush?
        _ = try Planner(campaign: try load(project), sendTime: at).run { push = $0 }
        #expect(push?.expiration == .at(Timestamp(secondsSince1970: at.secondsSince1970 + 5400)))
        _ = try Planner(campaign: try load(project)).run { push = $0 }
        #expect(push?.expiration == .afterSend(TimeSpan(seconds: 5400)))
        #expect(push?.expirationHeader(sendTime: at) == at.secondsSince1970 + 5400)
    }
}
