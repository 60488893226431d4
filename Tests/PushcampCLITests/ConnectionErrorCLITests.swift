import Foundation
import PushcampTestSupport
import Testing

/// What `send` says when it cannot connect, and `--project` from outside the project.
@Suite("connection errors and --project from the command line", .serialized)
struct ConnectionErrorCLITests {
    @Test func aConnectionFailureSaysWhatFailedAndWhatToCheckBeforeTheDetail() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(["--state-dir", "sim", "--team-id", "ABCDE12345"], in: project.root)
        try SendCLITests.writeAudience(project, count: 3)
        try SendCLITests.writeCampaign(project)

        // A simulator whose CA the project does not name: its certificate is not trusted.
        try project.write(
            "pushcamp.yaml",
            """
            apps:
              shop:
                topic: com.example.shop
                team_id: ABCDE12345
                key_id: KEY1234567
                key_file: sim/key.p8
                endpoint: https://127.0.0.1:\(sim.port)
            """
        )
        let untrusted = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(untrusted.status == 2, "\(untrusted.stdout)\(untrusted.stderr)")
        #expect(
            untrusted.stdout.contains(
                "stopped: cannot connect to https://127.0.0.1:\(sim.port) (6 attempts): its TLS certificate is not trusted; for a custom endpoint (a simulator, a proxy) give its CA with ca_file in pushcamp.yaml (detail: "
            ),
            "\(untrusted.stdout)"
        )
        #expect(untrusted.stdout.contains("× TLS: certificate not trusted\n"), "\(untrusted.stdout)")

        // Nothing listening any more: refused.
        _ = sim.stop()
        try SendCLITests.writeProject(project, port: sim.port, credentials: SendCLITests.simulatorKey)
        let refused = try CLI.run(["send", "--quiet", "--new-run", "campaigns/c.yaml"], in: project.root)
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(
            refused.stdout.contains(
                "(6 attempts): nothing accepts connections there (connection refused); check the endpoint's host and port, and that the server runs (detail: "
            ),
            "\(refused.stdout)"
        )
    }

    @Test func projectPointsEveryKindOfCommandAtAProjectFromAnywhere() throws {
        let examples = try CLI.examples()
        defer { examples.remove() }
        let elsewhere = FileManager.default.temporaryDirectory
        let root = examples.root.path
        let plan = try CLI.run(["plan", "--project", root, "campaigns/spring-sale.yaml"], in: elsewhere)
        #expect(
            plan.stdout.hasPrefix("→ APNs production (api.push.apple.com)\nPlan for spring-sale-2027"),
            "\(plan.stdout)\(plan.stderr)"
        )
        let valid = try CLI.run(["validate", "--project", root, "campaigns/spring-sale.yaml"], in: elsewhere)
        #expect(valid.status == 0 && valid.stdout == "1 campaign valid\n", "\(valid.stdout)\(valid.stderr)")
        let rehearsal = try CLI.run(
            ["rehearse", "-q", "--project", root, "campaigns/order-tracking.yaml"],
            in: elsewhere
        )
        #expect(rehearsal.status == 0, "\(rehearsal.stdout)\(rehearsal.stderr)")
        let runs = try CLI.run(["runs", "--rehearsal", "--project", root, "--format", "json"], in: elsewhere)
        #expect(runs.stdout.contains("order-tracking"), "\(runs.stdout)\(runs.stderr)")
        let report = try CLI.run(["report", "--rehearsal", "--project", root], in: elsewhere)
        #expect(report.stdout.contains("campaigns/order-tracking.yaml"), "\(report.stdout)\(report.stderr)")
        let missing = try CLI.run(
            ["plan", "--project", root + "/nowhere", "campaigns/spring-sale.yaml"],
            in: elsewhere
        )
        #expect(missing.status == 1 && missing.stderr.contains("--project \(root)/nowhere: not a folder"))
    }
}
