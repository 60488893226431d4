import Foundation
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

@Suite("Frequency caps")
struct FrequencyCapTests {
    static let capped = """
        campaign: capped
        app: shop
        audience: { source: { csv: audiences/a.csv } }
        message: { payload: templates/p.yaml }
        frequency_cap: { max: 2, per: 24h }
        """

    @Test func recipientsDeliveredMaxTimesAreHeldBackAndCounted() throws {
        let project = try makeProject(rows: 10, campaign: Self.capped)
        defer { project.remove() }
        let campaign = try load(project)
        let spec = try #require(campaign.frequencyCap)
        #expect(spec == FrequencyCapSpec(max: 2, per: TimeSpan(seconds: 86_400)))
        // Tokens 0 and 1 delivered twice, 2 three times, 3 once; 9 twice but not in the audience order.
        let deliveries = [0, 1, 2, 0, 3, 2, 1, 2, 9, 9].map { StableHash.hash(TemporaryProject.token($0)) }
        let cap = try FrequencyCap(spec) { body in for token in deliveries { try body(token) } }
        #expect(cap.count == 4)

        var planner = Planner(campaign: campaign)
        planner.history = DeliveryHistory(suppression: Suppression(), frequencyCap: cap)
        var sent: [Int] = []
        let summary = try planner.run { sent.append($0.seq) }
        #expect(summary.capped == 4)
        #expect(summary.planned == 6)
        #expect(sent == [3, 4, 5, 6, 7, 8])
        #expect(summary.text().contains("capped                   4   frequency cap: at most 2 per 24h"))
        #expect(summary.markdown().contains("| capped | 4 | frequency cap: at most 2 per 24h |"))
        #expect(summary.json().contains(#""frequency_cap":{"max":2,"per":"24h","per_seconds":86400}"#))

        // Without a cap, nothing is held back and the plan says so.
        let uncapped = try Planner(campaign: campaign).run()
        #expect(uncapped.capped == 0 && uncapped.planned == 10)
    }

    @Test func theProjectDefaultAppliesUnlessTheCampaignSaysOff() throws {
        let project = try makeProject(
            rows: 1,
            campaign:
                "campaign: c\napp: shop\naudience: { source: { csv: audiences/a.csv } }\nmessage: { payload: templates/p.yaml }\n"
        )
        defer { project.remove() }
        try project.write(
            "pushcamp.yaml",
            TemporaryProject.defaultProjectFile + "\ndefaults:\n  frequency_cap: { max: 3, per: 7d }\n"
        )
        #expect(try load(project).frequencyCap == FrequencyCapSpec(max: 3, per: TimeSpan(seconds: 7 * 86_400)))
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop\naudience: { source: { csv: audiences/a.csv } }\nmessage: { payload: templates/p.yaml }\nfrequency_cap: off\n"
        )
        #expect(try load(project).frequencyCap == nil)
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop\naudience: { source: { csv: audiences/a.csv } }\nmessage: { payload: templates/p.yaml }\nfrequency_cap: { max: 1, per: 12h }\n"
        )
        #expect(try load(project).frequencyCap == FrequencyCapSpec(max: 1, per: TimeSpan(seconds: 12 * 3600)))
    }

    @Test func aBrokenCapReadsLikeACompilerError() throws {
        let head =
            "campaign: c\napp: shop\naudience: { source: { csv: audiences/a.csv } }\nmessage: { payload: templates/p.yaml }\n"
        let cases = [
            ("frequency_cap: { max: 0, per: 24h }", "campaigns/c.yaml:5:23: error: 'frequency_cap.max' must be"),
            (
                "frequency_cap: { max: 2, per: 0 }",
                "campaigns/c.yaml:5:31: error: frequency_cap.per must be longer than 0"
            ),
            ("frequency_cap: { max: 2, per: day }", "campaigns/c.yaml:5:31: error:"),
            ("frequency_cap: { max: 2 }", "campaigns/c.yaml:5:16: error:"),
            (
                "frequency_cap: sometimes",
                "campaigns/c.yaml:5:16: error: frequency_cap takes a mapping like { max: 2, per: 24h } or off"
            ),
        ]
        for (line, expected) in cases {
            let project = try makeProject(rows: 1, campaign: head + line + "\n")
            defer { project.remove() }
            let result = Validation(loader: CampaignLoader(workingDirectory: project.root)).check("campaigns/c.yaml")
            let messages = result.diagnostics.map(\.description)
            #expect(messages.contains { $0.hasPrefix(expected) }, "\(line): \(messages)")
        }
    }
}
