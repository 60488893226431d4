import Foundation
import PushcampTestSupport
import Testing

/// `pushcamp report` after a send to `pushcamp sim`, checked against what the simulator received.
@Suite("report from the command line")
struct ReportCLITests {
    @Test func reportNumbersMatchTheSimulatorsRecord() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let token = TemporaryProject.token
        var rules = ""
        for index in 0..<6 { rules += "\(token(index)) unregistered 1700000000000\n" }
        for index in 6..<9 { rules += "\(token(index)) bad\n" }
        for index in 10..<20 { rules += "\(token(index)) throttled 1\n" }
        for index in 20..<25 { rules += "\(token(index)) flaky 2\n" }
        try project.write("tokens.txt", rules)
        var sim = try JournalCLITests.start(project, ["--tokens", "tokens.txt", "--record", "received.csv"])
        try SendCLITests.writeAudience(project, count: 200)
        try SendCLITests.writeCampaign(project, extra: "retry: { TooManyRequests: 1s, ServiceUnavailable: 1s }\n")
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        _ = sim.stop()
        #expect(send.status == 4, "\(send.stdout)\(send.stderr)")

        // What arrived: every request, and each token's last answer.
        let received = try JournalCLITests.received(project)
        var last: [String: String] = [:]
        for request in received { last[request.token] = request.status }
        let delivered = last.values.filter { $0 == "200" }.count
        let failed = Dictionary(grouping: last.values.filter { $0 != "200" }, by: { $0 }).mapValues(\.count)
        #expect(delivered == 191 && failed == ["410": 6, "400": 3])

        let json = try CLI.run(["report", "--format", "json"], in: project.root)
        #expect(json.status == 0, "\(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(report["run"] as? Int == 1)
        #expect(report["status"] as? String == "finished")
        #expect(report["recipients"] as? Int == 200 && report["planned"] as? Int == 200)
        #expect(report["delivered"] as? Int == delivered)
        let outcomes = try #require(report["outcomes"] as? [[String: Any]])
        var reported: [String: Int] = [:]
        for outcome in outcomes where outcome["kind"] as? String == "failed" {
            reported["\(outcome["status"] as? Int ?? 0)", default: 0] += outcome["count"] as? Int ?? 0
        }
        #expect(reported == failed)
        #expect(outcomes.contains { $0["reason"] as? String == "Unregistered" && $0["count"] as? Int == 6 })
        // Every request beyond a token's first was a retry, and every request was answered.
        let retries = try #require(report["retries"] as? [String: Any])
        #expect(retries["total"] as? Int == received.count - last.count)
        #expect(retries["by_cause"] as? [String: Int] == ["TooManyRequests": 10, "ServiceUnavailable": 10])
        let latency = try #require(report["latency"] as? [String: Any])
        #expect(latency["count"] as? Int == received.count)
        #expect(report["possible_duplicates"] as? Int == 0)
        let throughput = try #require(report["throughput"] as? [String: Any])
        let seconds = try #require(throughput["per_second"] as? [[String: Any]])
        let answered = seconds.reduce(0) { $0 + ($1["delivered"] as? Int ?? 0) + ($1["failed"] as? Int ?? 0) }
        #expect(answered == 200)

        // The other formats, and the run chosen by number; a run that does not exist is an error.
        let text = try CLI.run(["report", "1"], in: project.root)
        #expect(text.status == 0)
        #expect(text.stdout.contains("  410 Unregistered"), "\(text.stdout)")
        #expect(text.stdout.contains("Retries 20: ServiceUnavailable 10 · TooManyRequests 10\n"), "\(text.stdout)")
        let markdown = try CLI.run(["report", "--format", "markdown"], in: project.root)
        #expect(markdown.stdout.contains("| delivered | \(delivered) |"))
        let html = try CLI.run(["report", "--format", "html", "-o", "report.html"], in: project.root)
        #expect(html.status == 0 && html.stdout.isEmpty)
        let page = try String(contentsOf: project.root.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.contains("<svg"))
        let missing = try CLI.run(["report", "7"], in: project.root)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no run 7 in "), "\(missing.stderr)")

