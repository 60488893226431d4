import Crypto
import Foundation
import PushcampTestSupport
import Testing

/// The project-level commands a team reaches for, against the built binary: `validate` with no
/// files, `status`, `diff`, `doctor`, plans that name where they send, `--version`, and the empty
/// states of a project that has sent nothing.
@Suite("project commands from the command line", .serialized)
struct ProjectCommandsCLITests {
    @Test func versionNamesTheCommitTheBuildTimeAndTheKind() throws {
        let output = try CLI.run(["--version"], in: CLI.repository)
        #expect(output.status == 0)
        #expect(
            output.stdout.wholeMatch(
                of:
                    /0\.1\.0 \(commit ([0-9a-f]{12}(-dirty)?|unknown), built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, (source build|release)\)\n/
            ) != nil,
            "\(output.stdout)"
        )
    }

    @Test func validateWithoutFilesChecksTheProjectAndEveryWatchedCampaign() throws {
        let examples = try CLI.examples()
        defer { examples.remove() }
        let all = try CLI.run(["validate"], in: examples.root)
        #expect(all.status == 0 && all.stdout == "pushcamp.yaml and 5 campaigns valid\n", "\(all.stdout)\(all.stderr)")
        // pushcamp.yaml named on its own is read as the project file, not as a campaign.
        let project = try CLI.run(["validate", "pushcamp.yaml"], in: examples.root)
        #expect(project.status == 0 && project.stdout == "pushcamp.yaml valid\n", "\(project.stdout)")
        // Two files defining one campaign: serve would send neither.
        try FileManager.default.copyItem(
            atPath: examples.path("campaigns/spring-sale.yaml"),
            toPath: examples.path("campaigns/spring-sale-copy.yaml")
        )
        let twice = try CLI.run(["validate"], in: examples.root)
        #expect(twice.status == 1)
        #expect(
            twice.stdout == """
                campaigns/spring-sale.yaml: error: campaign spring-sale-2027 is also defined in campaigns/spring-sale-copy.yaml; campaign ids must be unique (serve sends neither)
                1 of 7 files invalid: 1 error

                """,
            "\(twice.stdout)"
        )
        // A project file with a mistake is located in it, and nothing else is read.
        try examples.write("pushcamp.yaml", "apps:\n  shop-ios:\n    topic: com.example.shop\n    colour: blue\n")
        let broken = try CLI.run(["validate"], in: examples.root)
        #expect(broken.status == 1)
        #expect(
            broken.stdout.contains(
                "pushcamp.yaml:4:5: error: unknown key 'colour' in 'apps.shop-ios' (expected one of: topic, team_id,"
            ),
            "\(broken.stdout)"
        )
        #expect(broken.stdout.hasSuffix("\n1 of 1 files invalid: 2 errors\n"), "\(broken.stdout)")
    }

    @Test func aTerminalGetsColouredSeveritiesAndBoldHeadingsUnlessNoColor() throws {
        let examples = try CLI.examples()
        defer { examples.remove() }
        try examples.write("campaigns/broken.yaml", "campaign: broken\napp: shop-ios\n")
        let validate = try CLI.runOnTerminal(
            ["validate"],
            in: examples.root,
            typing: "",
            environment: ["TERM": "xterm", "NO_COLOR": ""]
        )
        #expect(
            validate.output.contains("campaigns/broken.yaml:1:1: \u{1B}[1;31merror:\u{1B}[0m "),
            "\(validate.output)"
        )
        let plan = try CLI.runOnTerminal(
            ["plan", "campaigns/spring-sale.yaml"],
            in: examples.root,
            typing: "",
            environment: ["TERM": "xterm", "NO_COLOR": ""]
        )
        #expect(plan.output.contains("\u{1B}[1m→ APNs production (api.push.apple.com)\u{1B}[0m"), "\(plan.output)")
        #expect(plan.output.contains("\u{1B}[1mVariants\u{1B}[0m"), "\(plan.output)")
        // NO_COLOR, and anything not a terminal, get the plain text.
        let plain = try CLI.runOnTerminal(
            ["validate"],
            in: examples.root,
            typing: "",
            environment: ["TERM": "xterm", "NO_COLOR": "1"]
        )
        #expect(!plain.output.contains("\u{1B}["), "\(plain.output)")
        #expect(!(try CLI.run(["validate"], in: examples.root)).stdout.contains("\u{1B}["))
    }

    /// Every command's examples, as `--help` prints them in 80 columns: one command per line,
    /// none wrapped into a second line that would not run if pasted.
    @Test func helpExamplesFitEightyColumns() throws {
        func subcommands(_ path: [String]) throws -> [String] {
            let help = try CLI.run(path + ["--help"], in: CLI.repository, environment: ["COLUMNS": "80"]).stdout
            guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
            return help[start.upperBound...].split(separator: "\n").compactMap { line in
                line.hasPrefix("  ") && !line.hasPrefix("   ") && !line.hasPrefix("  See ")
                    ? line.split(separator: " ").first.map(String.init) : nil
            }
        }
        var commands: [[String]] = [[]]
        for command in try subcommands([]) {
            commands.append([command])
            for sub in try subcommands([command]) where sub != "help" { commands.append([command, sub]) }
        }
        #expect(commands.count > 25)
        var checked = 0
        for command in commands {
            let help = try CLI.run(command + ["--help"], in: CLI.repository, environment: ["COLUMNS": "80"]).stdout
            guard let start = help.range(of: "Examples:\n") else { continue }
            for line in help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
                if line.isEmpty { break }
                checked += 1
                #expect(line.count <= 80, "pushcamp \(command.joined(separator: " ")): \(line)")
                #expect(
                    line.wholeMatch(of: /\ \ ([A-Z_]+=\S+ )*pushcamp .*/) != nil,
                    "pushcamp \(command.joined(separator: " ")): an example wrapped: \(line)"
                )
            }
        }
        #expect(checked > 40)
    }

    @Test func plansNameWhereTheySendFirstInEveryFormat() throws {
        let examples = try CLI.examples()
        defer { examples.remove() }
        let text = try CLI.run(["plan", "campaigns/spring-sale.yaml"], in: examples.root)
        #expect(
            text.stdout.hasPrefix("→ APNs production (api.push.apple.com)\nPlan for spring-sale-2027 ("),
            "\(text.stdout)"
        )
        let markdown = try CLI.run(["plan", "--format", "markdown", "campaigns/spring-sale.yaml"], in: examples.root)
        #expect(
            markdown.stdout.hasPrefix("**→ APNs production (api.push.apple.com)**\n\n### Plan: `spring-sale-2027`"),
            "\(markdown.stdout)"
        )
        let json = try CLI.run(["plan", "--format", "json", "campaigns/spring-sale.yaml"], in: examples.root)
        #expect(
            json.stdout.hasPrefix(#"{"environment":"production","endpoint":"https://api.push.apple.com","campaign":"#),
            "\(json.stdout)"
        )
        // Sandbox is not in bold; a custom endpoint says which environment it stands in for.
        try examples.write(
            "pushcamp.yaml",
            try String(contentsOfFile: examples.path("pushcamp.yaml"), encoding: .utf8)
                .replacingOccurrences(of: "environment: production", with: "environment: sandbox")
        )
        let sandbox = try CLI.run(["plan", "--format", "markdown", "campaigns/spring-sale.yaml"], in: examples.root)
        #expect(
            sandbox.stdout.hasPrefix("→ APNs sandbox (api.sandbox.push.apple.com)\n\n### Plan:"),
            "\(sandbox.stdout)"
        )
        try examples.write(
            "pushcamp.yaml",
            try String(contentsOfFile: examples.path("pushcamp.yaml"), encoding: .utf8)
                .replacingOccurrences(
                    of: "environment: sandbox",
                    with: "environment: sandbox\n    endpoint: https://127.0.0.1:8443"
                )
        )
        let custom = try CLI.run(["plan", "campaigns/spring-sale.yaml"], in: examples.root)
        #expect(
            custom.stdout.hasPrefix("→ custom endpoint https://127.0.0.1:8443 (instead of APNs sandbox)\n"),
            "\(custom.stdout)\(custom.stderr)"
        )
    }

    @Test func aNewProjectHasEmptyListsNotErrors() throws {
        let parent = try TemporaryProject(projectFile: nil)
        defer { parent.remove() }
        #expect(try CLI.run(["init", "p"], in: parent.root).status == 0)
        let project = parent.root.appendingPathComponent("p")
        let runs = try CLI.run(["runs"], in: project)
        #expect(
            runs.status == 0 && runs.stdout == "no runs yet\n" && runs.stderr.isEmpty,
            "\(runs.stdout)\(runs.stderr)"
        )
        let runsJSON = try CLI.run(["runs", "--format", "json"], in: project)
        #expect(runsJSON.status == 0 && runsJSON.stdout == "[]\n", "\(runsJSON.stdout)\(runsJSON.stderr)")
        let report = try CLI.run(["report"], in: project)
        #expect(report.status == 0 && report.stdout == "no runs yet: nothing has been sent from this project\n")
        let reportJSON = try CLI.run(["report", "--format", "json"], in: project)
        #expect(reportJSON.status == 0 && reportJSON.stdout == "null\n")
        let tokens = try CLI.run(["tokens", "invalid"], in: project)
        #expect(tokens.status == 0 && tokens.stdout == "topic,token,reason,apns_timestamp,apns_time,seen_at\n")
        let status = try CLI.run(["status"], in: project)
        #expect(status.status == 0, "\(status.stderr)")
        let journal = project.appendingPathComponent(".pushcamp/journal.sqlite").path
        #expect(
            status.stdout == """
                journal \(journal)

                Runs being sent or interrupted
                  none

                Next slots
                  none (no campaign in the watched folders has a schedule)

                Problems (files serve cannot read, and the last day's skipped slots and failed pushes)
                  none

                Dead tokens (APNs called them Unregistered, ExpiredToken or BadDeviceToken)
                  none

                App Store notifications in the last day: none

                """,
            "\(status.stdout)"
        )
        let statusJSON = try CLI.run(["status", "--format", "json"], in: project)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(statusJSON.stdout.utf8)) as? [String: Any]
        )
        #expect(object["runs"] as? [Any] != nil && (object["runs"] as? [Any])?.isEmpty == true)
        #expect((object["at"] as? String)?.hasSuffix("Z") == true)
        // Rehearsals are kept apart; a project that only rehearsed says where they are.
        #expect(try CLI.run(["rehearse", "campaigns/welcome.yaml"], in: project).status == 0)
        let afterRehearsal = try CLI.run(["runs"], in: project)
        #expect(afterRehearsal.status == 0 && afterRehearsal.stdout == "no runs yet\n")
        #expect(
            afterRehearsal.stderr
                == "note: nothing has been sent from this project yet; rehearsals are kept apart: add --rehearsal\n"
        )
        // Every JSON time in one form: ISO 8601 in UTC.
        let iso = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z/
        let rehearsals = try CLI.run(["runs", "--rehearsal", "--format", "json"], in: project)
        let run = try #require(
            (try JSONSerialization.jsonObject(with: Data(rehearsals.stdout.utf8)) as? [[String: Any]])?.first
        )
        for key in ["started_at", "updated_at"] {
            #expect((run[key] as? String)?.wholeMatch(of: iso) != nil, "\(key): \(run[key] ?? "nil")")
        }
        let rehearsalReport = try CLI.run(["report", "--rehearsal", "--format", "json"], in: project)
        let reportObject = try #require(
            try JSONSerialization.jsonObject(with: Data(rehearsalReport.stdout.utf8)) as? [String: Any]
        )
        #expect(
            (reportObject["started_at"] as? String)?.wholeMatch(of: iso) != nil,
            "\(rehearsalReport.stdout.prefix(300))"
        )
    }

    @Test func doctorChecksKeysAndTheEndpointAndSendsOneTestPush() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project)
        defer { _ = sim.stop() }
        // The simulator's private key is its owner's alone; its CA certificate is public.
        let mode = { (file: String) in
            (try FileManager.default.attributesOfItem(atPath: project.path(file))[.posixPermissions] as? NSNumber)?
                .intValue
        }
        #expect(try mode("sim/key.p8") == 0o600)
        #expect(try mode("sim/ca.pem") == 0o644)
        let doctor = try CLI.run(["doctor"], in: project.root)
        #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
        let journal = project.path(".pushcamp/journal.sqlite")
        #expect(
            doctor.stdout.wholeMatch(
                of: try Regex(
                    """
                    ok       pushcamp.yaml: 1 app
                    ok       journal \(NSRegularExpression.escapedPattern(for: journal)): no file yet; the first send creates it
                    app shop → custom endpoint https://127.0.0.1:\(sim.port) \\(instead of APNs production\\)
                    ok       app shop credentials: provider token, key KEY1234567 of team ABCDE12345
                    ok       app shop TLS and HTTP/2: https://127.0.0.1:\(sim.port) answered in \\d+ ms

                    everything checked is ok

                    """
                )
            ) != nil,
            "\(doctor.stdout)"
        )
        let token = TemporaryProject.token(4)
        let test = try CLI.run(["doctor", "--send-test", token], in: project.root)
        #expect(test.status == 0, "\(test.stdout)\(test.stderr)")
        #expect(
            test.stdout.contains(
                try Regex("ok       app shop test push to \(token.prefix(4))[^:]*: 200, apns-id [0-9a-f-]{36}\n")
            ),
            "\(test.stdout)"
        )
        // A key that is not there: exit 2, named, and no connection tried.
        try SendCLITests.writeProject(
            project,
            port: sim.port,
            credentials: "team_id: ABCDE12345\nkey_id: KEY1234567\nkey_file: sim/missing.p8"
        )
        let missing = try CLI.run(["doctor"], in: project.root)
        #expect(missing.status == 2)
        #expect(missing.stdout.contains("problem  app shop credentials: "), "\(missing.stdout)")
        #expect(
            missing.stdout.contains("skipped  app shop TLS and HTTP/2: not tried without usable credentials\n"),
            "\(missing.stdout)"
        )
        #expect(missing.stdout.hasSuffix("\n1 problem\n"), "\(missing.stdout)")
    }

    @Test func aKeyPathExpandsTildeAndItsProblemIsLocatedInPushcampYaml() throws {
        let project = try TemporaryProject(
            projectFile: """
                apps:
                  shop:
                    topic: com.example.shop
                    team_id: TEAM123456
                    key_id: KEYABCDEFG
                    key_file: ~/keys/AuthKey.p8
                """
        )
        defer { project.remove() }
        try SendCLITests.writeAudience(project, count: 2)
        try SendCLITests.writeCampaign(project)
        let home = project.path("home")
        let missing = try CLI.run(["send", "--yes", "campaigns/c.yaml"], in: project.root, environment: ["HOME": home])
        #expect(missing.status == 2)
        #expect(
            missing.stderr
                == "pushcamp.yaml:6:15: error: app shop: key file \(home)/keys/AuthKey.p8 does not exist; nothing was sent\n",
            "\(missing.stderr)"
        )
        // Put where ~ says, it is found: the credentials are usable.
        try project.write("home/keys/AuthKey.p8", P256.Signing.PrivateKey().pemRepresentation)
        let doctor = try CLI.run(["doctor", "--timeout", "1"], in: project.root, environment: ["HOME": home])
        #expect(
            doctor.stdout.contains(
                "ok       app shop credentials: provider token, key KEYABCDEFG of team TEAM123456\n"
            ),
            "\(doctor.stdout)"
        )
    }

    @Test func diffComparesThePlanOfNowWithTheLastRunAndWithAPlanFile() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project)
        defer { _ = sim.stop() }
        try SendCLITests.writeAudience(project, count: 5)
        try SendCLITests.writeCampaign(project)

        let never = try CLI.run(["diff", "campaigns/c.yaml"], in: project.root)
        #expect(never.status == 0, "\(never.stderr)")
        #expect(
            never.stdout
                == "c: never sent, so there is nothing to compare its plan with; `pushcamp plan campaigns/c.yaml` shows it, `diff --plan FILE` compares it with a plan file\n"
        )
        #expect(try CLI.run(["plan", "--out", "plans/c.json", "campaigns/c.yaml"], in: project.root).status == 0)
        let sent = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")

        let same = try CLI.run(["diff", "--exit-code", "campaigns/c.yaml"], in: project.root)
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")
        #expect(same.stdout.hasSuffix("no differences: the campaign plans as run 1 did\n"), "\(same.stdout)")

        // A new payload, a collapse id, and two more recipients.
        try SendCLITests.writeAudience(project, count: 7)
        try project.write(
            "campaigns/c.yaml",
            "campaign: c\napp: shop\naudience:\n  source: { csv: audiences/a.csv }\nmessage:\n  payload: { aps: { alert: hello } }\n  collapse_id: news\n"
        )
        let changed = try CLI.run(["diff", "--exit-code", "campaigns/c.yaml"], in: project.root)
        #expect(changed.status == 1, "\(changed.stdout)\(changed.stderr)")
        #expect(
            changed.stdout.contains("\nAudience\n  read                     5 →         7   +2\n"),
            "\(changed.stdout)"
        )
        #expect(changed.stdout.contains("  planned                  5 →         7   +2\n"), "\(changed.stdout)")
        #expect(changed.stdout.contains("    apns-collapse-id: c → news\n"), "\(changed.stdout)")
        #expect(
            changed.stdout.contains(
                #"    - {"aps":{"alert":"hi"}}"# + "\n" + #"    + {"aps":{"alert":"hello"}}"# + "\n"
            ),
            "\(changed.stdout)"
        )
        #expect(changed.stdout.contains("… (64 characters) · variant default\n"), "\(changed.stdout)")

        // Against the plan file: the same changes, and the files that changed since it was made.
        let againstFile = try CLI.run(["diff", "--plan", "plans/c.json", "campaigns/c.yaml"], in: project.root)
        #expect(againstFile.status == 0, "\(againstFile.stderr)")
        #expect(againstFile.stdout.hasPrefix("c: plan file plans/c.json (revision "), "\(againstFile.stdout)")
        #expect(againstFile.stdout.contains("  campaign campaigns/c.yaml changed\n"), "\(againstFile.stdout)")
        #expect(againstFile.stdout.contains("  audience audiences/a.csv changed\n"), "\(againstFile.stdout)")
        #expect(againstFile.stdout.contains("    apns-collapse-id: c → news\n"), "\(againstFile.stdout)")
    }
}
