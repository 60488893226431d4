import Foundation
import PushcampModel
import PushcampPlanner
import PushcampTestSupport
import Testing

/// The pure parts of a pull request's review: what a campaign file says of its audience, how a
/// token is masked, and how the comment keeps to its limit.
@Suite("A review's pieces")
struct PlanReviewTests {
    @Test func anAudiencePathMayNameTheEnvironmentAndASampleIsAnAudience() {
        let yaml = """
            campaign: spring
            app: shop
            audience:
              source: { csv: "${env:AUDIENCES}/all.csv" }
              sample: { csv: audiences/sample.csv, token_column: device }
              exclude: { jsonl: "${AUDIENCE}/x.jsonl" }
            message:
              payload: templates/p.yaml
            """
        let (document, _) = YAMLDocument.parse(Array(yaml.utf8), path: "campaigns/c.yaml")
        let (campaign, diagnostics) = CampaignReader.read(document!)
        #expect(campaign == nil)
        #expect(
            diagnostics.map(\.description) == [
                "campaigns/c.yaml:6:21: error: 'audience.exclude[0].jsonl': '${AUDIENCE}' is not a reference Pushcamp knows; write ${env:NAME}"
            ]
        )
        let fixed = yaml.replacingOccurrences(of: "${AUDIENCE}", with: "${env:AUDIENCE}")
        let (good, _) = YAMLDocument.parse(Array(fixed.utf8), path: "campaigns/c.yaml")
        let read = CampaignReader.read(good!).0
        #expect(read?.audience.sample?.tokenColumn == "device")
        guard case .csv(let path, _)? = read?.audience.source.kind else {
            Issue.record("the source is a CSV")
            return
        }
        #expect(path == "${env:AUDIENCES}/all.csv")
    }

    @Test func aMaskedTokenKeepsSixCharactersAndAHashOfTheWhole() {
        let token = String(repeating: "3f1d6f0c", count: 8)
        let masked = PlanSummary.maskedToken(token)
        #expect(masked.hasPrefix("3f1d6f…#"))
        #expect(masked.count == 6 + 2 + 8)
        #expect(masked == PlanSummary.maskedToken(token), "one token, one mask: mentions can be matched")
        #expect(masked != PlanSummary.maskedToken(String(token.dropLast()) + "d"))
    }

    static func entry(_ file: String, _ verdict: PlanReview.Entry.Verdict, size: Int) -> PlanReview.Entry {
        PlanReview.Entry(
            file: file,
            verdict: verdict,
            section: "### Plan: `\(file)`\n\n" + String(repeating: "x", count: size) + "\n",
            cells: ["`shop`", "no", "1", "0", "0"]
        )
    }

    @Test func theCommentKeepsToItsLimitWithFailingPlansFirstAndNamesTheRest() {
        var review = PlanReview()
        for index in 0..<40 {
            let verdict: PlanReview.Entry.Verdict = index == 37 ? .refused("too long") : .passes
            review.entries.append(Self.entry("campaigns/c\(index).yaml", verdict, size: 3_000))
        }
        let comment = review.comment(limit: 20_000, artifact: "the artifact")
        #expect(comment.utf8.count <= 20_000)
        #expect(review.exitCode == 3)
        // Every campaign is in the table; the failing plan is shown whole, before any other.
        for index in 0..<40 { #expect(comment.contains("| `campaigns/c\(index).yaml` |")) }
        let failing = comment.range(of: "### Plan: `campaigns/c37.yaml`")
        let first = comment.range(of: "### Plan: `campaigns/c0.yaml`")
        #expect(failing != nil && first != nil && failing!.lowerBound < first!.lowerBound)
        #expect(comment.contains("more plans are in the artifact: `campaigns/"))
        // Whatever the limit, down to one where only the table fits.
        for limit in [65_536, 12_000, 6_000] {
            #expect(review.comment(limit: limit).utf8.count <= limit, "\(limit)")
        }
        #expect(review.full().utf8.count > 40 * 3_000)
    }

    @Test func anInvalidCampaignOutranksARefusedOneAndNothingTouchedSaysSo() {
        var review = PlanReview()
        #expect(review.touchesNothing && review.exitCode == 0)
        review.entries.append(Self.entry("campaigns/a.yaml", .refused("refused"), size: 10))
        review.entries.append(Self.entry("campaigns/b.yaml", .invalid("invalid"), size: 10))
        #expect(review.exitCode == 1)
        #expect(review.comment().contains("**Failing: a campaign is invalid or would send nothing.**"))
    }
}
