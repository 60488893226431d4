import Foundation
import PushcampJournal
import PushcampTestSupport
import Testing

/// What the journal remembers between sends, from the command line, against `pushcamp sim`.
@Suite("journal, dead tokens and replay from the command line")
struct JournalCLITests {
    /// A project whose app `shop` sends to a simulator started with `arguments`.
    static func start(_ project: TemporaryProject, _ arguments: [String] = []) throws -> SimulatorProcess {
        let sim = try SimulatorProcess(
            ["--state-dir", "sim", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--topic", "com.example.shop"]
                + arguments,
            in: project.root
        )
        try SendCLITests.writeProject(project, port: sim.port, credentials: SendCLITests.simulatorKey)
        return sim
    }

    /// The tokens of the requests a simulator started with `--record received.csv` received, with
    /// their status. Every line also says the connection, the client's address (loopback here) and
    /// when the request arrived: within the last hour.
    static func received(_ project: TemporaryProject) throws -> [(token: String, status: String)] {
        let text = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.first == "token,status,reason,apns_id,collapse_id,connection,peer,time")
        let now = Date().timeIntervalSince1970
        return lines.dropFirst().map { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            #expect(fields.count == 8 && Int(fields[5]) != nil && fields[6] == "127.0.0.1", "\(line)")
            #expect(Double(fields.last ?? "").map { $0 > now - 3600 && $0 <= now + 1 } == true, "\(line)")
            return (String(fields[0]), String(fields[1]))
        }
    }

    @Test func deadTokensAreExportedAndSuppressedInTheNextCampaign() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let token = TemporaryProject.token
        // 3: unregistered (APNs last knew it valid on 2023-11-14), 4: a bad token, 5: unregistered.
        try project.write(
            "tokens.txt",
            "\(token(3)) unregistered 1700000000000\n\(token(4)) bad\n\(token(5)) unregistered 1700000000000\n"
        )
        var sim = try Self.start(project, ["--tokens", "tokens.txt"])
        try SendCLITests.writeAudience(project, count: 10)
        try SendCLITests.writeCampaign(project)
        let first = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        _ = sim.stop()
        #expect(first.status == 4, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.contains("delivered 7, failed 3\n"), "\(first.stdout)")