        // A second run, sent on purpose (the campaign was sent already): the report defaults to it.
        sim = try JournalCLITests.start(project)
        try SendCLITests.writeCampaign(project, extra: "# a new revision\n")
        let refused = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("was already sent: run 1 finished"), "\(refused.stderr)")
        _ = try CLI.run(["send", "--quiet", "--new-run", "campaigns/c.yaml"], in: project.root)
        _ = sim.stop()
        let latest = try CLI.run(["report", "--format", "json"], in: project.root)
        #expect(
            (try JSONSerialization.jsonObject(with: Data(latest.stdout.utf8)) as? [String: Any])?["run"] as? Int == 2
        )
    }

    /// The A/B readout after a real send: each variant's and locale's outcomes add up to the run's,
    /// each variant planned what `plan` said, and the report says what was sent and the funnel.
    @Test func variantsAndLocalesAddUpToTheRunAndMatchThePlan() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let token = TemporaryProject.token
        var rules = ""
        for index in stride(from: 0, to: 60, by: 7) { rules += "\(token(index)) unregistered 1700000000000\n" }
        for index in stride(from: 3, to: 60, by: 11) { rules += "\(token(index)) bad\n" }
        try project.write("tokens.txt", rules)
        let sim = try JournalCLITests.start(project, ["--tokens", "tokens.txt"])
        let locales = ["en", "fr", "de"]
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: 120, columns: ["locale"]) { [locales[$0 % 3]] }
        )
        try SendCLITests.writeCampaign(
            project,
            extra: """
                  locale: { from: locale, default: en }
                  strings: { en: { hi: Hello }, fr: { hi: Bonjour }, de: { hi: Hallo } }
                  variants: [ { name: control, weight: 1 }, { name: bold, weight: 1 } ]
                  holdout: 10%

                """
        )
        let campaign = try String(contentsOf: project.root.appendingPathComponent("campaigns/c.yaml"), encoding: .utf8)
        try project.write(
            "campaigns/c.yaml",
            campaign.replacingOccurrences(
                of: "payload: { aps: { alert: hi } }\n",
                with: "payload: { aps: { alert: \"{{> hi}}\" } }\n"
            )
        )
        let plan = try CLI.run(["plan", "--format", "json", "campaigns/c.yaml"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        let planned = try #require(try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])
        let plannedVariants = (planned["variants"] as? [[String: Any]] ?? []).reduce(into: [String: Int]()) {
            $0[$1["name"] as? String ?? ""] = $1["planned"] as? Int
        }
        #expect(plannedVariants.count == 2, "\(plan.stdout)\(plan.stderr)")
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        _ = sim.stop()
        #expect(send.status == 4, "\(send.stdout)\(send.stderr)")

        let json = try CLI.run(["report", "--format", "json"], in: project.root)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(report["file"] as? String == "campaigns/c.yaml")
        let sent = try #require(report["sent"] as? [String: Any])
        #expect(sent["app"] as? String == "shop" && sent["topic"] as? String == "com.example.shop")
        #expect(sent["environment"] as? String == "production" && sent["connections"] as? Int == 1, "\(sent)")
        let funnel = try #require(report["plan"] as? [String: Any])
        #expect(funnel["read"] as? Int == 120 && funnel["planned"] as? Int == report["planned"] as? Int)
        #expect(funnel["held_out"] as? Int == (planned["audience"] as? [String: Any])?["held_out"] as? Int)
        #expect(funnel["holdout_percent"] as? Double == 10)

        let variants = try #require(report["variants"] as? [[String: Any]])
        let localeRows = try #require(report["locales"] as? [[String: Any]])
        #expect(variants.map { $0["name"] as? String } == ["bold", "control"])
        #expect(Set(localeRows.compactMap { $0["name"] as? String }) == Set(locales))
        var outcomeReasons: [String: Int] = [:]
        for outcome in report["outcomes"] as? [[String: Any]] ?? [] where outcome["kind"] as? String == "failed" {
            outcomeReasons[outcome["reason"] as? String ?? "", default: 0] += outcome["count"] as? Int ?? 0
        }
        #expect(Set(outcomeReasons.keys) == ["Unregistered", "BadDeviceToken"])
        for rows in [variants, localeRows] {
            #expect(rows.reduce(0) { $0 + ($1["delivered"] as? Int ?? 0) } == report["delivered"] as? Int)
            #expect(rows.reduce(0) { $0 + ($1["failed"] as? Int ?? 0) } == report["failed"] as? Int)
            #expect(rows.reduce(0) { $0 + ($1["planned"] as? Int ?? 0) } == report["planned"] as? Int)
            var reasons: [String: Int] = [:]
            for row in rows { reasons.merge(row["failed_by_reason"] as? [String: Int] ?? [:], uniquingKeysWith: +) }
            #expect(reasons == outcomeReasons, "\(rows)")
        }
        for variant in variants {
            #expect(variant["planned"] as? Int == plannedVariants[variant["name"] as? String ?? ""])
            #expect((variant["p50"] as? Double ?? 0) > 0)
        }
        let text = try CLI.run(["report"], in: project.root).stdout
        #expect(
            text.contains("\nVariants\n") && text.contains("\nLocales\n") && text.contains("holdout 10% ("),
            "\(text)"
        )
    }
}
