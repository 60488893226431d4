import Foundation
import PushcampJournal
import PushcampModel
import PushcampReport
import Testing

@Suite("The engagement readout's statistics")
struct ReadoutTests {
    /// Within `tolerance` of the expected figure (published tables give 4 decimals).
    static func near(_ value: Double?, _ expected: Double, _ tolerance: Double = 0.000_05) -> Bool {
        guard let value else { return false }
        return abs(value - expected) <= tolerance
    }

    /// Newcombe (1998), "Two-sided confidence intervals for the single proportion", table I: the
    /// score interval (without continuity correction).
    @Test(arguments: [
        (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718),
    ])
    func wilsonIntervalsMatchNewcombesTable(_ successes: Int, _ trials: Int, _ low: Double, _ high: Double) throws {
        let interval = try #require(Proportion(successes, of: trials).wilson)
        #expect(Self.near(interval.lowerBound, low), "\(interval)")
        #expect(Self.near(interval.upperBound, high), "\(interval)")
    }

    /// Newcombe (1998), "Interval estimation for the difference between independent proportions",
    /// table II, method 10 (the hybrid score interval).
    @Test(arguments: [(56, 70, 48, 80, 0.0524, 0.3339), (9, 10, 3, 10, 0.1705, 0.8090)])
    func differenceIntervalsMatchNewcombesMethod10(
        _ x1: Int,
        _ n1: Int,
        _ x2: Int,
        _ n2: Int,
        _ low: Double,
        _ high: Double
    ) throws {
        let difference = try #require(Proportion(x1, of: n1).difference(from: Proportion(x2, of: n2)))
        #expect(Self.near(difference.interval.lowerBound, low), "\(difference.interval)")
        #expect(Self.near(difference.interval.upperBound, high), "\(difference.interval)")
    }

    @Test func noTrialsHaveNoRate() {
        #expect(Proportion(0, of: 0).rate == nil)
        #expect(Proportion(0, of: 0).wilson == nil)
        #expect(Proportion(3, of: 10).difference(from: Proportion(0, of: 0)) == nil)
        // Counts beyond the trials are clamped, never a rate above 1.
        #expect(Proportion(12, of: 10).rate == 1)
    }

    /// A run with two variants of 1,000 recipients each and a holdout of 500 (20%), in two locales,
    /// and four events: every verdict, computed by hand (Wilson and Newcombe's formulas, the
    /// pooled z-test) and written down here.
    static func fixture() -> RunReport {
        var stats = RunStats()
        var plan = PlanFunnel()
        plan.read = 2_500
        plan.planned = 2_000
        plan.heldOut = 500
        plan.holdoutBasisPoints = 2_000
        plan.variants = ["control": 1_000, "urgency": 1_000]
        plan.locales = ["en": 1_200, "fr": 800]
        stats.plan = plan
        stats.variants = ["control": Readout(delivered: 990), "urgency": Readout(delivered: 985)]
        stats.locales = ["en": Readout(delivered: 1_190), "fr": Readout(delivered: 785)]
        var report = RunReport(
            run: RunRecord(
                id: RunID(7),
                campaign: "spring",
                revision: "abc",
                status: .finished,
                startedAt: 1_000,
                updatedAt: 1_100,
                cancelRequested: false,
                planned: 2_000
            ),
            outcomes: [RunReport.Outcome(kind: .delivered, status: 200, reason: nil, count: 1_975)],
            stats: stats,
            perSecond: []
        )
        func count(_ event: String, _ variant: String?, _ locale: String?, _ count: Int) -> EngagementCount {
            EngagementCount(event: event, variant: variant, locale: locale, count: count)
        }
        report.engagement = [
            // converted: control 150/1000 (better), urgency 50/1000 (worse), holdout 50/500.
            count("converted", "control", "en", 90), count("converted", "control", "fr", 60),
            count("converted", "urgency", "en", 30), count("converted", "urgency", "fr", 20),
            count("converted", nil, "en", 30), count("converted", nil, "fr", 20),
            // renewed: control 105/1000 against 50/500: no clear difference.
            count("renewed", "control", "en", 105), count("renewed", nil, nil, 50),
            // annual: 3/1000 against 1/500: too small to tell.
            count("annual", "control", "fr", 3), count("annual", nil, "fr", 1),
            // opened: the holdout was sent nothing to open: no lift.
            count("opened", "control", "en", 400), count("opened", "urgency", "en", 420),
        ]
        return report
    }

