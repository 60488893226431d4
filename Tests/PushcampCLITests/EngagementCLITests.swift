import Foundation
import PushcampTestSupport
import Testing

/// `pushcamp engagement import` and the readout it feeds, against a run sent to `pushcamp sim`.
@Suite("engagement import and the A/B readout from the command line")
struct EngagementCLITests {
    /// `campaigns/e.yaml`: two variants (control and urgency, half each) and a 20% holdout (none
    /// when `holdout` is false) over `count` recipients named by `user_id`.
    static func write(
        _ project: TemporaryProject,
        count: Int = 300,
        holdout: Bool = true,
        readout: String = "",
        extra: String = "",
        user: (Int) -> String = { "u\($0)" }
    ) throws {
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: count, columns: ["user_id"]) { [user($0)] }
        )
        try project.write(
            "campaigns/e.yaml",
            """
            campaign: e
            app: shop
            audience:
              source: { csv: audiences/a.csv }
              user_key: user_id
            message:
              payload: { aps: { alert: hi } }
              variants:
                - { name: control, weight: 50 }
                - { name: urgency, weight: 50 }
            \(holdout ? "  holdout: 20%\n" : "")
            \(readout)
            \(extra)
            """
        )
    }

    /// `rows` (a CSV with its header) imported into `campaigns/e.yaml`'s latest run: it must succeed.
    static func importEvents(_ rows: [String], into project: TemporaryProject) throws -> CLI.Output {
        try project.write("events.csv", rows.joined(separator: "\n") + "\n")
        let imported = try CLI.run(
            ["engagement", "import", "events.csv", "--campaign", "campaigns/e.yaml"],
            in: project.root
        )
        #expect(imported.status == 0, "\(imported.stdout)\(imported.stderr)")
        return imported
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func importedEventsReachTheReadoutOncePerRecipientAndEvent() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project, ["--record", "received.csv"])
        try Self.write(project)

        // Every planned push with its variant and apns-id, from `plan` (the planner's own path).
        let plan = try CLI.run(["plan", "--samples", "1000", "--format", "json", "campaigns/e.yaml"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        let samples = try #require(try Self.json(plan.stdout)["samples"] as? [[String: Any]])
        var variantOf: [String: String] = [:]
        var apnsIDOf: [String: String] = [:]
        for sample in samples {
            let token = try #require(sample["token"] as? String)
            variantOf[token] = sample["variant"] as? String
            apnsIDOf[token] = (sample["headers"] as? [String: String])?["apns-id"]
        }
        let heldOut = (0..<300).filter { variantOf[TemporaryProject.token($0)] == nil }
        #expect(variantOf.count + heldOut.count == 300 && heldOut.count > 30 && heldOut.count < 90)

        let send = try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
        _ = sim.stop()
        // The apns-ids the simulator received are the ones the plan printed.
        let received = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
            .split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        #expect(Set(received.map { String($0[3]) }) == Set(apnsIDOf.values))

        // opened: every even recipient sent (by apns-id, in upper case for some); converted: every
        // third control recipient and every even held-out one (by user); two rows naming nobody.
        var rows = ["apns_id,user,event,time"]
        var expected: [String: [String: Int]] = [:]
        for index in 0..<300 {
            let token = TemporaryProject.token(index)
            if let variant = variantOf[token] {
                if index % 2 == 0, let id = apnsIDOf[token] {
                    rows.append("\(index % 4 == 0 ? id.uppercased() : id),,opened,2100-03-20T09:0\(index % 10):00Z")
                    expected[variant, default: [:]]["opened", default: 0] += 1
                }
                if variant == "control", index % 3 == 0 {
                    rows.append(",u\(index),converted,4102444800")
                    expected[variant, default: [:]]["converted", default: 0] += 1
                }
            } else if index % 2 == 0 {
                rows.append(",u\(index),converted,4102444800")
                expected["holdout", default: [:]]["converted", default: 0] += 1
            }
        }
        rows.append("00000000-0000-5000-8000-000000000000,,opened,4102444800")
        rows.append(",u-nobody,converted,4102444800")
        let recordedCount = rows.count - 3
        let imported = try Self.importEvents(rows, into: project)
        #expect(
            imported.stdout
                == "run 1: \(recordedCount) events recorded from \(rows.count - 1) rows\n  2 named no recipient of the run (left out)\n"
        )
        // Imported again: nothing new.
        let again = try CLI.run(
            ["engagement", "import", "events.csv", "--campaign", "campaigns/e.yaml", "--run", "1"],
            in: project.root
        )
        #expect(again.status == 0, "\(again.stderr)")
        #expect(
            again.stdout.hasPrefix(
                "run 1: 0 events recorded from \(rows.count - 1) rows\n  \(recordedCount) already recorded\n"
            ),
            "\(again.stdout)"
        )

        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        #expect(report.status == 0, "\(report.stderr)")
        let readout = try #require(try Self.json(report.stdout)["readout"] as? [String: Any])
        #expect(readout["version"] as? Int == 1)
        #expect(readout["events"] as? [String] == ["converted", "opened"])
        let groups = try #require(readout["groups"] as? [[String: Any]])
        #expect(groups.map { $0["name"] as? String } == ["control", "urgency", "holdout"])
        for group in groups {
            let name = try #require(group["name"] as? String)
            let recipients = name == "holdout" ? heldOut.count : variantOf.values.count { $0 == name }
            #expect(group["recipients"] as? Int == recipients, "\(name)")
            let events = try #require(group["events"] as? [[String: Any]])
            for event in events {
                let eventName = try #require(event["event"] as? String)
                #expect(event["count"] as? Int == expected[name]?[eventName] ?? 0, "\(name) \(eventName)")
            }
        }
        // Urgency converted nobody, the holdout half: a clear loss against the holdout.
        let urgencyConverted = try #require(
            (groups[1]["events"] as? [[String: Any]])?.first { $0["event"] as? String == "converted" }
        )
        #expect((urgencyConverted["lift"] as? [String: Any])?["verdict"] as? String == "worse")
        let text = try CLI.run(["report"], in: project.root)
        #expect(text.stdout.contains("Engagement (rates per person assigned; 95% intervals)"), "\(text.stdout)")
        #expect(text.stdout.contains("Counted per person (audience.user_key: user_id)"), "\(text.stdout)")
    }

    /// Two variants over 1,000 recipients, with a 20% holdout and without: control converts 30%
    /// of its recipients, urgency 5%, the holdout 10%. Both readouts name control the winner, in
    /// words and in JSON, from comparisons that hold however often they are read.
    @Test(arguments: [true, false])
    func aTwoVariantTestNamesItsWinnerWithOrWithoutAHoldout(holdout: Bool) throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project, [])
        defer { _ = sim.stop() }
        try Self.sendATestControlWins(project, holdout: holdout)

        let text = try CLI.run(["report"], in: project.root)
        let verdict = "converted: winner: control, ahead of " + (holdout ? "urgency and the holdout" : "urgency")
        #expect(text.stdout.contains(verdict), "\(text.stdout)")
        #expect(text.stdout.contains("control vs urgency"), "\(text.stdout)")
        let markdown = try CLI.run(["report", "--format", "markdown"], in: project.root)
        #expect(markdown.stdout.contains("**\(verdict)**"), "\(markdown.stdout)")
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        let readout = try #require(try Self.json(report.stdout)["readout"] as? [String: Any])
        let compared = try #require((readout["comparisons"] as? [[String: Any]])?.first)
        #expect(compared["winner"] as? String == "control")
        let pairs = try #require(compared["pairs"] as? [[String: Any]])
        #expect(pairs.count == (holdout ? 3 : 1))
        #expect(pairs.allSatisfy { $0["interval"] as? String == "anytime-valid" })
    }

    /// `campaigns/e.yaml` over 1,000 recipients (with a 20% holdout or without) sent to the
    /// project's simulator, then conversions imported: control converts 30% of its recipients,
    /// urgency 5%, the holdout 10%.
    static func sendATestControlWins(_ project: TemporaryProject, holdout: Bool = true) throws {
        try Self.write(project, count: 1_000, holdout: holdout)
        let plan = try CLI.run(["plan", "--samples", "1000", "--format", "json", "campaigns/e.yaml"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        var variantOf: [String: String] = [:]
        for sample in try #require(try Self.json(plan.stdout)["samples"] as? [[String: Any]]) {
            variantOf[try #require(sample["token"] as? String)] = sample["variant"] as? String
        }
        let send = try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
        #expect(send.status == 0 || send.status == 4, "\(send.stdout)\(send.stderr)")

        var rows = ["user,event,time"]
        for index in 0..<1_000 {
            let converts =
                switch variantOf[TemporaryProject.token(index)] {
                case "control": index % 10 < 3
                case "urgency": index % 20 == 0
                default: index % 10 == 0
                }
            if converts { rows.append("u\(index),converted,4102444800") }
        }
        _ = try Self.importEvents(rows, into: project)
    }

    /// `readout: { window: 72h }`: an event counts from the run's start to 72 hours after it; one
    /// dated before the send or after the window is counted as such and left out, by the import
    /// and by serve's engagement API alike. The primary event leads the readout.
    @Test func eventsOutsideTheAttributionWindowAreCountedAndLeftOut() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project, [])
        defer { _ = sim.stop() }
        try Self.write(project, count: 20, readout: "readout: { primary: converted, window: 72h }")
        let send = try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")

        let now = Date().timeIntervalSince1970
        let rows = [
            "user,event,time",
            "u0,converted,\(Int(now - 3_600))",  // an hour before the send
            "u1,converted,\(Int(now + 3_600))",
            "u2,converted,\(Int(now + 71 * 3_600))",
            "u3,converted,\(Int(now + 100 * 3_600))",  // after the window
        ]
        let imported = try Self.importEvents(rows, into: project)
        #expect(
            imported.stdout
                == "run 1: 2 events recorded from 4 rows\n"
                + "  2 dated outside the attribution window (the run's start to 3d after) (left out)\n",
            "\(imported.stdout)"
        )
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        let readout = try #require(try Self.json(report.stdout)["readout"] as? [String: Any])
        #expect(readout["primary"] as? String == "converted" && readout["window"] as? Int == 259_200)
        let counted = (readout["groups"] as? [[String: Any]])?.reduce(0) { sum, group in
            sum + ((group["events"] as? [[String: Any]])?.first?["count"] as? Int ?? 0)
        }
        #expect(counted == 2)
        let text = try CLI.run(["report"], in: project.root)
        #expect(text.stdout.contains("  converted (primary): "), "\(text.stdout)")
    }

    @Test func aBadFileIsRefusedWholeWithEachProblemAtItsLine() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project)
        defer { _ = sim.stop() }
        try Self.write(project)
        #expect(try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root).status == 0)

        try project.write(
            "bad.csv",
            """
            apns_id,user,event,time
            ,u1,opened,2100-03-20T09:00:00Z
            secret-looking-value,,opened,2100-03-20T09:00:00Z
            ,u2,,2100-03-20T09:00:00Z
            ,u3,Opened!,2100-03-20T09:00:00Z
            ,u4,opened,4102444800000
            ,,opened,4102444800
            ,u5,opened
            ,u6,opened,4102444800,extra
            ,u7,opened,2100-03-20T09:00:00Z

            """
        )
        let bad = try CLI.run(["engagement", "import", "bad.csv", "--campaign", "campaigns/e.yaml"], in: project.root)
        #expect(bad.status == 1)
        for expected in [
            "bad.csv:3: error: 'apns_id' is not a UUID (8-4-4-4-12 hex digits)",
            "bad.csv:4: error: 'event' is missing: name what happened, like opened or converted",
            "bad.csv:5: error: 'event' must be 1-64 lowercase letters, digits, '_' or '-', starting with a letter",
            "bad.csv:6: error: 'time' is out of range: seconds since 1970 (not milliseconds), after 2001",
            "bad.csv:7: error: the row names no recipient: give 'apns_id' or 'user'",
            // A row whose fields do not fit the header is one more bad row: the rows after it are read.
            "bad.csv:8: error: row has 3 fields but the header has 4",
            "bad.csv:9: error: row has 5 fields but the header has 4",
            "error: 7 bad rows in bad.csv; nothing was recorded",
        ] {
            #expect(bad.stderr.contains(expected), "\(bad.stderr)")
        }
        // The same in JSON Lines: a line that is not an object is one bad row among the others.
        try project.write(
            "bad.jsonl",
            "{\"user\":\"u1\",\"event\":\"opened\",\"time\":4102444800}\n[1,2]\n{\"user\":\"u2\"\n"
                + "{\"user\":\"u3\",\"event\":\"opened\"}\n"
        )
        let lines = try CLI.run(
            ["engagement", "import", "bad.jsonl", "--campaign", "campaigns/e.yaml"],
            in: project.root
        )
        #expect(lines.status == 1)
        for expected in [
            "bad.jsonl:2:1: error: each line must be a JSON object", "bad.jsonl:3:",
            "bad.jsonl:4: error: 'time' is missing", "error: 3 bad rows in bad.jsonl; nothing was recorded",
        ] {
            #expect(lines.stderr.contains(expected), "\(lines.stderr)")
        }
        // A file that is not there is an events file, not an audience.
        let missing = try CLI.run(
            ["engagement", "import", "gone.csv", "--campaign", "campaigns/e.yaml"],
            in: project.root
        )
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("events file 'gone.csv'"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("audience"), "\(missing.stderr)")
        #expect(!bad.stderr.contains("secret-looking-value"))
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        #expect(try Self.json(report.stdout)["readout"] is NSNull)

        // An unknown column is refused at the header. The file the run was sent from may change:
        // the run kept its people (audience.user_key) when it was sent.
        try project.write("extra.csv", "apns_id,event,time,email\n")
        let extra = try CLI.run(
            ["engagement", "import", "extra.csv", "--campaign", "campaigns/e.yaml"],
            in: project.root
        )
        #expect(
            extra.status == 1 && extra.stderr.contains("extra.csv:1: error: unknown column 'email'"),
            "\(extra.stderr)"
        )
        try project.write("users.csv", "user,event,time\nu1,opened,4102444800\n")
        let campaign = try String(contentsOf: project.root.appendingPathComponent("campaigns/e.yaml"), encoding: .utf8)
        try project.write("campaigns/e.yaml", campaign.replacingOccurrences(of: "  user_key: user_id\n", with: ""))
        let changed = try CLI.run(
            ["engagement", "import", "users.csv", "--campaign", "campaigns/e.yaml"],
            in: project.root
        )
        #expect(changed.status == 0 && changed.stdout.hasPrefix("run 1: "), "\(changed.stdout)\(changed.stderr)")
    }

    /// A send killed while it still plans, then resumed: the report keeps the whole plan's funnel
    /// and each variant's planned count (the resumed pass counts what was settled before), so
    /// the readout has its denominators.
    @Test func aResumedRunKeepsItsFunnelAndVariants() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project)
        defer { _ = sim.stop() }
        try project.write(
            "audiences/a.csv",
            TemporaryProject.csv(count: 20_000, columns: ["user_id"]) { ["u\($0)"] }
        )
        try project.write(
            "campaigns/e.yaml",
            """
            campaign: e
            description: Resumed, with its funnel
            app: shop
            audience:
              source: { csv: audiences/a.csv }
            message:
              payload: { aps: { alert: "hi {{user_id}}" } }
              variants:
                - { name: control, weight: 50 }
                - { name: urgency, weight: 50 }
              holdout: 20%
            throttle: { rate: 2000/s, connections: 1 }

            """
        )
        let plan = try CLI.run(["plan", "--format", "json", "campaigns/e.yaml"], in: project.root)
        let planned = try Self.json(plan.stdout)
        let expectedHeldOut = try #require((planned["audience"] as? [String: Any])?["held_out"] as? Int)
        let expectedVariants = try #require(planned["variants"] as? [[String: Any]])

        // A send of the campaign in the background, stopped (with `signal`) once `count` are delivered.
        func send(until count: Int, then signal: Int32) throws -> Process {
            let send = Process()
            send.executableURL = CLI.binary
            send.arguments = ["send", "--quiet", "campaigns/e.yaml"]
            send.currentDirectoryURL = project.root
            send.standardOutput = FileHandle.nullDevice
            send.standardError = FileHandle.nullDevice
            try send.run()
            try eventually(within: 30) {
                let runs = try CLI.run(["runs", "--format", "json"], in: project.root)
                let list = try? JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]]
                return list?.first?["delivered"] as? Int ?? 0 >= count
            }
            kill(send.processIdentifier, signal)
            send.waitUntilExit()
            return send
        }
        // Killed once a few hundred are delivered: the planner, held back by the sender, is not
        // through the audience yet.
        _ = try send(until: 300, then: SIGKILL)
        let killed = try Self.json(try CLI.run(["report", "--format", "json"], in: project.root).stdout)
        #expect(killed["plan"] is NSNull, "the first send had not planned everyone: \(killed["plan"] ?? "")")
        // Resumed, then stopped with Ctrl-C once 2,000 more are delivered, then resumed to the end.
        let second = try send(until: 2_300, then: SIGINT)
        #expect(second.terminationStatus == 130)
        let resumed = try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let report = try Self.json(try CLI.run(["report", "--format", "json"], in: project.root).stdout)
        let funnel = try #require(report["plan"] as? [String: Any])
        #expect(funnel["planned"] as? Int == planned["planned"] as? Int, "\(funnel)")
        #expect(funnel["held_out"] as? Int == expectedHeldOut, "\(funnel)")
        let variants = try #require(report["variants"] as? [[String: Any]])
        for expected in expectedVariants {
            let name = try #require(expected["name"] as? String)
            #expect(
                variants.first { $0["name"] as? String == name }?["planned"] as? Int == expected["planned"] as? Int,
                "\(name): \(variants)"
            )
        }
        // The campaign's description and each variant's copy are at the top of the report.
        #expect(report["description"] as? String == "Resumed, with its funnel")
        let copy = try #require(report["copy"] as? [[String: Any]])
        #expect(copy.map { $0["variant"] as? String } == ["control", "urgency"], "\(copy)")
        #expect((copy.first?["payload"] as? String)?.hasPrefix("{\"aps\":{\"alert\":\"hi u") == true, "\(copy)")
        // The timeline says what stopped the run each time and when it resumed.
        let timeline = try #require(report["timeline"] as? [[String: Any]])
        #expect(
            timeline.map { [$0["event"] as? String ?? "", $0["detail"] as? String ?? ""] } == [
                ["started", ""],
                ["resumed", "after the send before stopped without closing the run (killed, crashed or cut off)"],
                ["stopped", "Ctrl-C or SIGTERM"], ["resumed", "after Ctrl-C or SIGTERM"], ["finished", ""],
            ],
            "\(timeline)"
        )
        let text = try CLI.run(["report"], in: project.root).stdout
        #expect(text.contains("  Resumed, with its funnel\n"), "\(text)")
        #expect(text.contains("Copy (the first push of each variant and locale)\n  control  {\"aps\""), "\(text)")
        #expect(text.contains("Z  resumed after Ctrl-C or SIGTERM\n"), "\(text)")
    }

    /// The apns-id each token was sent with, from a simulator's `--record received.csv`.
    static func apnsIDs(_ project: TemporaryProject) throws -> [String: String] {
        let text = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
        var ids: [String: String] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            ids[String(fields[0])] = String(fields[3])
        }
        return ids
    }

    /// Per group of the report's readout: its `recipients` and the count of `event`.
    static func groups(_ project: TemporaryProject, event: String) throws -> [String: (assigned: Int, count: Int)] {
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        #expect(report.status == 0, "\(report.stderr)")
        let readout = try #require(try Self.json(report.stdout)["readout"] as? [String: Any], "\(report.stdout)")
        var groups: [String: (assigned: Int, count: Int)] = [:]
        for group in readout["groups"] as? [[String: Any]] ?? [] {
            let count = (group["events"] as? [[String: Any]])?.first { $0["event"] as? String == event }?["count"]
            groups[group["name"] as? String ?? ""] = (group["recipients"] as? Int ?? -1, count as? Int ?? 0)
        }
        return groups
    }

    /// 100 people with two phones each (rows 2p and 2p + 1 are person u<p>): both phones are in one
    /// arm, and a person who opened on both and bought twice counts once per event.
    @Test func aPersonWithTwoDevicesIsInOneArmAndCountedOnce() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project, ["--record", "received.csv"])
        try Self.write(project, count: 200) { "u\($0 / 2)" }
        let send = try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
        _ = sim.stop()
        let ids = try Self.apnsIDs(project)
        // Held out or sent, a person's two phones together.
        let sent = (0..<100).filter { ids[TemporaryProject.token(2 * $0)] != nil }
        #expect(
            (0..<100).allSatisfy {
                (ids[TemporaryProject.token(2 * $0)] == nil) == (ids[TemporaryProject.token(2 * $0 + 1)] == nil)
            }
        )
        #expect(sent.count > 60 && sent.count < 100)

        var rows = ["apns_id,user,event,time"]
        for person in sent {
            for device in [2 * person, 2 * person + 1] {
                rows.append("\(ids[TemporaryProject.token(device)]!),,opened,4102444800")
            }
        }
        for person in 0..<100 { rows += [",u\(person),converted,4102444800", ",u\(person),converted,4102444900"] }
        let imported = try Self.importEvents(rows, into: project)
        #expect(
            imported.stdout
                == "run 1: \(sent.count + 100) events recorded from \(rows.count - 1) rows\n"
                + "  \(sent.count + 100) already recorded\n",
            "\(imported.stdout)"
        )
        let opened = try Self.groups(project, event: "opened")
        let converted = try Self.groups(project, event: "converted")
        // Rates per person: 100 people assigned, each counted once.
        #expect(opened.values.reduce(0) { $0 + $1.assigned } == 100, "\(opened)")
        #expect(opened["holdout"]?.assigned == 100 - sent.count)
        #expect(opened.values.reduce(0) { $0 + $1.count } == sent.count, "\(opened)")
        #expect(converted.values.allSatisfy { $0.count == $0.assigned }, "\(converted)")
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        let readout = try #require(try Self.json(report.stdout)["readout"] as? [String: Any])
        #expect(readout["unit"] as? String == "person" && readout["user_key"] as? String == "user_id")

        // Revenue: a value per person who bought (once per person, the first row standing); the
        // readout gives each arm's value per person assigned, and the holdout's.
        var purchases = ["user,event,time,value"]
        var total = 0.0
        for person in 0..<100 where person % 5 == 0 {
            purchases.append("u\(person),purchased,4102444800,\(person).5")
            purchases.append("u\(person),purchased,4102444900,999")  // the same person again: left out
            total += Double(person) + 0.5
        }
        let bought = try Self.importEvents(purchases, into: project)
        #expect(
            bought.stdout.hasPrefix("run 1: 20 events recorded from 40 rows\n  20 already recorded"),
            "\(bought.stdout)"
        )
        let valued = try CLI.run(["report", "--format", "json"], in: project.root)
        let groups = try #require(
            (try Self.json(valued.stdout)["readout"] as? [String: Any])?["groups"] as? [[String: Any]]
        )
        var summed = 0.0
        for group in groups {
            let assigned = try #require(group["recipients"] as? Int)
            let purchased = try #require(
                (group["events"] as? [[String: Any]])?.first { $0["event"] as? String == "purchased" }
            )
            let value = try #require(purchased["value"] as? [String: Any], "\(purchased)")
            let groupTotal = try #require(value["total"] as? Double)
            summed += groupTotal
            #expect(abs((value["per_recipient"] as? Double ?? -1) - groupTotal / Double(assigned)) < 1e-9)
            #expect((value["low"] as? Double ?? 1) <= (value["per_recipient"] as? Double ?? 0))
            #expect((group["holdout"] as? Bool == true) == (value["lift"] is NSNull), "\(value)")
        }
        #expect(abs(summed - total) < 1e-9, "\(summed) of \(total)")
        let text = try CLI.run(["report"], in: project.root)
        #expect(text.stdout.contains("per person (95% interval)"), "\(text.stdout)")
        for format in ["html", "markdown"] {
            let page = try CLI.run(["report", "--format", format], in: project.root)
            #expect(
                page.stdout.contains("per person (95% interval)") && page.stdout.contains("value vs holdout"),
                "\(format)"
            )
        }

        // A value that is not an amount is refused at its line, naming the field.
        try project.write("bad.csv", "user,event,time,value\nu1,purchased,4102444800,€4\n")
        let bad = try CLI.run(["engagement", "import", "bad.csv", "--campaign", "campaigns/e.yaml"], in: project.root)
        #expect(bad.status == 1 && bad.stderr.contains("bad.csv:2: error: 'value' is not an amount"), "\(bad.stderr)")
    }

    /// A test's run keeps its assignment when it is sent: a regenerated audience export and an
    /// edited file (a new revision) do not stop its readout. A run that kept none (one message, no
    /// holdout) keeps it at its first import, from the files at its revision, and is free of them
    /// after that.
    @Test func aReadoutNeedsNeitherTheCampaignFileNorTheAudienceItWasSentFrom() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project, [])
        defer { _ = sim.stop() }
        try Self.write(project)
        let send = try CLI.run(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")

        try project.write("audiences/a.csv", TemporaryProject.csv(count: 40, columns: ["user_id"]) { ["v\($0)"] })
        let file = project.root.appendingPathComponent("campaigns/e.yaml")
        let edited = try String(contentsOf: file, encoding: .utf8)
            .replacingOccurrences(of: "app: shop\n", with: "app: shop\ndescription: edited after the send\n")
        try project.write("campaigns/e.yaml", edited)
        let rows = ["user,event,time"] + stride(from: 0, to: 300, by: 3).map { "u\($0),converted,4102444800" }
        let imported = try Self.importEvents(rows, into: project)
        #expect(imported.stdout == "run 1: 100 events recorded from 100 rows\n", "\(imported.stdout)")
        let after = try Self.groups(project, event: "converted")
        #expect(after.values.reduce(0) { $0 + $1.count } == 100)
        // Everyone the run assigned, as it was: 300, not the 40 of the new export.
        #expect(after.values.reduce(0) { $0 + $1.assigned } == 300 && after.count == 3, "\(after)")

        // One message, no holdout: nothing kept at send time.
        try project.write("audiences/p.csv", TemporaryProject.csv(count: 20, columns: ["n"]) { ["\($0)"] })
        try project.write(
            "campaigns/p.yaml",
            "campaign: p\napp: shop\naudience:\n  source: { csv: audiences/p.csv }\nmessage:\n  payload: { aps: { alert: hi } }\n"
        )
        let plan = try CLI.run(["plan", "--samples", "100", "--format", "json", "campaigns/p.yaml"], in: project.root)
        let samples = try #require(try Self.json(plan.stdout)["samples"] as? [[String: Any]])
        let ids = samples.compactMap { ($0["headers"] as? [String: String])?["apns-id"] }
        #expect(ids.count == 20)
        #expect(try CLI.run(["send", "--quiet", "campaigns/p.yaml"], in: project.root).status == 0)
        try project.write(
            "events.csv",
            (["apns_id,event,time"] + ids.map { "\($0),opened,4102444800" }).joined(separator: "\n")
        )
        let arguments = ["engagement", "import", "events.csv", "--campaign", "campaigns/p.yaml"]
        try project.write("audiences/p.csv", TemporaryProject.csv(count: 5, columns: ["n"]) { ["\($0)"] })
        let refused = try CLI.run(arguments, in: project.root)
        #expect(
            refused.status == 1 && refused.stderr.contains("kept no assignment of its recipients"),
            "\(refused.stderr)"
        )
        try project.write("audiences/p.csv", TemporaryProject.csv(count: 20, columns: ["n"]) { ["\($0)"] })
        let kept = try CLI.run(arguments, in: project.root)
        #expect(kept.stdout == "run 2: 20 events recorded from 20 rows\n", "\(kept.stdout)\(kept.stderr)")
        try project.write("audiences/p.csv", TemporaryProject.csv(count: 5, columns: ["n"]) { ["\($0)"] })
        let again = try CLI.run(arguments, in: project.root)
        #expect(again.stdout == "run 2: 0 events recorded from 20 rows\n  20 already recorded\n", "\(again.stderr)")
    }

    /// A cancelled run's readout: rates over everyone assigned, with a note that the run did not
    /// reach them all.
    @Test func aCancelledRunHasAReadoutThatSaysSo() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try JournalCLITests.start(project, [])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try Self.write(project, count: 2000, extra: "throttle: { rate: 200/s }")
        let send = try CLI.start(["send", "--quiet", "campaigns/e.yaml"], in: project.root)
        #expect(eventually(within: 30) { ServeCLITests.delivered(project) >= 100 })
        let cancel = try CLI.run(["cancel", "1"], in: project.root)
        send.waitUntilExit()
        #expect(cancel.status == 0, "\(cancel.stdout)\(cancel.stderr)")

        // `runs` says where it stopped: answered of everyone planned for a variant, below 100%.
        let listed = try #require(try ServeCLITests.runs(project).first)
        let planned = try #require(listed["planned"] as? Int, "\(listed)")
        #expect(listed["status"] as? String == "cancelled" && planned > 1_400 && planned < 2_000, "\(listed)")
        #expect((listed["percent"] as? Int ?? 100) < 100 && listed["eta_seconds"] == nil, "\(listed)")

        let rows = ["user,event,time"] + stride(from: 0, to: 2000, by: 4).map { "u\($0),converted,4102444800" }
        let imported = try Self.importEvents(rows, into: project)
        #expect(imported.stdout.contains("named a recipient the run did not send to (left out)"), "\(imported.stdout)")
        let groups = try Self.groups(project, event: "converted")
        #expect(groups.values.reduce(0) { $0 + $1.assigned } == 2000 && groups["holdout"] != nil, "\(groups)")
        #expect(groups.values.reduce(0) { $0 + $1.count } > 0)
        let report = try CLI.run(["report"], in: project.root)
        #expect(report.stdout.contains("Run 1 was cancelled: "), "\(report.stdout)")
        #expect(report.stdout.contains("compare the arms of this run with each other"), "\(report.stdout)")
    }
}
