import Foundation
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
    /// their status.
    static func received(_ project: TemporaryProject) throws -> [(token: String, status: String)] {
        let text = try String(contentsOf: project.root.appendingPathComponent("received.csv"), encoding: .utf8)
        return text.split(separator: "\n").dropFirst().map { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
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

        // A second campaign to the same topic: 4 and 5 are suppressed; 3 registered again since
        // APNs' timestamp (its registered_at is newer), so it is planned.
        try project.write(
            "audiences/b.csv",
            TemporaryProject.csv(count: 10, columns: ["registered_at"]) { index in
                [index == 3 ? "2024-01-01T00:00:00Z" : index == 5 ? "1600000000" : ""]
            }
        )
        try project.write(
            "campaigns/d.yaml",
            "campaign: d\napp: shop\naudience:\n  source: { csv: audiences/b.csv }\nmessage:\n  payload: { aps: { alert: hi } }\n"
        )
        let plan = try CLI.run(["plan", "--format", "json", "campaigns/d.yaml"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any]
        let audience = summary?["audience"] as? [String: Any]
        #expect(audience?["suppressed"] as? Int == 2)
        #expect(summary?["planned"] as? Int == 8, "\(plan.stdout)")
        let text = try CLI.run(["plan", "campaigns/d.yaml"], in: project.root)
        #expect(text.stdout.contains("suppressed"))

        sim = try Self.start(project, ["--record", "received.csv"])
        let second = try CLI.run(["send", "--quiet", "campaigns/d.yaml"], in: project.root)
        _ = sim.stop()
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(second.stdout.contains("suppressed 2 (dead tokens)"), "\(second.stdout)")
        let sent = Set(try Self.received(project).map(\.token))
        #expect(sent.count == 8)
        #expect(!sent.contains(token(4)) && !sent.contains(token(5)) && sent.contains(token(3)))
    }
}
