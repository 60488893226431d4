import PushcampModel
import Testing

@Suite("Campaign file diagnostics")
struct CampaignDiagnosticsTests {
    func diagnostics(_ yaml: String) -> [String] {
        let (document, parse) = YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml")
        guard let document else { return parse.map(\.description) }
        return CampaignReader.read(document).1.sortedByLocation().map(\.description)
    }

    static let valid = """
        campaign: spring
        app: shop
        audience:
          source: { csv: audiences/a.csv }
        message:
          payload: templates/p.yaml
        """

    @Test func validFileHasNoDiagnostics() {
        #expect(diagnostics(Self.valid).isEmpty)
    }

    @Test func everyProblemOfAFileIsReportedAtOnceWithItsPlace() {
        let yaml = """
            campaign: Spring Sale
            app: shop
            audience:
              source: { csv: audiences/a.csv, token_colum: tok }
              where: "opted_in && platform = 'ios'"
            message:
              push_type: alret
              priority: 7
              expiration: 24 hours
              colapse_id: x
              payload: templates/p.yaml
              holdout: 5
            throttle: { rate: 2000/hr, connections: 0 }
            """
        #expect(
            diagnostics(yaml) == [
                "campaigns/c.yaml:1:11: error: campaign id 'Spring Sale' must be 1 to 64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit (it keys the journal, so keep it stable)",
                "campaigns/c.yaml:4:35: error: unknown key 'token_colum' in 'audience.source'; did you mean 'token_column'?",
                "campaigns/c.yaml:5:32: error: invalid filter: '=' is not a comparison; write '=='",
                "campaigns/c.yaml:7:14: error: unknown push_type 'alret'; did you mean 'alert'? (APNs knows: alert, background, location, voip, complication, fileprovider, mdm, liveactivity, pushtotalk, widgets)",
                "campaigns/c.yaml:8:13: error: priority must be 10 (immediate), 5 (power-aware) or 1 (lowest), found 7",
                "campaigns/c.yaml:9:15: error: expiration '24 hours' must be a duration after the send (24h), an absolute time (2027-03-21T09:00:00Z) or 0 (deliver now or never)",
                "campaigns/c.yaml:10:3: error: unknown key 'colapse_id' in 'message'; did you mean 'collapse_id'?",
                "campaigns/c.yaml:12:12: error: 'holdout': '5' is not a percentage; write it like 5% or 2.5%",
                "campaigns/c.yaml:13:19: error: 'throttle.rate': '2000/hr' has an unknown unit; write a rate like 2000/s, 90000/min or 1000000/h",
                "campaigns/c.yaml:13:41: error: 'throttle.connections' must be between 1 and 64, found 0",
            ]
        )
    }

    @Test func missingRequiredKeysAndWrongTypes() {
        let yaml = """
            campaign: spring
            audience: audiences/a.csv
            message: [1, 2]
            """
        #expect(
            diagnostics(yaml) == [
                "campaigns/c.yaml:1:1: error: 'campaign file' is missing required key 'app'",
                "campaigns/c.yaml:2:11: error: 'audience' must be a mapping, found a single value",
                "campaigns/c.yaml:3:10: error: 'message' must be a mapping, found a list",
            ]
        )
    }

    @Test func malformedYAMLIsLocated() {
        let result = diagnostics("campaign: spring\napp: [shop\n")
        #expect(result.count == 1)
        #expect(result[0].hasPrefix("campaigns/c.yaml:3:1: error: invalid YAML: "))
    }

    @Test func invalidUTF8IsLocated() {
        let bytes = Array("campaign: spring\napp: sh".utf8) + [0xFF, 0x6F] + Array("p\n".utf8)
        let (document, parse) = YAMLDocument.parse(bytes, path: "campaigns/c.yaml")
        #expect(document == nil)
        #expect(parse.map(\.description) == ["campaigns/c.yaml:2:8: error: file is not valid UTF-8"])
    }

    @Test func sourceNeedsExactlyOneKind() {
        let yaml = Self.valid.replacingOccurrences("{ csv: audiences/a.csv }", "{ csv: a.csv, jsonl: b.jsonl }")
        #expect(
            diagnostics(yaml) == [
                "campaigns/c.yaml:4:11: error: 'audience.source' needs exactly one of csv, jsonl, sqlite, postgres or inline (found csv and jsonl)"
            ]
        )
    }

    @Test func variantsNeedNamesWeightsAndAPayload() {
        let yaml = """
            campaign: spring
            app: shop
            audience: { source: { inline: [abc] } }
            message:
              variants:
                - { name: a, weight: 1 }
                - { name: a, weight: 1, payload: p.yaml }
            """
        #expect(
            diagnostics(yaml) == [
                "campaigns/c.yaml:5:3: error: 'message' has no payload (nor a title, body or data), and variant a names none either",
                "campaigns/c.yaml:7:7: error: variant name 'a' is used twice",
            ]
        )
    }
}

extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
