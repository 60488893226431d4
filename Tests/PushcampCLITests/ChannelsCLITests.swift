import Foundation
import PushcampTestSupport
import Testing

/// `pushcamp channels` against `pushcamp sim`, which answers APNs' channel-management API.
@Suite("broadcast channels as code, from the command line")
struct ChannelsCLITests {
    /// One request the simulator's broadcast API received (`--record-broadcast`).
    struct Received {
        var method: String
        var path: String
        var channelID: String?
        var status: Int
        var reason: String?
        var pushType: String?
        var priority: String?
        var expiration: String?
        var payload: String
    }

    static func received(_ project: TemporaryProject) throws -> [Received] {
        let text = try String(contentsOf: project.root.appendingPathComponent("broadcast.jsonl"), encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return Received(
                method: object["method"] as? String ?? "",
                path: object["path"] as? String ?? "",
                channelID: object["channel_id"] as? String,
                status: object["status"] as? Int ?? 0,
                reason: object["reason"] as? String,
                pushType: object["push_type"] as? String,
                priority: object["priority"] as? String,
                expiration: object["expiration"] as? String,
                payload: object["payload"] as? String ?? ""
            )
        }
    }

    /// A simulator recording its broadcast API, and pushcamp.yaml pointing `shop` at it with
    /// `channels` (YAML under `channels:`).
    static func start(
        _ project: TemporaryProject,
        channels: String,
        simulator: [String] = []
    ) throws
        -> SimulatorProcess
    {
        let sim = try JournalCLITests.start(project, ["--record-broadcast", "broadcast.jsonl"] + simulator)
        try project.append("pushcamp.yaml", "\n    environment: sandbox\nchannels:\n" + channels)
        return sim
    }

    static let twoChannels = """
          final:
            app: shop
          semi:
            app: shop
            storage: none

        """

    @Test func applyTwiceCreatesEachDeclaredChannelOnce() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        var sim = try Self.start(project, channels: Self.twoChannels)
        defer { if sim.process.isRunning { _ = sim.stop() } }

