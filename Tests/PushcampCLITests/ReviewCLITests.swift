import Foundation
import PushcampTestSupport
import Testing

/// `pushcamp review` and `plan --review`: what a pull request's CI plans — only what the change
/// touches, every watched folder checked, no real audience needed, nothing personal shown, a
/// comment under GitHub's limit.
@Suite("Reviewing a pull request")
struct ReviewCLITests {
    /// A campaign of the `shop` app (iOS) to `audience`, with a template of its own.
    static func campaign(_ id: String, audience: String = "audiences/people.csv", more: String = "") -> String {
        """
        campaign: \(id)
        description: The \(id) campaign
        app: shop
        audience:
          source: { csv: \(audience) }
        \(more)message:
          payload: templates/\(id).yaml

        """
    }

    static func template(greeting: String = "Hello") -> String {
        "aps:\n  alert:\n    title: \"\(greeting), {{first_name}}!\"\n    body: Our spring sale starts today.\n"
    }

    /// Real people: names and tokens no review may show.
    static let people = """
        token,first_name,city
        \(TemporaryProject.token(1)),Ada,London
        \(TemporaryProject.token(2)),Grace,Arlington
        \(TemporaryProject.token(3)),Katherine,Hampton

        """

    static func project(campaigns: [String], folders: [String] = ["campaigns"]) throws -> TemporaryProject {
        let project = try TemporaryProject(
            projectFile: TemporaryProject.defaultProjectFile
                + "\nserve:\n  campaigns: [\(folders.joined(separator: ", "))]\n"
        )
        try project.write("audiences/people.csv", people)
        for (index, id) in campaigns.enumerated() {
            try project.write("\(folders[index % folders.count])/\(id).yaml", campaign(id))
            try project.write("templates/\(id).yaml", template())
        }
        return project
    }

    static func review(
        _ changed: [String],
        in project: TemporaryProject,
        more: [String] = []
    ) throws -> (
        CLI.Output, comment: String, full: String
    ) {
        try project.write("changed.txt", changed.map { $0 + "\n" }.joined())
        let output = try CLI.run(
            ["review", "--changed", "changed.txt", "--comment", "comment.md", "--full", "plan.md"] + more,
            in: project.root
        )
        let comment =
            (try? String(contentsOf: project.root.appendingPathComponent("comment.md"), encoding: .utf8)) ?? ""
        let full = (try? String(contentsOf: project.root.appendingPathComponent("plan.md"), encoding: .utf8)) ?? ""
        return (output, comment, full)
    }

    @Test func aChangeToOneCampaignPlansOnlyItAndATemplatePlansThoseUsingIt() throws {
        let project = try Self.project(
            campaigns: ["spring", "summer", "autumn"],
            folders: ["campaigns", "campaigns/later"]
        )
        defer { project.remove() }
        // spring and autumn are in campaigns/, summer in a second folder serve watches.
        let one = try Self.review(["campaigns/spring.yaml"], in: project)
        #expect(one.0.status == 0, "\(one.0.stderr)")
        #expect(
            one.comment.hasPrefix("## pushcamp review: 1 campaign (2 more not touched by this change)\n"),
            "\(one.comment)"
        )
        #expect(one.comment.contains("| `campaigns/spring.yaml` |"), "\(one.comment)")
        #expect(!one.full.contains("summer") && !one.full.contains("autumn"), "\(one.full)")
        #expect(one.0.stderr.contains("review: 1 campaign planned or checked, 2 not touched by the change; all pass"))

        let template = try Self.review(["templates/summer.yaml"], in: project)
        #expect(template.comment.contains("| `campaigns/later/summer.yaml` |"), "\(template.comment)")
        #expect(template.comment.hasPrefix("## pushcamp review: 1 campaign"), "\(template.comment)")