    @Test func theFixturesReadoutIsTheHandComputedOne() throws {
        let readout = try #require(Self.fixture().readout)
        #expect(readout.events == ["annual", "converted", "opened", "renewed"])
        #expect(readout.groups.map(\.name) == ["control", "urgency", "holdout"])
        #expect(readout.groups.map(\.recipients) == [1_000, 1_000, 500])
        #expect(readout.groups.map(\.delivered) == [990, 985, nil])
        func figure(_ group: String, _ event: String) throws -> EngagementReadout.Figure {
            try #require(readout.groups.first { $0.name == group }?.figures.first { $0.event == event })
        }

        // control converted: 150/1000 = 15.0% [12.9210%, 17.3469%]; lift +5.0 pts [+1.3974, +8.3086],
        // p = 0.00724: better.
        let control = try figure("control", "converted")
        #expect(control.count == 150)
        #expect(Self.near(control.rate, 0.15, 1e-12))
        #expect(Self.near(control.interval?.lowerBound, 0.129210, 1e-6))
        #expect(Self.near(control.interval?.upperBound, 0.173469, 1e-6))
        let controlLift = try #require(control.lift)
        #expect(Self.near(controlLift.difference, 0.05, 1e-12))
        #expect(Self.near(controlLift.interval.lowerBound, 0.013974, 1e-6))
        #expect(Self.near(controlLift.interval.upperBound, 0.083086, 1e-6))
        #expect(Self.near(controlLift.pValue, 0.00724364, 1e-7))
        #expect(Self.near(controlLift.relative, 0.5, 1e-12))
        #expect(controlLift.verdict == .better)

        // urgency converted: 50/1000 against 50/500: −5.0 pts [−8.1726, −2.2099], p = 0.000253: worse.
        let urgency = try #require(try figure("urgency", "converted").lift)
        #expect(Self.near(urgency.difference, -0.05, 1e-12))
        #expect(Self.near(urgency.interval.lowerBound, -0.081726, 1e-6))
        #expect(Self.near(urgency.interval.upperBound, -0.022099, 1e-6))
        #expect(Self.near(urgency.pValue, 0.000252584, 1e-8))
        #expect(urgency.verdict == .worse)

        // renewed: 105/1000 against 50/500: +0.5 pts [−2.9239, +3.6075], p = 0.764: no clear difference.
        let renewed = try #require(try figure("control", "renewed").lift)
        #expect(Self.near(renewed.interval.lowerBound, -0.029239, 1e-6))
        #expect(Self.near(renewed.interval.upperBound, 0.036075, 1e-6))
        #expect(Self.near(renewed.pValue, 0.764255, 1e-6))
        #expect(renewed.verdict == .noClearDifference)
        // A variant with no event of a kind still has a figure: 0 of its recipients.
        let urgencyRenewed = try figure("urgency", "renewed")
        #expect(urgencyRenewed.count == 0 && urgencyRenewed.rate == 0)

        // annual: 3/1000 against 1/500: at the pooled rate the holdout expects 1.3 events: too small.
        let annual = try #require(try figure("control", "annual").lift)
        #expect(Self.near(annual.interval.lowerBound, -0.008450, 1e-6))
        #expect(Self.near(annual.interval.upperBound, 0.007013, 1e-6))
        #expect(annual.verdict == .tooSmall)

        // opened: 400/1000 with no holdout opens at all: a rate, an interval, and no lift.
        let opened = try figure("control", "opened")
        #expect(opened.count == 400 && Self.near(opened.rate, 0.4, 1e-12) && opened.lift == nil)

        // The holdout: 50/500 = 10.0% [7.6678%, 12.9422%], no lift of its own.
        let holdout = try figure("holdout", "converted")
        #expect(Self.near(holdout.interval?.lowerBound, 0.076678, 1e-6))
        #expect(Self.near(holdout.interval?.upperBound, 0.129422, 1e-6))
        #expect(holdout.lift == nil)

        // Locales count sent recipients only: en converted 90 + 30 of 1,200; fr 60 + 20 of 800.
        #expect(readout.locales.map(\.name) == ["en", "fr"])
        let en = try #require(readout.locales[0].figures.first { $0.event == "converted" })
        #expect(en.count == 120 && Self.near(en.rate, 0.1, 1e-12) && en.lift == nil)
        let fr = try #require(readout.locales[1].figures.first { $0.event == "converted" })
        #expect(fr.count == 80)
    }

