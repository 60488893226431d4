import Crypto
import Foundation
import PushcampTestSupport
import Testing

/// Sends are deliberate: the plan says what the journal knows, a reviewed plan file holds the send
/// to the files planned, production asks first, a future schedule needs --now.
@Suite("deliberate sends from the command line")
struct DeliberateSendCLITests {
    @Test func planShowsTheJournalStatusAndAPlanFileHoldsTheSendToWhatWasPlanned() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        var sim = try JournalCLITests.start(project)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try SendCLITests.writeAudience(project, count: 30)
        try SendCLITests.writeCampaign(project)

        let first = try CLI.run(
            ["plan", "--samples", "0", "--out", "plans/c.json", "campaigns/c.yaml"],
            in: project.root
        )
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("  journal: never sent from this project's journal\n"), "\(first.stdout)")
        #expect(first.stderr.contains("plan written to plans/c.json"), "\(first.stderr)")
        let planFile = try String(contentsOf: project.root.appendingPathComponent("plans/c.json"), encoding: .utf8)
        let plan = try JSONSerialization.jsonObject(with: Data(planFile.utf8)) as? [String: Any]
        #expect(plan?["campaign"] as? String == "c")
        #expect((plan?["counts"] as? [String: Any])?["planned"] as? Int == 30)
        let inputs = (plan?["inputs"] as? [[String: Any]])?.map { "\($0["role"]!) \($0["path"]!)" }
        #expect(inputs == ["campaign campaigns/c.yaml", "audience audiences/a.csv", "project pushcamp.yaml"])
        // Planning looks at the journal but never creates one.
        #expect(!FileManager.default.fileExists(atPath: project.path(".pushcamp/journal.sqlite")))

        // The audience changed after review: the send is refused, naming the file, and nothing is recorded.
        try SendCLITests.writeAudience(project, count: 31)
        let stale = try CLI.run(["send", "--quiet", "--plan", "plans/c.json", "campaigns/c.yaml"], in: project.root)
        #expect(stale.status == 1)
        #expect(
            stale.stderr.contains("is not the one planned in plans/c.json")
                && stale.stderr.contains("audience audiences/a.csv changed"),
            "\(stale.stderr)"
        )
        #expect(try Self.nothingSent(project))
        let notAPlan = try CLI.run(
            ["send", "--quiet", "--plan", "campaigns/c.yaml", "campaigns/c.yaml"],
            in: project.root
        )
        #expect(notAPlan.status == 1)
        #expect(notAPlan.stderr.contains("is not a pushcamp plan file"), "\(notAPlan.stderr)")

        // Restored, it sends; the plan then says it was sent and `send` refuses to send it again.
        try SendCLITests.writeAudience(project, count: 30)
        let sent = try CLI.run(["send", "--quiet", "--plan", "plans/c.json", "campaigns/c.yaml"], in: project.root)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains("delivered 30, failed 0\n"), "\(sent.stdout)")
        let after = try CLI.run(["plan", "--samples", "0", "campaigns/c.yaml"], in: project.root)
        #expect(after.stdout.contains("  journal: run 1 finished at "), "\(after.stdout)")
        #expect(after.stdout.contains(": 30 delivered, 0 failed; `pushcamp send` refuses"), "\(after.stdout)")
        let json = try CLI.run(["plan", "--format", "json", "--samples", "0", "campaigns/c.yaml"], in: project.root)
        let status = (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["journal"]
        #expect((status as? [String: Any])?["state"] as? String == "finished")
        #expect((status as? [String: Any])?["run"] as? Int == 1)
        let again = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(again.status == 1)
        #expect(again.stderr.contains("was already sent: run 1 finished"), "\(again.stderr)")
        #expect(again.stderr.contains("(30 delivered, 0 failed)"), "\(again.stderr)")

        // An interrupted run: the plan says a send resumes it and how many are left.
        _ = sim.stop()
        try SendCLITests.writeCampaign(project, extra: "throttle: { rate: 20/s }\n")
        sim = try JournalCLITests.start(project)
        let send = Process()
        send.executableURL = CLI.binary
        send.arguments = ["send", "--quiet", "--new-run", "campaigns/c.yaml"]
        send.currentDirectoryURL = project.root
        send.standardOutput = FileHandle.nullDevice
        send.standardError = FileHandle.nullDevice
        try send.run()
        Thread.sleep(forTimeInterval: 0.6)
        send.interrupt()
        send.waitUntilExit()
        #expect(send.terminationStatus == 130)
        let interrupted = try CLI.run(["plan", "--samples", "0", "campaigns/c.yaml"], in: project.root)
        #expect(interrupted.stdout.contains("  journal: run 2 interrupted (started "), "\(interrupted.stdout)")
        #expect(interrupted.stdout.contains("`pushcamp send` resumes it and picks up the "), "\(interrupted.stdout)")
    }

    @Test func aProductionSendAsksFirstAndWithoutATerminalNeedsYes() throws {
        // Apple's production host, no endpoint: nothing can reach it here, and nothing must try.
        // A real key and ids that are not init's placeholders: credentials that could be used.
        let project = try TemporaryProject(
            projectFile: """
                apps:
                  shop:
                    topic: com.example.shop
                    team_id: TEAM123456
                    key_id: KEYABCDEFG
                    key_file: key.p8
                """
        )
        defer { project.remove() }
        try project.write("key.p8", P256.Signing.PrivateKey().pemRepresentation)
        try SendCLITests.writeAudience(project, count: 5)
        try SendCLITests.writeCampaign(project)
        let refused = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("would send to APNs production (app shop) and there is no terminal"),
            "\(refused.stderr)"
        )
        #expect(refused.stderr.contains("Pass --yes, or --plan FILE"))
        #expect(!FileManager.default.fileExists(atPath: project.path(".pushcamp/journal.sqlite")))

        // On a terminal it shows what would be sent and asks; anything but "yes" sends nothing.
        let asked = try CLI.runOnTerminal(["send", "campaigns/c.yaml"], in: project.root, typing: "no\n")
        #expect(asked.status == 1)
        #expect(asked.output.contains("About to send to APNs production (api.push.apple.com)"), "\(asked.output)")
        #expect(asked.output.contains("5 pushes planned"), "\(asked.output)")
        #expect(asked.output.contains("journal: never sent"), "\(asked.output)")
        #expect(asked.output.contains("not confirmed: nothing was sent"), "\(asked.output)")
        #expect(!FileManager.default.fileExists(atPath: project.path(".pushcamp/journal.sqlite")))

        // Credentials that cannot be used (SHOP_KEY unset) are refused before anything is asked,
        // with --yes or on a terminal, before any run exists.
        try project.write("pushcamp.yaml", TemporaryProject.defaultProjectFile)
        let unusable = try CLI.runOnTerminal(["send", "campaigns/c.yaml"], in: project.root, typing: "yes\n")
        #expect(unusable.status == 2, "\(unusable.output)")
        #expect(unusable.output.contains("SHOP_KEY"), "\(unusable.output)")
        #expect(unusable.output.contains("; nothing was sent"), "\(unusable.output)")
        #expect(!unusable.output.contains("Type yes to send"), "\(unusable.output)")
        let yes = try CLI.run(["send", "--quiet", "--yes", "campaigns/c.yaml"], in: project.root)
        #expect(yes.status == 2, "\(yes.stderr)")
        #expect(yes.stderr.contains("SHOP_KEY"), "\(yes.stderr)")
        #expect(try Self.nothingSent(project))
    }

    @Test func aFutureScheduleNeedsNowAndLeavesNothingBehind() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try SendCLITests.writeAudience(project, count: 10)
        try SendCLITests.writeCampaign(
            project,
            extra: "schedule: { at: \"2031-01-01T09:00:00Z\" }\n"
        )
        let refused = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("scheduled for 2031-01-01"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--now"), "\(refused.stderr)")
        #expect(try Self.nothingSent(project))
        let now = try CLI.run(["send", "--quiet", "--now", "campaigns/c.yaml"], in: project.root)
        #expect(now.status == 0, "\(now.stdout)\(now.stderr)")
        #expect(now.stdout.contains("delivered 10, failed 0\n"), "\(now.stdout)")
    }

    @Test func rehearsalsAreRecordedApartFromRealSends() throws {
        let project = try TemporaryProject()
        defer { project.remove() }
        try SendCLITests.writeAudience(project, count: 12)
        try SendCLITests.writeCampaign(project)
        try project.write("gone.txt", "\(TemporaryProject.token(4)) unregistered 1700000000000\n")
        let rehearsal = try CLI.run(["rehearse", "--tokens", "gone.txt", "campaigns/c.yaml"], in: project.root)
        #expect(rehearsal.status == 4, "\(rehearsal.stderr)")
        #expect(rehearsal.stdout.contains("delivered 11, failed 1\n"), "\(rehearsal.stdout)")
        let runs = try CLI.run(["runs", "--rehearsal"], in: project.root)
        #expect(runs.status == 0)
        #expect(runs.stdout.contains(" finished "), "\(runs.stdout)")
        #expect(runs.stdout.contains(" 11 "), "\(runs.stdout)")
        #expect(runs.stdout.hasPrefix("Rehearsals (against the local simulator; nothing reached APNs)"))
        let report = try CLI.run(["report", "--rehearsal"], in: project.root)
        #expect(report.stdout.hasPrefix("Rehearsal run 1 of c: finished\n"), "\(report.stdout)")
        #expect(report.stdout.contains("Unregistered"), "\(report.stdout)")
        // The project's own journal knows nothing of it: the campaign was never really sent.
        #expect(try Self.nothingSent(project))
        // …and the token the rehearsal's simulator called Unregistered is not suppressed for real sends.
        let plan = try CLI.run(["plan", "--samples", "0", "campaigns/c.yaml"], in: project.root)
        #expect(plan.stdout.contains("journal: never sent"), "\(plan.stdout)")
        #expect(plan.stdout.contains("  suppressed               0"), "\(plan.stdout)")
        #expect(plan.stdout.contains("  planned                 12"), "\(plan.stdout)")
        // A rehearsal is simply rehearsed again, with the same 12 planned.
        let again = try CLI.run(["rehearse", "campaigns/c.yaml"], in: project.root)
        #expect(again.stdout.contains("delivered 12, failed 0\n"), "\(again.stdout)")
    }

    /// Whether the project's journal has no run (or does not exist).
    static func nothingSent(_ project: TemporaryProject) throws -> Bool {
        let runs = try CLI.run(["runs"], in: project.root)
        return runs.stdout.contains("no runs yet")
            || runs.stderr.contains("nothing has been sent from this project yet")
    }
}