        let csv = try CLI.run(["tokens", "invalid"], in: project.root)
        #expect(csv.status == 0, "\(csv.stderr)")
        let lines = csv.stdout.split(separator: "\n")
        #expect(lines.first == "topic,token,reason,apns_timestamp,apns_time,seen_at")
        let exported = Set(lines.dropFirst().map { String($0.split(separator: ",")[1]) })
        #expect(exported == [token(3), token(4), token(5)])
        #expect(
            lines.contains {
                $0.hasPrefix("com.example.shop,\(token(3)),Unregistered,1700000000000,2023-11-14T22:13:20Z,")
            }
        )
        #expect(lines.contains { $0.hasPrefix("com.example.shop,\(token(4)),BadDeviceToken,,,") })
        let json = try CLI.run(
            ["tokens", "invalid", "--format", "json", "--since", "2000-01-01T00:00:00Z"],
            in: project.root
        )
        let objects = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
        #expect(objects?.count == 3)
        #expect(objects?.allSatisfy { $0["topic"] as? String == "com.example.shop" } == true)
        let later = try CLI.run(["tokens", "invalid", "--since", "2999-01-01T00:00:00Z"], in: project.root)
        #expect(later.stdout == "topic,token,reason,apns_timestamp,apns_time,seen_at\n")
        let otherTopic = try CLI.run(["tokens", "invalid", "--topic", "com.example.other"], in: project.root)
        #expect(otherTopic.stdout.split(separator: "\n").count == 1)

        // A second campaign to the same topic: 5 is suppressed; 3 registered again since APNs'
        // timestamp (its registered_at is newer), so it is planned; 4's registration time is not a
        // time, so pre-flight refuses it with its row, and the send goes on.
        try project.write(
            "audiences/b.csv",
            TemporaryProject.csv(count: 10, columns: ["registered_at"]) { index in
                [index == 3 ? "2024-01-01T00:00:00Z" : index == 5 ? "1600000000" : index == 4 ? "nan" : ""]
            }
        )
        try project.write(
            "campaigns/d.yaml",
            "campaign: d\napp: shop\naudience:\n  source: { csv: audiences/b.csv }\nmessage:\n  payload: { aps: { alert: hi } }\n"
        )
        let plan = try CLI.run(["plan", "--format", "json", "campaigns/d.yaml"], in: project.root)
        #expect(plan.status == 3, "\(plan.stderr)")  // some pushes refused
        let summary = try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any]
        let audience = summary?["audience"] as? [String: Any]
        #expect(audience?["suppressed"] as? Int == 1)
        #expect(summary?["planned"] as? Int == 8, "\(plan.stdout)")
        let text = try CLI.run(["plan", "campaigns/d.yaml"], in: project.root)
        #expect(text.stdout.contains("suppressed"))
        #expect(text.stdout.contains("registered-at-unreadable: 1"), "\(text.stdout)")
        #expect(text.stdout.contains("audiences/b.csv:6"), "\(text.stdout)")

        sim = try Self.start(project, ["--record", "received.csv"])
        let second = try CLI.run(["send", "--quiet", "campaigns/d.yaml"], in: project.root)
        _ = sim.stop()
        #expect(second.status == 4, "\(second.stdout)\(second.stderr)")  // one refused: not all delivered
        #expect(second.stdout.contains("suppressed 1 (dead tokens); refused by pre-flight 1"), "\(second.stdout)")
        let sent = Set(try Self.received(project).map(\.token))
        #expect(sent.count == 8)
        #expect(!sent.contains(token(4)) && !sent.contains(token(5)) && sent.contains(token(3)))
    }

    @Test func aFrequencyCapHoldsBackRecipientsDeliveredEnoughByOtherCampaigns() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let token = TemporaryProject.token
        var sim = try Self.start(project)
        // Two earlier campaigns: tokens 0-2 get two deliveries, 3-5 one, 6-9 none.
        for (name, count) in [("first", 6), ("second", 3)] {
            try project.write(
                "audiences/\(name).csv",
                TemporaryProject.csv(count: count, columns: ["name"]) { ["Name\($0)"] }
            )
            try project.write(
                "campaigns/\(name).yaml",
                "campaign: \(name)\napp: shop\naudience:\n  source: { csv: audiences/\(name).csv }\nmessage:\n  payload: { aps: { alert: hi } }\n"
            )
            let sent = try CLI.run(["send", "--quiet", "campaigns/\(name).yaml"], in: project.root)
            #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        }
        _ = sim.stop()

        try SendCLITests.writeAudience(project, count: 10)
        try SendCLITests.writeCampaign(project, extra: "frequency_cap: { max: 2, per: 24h }\n")
        let plan = try CLI.run(["plan", "--format", "json", "campaigns/c.yaml"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any]
        #expect((summary?["audience"] as? [String: Any])?["capped"] as? Int == 3, "\(plan.stdout)")
        #expect(summary?["planned"] as? Int == 7)
        #expect((summary?["frequency_cap"] as? [String: Any])?["per_seconds"] as? Int == 86_400)
        let text = try CLI.run(["plan", "campaigns/c.yaml"], in: project.root)
        #expect(text.stdout.contains("frequency cap: at most 2 per 24h, from the journal"), "\(text.stdout)")

        sim = try Self.start(project, ["--record", "received.csv"])
        let send = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        _ = sim.stop()
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("capped 3 (frequency cap)"), "\(send.stdout)")
        #expect(Set(try Self.received(project).map(\.token)) == Set((3..<10).map(token)))

        // Deliveries older than the window do not count: after two seconds, a one-second window
        // holds back nobody, although every token has had a delivery.
        Thread.sleep(forTimeInterval: 2)
        try SendCLITests.writeCampaign(project, extra: "frequency_cap: { max: 1, per: 1s }\n")
        let later = try CLI.run(["plan", "--format", "json", "campaigns/c.yaml"], in: project.root)
        let laterSummary = try JSONSerialization.jsonObject(with: Data(later.stdout.utf8)) as? [String: Any]
        #expect((laterSummary?["audience"] as? [String: Any])?["capped"] as? Int == 0, "\(later.stdout)")
        #expect(laterSummary?["planned"] as? Int == 10)
    }

    @Test func replaySendsAgainOnlyTheRecipientsThatFailedForTheReasonsGiven() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let token = TemporaryProject.token
        try project.write("tokens.txt", "\(token(2)) wrong-topic\n\(token(6)) wrong-topic\n\(token(4)) bad\n")
        var sim = try Self.start(project, ["--tokens", "tokens.txt"])
        try SendCLITests.writeAudience(project, count: 10)
        try SendCLITests.writeCampaign(project)
        let first = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        _ = sim.stop()
        #expect(first.status == 4, "\(first.stdout)\(first.stderr)")

        // A reason nothing failed with: nothing is sent, and the run's reasons are listed.
        let none = try CLI.run(["replay", "1", "--reason", "TooManyRequests"], in: project.root)
        #expect(none.status == 1)
        #expect(
            none.stderr.contains(
                "no recipient of run 1 failed with TooManyRequests; its failures: DeviceTokenNotForTopic (2), BadDeviceToken (1)"
            ),
            "\(none.stderr)"
        )

        // A misspelt reason gets a did-you-mean.
        let typo = try CLI.run(["replay", "1", "--reason", "DeviceTokenNotForTopik"], in: project.root)
        #expect(typo.status == 1)
        #expect(
            typo.stderr.contains(
                "no recipient of run 1 failed with DeviceTokenNotForTopik; did you mean 'DeviceTokenNotForTopic'?"
            ),
            "\(typo.stderr)"
        )
        // Reasons APNs never retries are refused without --force; dead tokens with a word of why.
        let final = try CLI.run(["replay", "1", "--reason", "devicetokennotfortopic"], in: project.root)
        #expect(final.status == 1)
        #expect(final.stderr.contains("error: APNs never retries DeviceTokenNotForTopic: "), "\(final.stderr)")
        #expect(final.stderr.contains("pass --force to say so; nothing was sent"), "\(final.stderr)")
        let dead = try CLI.run(["replay", "1", "--reason", "BadDeviceToken"], in: project.root)
        #expect(dead.status == 1)
        #expect(dead.stderr.contains("APNs called those tokens dead (BadDeviceToken)"), "\(dead.stderr)")

        // The fix (here: the simulator forgets the tokens' problems), then the replay, from another
        // directory, the reason in any case: only 2 and 6 are sent, as run 2.
        sim = try Self.start(project, ["--record", "received.csv"])
        let replay = try CLI.run(
            [
                "replay", "1", "--reason", "devicetokennotfortopic", "--force", "--journal",
                project.path(".pushcamp/journal.sqlite"),
            ],
            in: project.root.appendingPathComponent("campaigns")
        )
        _ = sim.stop()
        #expect(replay.status == 0, "\(replay.stdout)\(replay.stderr)")
        #expect(replay.stderr.contains("replaying run 1 of c as run 2: 2 recipient(s)"), "\(replay.stderr)")
        #expect(replay.stdout.contains("delivered 2, failed 0\n"), "\(replay.stdout)")
        #expect(Set(try Self.received(project).map(\.token)) == [token(2), token(6)])
        let runs = try CLI.run(["runs", "--format", "json"], in: project.root)
        let objects = try JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]]
        #expect(objects?.first?["run"] as? Int == 2)
        #expect(objects?.first?["status"] as? String == "finished")
        #expect(objects?.first?["delivered"] as? Int == 2)
        #expect(objects?.first?["replay_of"] as? Int == 1)

        // A changed campaign is not replayed: its plan would not match the run's.
        try SendCLITests.writeCampaign(project, extra: "# edited\n")
        let changed = try CLI.run(["replay", "1", "--reason", "BadDeviceToken", "--force"], in: project.root)
        #expect(changed.status == 1)
        #expect(changed.stderr.contains("the campaign changed since run 1 was sent"), "\(changed.stderr)")
    }

    @Test func aJournalThatCannotBeUsedStopsTheSendBeforeAnythingIsSent() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.start(project, ["--record", "received.csv"])
        try SendCLITests.writeAudience(project, count: 10)
        try SendCLITests.writeCampaign(project)

        // Damaged.
        try project.write(".pushcamp/journal.sqlite", String(repeating: "not a database\n", count: 300))
        let corrupt = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(corrupt.status == 1)
        #expect(corrupt.stderr.contains("is not a Pushcamp journal or is damaged"), "\(corrupt.stderr)")
        #expect(corrupt.stderr.contains("nothing was sent"))

        // Busy: another live process (this one) holds the campaign's lease.
        try FileManager.default.removeItem(atPath: project.path(".pushcamp/journal.sqlite"))
        let journal = try SQLiteJournal(path: project.path(".pushcamp/journal.sqlite"))
        let lease = try await journal.acquire(LeaseResource.campaign("c"), owner: LeaseOwner.next().id, duration: 600)
        #expect(lease != nil)
        let locked = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(locked.status == 5)
        #expect(locked.stderr.contains("campaign c is being sent by another pushcamp process"), "\(locked.stderr)")

        _ = sim.stop()
        #expect(try Self.received(project).isEmpty)
    }

    @Test func aCampaignEditedUnderAnUnfinishedRunIsRefusedUnlessNewRun() async throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.start(project, ["--record", "received.csv"])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try SendCLITests.writeAudience(project, count: 10)
        try SendCLITests.writeCampaign(project)
        // An interrupted run of an earlier revision of the campaign.
        let journal = try SQLiteJournal(path: project.path(".pushcamp/journal.sqlite"))
        let old = try await journal.createRun(campaign: "c", revision: "0123456789abcdef", now: 1_800_000_000)
        try await journal.setStatus(.interrupted, of: old.id, now: 1_800_000_100)

        let refused = try CLI.run(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains(
                "campaign c has an unfinished run 1 (started 2027-01-15 08:00:00Z) from revision 0123456789abcdef, but the campaign file, its templates or its audience changed since"
            ),
            "\(refused.stderr)"
        )
        #expect(refused.stderr.contains("pushcamp send --new-run"))

        let fresh = try CLI.run(["send", "--quiet", "--new-run", "campaigns/c.yaml"], in: project.root)
        #expect(fresh.status == 0, "\(fresh.stdout)\(fresh.stderr)")
        #expect(fresh.stderr.contains("run 1 of c given up for a new run (--new-run)"))
        #expect(try await journal.run(old.id)?.status == .superseded)
        _ = sim.stop()
        #expect(try Self.received(project).count == 10)
    }

    @Test func cancelStopsARunFromAnotherProcessAndCountsWhatWasSent() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.start(project, ["--record", "received.csv"])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try SendCLITests.writeAudience(project, count: 3000)
        try SendCLITests.writeCampaign(project, extra: "throttle: { rate: 300/s }\n")
        let send = try CLI.start(["send", "--quiet", "campaigns/c.yaml"], in: project.root)
        let journal = project.path(".pushcamp/journal.sqlite")
        // Sending: some of it delivered.
        eventually(within: 20, every: 0.02) { FileManager.default.fileExists(atPath: journal) }
        #expect(eventually(within: 20) { ServeCLITests.delivered(project) >= 100 })
        // A plain campaign (no test, nothing kept ahead) knows its total while it sends: counted
        // ahead of the wire, with its copy, long before the planner reaches the audience's end.
        var listed: [String: Any] = [:]
        #expect(
            eventually(within: 20) {
                listed = (try? ServeCLITests.runs(project).first) ?? [:]
                return listed["planned"] as? Int == 3000
            },
            "\(listed)"
        )
        #expect(listed["status"] as? String == "running" && (listed["percent"] as? Int ?? 100) < 100, "\(listed)")
        #expect(listed["eta_seconds"] as? Int != nil, "\(listed)")
        let running = try CLI.run(["report", "1", "--format", "json"], in: project.root)
        let report = try JSONSerialization.jsonObject(with: Data(running.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(report["planned"] as? Int == 3000 && (report["copy"] as? [Any])?.count == 1, "\(running.stdout)")

        let started = Date()
        let cancel = try CLI.run(["cancel", "1"], in: project.root)
        let took = Date().timeIntervalSince(started)
        send.waitUntilExit()
        _ = sim.stop()
        #expect(cancel.status == 0, "\(cancel.stdout)\(cancel.stderr)")
        #expect(took < 2, "cancel took \(took) s")
        #expect(send.terminationStatus == 130)
        // "run 1 of c cancelled: N sent before the cancel (…)": N is what the simulator received.
        let sent = SendCLITests.numbers(in: cancel.stdout, lineStartingWith: "run 1 of c cancelled:").dropFirst(1).first
        let received = try Self.received(project).count
        #expect(sent == received, "\(cancel.stdout); the simulator received \(received)")
        #expect(received > 0 && received < 3000)
        #expect(cancel.stdout.contains("; \(3000 - received) of 3000 planned never sent"), "\(cancel.stdout)")
    }
}
