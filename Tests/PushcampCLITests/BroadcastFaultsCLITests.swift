import Foundation
import PushcampTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 43: broadcasts and channel management against a simulator that throttles channels,
/// answers 429 and 5xx, drops connections and sends GOAWAY; and two processes at once on one new
/// SQLite journal.
@Suite("broadcasts and channels through faults, from the command line")
struct BroadcastFaultsCLITests {
    /// How many requests of the broadcast API the simulator answered 200 (or 201, 204) per path.
    static func accepted(_ received: [ChannelsCLITests.Received], path prefix: String) -> Int {
        received.filter { $0.path.hasPrefix(prefix) && (200..<300).contains($0.status) }.count
    }

    /// A broadcast answered 429 then 200, 503 twice then 200, or dropped with its connection
    /// (unanswered) then 200: delivered once, the attempts in the output and the report, and the
    /// drop counted and listed as the one possible duplicate.
    @Test(
        arguments: [
            ("429", 2, 0, "TooManyRequests"), ("503,503", 3, 0, "ServiceUnavailable"),
            ("drop", 2, 1, "connection-lost"),
        ]
    )
    func aBroadcastGoesAgainUntilItIsDeliveredOnce(
        faults: String,
        attempts: Int,
        duplicates: Int,
        cause: String
    )
        throws
    {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try BroadcastCLITests.applied(project, simulator: ["--broadcast-faults", faults])
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try BroadcastCLITests.writeCampaign(project, top: "retry: { TooManyRequests: 1s, ServiceUnavailable: 1s }\n")
        let sent = try CLI.run(["send", "campaigns/score.yaml"], in: project.root)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains("200: APNs took it"), "\(sent.stdout)")
        #expect(sent.stdout.contains("\(attempts) attempts"), "\(sent.stdout)")
        #expect(
            sent.stdout.contains("possible duplicate") == (duplicates > 0),
            "\(sent.stdout)"
        )
        let report = try CLI.run(["report", "--format", "json"], in: project.root)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        #expect(json["delivered"] as? Int == 1 && json["failed"] as? Int == 0, "\(report.stdout)")
        #expect(json["possible_duplicates"] as? Int == duplicates, "\(report.stdout)")
        let retries = try #require((json["retries"] as? [String: Any])?["by_cause"] as? [String: Int])
        #expect(retries[cause] ?? 0 >= 1, "\(retries)")
        #expect(json["status"] as? String == "finished")

        _ = sim.stop()
        let broadcasts = try ChannelsCLITests.received(project).filter { $0.path.hasPrefix("/4/") }
        #expect(Self.accepted(broadcasts, path: "/4/") == 1, "\(broadcasts.map(\.status))")
    }

    /// `channels apply` with a GOAWAY after every request (each on a connection of its own), and
    /// with 30% of requests answered 500 or 503: it converges; a second apply has nothing to do.
    @Test(arguments: [["--goaway-after", "1"], ["--broadcast-error-rate", "30%"]])
    func channelsApplyConvergesThroughGoawayAndServerErrors(faults: [String]) throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try ChannelsCLITests.start(
            project,
            channels: ChannelsCLITests.twoChannels + "  third:\n    app: shop\n",
            simulator: faults
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let first = try CLI.run(["channels", "apply"], in: project.root)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.contains("Applied: 3 created, 0 deleted."), "\(first.stdout)")
        let second = try CLI.run(["channels", "apply"], in: project.root)
        #expect(second.status == 0 && second.stdout.contains("Nothing to do"), "\(second.stdout)\(second.stderr)")
        let plan = try CLI.run(["channels", "plan", "--format", "json"], in: project.root)
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains(#""orphans":[]"#), "\(plan.stdout)")
        _ = sim.stop()
        let received = try ChannelsCLITests.received(project)
        // Each channel created once at APNs (nothing created twice, nothing left behind).
        #expect(Self.accepted(received, path: "/1/apps/com.example.shop/channels") == 3, "\(received.map(\.status))")
        if faults == ["--goaway-after", "1"] {
            #expect(received.allSatisfy { (200..<300).contains($0.status) }, "\(received.map(\.status))")
        }
    }

    /// Two `channels apply` at once, ten times, on a journal each time new: both succeed (the
    /// second process waits for or adopts the first's new journal), and every declared channel
    /// is recorded once and exists at APNs.
    @Test func twoAppliesAtOnceConvergeTenTimesOnANewJournalEachTime() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try ChannelsCLITests.start(project, channels: ChannelsCLITests.twoChannels)
        defer { if sim.process.isRunning { _ = sim.stop() } }
        let journal = project.root.appendingPathComponent(".pushcamp/journal.sqlite").path
        for round in 1...10 {
            for suffix in ["", "-wal", "-shm"] { unlink(journal + suffix) }
            let outputs = Self.twoAtOnce(["channels", "apply"], in: project.root)
            for output in outputs {
                #expect(output.status == 0, "round \(round): \(output.stdout)\(output.stderr)")
            }
            let list = try CLI.run(["channels", "plan", "--format", "json", "--offline"], in: project.root)
            let kept = list.stdout.components(separatedBy: #""action":"keep""#).count - 1
            #expect(kept == 2, "round \(round): \(list.stdout)")
            let plan = try CLI.run(["channels", "plan"], in: project.root)
            #expect(plan.stdout.contains("  final") && plan.stdout.contains("  semi"), "\(plan.stdout)")
            #expect(!plan.stdout.contains("+ ") && !plan.stdout.contains("! "), "round \(round): \(plan.stdout)")
        }
    }

    /// Two processes opening one SQLite journal that does not exist yet, ten times: both open it
    /// (never "empty (0 bytes)", never "already exists"), at the current schema.
    @Test func twoFirstOpensOfOneSQLiteJournalTenTimes() throws {
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        try SendCLITests.writeProject(project, port: 9, credentials: SendCLITests.simulatorKey)
        let journal = project.root.appendingPathComponent(".pushcamp/journal.sqlite").path
        for round in 1...10 {
            for suffix in ["", "-wal", "-shm"] { unlink(journal + suffix) }
            for output in Self.twoAtOnce(["journal", "migrate"], in: project.root) {
                #expect(output.status == 0, "round \(round): \(output.stdout)\(output.stderr)")
                #expect(output.stdout.contains("at schema version"), "round \(round): \(output.stdout)")
            }
        }
        // No half-made journal is left beside it.
        let folder = try FileManager.default.contentsOfDirectory(
            atPath: (journal as NSString).deletingLastPathComponent
        )
        #expect(folder.filter { $0.contains(".new-") }.isEmpty, "\(folder)")
    }

    /// Runs `arguments` in two processes started together.
    static func twoAtOnce(_ arguments: [String], in directory: URL) -> [CLI.Output] {
        let outputs = Mutex<[CLI.Output]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let output =
                (try? CLI.run(arguments, in: directory)) ?? CLI.Output(status: -1, stdout: "", stderr: "did not run")
            outputs.withLock { $0.append(output) }
        }
        return outputs.withLock { $0 }
    }
}
