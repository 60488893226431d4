import Foundation
import PushcampTestSupport
import Testing

/// `plan --max-invalid` and `audience.max_invalid`: an audience export with broken tokens fails the
/// plan (and so the pull request's check) instead of planning what is left of it.
@Suite("A limit on invalid tokens")
struct InvalidLimitCLITests {
    /// Eight rows, four of them not device tokens.
    static func project(limit: String? = nil) throws -> TemporaryProject {
        let project = try TemporaryProject()
        var rows = ["token"]
        for index in 0..<4 {
            rows.append(TemporaryProject.token(index))
            rows.append(index % 2 == 0 ? "not-a-token-\(index)" : String(TemporaryProject.token(index).prefix(20)))
        }
        try project.write("audiences/a.csv", rows.joined(separator: "\n") + "\n")
        try project.write(
            "campaigns/c.yaml",
            """
            campaign: c
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            \(limit.map { "  max_invalid: \($0)\n" } ?? "")message:
              title: Hi
              body: Sale
            """
        )
        return project
    }

    @Test func moreInvalidRowsThanTheLimitFailThePlan() throws {
        let project = try Self.project()
        defer { project.remove() }
        let unlimited = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root)
        #expect(unlimited.status == 0, "\(unlimited.stderr)")

        let over = try CLI.run(["plan", "--max-invalid", "3", "campaigns/c.yaml"], in: project.root)
        #expect(over.status == 3)
        #expect(
            over.stderr.contains(
                "audiences/a.csv: error: 4 of 8 rows have an invalid token, more than max_invalid 3 allows "
                    + "(not hexadecimal: 2, too short: 2)"
            ),
            "\(over.stderr)"
        )
        #expect(!over.stderr.contains("not-a-token"), "a cell that is not a token is never printed")
        for within in ["4", "50%"] {
            let output = try CLI.run(["plan", "--max-invalid", within, "campaigns/c.yaml"], in: project.root)
            #expect(output.status == 0, "\(within): \(output.stderr)")
        }
        let share = try CLI.run(["plan", "--max-invalid", "49.99%", "campaigns/c.yaml"], in: project.root)
        #expect(share.status == 3)
        let bad = try CLI.run(["plan", "--max-invalid", "some", "campaigns/c.yaml"], in: project.root)
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--max-invalid: 'some' is not a count of rows or a percentage"), "\(bad.stderr)")
    }

    @Test func theCampaignsLimitHoldsUnlessTheCommandLineSaysOtherwise() throws {
        let project = try Self.project(limit: "0")
        defer { project.remove() }
        let strict = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root)
        #expect(strict.status == 3)
        #expect(strict.stderr.contains("more than max_invalid 0 allows"), "\(strict.stderr)")
        let overridden = try CLI.run(["plan", "--max-invalid", "10", "campaigns/c.yaml"], in: project.root)
        #expect(overridden.status == 0, "\(overridden.stderr)")

        let misspelt = try Self.project(limit: "lots")
        defer { misspelt.remove() }
        let output = try CLI.run(["validate", "campaigns/c.yaml"], in: misspelt.root)
        #expect(output.status == 1)
        // validate says its diagnostics on standard output (a report), located at the value.
        #expect(
            output.stdout.contains(
                "campaigns/c.yaml:5:16: error: 'audience.max_invalid': 'lots' is not a count of rows or a percentage"
            ),
            "\(output.stdout)"
        )
    }
}