        let plan = try CLI.run(["channels", "plan"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("+ final") && plan.stdout.contains("+ semi"), "\(plan.stdout)")
        #expect(plan.stdout.contains("com.example.shop (sandbox): 0 now, 2 after apply"), "\(plan.stdout)")

        let first = try CLI.run(["channels", "apply"], in: project.root)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("Applied: 2 created, 0 deleted."), "\(first.stdout)")
        let second = try CLI.run(["channels", "apply"], in: project.root)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("Nothing to do"), "\(second.stdout)")

        let list = try CLI.run(["channels", "list", "--format", "json"], in: project.root)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])
        let channels = try #require(object["channels"] as? [[String: Any]])
        #expect(channels.map { $0["name"] as? String } == ["final", "semi"])
        #expect(channels.map { $0["storage"] as? String } == ["latest", "none"])
        #expect(channels.allSatisfy { $0["action"] as? String == "keep" })
        let ids = channels.compactMap { $0["channel_id"] as? String }

        _ = sim.stop()
        let creates = try Self.received(project).filter { $0.method == "POST" }
        // One create per declared channel, with Apple's body, on Apple's path; the ids answered
        // are the ones recorded.
        #expect(creates.count == 2)
        #expect(creates.allSatisfy { $0.path == "/1/apps/com.example.shop/channels" && $0.status == 201 })
        #expect(creates.map(\.payload).contains(#"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#))
        #expect(Set(creates.compactMap(\.channelID)) == Set(ids))
        // The simulator kept them in its state folder, as Apple keeps them.
        let saved = try String(contentsOf: project.root.appendingPathComponent("sim/channels.json"), encoding: .utf8)
        #expect(ids.allSatisfy { saved.contains($0.replacingOccurrences(of: "/", with: "\\/")) })

        // Restarted on the same state, the simulator still has both: nothing to do.
        sim = try JournalCLITests.start(project, ["--record-broadcast", "broadcast.jsonl"])
        try project.append("pushcamp.yaml", "\n    environment: sandbox\nchannels:\n" + Self.twoChannels)
        let third = try CLI.run(["channels", "apply"], in: project.root)
        #expect(third.stdout.contains("Nothing to do"), "\(third.stdout)\(third.stderr)")
    }

    @Test func aChannelRemovedFromTheProjectIsDeletedAndOrphansAreListed() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.start(project, channels: Self.twoChannels)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        #expect(try CLI.run(["channels", "apply"], in: project.root).status == 0)
        // `semi` leaves pushcamp.yaml: the plan deletes it, apply does.
        let text = try String(contentsOf: project.root.appendingPathComponent("pushcamp.yaml"), encoding: .utf8)
        try project.write("pushcamp.yaml", String(text[..<text.range(of: "  semi:")!.lowerBound]))
        let plan = try CLI.run(["channels", "plan"], in: project.root)
        #expect(
            plan.stdout.contains("- semi") && plan.stdout.contains("(delete: no longer declared)"),
            "\(plan.stdout)"
        )
        let apply = try CLI.run(["channels", "apply"], in: project.root)
        #expect(apply.stdout.contains("Applied: 0 created, 1 deleted."), "\(apply.stdout)\(apply.stderr)")

        // A channel made by another journal is an orphan: listed, deleted by id. (The other journal
        // sits beside the first, so both share the provider token cached there: a second token
        // within 20 minutes would be TooManyProviderTokenUpdates.)
        let other = project.root.appendingPathComponent(".pushcamp/other.sqlite").path
        try project.write("pushcamp.yaml", text)
        let elsewhere = try CLI.run(["channels", "apply", "--journal", other], in: project.root)
        #expect(elsewhere.status == 0, "\(elsewhere.stdout)\(elsewhere.stderr)")
        let list = try CLI.run(["channels", "list"], in: project.root)
        let orphans = list.stdout.split(separator: "\n").filter { $0.hasPrefix("(orphan)") }
        #expect(orphans.count == 2, "\(list.stdout)")
        let id = try #require(orphans.first?.split(separator: " ").drop { $0 != "id" }.dropFirst().first)
        let deleted = try CLI.run(["channels", "delete", "--id", String(id), "--app", "shop"], in: project.root)
        #expect(deleted.status == 0 && deleted.stdout.contains("deleted \(id)"), "\(deleted.stdout)\(deleted.stderr)")

        let unknown = try CLI.run(["channels", "delete", "finale"], in: project.root)
        #expect(unknown.status == 1 && unknown.stderr.contains("did you mean"), "\(unknown.stderr)")
        // Deleting a channel still declared warns that apply makes it again, at its line.
        let final = try CLI.run(["channels", "delete", "final"], in: project.root)
        #expect(final.status == 0, "\(final.stderr)")
        #expect(final.stderr.contains("pushcamp.yaml:") && final.stderr.contains("warning: final is still declared"))
        let after = try CLI.run(["channels", "list"], in: project.root)
        #expect(after.stdout.split(separator: "\n").filter { $0.hasPrefix("(orphan)") }.count == 1, "\(after.stdout)")
    }

    @Test func refusalsNameTheReasonAndExit2() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try Self.start(project, channels: Self.twoChannels, simulator: ["--no-broadcast"])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let apply = try CLI.run(["channels", "apply"], in: project.root)
        #expect(apply.status == 2)
        #expect(apply.stderr.contains("FeatureNotEnabled") && apply.stderr.contains("Broadcast capability"))
        // Offline, the plan needs no APNs.
        let offline = try CLI.run(["channels", "plan", "--offline"], in: project.root)
        #expect(offline.status == 0 && offline.stdout.contains("+ final"), "\(offline.stdout)\(offline.stderr)")
    }

    @Test(
        arguments: [
            ("  x y:\n    app: shop\n", "pushcamp.yaml:10:3: error: channel name 'x y'"),
            ("  final:\n    app: shoe\n", "pushcamp.yaml:11:10: error: 'channels.final.app' names no app"),
            (
                "  final:\n    app: shop\n    storage: some\n",
                "pushcamp.yaml:12:14: error: 'channels.final.storage' is latest"
            ),
            ("  final:\n    storage: none\n", "pushcamp.yaml:11:5: error:"),
        ]
    )
    func aBadDeclarationIsLocated(channels: String, expected: String) throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try SendCLITests.writeProject(project, port: 9, credentials: SendCLITests.simulatorKey)
        try project.append("pushcamp.yaml", "\nchannels:\n" + channels)
        let plan = try CLI.run(["channels", "plan", "--offline"], in: project.root)
        #expect(plan.status == 1)
        #expect(plan.stderr.contains(expected), "\(plan.stderr)")
    }
}