    /// The chart over time: each arm's cumulative share, from the journal's buckets, merged to at
    /// most `EngagementOverTime.points` points; the run page draws a line per arm.
    @Test func theLeadingEventOverTimeIsEachArmsCumulativeShare() throws {
        var report = Self.fixture()
        let readout = try #require(report.readout)
        let over = EngagementOverTime(
            event: "converted",
            width: 600,
            buckets: [
                EngagementBucket(variant: "control", bucket: 0, count: 10),
                EngagementBucket(variant: "control", bucket: 2, count: 30),
                EngagementBucket(variant: "urgency", bucket: 1, count: 50),
                EngagementBucket(variant: nil, bucket: 2, count: 5),
            ]
        )
        let (curves, secondsPerPoint) = try #require(over.curves(for: readout))
        #expect(secondsPerPoint == 600)
        #expect(
            curves.map(\.name) == ["control", "urgency", "holdout"] && curves.map(\.isHoldout) == [false, false, true]
        )
        #expect(curves[0].rates == [0.01, 0.01, 0.04])
        #expect(curves[1].rates == [0, 0.05, 0.05])
        #expect(curves[2].rates == [0, 0, 0.01])
        // A month of ten-minute buckets is merged to at most 120 points, and keeps every event.
        let long = EngagementOverTime(
            event: "converted",
            width: 600,
            buckets: (0..<4_320).map { EngagementBucket(variant: "control", bucket: $0, count: 1) }
        )
        let (merged, wider) = try #require(long.curves(for: readout))
        #expect(merged[0].rates.count <= EngagementOverTime.points && wider == 600 * 36)
        #expect(merged[0].rates.last == 4.32)
        #expect(EngagementOverTime(event: "converted", width: 600, buckets: []).curves(for: readout) == nil)
        // The run page draws it: a line per arm, the holdout dashed.
        report.engagementOverTime = over
        let html = report.html()
        #expect(html.contains("<h3 id=\"over-time\">converted over time</h3>"))
        #expect(html.components(separatedBy: "<polyline class=\"arm ").count == 4)
        #expect(html.contains("<polyline class=\"arm holdout\""))
    }

    /// The campaign's `readout:` as the run kept it: the primary event leads, guardrails follow and
    /// say which arm has clearly more (never a "winner"), and an event the holdout could have gets
    /// its lift even when the holdout has none of it (a push-only offer), while opens do not.
    @Test func aPrimaryMetricLeadsAndAnEventTheHoldoutHasNoneOfStillGetsItsLift() throws {
        var report = Self.fixture()
        report.stats.plan?.readout = ReadoutSpec(primary: "renewed", guardrails: ["annual", "uninstalled"])
        // upgraded: 40 of control's 1,000, none of the holdout's 500.
        report.engagement.append(EngagementCount(event: "upgraded", variant: "control", locale: "en", count: 40))
        let readout = try #require(report.readout)
        // Declared events first, even one nobody did yet (uninstalled), then the rest by name.
        #expect(readout.events == ["renewed", "annual", "uninstalled", "converted", "opened", "upgraded"])
        let control = try #require(readout.groups.first { $0.name == "control" })
        // Newcombe's interval for 40/1000 − 0/500, from the two Wilson intervals.
        let upgraded = try #require(control.figures.first { $0.event == "upgraded" }?.lift)
        #expect(Self.near(upgraded.difference, 0.04, 1e-12))
        #expect(Self.near(upgraded.interval.lowerBound, 0.027032724245203733, 1e-9))
        #expect(Self.near(upgraded.interval.upperBound, 0.05400964412125796, 1e-9))
        #expect(upgraded.relative == nil && upgraded.verdict == .better)
        #expect(control.figures.first { $0.event == "opened" }?.lift == nil)
        // The holdout is an arm of upgraded, not of opened.
        #expect(readout.comparisons(of: "upgraded")?.arms.map(\.name) == ["control", "urgency", "holdout"])
        #expect(readout.comparisons(of: "opened")?.arms.map(\.name) == ["control", "urgency"])

        let text = report.text()
        let engagement = try #require(text.range(of: "Engagement (rates per recipient assigned; 95% intervals)\n"))
        #expect(
            text[engagement.upperBound...].hasPrefix("  renewed (primary): no winner yet: control leads, but is not "),
            "\(text)"
        )
        #expect(text.contains("  annual (guardrail): no arm clearly above another\n"), "\(text)")
        #expect(text.contains("  uninstalled (guardrail): no arm clearly above another\n"), "\(text)")
        #expect(text.contains("– (the holdout cannot have it)"), "\(text)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let readoutJSON = try #require(json["readout"] as? [String: Any])
        #expect(readoutJSON["primary"] as? String == "renewed")
        #expect(readoutJSON["not_in_holdout"] as? [String] == ["opened"])
        #expect((readoutJSON["comparisons"] as? [[String: Any]])?.first?["role"] as? String == "primary")
    }

    /// A guardrail says which arm clearly has more of it.
    @Test func aGuardrailNamesTheArmsClearlyAboveOthers() throws {
        var report = Self.fixture()
        report.stats.plan?.readout = ReadoutSpec(primary: "converted", guardrails: ["renewed"])
        let text = report.text()
        #expect(
            text.contains(
                "  renewed (guardrail): control clearly above urgency; the holdout clearly above urgency\n"
            ),
            "\(text)"
        )
    }

    @Test func everyFormatStatesTheReadout() throws {
        let report = Self.fixture()
        let text = report.text()
        #expect(text.contains("Engagement (rates per recipient assigned; 95% intervals)"), "\(text)")
        #expect(
            text.contains(
                "control        1000        990        150  15.0%    12.9–17.3%  +5.0 pts (+1.4 to +8.3) better"
            ),
            "\(text)"
        )
        #expect(
            text.contains(
                "urgency        1000        985         50   5.0%      3.8–6.5%  -5.0 pts (-8.2 to -2.2) worse"
            ),
            "\(text)"
        )
        #expect(text.contains("+0.1 pts (-0.8 to +0.7) too small to tell"), "\(text)")
        // The verdict first, from every pair compared with anytime-valid intervals: better than the
        // holdout by the fixed-sample lift, control is not clearly ahead of it at every look.
        #expect(
            text.contains("  converted: no winner yet: control leads, but is not clearly ahead of the holdout\n"),
            "\(text)"
        )
        #expect(
            text.contains("comparison          difference  anytime-valid interval (98.3% each)  verdict"),
            "\(text)"
        )
        #expect(text.contains("control vs urgency   +10.0 pts  +5.5 to +14.5                        better"), "\(text)")
        #expect(
            text.contains("control vs holdout    +5.0 pts  -1.0 to +11.0                        no clear difference")
        )
        // Opens: the holdout is no arm of an event it was never sent.
        #expect(
            text.contains("  opened: no winner yet: urgency leads, but is not clearly ahead of control\n"),
            "\(text)"
        )
        #expect(text.contains("holdout         500          –         50  10.0%     7.7–12.9%  baseline"), "\(text)")
        let markdown = report.markdown()
        #expect(markdown.contains("#### Engagement"), "\(markdown)")
        #expect(
            markdown.contains("| control | 1000 | 990 | 150 | 15.0% | 12.9–17.3% | +5.0 pts (+1.4 to +8.3) better |"),
            "\(markdown)"
        )
        #expect(
            markdown.contains("**converted: no winner yet: control leads, but is not clearly ahead of the holdout**"),
            "\(markdown)"
        )
        #expect(markdown.contains("| control vs urgency | +10.0 pts | +5.5 to +14.5 | better |"), "\(markdown)")
        let html = report.html()
        #expect(html.contains("<p class=\"verdict\"><strong>converted: no winner yet: control leads"), "\(html)")
        #expect(html.contains("<section class=\"readout\" id=\"engagement\"><h2>Engagement</h2>"))
        #expect(html.contains("-5.0 pts (-8.2 to -2.2) worse"))
        #expect(text.contains("400  40.0%    37.0–43.1%  – (the holdout cannot have it)"), "\(text)")

        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any]
        )
        let readout = try #require(json["readout"] as? [String: Any])
        #expect(readout["version"] as? Int == 1)
        #expect(readout["events"] as? [String] == ["annual", "converted", "opened", "renewed"])
        let groups = try #require(readout["groups"] as? [[String: Any]])
        #expect(groups.map { $0["name"] as? String } == ["control", "urgency", "holdout"])
        let urgencyEvents = try #require(groups[1]["events"] as? [[String: Any]])
        let converted = try #require(urgencyEvents.first { $0["event"] as? String == "converted" })
        let lift = try #require(converted["lift"] as? [String: Any])
        #expect(lift["verdict"] as? String == "worse")
        #expect(groups[2]["delivered"] is NSNull)
        let comparisons = try #require(readout["comparisons"] as? [[String: Any]])
        #expect(comparisons.map { $0["event"] as? String } == ["annual", "converted", "opened", "renewed"])
        #expect(comparisons[1]["winner"] is NSNull && comparisons[1]["leading"] as? String == "control")
        #expect((comparisons[1]["pairs"] as? [[String: Any]])?.count == 3)
        #expect((comparisons[2]["pairs"] as? [[String: Any]])?.count == 1)  // opens: no holdout arm
        // A run with nothing recorded has no readout.
        var empty = report
        empty.engagement = []
        #expect(empty.readout == nil)
        #expect(empty.json().contains("\"readout\":null"))
    }
}
