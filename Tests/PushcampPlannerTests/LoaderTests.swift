import Foundation
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

@Suite("Loading and validating campaigns")
struct LoaderTests {
    func diagnostics(_ project: TemporaryProject) -> [String] {
        Validation(loader: CampaignLoader(workingDirectory: project.root)).check("campaigns/c.yaml").diagnostics.map(
            \.description
        )
    }

    @Test func namesAreCheckedAgainstTheAudiencesColumnsAndVariables() throws {
        let campaign = """
            campaign: names
            app: shopp
            variables: { discount: 20% }
            audience:
              source: { csv: audiences/a.csv }
              where: "tierr == 'gold'"
            message:
              payload: templates/p.yaml
            """
        let project = try makeProject(
            campaign: campaign,
            payload: "aps:\n  alert: \"{{nme}} {{discount}} {{#vip}}VIP{{/vip}} {{> title}}\"\n"
        )
        defer { project.remove() }
        #expect(
            diagnostics(project) == [
                "campaigns/c.yaml:2:6: error: no app 'shopp' in pushcamp.yaml; did you mean 'shop'?",
                "campaigns/c.yaml:6:10: error: the filter uses 'tierr', which is not a column of the audience; did you mean 'tier'? (columns: token, name, locale, tier)",
                "templates/p.yaml:2:11: error: 'nme' is not an audience column or a campaign variable; did you mean 'name'?",
                "templates/p.yaml:2:32: warning: section 'vip' is not an audience column or a variable, so it is always false",
                "templates/p.yaml:2:52: error: '{{> title}}' includes a localized string, but the campaign has no 'strings'",
            ]
        )
    }

    /// What `plan` would only find later, `validate` finds in the same pass: a key missing from the
    /// default locale; and it warns when a locale's fallback mixes two languages in one payload.
    @Test func stringsMissingFromTheDefaultAndMixedLanguagesAreFoundInOnePass() throws {
        let campaign = """
            campaign: strings
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: templates/p.yaml
              strings: templates/s.yaml
              locale: { from: locale, default: en }
            """
        let payload = "aps: { alert: { title: \"{{> title}}\", body: \"{{> body}}\" } }\n"
        let mixed = try makeProject(
            campaign: campaign,
            payload: payload,
            strings: "en: { title: Sale, body: Now }\npt-BR: { title: Promoção }\nen-US: { title: Deal }\n"
        )
        defer { mixed.remove() }
        // en-US falls back to en for body: one language, no warning.
        #expect(
            diagnostics(mixed) == [
                "templates/s.yaml:2:17: warning: locale 'pt-BR' mixes languages in one notification: 'title' from pt-BR, but 'body' from en (the default); add it to pt-BR"
            ]
        )
        let missing = try makeProject(
            campaign: campaign,
            payload: payload,
            strings: "en: { title: Sale, body: Now }\nfr: { title: Soldes, body: Maintenant, footer: Fin }\n"
        )
        defer { missing.remove() }
        #expect(
            diagnostics(missing) == [
                "templates/s.yaml:2:40: error: localized string 'footer' is missing from the default locale 'en' (it is in fr): recipients of other locales would be refused (missing-string); add it to en"
            ]
        )
    }

    @Test func missingFilesAndProject() throws {
        let campaign = basicCampaign.replacingOccurrences(of: "audiences/a.csv", with: "audiences/missing.csv")
            .replacingOccurrences(of: "templates/p.yaml", with: "templates/missing.yaml")
        let project = try makeProject(campaign: campaign)
        defer { project.remove() }
        #expect(
            diagnostics(project) == [
                "campaigns/c.yaml:3:21: error: audience file 'audiences/missing.csv' does not exist",
                "campaigns/c.yaml:5:12: error: payload file 'templates/missing.yaml' does not exist",
            ]
        )
        let orphan = try TemporaryProject(projectFile: nil)
        defer { orphan.remove() }
        try orphan.write("campaigns/c.yaml", basicCampaign)
        let result = Validation(loader: CampaignLoader(workingDirectory: orphan.root)).check("campaigns/c.yaml")
        #expect(
            result.diagnostics.last?.message.hasPrefix("no pushcamp.yaml found in campaigns or any directory above it")
                == true
        )
        let nothing = Validation(loader: CampaignLoader(workingDirectory: orphan.root)).check("campaigns/none.yaml")
        #expect(nothing.diagnostics.map(\.description) == ["campaigns/none.yaml: error: no such file"])
    }

    @Test func projectFileProblemsAreReported() throws {
        let project = try makeProject(campaign: basicCampaign)
        defer { project.remove() }
        try project.write(
            "pushcamp.yaml",
            """
            apps:
              shop:
                topic: com.example.shop
                key_file: k.p8
                team_id: abc
                environment: prod
                endpoint: http://localhost
            journal: { path: .pushcamp/j.sqlite, mode: wal }
            """
        )
        #expect(
            diagnostics(project) == [
                "pushcamp.yaml:3:5: error: 'apps.shop' uses key_file and so needs key_id",
                "pushcamp.yaml:5:14: error: 'team_id' must be Apple's 10-character id (uppercase letters and digits), found 'abc'",
                "pushcamp.yaml:6:18: error: environment must be production or sandbox, found 'prod'",
                "pushcamp.yaml:7:15: error: endpoint must be an https:// URL (APNs speaks HTTP/2 over TLS only), found 'http://localhost'",
                "pushcamp.yaml:8:38: error: unknown key 'mode' in 'journal' (expected one of: path, url, password_env, lease, slice, retention)",
            ]
        )
    }

    @Test func staticPreflightRulesAreValidationErrors() throws {
        let campaign = basicCampaign + "\n  push_type: background\n  priority: 10"
        let project = try makeProject(campaign: campaign, payload: "aps: { content-available: 1 }")
        defer { project.remove() }
        #expect(
            diagnostics(project) == [
                "campaigns/c.yaml:5:3: error: variant 'a': the payload has only content-available and the priority is 10; APNs rejects that, use priority 5",
                "campaigns/c.yaml:5:3: error: push_type background must be sent at priority 5, not 10",
                "campaigns/c.yaml:5:3: error: variant 'b': the payload has only content-available and the priority is 10; APNs rejects that, use priority 5",
            ]
        )
    }
}

@Suite("Exclusion sources")
struct ExclusionValidationTests {
    @Test func aBrokenExclusionListIsAValidationError() throws {
        let campaign = basicCampaign.replacingOccurrences(
            of: "audience: { source: { csv: audiences/a.csv } }",
            with: "audience:\n  source: { csv: audiences/a.csv }\n  exclude: [ { csv: audiences/x.csv } ]"
        )
        let project = try makeProject(campaign: campaign)
        defer { project.remove() }
        try project.write("audiences/x.csv", "device\nabc\n")
        let result = Validation(loader: CampaignLoader(workingDirectory: project.root)).check("campaigns/c.yaml")
        #expect(
            result.diagnostics.map(\.description) == [
                "audiences/x.csv:1: error: the header has no 'token' column (it has 1 column, not shown; set token_column to the one holding device tokens)"
            ]
        )
    }
}