        // The audience all three read, or pushcamp.yaml: all three.
        for file in ["audiences/people.csv", "pushcamp.yaml"] {
            let all = try Self.review([file], in: project)
            #expect(all.comment.hasPrefix("## pushcamp review: 3 campaigns\n"), "\(file): \(all.comment)")
        }
        // Nothing of theirs: nothing planned, no comment.
        let none = try Self.review(["README.md", "Sources/App.swift"], in: project)
        #expect(none.0.status == 0)
        #expect(none.comment.isEmpty, "\(none.comment)")
        // A campaign file the change deletes is said to be gone.
        let removed = try Self.review(["campaigns/winter.yaml"], in: project)
        #expect(removed.comment.contains("`campaigns/winter.yaml` is removed: nothing to plan."), "\(removed.comment)")
    }

    @Test func anInvalidCampaignInAnyWatchedFolderFailsTheReviewWhateverTheChange() throws {
        let project = try Self.project(campaigns: ["spring", "summer"], folders: ["campaigns", "campaigns/later"])
        defer { project.remove() }
        try project.write(
            "campaigns/later/summer.yaml",
            Self.campaign("summer", more: "  where: \"citi == 'Paris'\"\n")
        )
        let output = try Self.review(["campaigns/spring.yaml"], in: project)
        #expect(output.0.status == 1, "\(output.0.stderr)")
        #expect(output.comment.contains("| `campaigns/later/summer.yaml` |"), "\(output.comment)")
        #expect(output.comment.contains("**invalid**"), "\(output.comment)")
        #expect(output.comment.contains("did you mean 'city'?"), "\(output.comment)")
    }

    @Test func anAudienceNotInGitIsPlannedFromItsSampleAndNothingRealIsShown() throws {
        let project = try Self.project(campaigns: [])
        defer { project.remove() }
        // The real audience is elsewhere, named through the environment; the sample is committed.
        let outside = try TemporaryProject(projectFile: nil)
        defer { outside.remove() }
        let realPath = try outside.write("people.csv", Self.people)
        try project.write(
            "pushcamp.yaml",
            TemporaryProject.defaultProjectFile + "\nfiles:\n  allow: [\(outside.root.path)]\n"
        )
        try project.write(
            "audiences/people.sample.csv",
            "token,first_name,city\n\(String(repeating: "ab", count: 32)),Zed,Nowhere\n"
        )
        try project.write(
            "campaigns/spring.yaml",
            Self.campaign("spring", audience: "\"${env:AUDIENCES}/people.csv\"")
                .replacingOccurrences(of: "message:", with: "  sample: { csv: audiences/people.sample.csv }\nmessage:")
        )
        try project.write("templates/spring.yaml", Self.template())
        // Outside a review the audience's variable must be set, and is named when it is not.
        let plain = try CLI.run(["plan", "campaigns/spring.yaml"], in: project.root)
        #expect(plain.status == 1)
        #expect(plain.stderr.contains("environment variable AUDIENCES is not set"), "\(plain.stderr)")
        let set = try CLI.run(
            ["plan", "campaigns/spring.yaml"],
            in: project.root,
            environment: ["AUDIENCES": outside.root.path]
        )
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("Hello, Ada!"), "a plan shows what it sends: \(set.stdout)")

        let review = try Self.review(["campaigns/spring.yaml"], in: project)
        #expect(review.0.status == 0, "\(review.0.stderr)")
        for text in [review.comment, review.full] {
            #expect(text.contains("planned against the sample audience audiences/people.sample.csv"), "\(text)")
            #expect(text.contains("Hello, Zed!"), "\(text)")
            Self.expectNothingReal(in: text)
            #expect(!text.contains(String(repeating: "ab", count: 8)), "even the sample's token is masked: \(text)")
        }
        #expect(!review.full.contains(realPath))
    }

    @Test func aCommittedAudienceIsCountedAndRenderedForAMaskedRecipient() throws {
        let project = try Self.project(campaigns: ["spring"])
        defer { project.remove() }
        let review = try Self.review(["campaigns/spring.yaml"], in: project, more: ["--samples", "2"])
        #expect(review.0.status == 0, "\(review.0.stderr)")
        #expect(review.full.contains("| **planned** | **3** |"), "\(review.full)")
        #expect(review.full.contains("Hello, ‹first_name›!"), "\(review.full)")
        #expect(review.full.contains("rendered for a masked recipient"), "\(review.full)")
        Self.expectNothingReal(in: review.full)
        Self.expectNothingReal(in: review.comment)

        // plan --review shows the same, in every format.
        for format in ["text", "markdown", "json"] {
            let plan = try CLI.run(["plan", "--review", "--format", format, "campaigns/spring.yaml"], in: project.root)
            #expect(plan.status == 0, "\(plan.stderr)")
            #expect(plan.stdout.contains("‹first_name›"), "\(format): \(plan.stdout)")
            Self.expectNothingReal(in: plan.stdout)
        }
    }

    @Test func anAudienceThatCannotBeReadIsMarkedInsteadOfFailing() throws {
        let project = try Self.project(campaigns: [])
        defer { project.remove() }
        try project.write(
            "campaigns/spring.yaml",
            Self.campaign(
                "spring",
                audience: "audiences/everyone.csv",
                more: "  exclude: { csv: audiences/optout.csv }\n"
            )
        )
        try project.write("templates/spring.yaml", Self.template())
        let plain = try CLI.run(["plan", "campaigns/spring.yaml"], in: project.root)
        #expect(plain.status == 1)
        let validate = try CLI.run(["validate", "--review"], in: project.root)
        #expect(validate.status == 0, "\(validate.stdout)")
        #expect(
            validate.stdout.contains(
                "warning: audience not read in a review: audiences/everyone.csv: no such file here"
            )
        )
        let review = try Self.review(["campaigns/spring.yaml"], in: project)
        #expect(review.0.status == 0, "\(review.0.stderr)")
        #expect(review.comment.contains("| not read |"), "\(review.comment)")
        #expect(
            review.comment.contains("audience not read: audiences/everyone.csv: no such file here"),
            "\(review.comment)"
        )
        #expect(review.comment.contains("exclusion not read: audiences/optout.csv"), "\(review.comment)")
    }

    @Test func sixtyCampaignsStayUnderTheCommentLimitWithEveryPlanInTheArtifact() throws {
        let ids = (1...60).map { String(format: "campaign-%02d", $0) }
        let project = try Self.project(campaigns: ids)
        defer { project.remove() }
        let review = try Self.review(["pushcamp.yaml"], in: project, more: ["--samples", "3"])
        #expect(review.0.status == 0, "\(review.0.stderr)")
        #expect(review.comment.utf8.count <= 65_536, "\(review.comment.utf8.count)")
        #expect(review.comment.hasPrefix("## pushcamp review: 60 campaigns\n"))
        for id in ids { #expect(review.comment.contains("| `campaigns/\(id).yaml` |"), "\(id) is in the table") }
        #expect(
            review.comment.contains("more plans are in the full plan (plan.md, the job's artifact)"),
            "\(review.comment)"
        )
        #expect(review.full.utf8.count > 65_536, "the artifact holds every plan: \(review.full.utf8.count)")
        for id in ids { #expect(review.full.contains("### Plan: `\(id)`")) }
    }

    @Test func tooManyInvalidTokensFailTheReview() throws {
        let project = try InvalidLimitCLITests.project(limit: "3")
        defer { project.remove() }
        let review = try Self.review(["campaigns/c.yaml"], in: project)
        #expect(review.0.status == 3, "\(review.0.stderr)")
        #expect(review.comment.contains("**refused**"), "\(review.comment)")
        #expect(review.comment.contains("4 of 8 rows have an invalid token, more than max_invalid 3 allows"))
        #expect(!review.comment.contains("not-a-token"), "\(review.comment)")
        let allowed = try Self.review(["campaigns/c.yaml"], in: project, more: ["--max-invalid", "50%"])
        #expect(allowed.0.status == 0, "\(allowed.0.stderr)")
    }

    static func expectNothingReal(in text: String) {
        for name in ["Ada", "Grace", "Katherine", "London", "Arlington", "Hampton"] {
            #expect(!text.contains(name), "\(name) is shown: \(text)")
        }
        for index in 1...3 {
            #expect(!text.contains(TemporaryProject.token(index).prefix(12)), "a token is shown: \(text)")
        }
    }
}
